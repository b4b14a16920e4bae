#!/usr/bin/env python3
"""Build Kindling's TEST FIXTURE package sources: local stand-ins for vendor servers.

The build/test machine cannot reach NVIDIA's repositories or the PyTorch wheel index, so the
Molecule tests install the roles' real package names from stand-ins built here, from code in this
directory, and served on loopback by serve_fixtures.py. Nothing built here is NVIDIA or PyTorch
software except the CPU torch wheel and its PyPI dependencies, which are real and served as is.

    python3 tests/fixture_sources/build_fixtures.py --out .cache/fixtures [--force]

writes into <out>/srv (the HTTP document root):

    keys/                                        test signing key (+ an unrelated "wrong" key)
    compute/cuda/repos/debian12/x86_64/          signed flat apt repo shaped like NVIDIA's
    compute/cudnn/redist/cudnn/linux-x86_64/     cuDNN redistributable tarball stand-in
    whl/cpu/                                     PEP 503 index: real CPU torch wheel + deps
    index.html, fixtures.json, checksums.json    what is served, and that it is a fixture

The build is skipped when a stamp of its inputs (this script, standins/, the captures, the torch
wheel, the keys) matches; --force rebuilds. See docs/FIXTURES.md.

Needs only the Python standard library plus equivs, apt-utils, gnupg and dpkg-dev (Debian 12).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fcntl
import gzip
import hashlib
import html
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
STANDINS = HERE / "standins"
CAPTURES = REPO_ROOT / "tests" / "fixtures" / "captures" / "h200"
CAPTURE_FILES = (
    "nvidia-smi-q.xml",
    "nvidia-smi-q.txt",
    "query-full.csv",
    "smi.txt",
    "smi-L.txt",
    "topo.txt",
)

TORCH_WHEEL_NAME = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
DEFAULT_TORCH_WHEEL = Path("/opt/wheels") / TORCH_WHEEL_NAME
TORCH_WHEEL_ORIGIN = "https://download.pytorch.org/whl/cpu/" + urllib.parse.quote(TORCH_WHEEL_NAME)
PIP_TARGET_ARGS = (
    "--only-binary=:all:",
    "--python-version",
    "3.11",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux_2_17_x86_64",
    "--platform",
    "any",
)

APT_REPO_PATH = "compute/cuda/repos/debian12/x86_64"
CUDNN_REDIST_PATH = "compute/cudnn/redist/cudnn/linux-x86_64"
WHEEL_INDEX_PATH = "whl/cpu"
KEYRING_NAME = "kindling-fixture-archive-keyring.gpg"
WRONG_KEYRING_NAME = "wrong-archive-keyring.gpg"

MAINTAINER = "Kindling test fixtures <test-fixtures@kindling.invalid>"
FIXTURE_NOTICE = (
    "Kindling test fixture: local stand-in for a vendor package source, built by "
    "tests/fixture_sources/build_fixtures.py. Not NVIDIA or PyTorch software."
)

# The GPU identity the stand-in nvidia-smi reports. The captures come from an H200, which needs
# CUDA >= 11.8; the default stack is driver 510 / CUDA 11.6, so the fixture claims an A100.
FIXTURE_GPU = {
    "name": "NVIDIA A100-SXM4-40GB",
    "architecture": "Ampere",
    "pci_device_id": "20B010DE",
    "compute_cap": "8.0",
    "memory_total_mib": 40960,
}

SMI_XML_COMMENT = (
    "<!-- Kindling test stand-in: real H200 capture with driver/GPU identity substituted -->"
)

DRIVER_BRANCHES = {
    "510": {"version": "510.47.03", "cuda": "11.6", "open": False},
    "535": {"version": "535.183.01", "cuda": "12.2", "open": True},
    "550": {"version": "550.54.15", "cuda": "12.4", "open": True},
}
DRIVER_VIRTUAL = "kindling-fixture-nvidia-driver"

# A point release NVIDIA published after a host was set up: only in the "later" snapshot of the
# repository (LATER_REPO_PREFIX), which the fault tests switch a converged host to, to prove a
# held driver does not move under apt-get upgrade or unattended-upgrade.
LATER_POINT_RELEASES = {"535": "535.216.03"}
# A package with no pin and no hold: 1.0 in the repository, 2.0 in the later snapshot. The
# upgrade tests assert that it DOES move, so they can tell "held" from "nothing to upgrade".
CANARY_PACKAGE = "kindling-fixture-canary"
# Copies of the repository under a prefix, as served (see docs/FIXTURES.md):
#   later/   the same packages plus LATER_POINT_RELEASES and canary 2.0, signed by the test key
#   rotated/ the same packages, but Release signed by the "wrong" key while the .pub beside the
#            packages is still the old one: apt reports NO_PUBKEY, as every host did after
#            NVIDIA's 2022 key rotation
LATER_REPO_PREFIX = "later"
ROTATED_REPO_PREFIX = "rotated"
# The stand-in driver's postinst, the place where a real nvidia-dkms builds the kernel module
# for minutes. A test that must interrupt an install in the middle writes a number of seconds
# to this file; without it the postinst returns at once.
DKMS_DELAY_FILE = "/etc/kindling-fixture/dkms-build-seconds"
DRIVER_POSTINST = f"""#!/bin/sh
# Kindling fixture: stands in for the DKMS build a real driver package runs here.
set -e
if [ "$1" = configure ] && [ -r {DKMS_DELAY_FILE} ]; then
    echo "kindling fixture: building the kernel module (sleeping $(cat {DKMS_DELAY_FILE}) s)"
    sleep "$(cat {DKMS_DELAY_FILE})"
fi
exit 0
"""

CUDA_TOOLKITS = {
    "11.6": {
        "package_version": "11.6.2-1",
        "full": "11.6.2",
        "nvcc": "11.6.124",
        "year": "2022",
        "built_on": "Tue_Mar__8_18:18:20_PST_2022",
        "build": "cuda_11.6.r11.6/compiler.31057947_0",
    },
    "12.4": {
        "package_version": "12.4.1-1",
        "full": "12.4.1",
        "nvcc": "12.4.131",
        "year": "2024",
        "built_on": "Thu_Mar_28_02:18:24_PDT_2024",
        "build": "cuda_12.4.r12.4/compiler.34097967_0",
    },
}

CUDNN8_VERSION = "8.4.0.27"
CUDNN8_PACKAGE_VERSION = "8.4.0.27-1+cuda11.6"
CUDNN8_TARBALL_TOP = "cudnn-linux-x86_64-8.4.0.27_cuda11.6-archive"
CUDNN9_PACKAGE_VERSION = "9.1.0.70-1"
TARBALL_MTIME = 1648771200  # 2022-04-01T00:00:00Z: fixed so the tarball's sha256 is stable

DCGM_VERSION = "1:3.3.9"
CTK_VERSION = "1.17.8-1"

# debian/rules for equivs: skip the dh steps that would enable/start shipped systemd units
# (roles must do that themselves) or do nothing useful for these packages (and cost time).
EQUIVS_RULES = """#!/usr/bin/make -f
# Kindling test fixtures: equivs template rules (written by build_fixtures.py)
%:
\tdh $@

override_dh_installsystemd override_dh_installsystemduser override_dh_installinit \\
override_dh_strip override_dh_makeshlibs override_dh_shlibdeps override_dh_dwz \\
override_dh_strip_nondeterminism override_dh_auto_configure override_dh_auto_build \\
override_dh_auto_test override_dh_auto_install override_dh_auto_clean override_dh_perl \\
override_dh_usrlocal override_dh_missing override_dh_installman override_dh_lintian \\
override_dh_update_autotools_config override_dh_autoreconf:
"""

REQUIRED_TOOLS = {
    "equivs-build": "equivs",
    "apt-ftparchive": "apt-utils",
    "gpg": "gnupg",
    "gpgv": "gpgv",
    "gpgconf": "gnupg",
    "dpkg-deb": "dpkg",
    "dpkg-buildpackage": "dpkg-dev",
}


class BuildError(RuntimeError):
    pass


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(cmd, *, cwd=None, env=None, input_bytes=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(part) for part in cmd],
        cwd=cwd,
        env=env,
        input=input_bytes,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stdout.decode(errors="replace")[-3000:]
        raise BuildError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{tail}")
    return proc


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


# --------------------------------------------------------------------------------------------
# keys


def gpg_env(home: Path) -> dict:
    return {**os.environ, "GNUPGHOME": str(home), "LC_ALL": "C.UTF-8"}


def gpg(home: Path, *args, input_bytes=None) -> subprocess.CompletedProcess:
    cmd = ["gpg", "--homedir", home, "--batch", "--no-tty", "--quiet", *args]
    proc = subprocess.run(
        [str(part) for part in cmd],
        env=gpg_env(home),
        input=input_bytes,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise BuildError(f"gpg {' '.join(map(str, args))} failed:\n{proc.stderr.decode()}")
    return proc


def _generate_key(home: Path, name: str, email: str) -> str:
    params = textwrap.dedent(
        f"""\
        %no-protection
        Key-Type: eddsa
        Key-Curve: ed25519
        Key-Usage: sign
        Name-Real: {name}
        Name-Email: {email}
        Expire-Date: 0
        %commit
        """
    )
    gpg(home, "--gen-key", input_bytes=params.encode())
    listing = gpg(home, "--with-colons", "--list-keys", f"<{email}>").stdout.decode()
    for line in listing.splitlines():
        if line.startswith("fpr:"):
            return line.split(":")[9]
    raise BuildError(f"could not read the fingerprint of the new key {email}")


def ensure_keys(out: Path, regenerate: bool) -> dict:
    """Create (once) the fixture archive key and an unrelated 'wrong' key in <out>/gnupg."""
    home = out / "gnupg"
    record = home / "kindling-fixture-keys.json"
    if not regenerate and record.is_file():
        keys = json.loads(record.read_text())
        try:
            gpg(home, "--list-keys", keys["fixture"]["fingerprint"], keys["wrong"]["fingerprint"])
            return keys
        except BuildError:
            log("fixture keys: recorded keys missing from the keyring, generating new ones")
    if home.exists():
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)
        shutil.rmtree(home)
    home.mkdir(parents=True, mode=0o700)
    keys = {
        "fixture": {
            "uid": "Kindling Test Fixture Archive Key (TEST ONLY, not NVIDIA)",
            "email": "test-fixture-archive@kindling.invalid",
        },
        "wrong": {
            "uid": "Kindling Unrelated Test Key (wrong key for NO_PUBKEY tests)",
            "email": "wrong-key@kindling.invalid",
        },
    }
    for entry in keys.values():
        entry["fingerprint"] = _generate_key(home, entry["uid"], entry["email"])
    record.write_text(json.dumps(keys, indent=2) + "\n")
    return keys


def stop_gpg_agent(out: Path) -> None:
    home = out / "gnupg"
    if home.is_dir():
        subprocess.run(
            ["gpgconf", "--homedir", str(home), "--kill", "all"],
            env=gpg_env(home),
            capture_output=True,
            check=False,
        )


def export_keys(out: Path, keys: dict, srv: Path) -> dict:
    home = out / "gnupg"
    keydir = srv / "keys"
    keydir.mkdir(parents=True)
    fixture_fpr = keys["fixture"]["fingerprint"]
    wrong_fpr = keys["wrong"]["fingerprint"]
    binary = gpg(home, "--export", fixture_fpr).stdout
    armored = gpg(home, "--export", "--armor", fixture_fpr).stdout
    (keydir / KEYRING_NAME).write_bytes(binary)
    (keydir / KEYRING_NAME.replace(".gpg", ".asc")).write_bytes(armored)
    (keydir / WRONG_KEYRING_NAME).write_bytes(gpg(home, "--export", wrong_fpr).stdout)
    info = {
        "notice": "TEST KEYS generated by Kindling's fixture build. Trust them only in tests.",
        "fixture": {
            "fingerprint": fixture_fpr,
            "uid": f"{keys['fixture']['uid']} <{keys['fixture']['email']}>",
            "keyring": f"keys/{KEYRING_NAME}",
            "armored": f"keys/{KEYRING_NAME.replace('.gpg', '.asc')}",
        },
        "wrong": {
            "fingerprint": wrong_fpr,
            "uid": f"{keys['wrong']['uid']} <{keys['wrong']['email']}>",
            "keyring": f"keys/{WRONG_KEYRING_NAME}",
        },
    }
    (keydir / "fingerprints.json").write_text(json.dumps(info, indent=2) + "\n")
    return {"binary": binary, "armored": armored, "info": info}


# --------------------------------------------------------------------------------------------
# nvidia-smi captures with the package's identity substituted


def _replace(text: str, old: str, new: str, where: str, *, regex: bool = False) -> str:
    if regex:
        result, count = re.subn(old, new, text)
    else:
        count = text.count(old)
        result = text.replace(old, new)
    if count == 0:
        raise BuildError(f"capture substitution found nothing to replace: {old!r} in {where}")
    return result


def _fit(text: str, old: str, new: str, where: str, align: str) -> str:
    """Replace old by new in a fixed-width table, keeping each line's length.

    align='left': the value is followed by padding; 'right': it is preceded by padding.
    """
    lines = text.split("\n")
    found = False
    for number, line in enumerate(lines):
        start = line.find(old)
        while start != -1:
            found = True
            end = start + len(old)
            delta = len(new) - len(old)
            if align == "left":
                pad = len(line[end:]) - len(line[end:].lstrip(" "))
                if delta >= pad:
                    raise BuildError(f"no room for {new!r} in {where}: {line!r}")
                line = line[:start] + new + line[end + max(delta, 0) :]
                if delta < 0:
                    cut = start + len(new)
                    line = line[:cut] + " " * -delta + line[cut:]
            else:
                pad = len(line[:start]) - len(line[:start].rstrip(" "))
                if delta >= pad:
                    raise BuildError(f"no room for {new!r} in {where}: {line!r}")
                head = line[: start - max(delta, 0)] + " " * max(-delta, 0)
                line = head + new + line[end:]
            start = line.find(old, start + len(new))
        lines[number] = line
    if not found:
        raise BuildError(f"capture substitution found nothing to replace: {old!r} in {where}")
    return "\n".join(lines)


def capture_identity(xml: str, csv_text: str) -> dict:
    def tag(name: str) -> str:
        match = re.search(rf"<{name}>([^<]*)</{name}>", xml)
        if not match:
            raise BuildError(f"<{name}> missing from the nvidia-smi -q -x capture")
        return match.group(1)

    header, row = (line.split(", ") for line in csv_text.splitlines()[:2])
    columns = dict(zip(header, row))
    fb = re.search(r"<fb_memory_usage>\s*<total>(\d+) MiB</total>", xml)
    if not fb:
        raise BuildError("fb_memory_usage total missing from the nvidia-smi -q -x capture")
    return {
        "driver": tag("driver_version"),
        "cuda": tag("cuda_version"),
        "name": tag("product_name"),
        "architecture": tag("product_architecture"),
        "pci_device_id": tag("pci_device_id"),
        "compute_cap": columns["compute_cap"],
        "memory_total": fb.group(1),
        "memory_free": columns["memory.free [MiB]"].split()[0],
    }


def substituted_captures(driver_version: str, cuda_version: str) -> dict[str, bytes]:
    """Return the H200 captures with driver, CUDA and GPU identity swapped for this package."""
    src = {name: (CAPTURES / name).read_text(encoding="utf-8") for name in CAPTURE_FILES}
    old = capture_identity(src["nvidia-smi-q.xml"], src["query-full.csv"])
    gpu = FIXTURE_GPU
    total = str(gpu["memory_total_mib"])
    free = str(gpu["memory_total_mib"] - (int(old["memory_total"]) - int(old["memory_free"])))

    xml = src["nvidia-smi-q.xml"]
    where = "nvidia-smi-q.xml"
    xml = _replace(xml, old["driver"], driver_version, where)
    xml = _replace(xml, f"<cuda_version>{old['cuda']}<", f"<cuda_version>{cuda_version}<", where)
    xml = _replace(xml, f"<product_name>{old['name']}<", f"<product_name>{gpu['name']}<", where)
    xml = _replace(
        xml,
        f"<product_architecture>{old['architecture']}<",
        f"<product_architecture>{gpu['architecture']}<",
        where,
    )
    xml = _replace(
        xml,
        f"<pci_device_id>{old['pci_device_id']}<",
        f"<pci_device_id>{gpu['pci_device_id']}<",
        where,
    )
    xml = _replace(xml, f"<total>{old['memory_total']} MiB<", f"<total>{total} MiB<", where)
    xml = _replace(xml, f"<free>{old['memory_free']} MiB<", f"<free>{free} MiB<", where)
    declaration, newline, rest = xml.partition("\n")
    if not declaration.startswith("<?xml"):
        raise BuildError("nvidia-smi-q.xml does not start with an XML declaration")
    xml = declaration + newline + SMI_XML_COMMENT + "\n" + rest

    txt = src["nvidia-smi-q.txt"]
    where = "nvidia-smi-q.txt"
    txt = _replace(txt, old["driver"], driver_version, where)
    txt = _replace(
        txt,
        rf"(CUDA Version\s+: ){re.escape(old['cuda'])}\n",
        rf"\g<1>{cuda_version}\n",
        where,
        regex=True,
    )
    txt = _replace(txt, f": {old['name']}\n", f": {gpu['name']}\n", where)
    txt = _replace(txt, f": {old['architecture']}\n", f": {gpu['architecture']}\n", where)
    txt = _replace(txt, f": 0x{old['pci_device_id']}\n", f": 0x{gpu['pci_device_id']}\n", where)
    txt = _replace(txt, f": {old['memory_total']} MiB\n", f": {total} MiB\n", where)
    txt = _replace(txt, f": {old['memory_free']} MiB\n", f": {free} MiB\n", where)

    lines = src["query-full.csv"].split("\n")
    header = lines[0].split(", ")
    new_values = {
        "name": gpu["name"],
        "driver_version": driver_version,
        "compute_cap": gpu["compute_cap"],
        "memory.total [MiB]": f"{total} MiB",
        "memory.free [MiB]": f"{free} MiB",
    }
    for number in range(1, len(lines)):
        if not lines[number].strip():
            continue
        row = lines[number].split(", ")
        for column, value in new_values.items():
            row[header.index(column)] = value
        lines[number] = ", ".join(row)
    csv_text = "\n".join(lines)

    smi = src["smi.txt"]
    where = "smi.txt"
    smi = _fit(smi, old["driver"], driver_version, where, "left")
    smi = _fit(smi, f"CUDA Version: {old['cuda']}", f"CUDA Version: {cuda_version}", where, "left")
    smi = _fit(smi, old["name"], gpu["name"], where, "left")
    smi = _fit(smi, f"{old['memory_total']}MiB", f"{total}MiB", where, "right")

    smi_l = _replace(src["smi-L.txt"], f": {old['name']} (", f": {gpu['name']} (", "smi-L.txt")

    result = {
        "nvidia-smi-q.xml": xml,
        "nvidia-smi-q.txt": txt,
        "query-full.csv": csv_text,
        "smi.txt": smi,
        "smi-L.txt": smi_l,
        "topo.txt": src["topo.txt"],
    }
    return {name: text.encode("utf-8") for name, text in result.items()}


def capture_readme(driver_version: str, cuda_version: str) -> bytes:
    source = capture_identity(
        (CAPTURES / "nvidia-smi-q.xml").read_text(), (CAPTURES / "query-full.csv").read_text()
    )
    text = (
        f"These are real captures from an NVIDIA H200 host (driver {source['driver']}, CUDA "
        f"{source['cuda']}), copied from the Kindling repository's tests/fixtures/captures/h200/. "
        f"The fixture build substituted: driver version -> {driver_version}, CUDA version -> "
        f"{cuda_version}, GPU -> {FIXTURE_GPU['name']} (compute capability "
        f"{FIXTURE_GPU['compute_cap']}, {FIXTURE_GPU['memory_total_mib']} MiB; architecture and "
        "PCI device id to match). Everything else (serials, UUIDs, clocks, power, BAR1 size, "
        "topology, the XML DTD version) is the H200's, unchanged."
    )
    heading = "Kindling test fixture: nvidia-smi captures for the stand-in /usr/bin/nvidia-smi."
    return (heading + "\n\n" + textwrap.fill(text, 78) + "\n").encode()


# --------------------------------------------------------------------------------------------
# packages


@dataclass
class Package:
    name: str
    version: str
    summary_detail: str
    arch: str = "amd64"
    section: str = "misc"
    depends: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    replaces: list[str] = field(default_factory=list)
    files: list[tuple[str, bytes, int]] = field(default_factory=list)  # (path, content, mode)
    links: list[tuple[str, str]] = field(default_factory=list)  # (target, link path)
    postinst: str | None = None
    postrm: str | None = None

    @property
    def description(self) -> str:
        synopsis = (
            f"Kindling test fixture: stand-in for NVIDIA's {self.name}, not the real software"
        )
        paragraphs = [self.summary_detail, FIXTURE_NOTICE]
        body = []
        for paragraph in paragraphs:
            if body:
                body.append(" .")
            body.extend(" " + line for line in textwrap.wrap(paragraph, 72))
        return synopsis + "\n" + "\n".join(body)


def standin(name: str, **values: str) -> bytes:
    text = (STANDINS / name).read_text(encoding="utf-8")
    for key, value in values.items():
        placeholder = f"@{key}@"
        if placeholder not in text:
            raise BuildError(f"placeholder {placeholder} missing from standins/{name}")
        text = text.replace(placeholder, value)
    leftover = re.search(r"@[A-Z_]+@", text)
    if leftover:
        raise BuildError(f"standins/{name}: placeholder {leftover.group(0)} was not substituted")
    return text.encode("utf-8")


def cudnn_version_header(major: int, minor: int, patch: int, multiplier: int) -> bytes:
    return textwrap.dedent(
        f"""\
        /*
         * Kindling test fixture: stand-in for NVIDIA's cudnn_version.h
         * (cuDNN {major}.{minor}.{patch}): only the version macros, in the real header's format.
         * Not NVIDIA software.
         */

        /**
         * \\file: The master cuDNN version file.
         */

        #ifndef CUDNN_VERSION_H_
        #define CUDNN_VERSION_H_

        #define CUDNN_MAJOR {major}
        #define CUDNN_MINOR {minor}
        #define CUDNN_PATCHLEVEL {patch}

        #define CUDNN_VERSION (CUDNN_MAJOR * {multiplier} + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

        #endif /* CUDNN_VERSION_H */
        """
    ).encode()


def stub_library(what: str) -> bytes:
    return (
        f"Kindling test fixture: stand-in for {what}.\n"
        "This is a text file, not a shared library, and not NVIDIA software.\n"
    ).encode()


def driver_packages(releases: dict[str, str] | None = None) -> list[Package]:
    """The driver packages of every branch, or of `releases` ({branch: version}) only."""
    packages = []
    for branch, base in DRIVER_BRANCHES.items():
        if releases is not None and branch not in releases:
            continue
        spec = dict(base, version=releases[branch]) if releases else base
        version = f"{spec['version']}-1"
        captures = substituted_captures(spec["version"], spec["cuda"])
        readme = capture_readme(spec["version"], spec["cuda"])
        flavours = [("", "proprietary")] + ([("-open", "open")] if spec["open"] else [])
        for suffix, flavour in flavours:
            name = f"nvidia-driver-{branch}{suffix}"
            files = [
                ("/usr/bin/nvidia-smi", (STANDINS / "nvidia_smi.py").read_bytes(), 0o755),
                (
                    "/usr/bin/nvidia-persistenced",
                    standin("nvidia-persistenced.sh", DRIVER_VERSION=spec["version"]),
                    0o755,
                ),
                (
                    "/lib/systemd/system/nvidia-persistenced.service",
                    (STANDINS / "nvidia-persistenced.service").read_bytes(),
                    0o644,
                ),
                ("/usr/share/kindling-fixture/driver-branch", f"{branch}\n".encode(), 0o644),
                (
                    "/usr/share/kindling-fixture/driver-version",
                    f"{spec['version']}\n".encode(),
                    0o644,
                ),
                ("/usr/share/kindling-fixture/driver-flavour", f"{flavour}\n".encode(), 0o644),
                ("/usr/share/kindling-fixture/nvidia-smi/README", readme, 0o644),
            ]
            files += [
                (f"/usr/share/kindling-fixture/nvidia-smi/{capture}", data, 0o644)
                for capture, data in captures.items()
            ]
            conflicts = [DRIVER_VIRTUAL]
            if suffix:
                conflicts.append(f"nvidia-driver-{branch}")
            packages.append(
                Package(
                    name=name,
                    version=version,
                    section="non-free/libs",
                    summary_detail=(
                        f"Driver branch {branch} ({flavour} kernel modules), version "
                        f"{spec['version']}, CUDA {spec['cuda']}. Ships a stand-in "
                        "/usr/bin/nvidia-smi that replays real NVIDIA H200 captures with the "
                        f"driver version, CUDA version and GPU identity ({FIXTURE_GPU['name']}) "
                        "substituted, a stand-in nvidia-persistenced with its systemd unit, "
                        "and /usr/share/kindling-fixture/driver-branch. No kernel module, no "
                        "libraries. Conflicts with the other fixture driver branches, so "
                        "installing another branch replaces this one."
                    ),
                    depends=["python3"],
                    provides=[DRIVER_VIRTUAL],
                    conflicts=conflicts,
                    replaces=[DRIVER_VIRTUAL],
                    files=files,
                    postinst=DRIVER_POSTINST,
                )
            )
        if releases:
            continue
        packages.append(
            Package(
                name=f"cuda-drivers-{branch}",
                version=version,
                summary_detail=(
                    f"Metapackage for driver branch {branch}: depends on the fixture "
                    f"nvidia-driver-{branch} (= {version})."
                ),
                depends=[f"nvidia-driver-{branch} (= {version})"],
            )
        )
    return packages


def toolkit_packages() -> list[Package]:
    packages = []
    for release, spec in CUDA_TOOLKITS.items():
        dashed = release.replace(".", "-")
        prefix = f"/usr/lib/kindling-fixture/cuda-{release}"
        link = f"/usr/local/cuda-{release}"
        major, minor = (int(part) for part in release.split("."))
        cuda_h = textwrap.dedent(
            f"""\
            /* Kindling test fixture: stand-in for NVIDIA's cuda.h (CUDA {spec["full"]}).
             * Only the version macro, as the real header defines it. Not NVIDIA software. */
            #ifndef __cuda_cuda_h__
            #define __cuda_cuda_h__
            #define CUDA_VERSION {major * 1000 + minor * 10}
            #endif /* __cuda_cuda_h__ */
            """
        ).encode()
        version_json = json.dumps(
            {
                "cuda": {"name": "CUDA SDK", "version": spec["full"]},
                "cuda_nvcc": {"name": "CUDA NVCC", "version": spec["nvcc"]},
                "kindling_fixture": "Kindling test stand-in, not NVIDIA software",
            },
            indent=3,
        ).encode()
        nvcc = standin(
            "nvcc.py",
            COPYRIGHT_YEAR=spec["year"],
            BUILT_ON=spec["built_on"],
            CUDA_RELEASE=release,
            NVCC_VERSION=spec["nvcc"],
            BUILD=spec["build"],
        )
        postinst = textwrap.dedent(
            f"""\
            #!/bin/sh
            # Kindling test fixture: link the stand-in toolkit where NVIDIA's package installs it.
            # (/usr/local cannot be shipped by an equivs package; /usr/local/cuda is left to the
            # roles, as with the real packages' alternatives.)
            set -e
            if [ "$1" = "configure" ]; then
                mkdir -p /usr/local
                if [ -L {link} ] || [ ! -e {link} ]; then
                    ln -sfn {prefix} {link}
                fi
            fi
            #DEBHELPER#
            exit 0
            """
        )
        postrm = textwrap.dedent(
            f"""\
            #!/bin/sh
            set -e
            if [ "$1" = "remove" ] || [ "$1" = "purge" ]; then
                if [ "$(readlink {link} 2>/dev/null)" = "{prefix}" ]; then
                    rm -f {link}
                fi
            fi
            #DEBHELPER#
            exit 0
            """
        )
        packages.append(
            Package(
                name=f"cuda-toolkit-{dashed}",
                version=spec["package_version"],
                section="devel",
                summary_detail=(
                    f"CUDA toolkit {spec['full']}: ships {prefix}/{{bin/nvcc, "
                    f"lib64/libcudart.so.{release}.stub, include/cuda.h, version.json}} and "
                    f"links {link} to it in postinst. nvcc only answers --version (release "
                    f"{release}, V{spec['nvcc']}). Does not create /usr/local/cuda."
                ),
                depends=["python3"],
                files=[
                    (f"{prefix}/bin/nvcc", nvcc, 0o755),
                    (
                        f"{prefix}/lib64/libcudart.so.{release}.stub",
                        stub_library(f"the CUDA {release} runtime library libcudart"),
                        0o644,
                    ),
                    (f"{prefix}/include/cuda.h", cuda_h, 0o644),
                    (f"{prefix}/version.json", version_json + b"\n", 0o644),
                ],
                postinst=postinst,
                postrm=postrm,
            )
        )
    packages.append(
        Package(
            name="cuda",
            version="11.6.2-1",
            section="devel",
            summary_detail=(
                "The all-in-one CUDA 11.6.2 metapackage: depends on cuda-toolkit-11-6 and "
                "cuda-drivers-510, which is why the roles install the toolkit and driver "
                "packages separately instead."
            ),
            depends=["cuda-toolkit-11-6 (>= 11.6.2)", "cuda-drivers-510 (>= 510.47.03)"],
        )
    )
    return packages


def cudnn_packages() -> list[Package]:
    libdir = "/usr/lib/x86_64-linux-gnu"
    major, minor, patch = (int(part) for part in CUDNN8_VERSION.split(".")[:3])
    return [
        Package(
            name="libcudnn8",
            version=CUDNN8_PACKAGE_VERSION,
            section="libs",
            summary_detail=(
                f"cuDNN {CUDNN8_VERSION} runtime for CUDA 11.6: ships {libdir}/libcudnn.so.8.4.0 "
                "(a text file) and the libcudnn.so.8 symlink."
            ),
            files=[
                (
                    f"{libdir}/libcudnn.so.8.4.0",
                    stub_library(f"NVIDIA cuDNN {CUDNN8_VERSION} (libcudnn.so.8.4.0)"),
                    0o644,
                )
            ],
            links=[(f"{libdir}/libcudnn.so.8.4.0", f"{libdir}/libcudnn.so.8")],
        ),
        Package(
            name="libcudnn8-dev",
            version=CUDNN8_PACKAGE_VERSION,
            section="libdevel",
            summary_detail=(
                "cuDNN 8.4 development files: /usr/include/cudnn_version.h with the real "
                "header's version macros and the libcudnn.so symlink."
            ),
            depends=[f"libcudnn8 (= {CUDNN8_PACKAGE_VERSION})"],
            files=[
                (
                    "/usr/include/cudnn_version.h",
                    cudnn_version_header(major, minor, patch, 1000),
                    0o644,
                )
            ],
            links=[(f"{libdir}/libcudnn.so.8", f"{libdir}/libcudnn.so")],
        ),
        Package(
            name="libcudnn9-cuda-12",
            version=CUDNN9_PACKAGE_VERSION,
            section="libs",
            summary_detail=(
                "cuDNN 9.1.0.70 runtime for CUDA 12: ships "
                f"{libdir}/libcudnn.so.9.1.0 (a text file) and the libcudnn.so.9 symlink."
            ),
            files=[
                (
                    f"{libdir}/libcudnn.so.9.1.0",
                    stub_library("NVIDIA cuDNN 9.1.0.70 for CUDA 12 (libcudnn.so.9.1.0)"),
                    0o644,
                )
            ],
            links=[(f"{libdir}/libcudnn.so.9.1.0", f"{libdir}/libcudnn.so.9")],
        ),
        Package(
            name="libcudnn9-dev-cuda-12",
            version=CUDNN9_PACKAGE_VERSION,
            section="libdevel",
            summary_detail=(
                "cuDNN 9.1 development files: /usr/include/x86_64-linux-gnu/cudnn_version_v9.h "
                "(where the real package puts it) with the real header's version macros."
            ),
            depends=[f"libcudnn9-cuda-12 (= {CUDNN9_PACKAGE_VERSION})"],
            files=[
                (
                    "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
                    cudnn_version_header(9, 1, 0, 10000),
                    0o644,
                )
            ],
        ),
        Package(
            name="cudnn9-cuda-12",
            version=CUDNN9_PACKAGE_VERSION,
            summary_detail=(
                "cuDNN 9 for CUDA 12 metapackage: depends on the runtime and dev packages."
            ),
            depends=[
                f"libcudnn9-cuda-12 (= {CUDNN9_PACKAGE_VERSION})",
                f"libcudnn9-dev-cuda-12 (= {CUDNN9_PACKAGE_VERSION})",
            ],
        ),
    ]


def tool_packages(keyring: bytes) -> list[Package]:
    dcgm_upstream = DCGM_VERSION.split(":", 1)[1]
    ctk_upstream = CTK_VERSION.rsplit("-", 1)[0]
    return [
        Package(
            name="cuda-keyring",
            version="1.1-1",
            arch="all",
            summary_detail=(
                "Ships /usr/share/keyrings/cuda-archive-keyring.gpg containing the Kindling "
                "fixture TEST key (not NVIDIA's key). Unlike the real package it ships no "
                "apt sources list: the roles point apt at the fixture server themselves."
            ),
            files=[("/usr/share/keyrings/cuda-archive-keyring.gpg", keyring, 0o644)],
        ),
        Package(
            name="datacenter-gpu-manager",
            version=DCGM_VERSION,
            summary_detail=(
                f"DCGM {dcgm_upstream}: ships stand-ins /usr/bin/dcgmi (--version, discovery -l) "
                "and /usr/bin/nv-hostengine (waits; writes /run/nvhostengine.pid) and the "
                "nvidia-dcgm.service unit, which is not enabled on install."
            ),
            depends=["python3"],
            files=[
                ("/usr/bin/dcgmi", standin("dcgmi.py", VERSION=dcgm_upstream), 0o755),
                (
                    "/usr/bin/nv-hostengine",
                    standin("nv-hostengine.sh", VERSION=dcgm_upstream),
                    0o755,
                ),
                (
                    "/lib/systemd/system/nvidia-dcgm.service",
                    (STANDINS / "nvidia-dcgm.service").read_bytes(),
                    0o644,
                ),
            ],
        ),
        Package(
            name="nvidia-container-toolkit",
            version=CTK_VERSION,
            summary_detail=(
                f"NVIDIA Container Toolkit {ctk_upstream}: ships a stand-in /usr/bin/nvidia-ctk "
                "whose `runtime configure --runtime=docker [--config=PATH]` merges the nvidia "
                "runtime into docker's daemon.json as the real one does, and a stand-in "
                "/usr/bin/nvidia-container-runtime that cannot run containers."
            ),
            depends=["python3"],
            files=[
                ("/usr/bin/nvidia-ctk", standin("nvidia_ctk.py", VERSION=ctk_upstream), 0o755),
                (
                    "/usr/bin/nvidia-container-runtime",
                    standin("nvidia-container-runtime.sh", VERSION=ctk_upstream),
                    0o755,
                ),
            ],
        ),
    ]


def canary_package(version: str) -> Package:
    return Package(
        name=CANARY_PACKAGE,
        version=version,
        arch="all",
        summary_detail=(
            "Neither pinned nor held: the upgrade tests check that apt-get upgrade and "
            "unattended-upgrade do upgrade it, so a driver that stays put was really held."
        ),
        files=[("/usr/share/kindling-fixture/canary-version", f"{version}\n".encode(), 0o644)],
    )


def all_packages(keyring: bytes) -> list[Package]:
    return (
        tool_packages(keyring)
        + driver_packages()
        + toolkit_packages()
        + cudnn_packages()
        + [canary_package("1.0-1")]
    )


def later_packages() -> list[Package]:
    """What only the later snapshot of the repository has."""
    return [*driver_packages(LATER_POINT_RELEASES), canary_package("2.0-1")]


def make_equivs_template(work: Path) -> Path:
    system_template = Path("/usr/share/equivs/template")
    if not system_template.is_dir():
        raise BuildError(f"{system_template} missing: apt-get install equivs")
    template = work / "equivs-template"
    shutil.copytree(system_template, template)
    rules = template / "debian" / "rules"
    rules.write_text(EQUIVS_RULES)
    rules.chmod(0o755)
    return template


def build_package(pkg: Package, work: Path, template: Path) -> Path:
    pkgdir = work / "pkg" / f"{pkg.name}_{pkg.version}"
    pkgdir.mkdir(parents=True)
    fields = [
        ("Section", pkg.section),
        ("Priority", "optional"),
        ("Standards-Version", "4.5.0"),
        ("Package", pkg.name),
        ("Version", pkg.version),
        ("Maintainer", MAINTAINER),
        ("Architecture", pkg.arch),
    ]
    for name, values in (
        ("Depends", pkg.depends),
        ("Provides", pkg.provides),
        ("Conflicts", pkg.conflicts),
        ("Replaces", pkg.replaces),
    ):
        if values:
            fields.append((name, ", ".join(values)))
    if pkg.files:
        entries = []
        for index, (path, content, mode) in enumerate(pkg.files):
            staged = pkgdir / "files" / str(index) / os.path.basename(path)
            staged.parent.mkdir(parents=True)
            staged.write_bytes(content)
            staged.chmod(mode)
            entries.append(f"{staged.relative_to(pkgdir)} {os.path.dirname(path)}")
        fields.append(("Files", "\n ".join(entries)))
    if pkg.links:
        fields.append(("Links", "\n ".join(f"{target} {link}" for target, link in pkg.links)))
    for script in ("postinst", "postrm"):
        body = getattr(pkg, script)
        if body:
            (pkgdir / script).write_text(body)
            fields.append((script.capitalize(), script))
    fields.append(("Description", pkg.description))
    control = "".join(f"{name}: {value}\n" for name, value in fields)
    (pkgdir / "control").write_text(control)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "DEB_BUILD_OPTIONS": "nocheck"}
    run(["equivs-build", "--templates", template, "control"], cwd=pkgdir, env=env)
    upstream_version = pkg.version.split(":", 1)[-1]
    deb = pkgdir / f"{pkg.name}_{upstream_version}_{pkg.arch}.deb"
    if not deb.is_file():
        raise BuildError(f"equivs-build did not produce {deb.name}")
    return deb


# --------------------------------------------------------------------------------------------
# apt repository


def build_apt_repo(
    debs: list[Path], repo: Path, out: Path, keys: dict, armored: bytes, signer: str = "fixture"
) -> None:
    """A flat repository of `debs`, its Release signed by keys[signer]; the .pub beside the
    packages is always the fixture key (what the roles download and check)."""
    repo.mkdir(parents=True)
    for deb in debs:
        link_or_copy(deb, repo / deb.name)
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    packages = run(["apt-ftparchive", "packages", "."], cwd=repo, env=env).stdout
    (repo / "Packages").write_bytes(packages)
    (repo / "Packages.gz").write_bytes(gzip.compress(packages, compresslevel=9, mtime=0))
    fingerprint = keys["fixture"]["fingerprint"]
    signing_fingerprint = keys[signer]["fingerprint"]
    # NVIDIA publishes its repo key beside the packages as <last 8 hex digits of its id>.pub
    (repo / f"{fingerprint[-8:].lower()}.pub").write_bytes(armored)
    options = {
        "Origin": "NVIDIA",
        "Label": "NVIDIA CUDA",
        "Description": (
            "Kindling test fixture: stand-in for NVIDIA's CUDA repository for Debian 12, "
            "built by tests/fixture_sources/build_fixtures.py; not NVIDIA software"
        ),
    }
    cmd = ["apt-ftparchive"]
    for name, value in options.items():
        cmd += ["-o", f"APT::FTPArchive::Release::{name}={value}"]
    release = run([*cmd, "release", "."], cwd=repo, env=env).stdout
    (repo / "Release").write_bytes(release)
    home = out / "gnupg"
    common = ["--yes", "--local-user", signing_fingerprint, "--digest-algo", "SHA256"]
    gpg(home, *common, "--clearsign", "--output", repo / "InRelease", repo / "Release")
    gpg(
        home,
        *common,
        "--armor",
        "--detach-sign",
        "--output",
        repo / "Release.gpg",
        repo / "Release",
    )


def verify_repo(repo: Path, keyring: Path) -> None:
    for args in (["InRelease"], ["Release.gpg", "Release"]):
        run(["gpgv", "--keyring", keyring, *args], cwd=repo)


def parse_packages(text: str) -> dict[str, str]:
    versions = {}
    for stanza in text.strip().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        versions[fields["Package"]] = fields["Version"]
    return versions


# --------------------------------------------------------------------------------------------
# cuDNN redistributable tarball


def build_cudnn_tarball(dest_dir: Path) -> dict:
    """Write the reproducible cuDNN 8.4 redist tarball stand-in and its .sha256 file."""
    top = CUDNN8_TARBALL_TOP
    major, minor, patch = (int(part) for part in CUDNN8_VERSION.split(".")[:3])
    readme = (
        b"Kindling test fixture: stand-in for NVIDIA's cuDNN 8.4.0.27 redistributable archive for\n"
        b"CUDA 11.6, built by tests/fixture_sources/build_fixtures.py. Same layout and file names\n"
        b"as the real archive; the library is a text file. Not NVIDIA software.\n"
    )
    entries = [
        (f"{top}", None, 0o755, None),
        (f"{top}/KINDLING-TEST-FIXTURE.txt", readme, 0o644, None),
        (f"{top}/include", None, 0o755, None),
        (
            f"{top}/include/cudnn_version.h",
            cudnn_version_header(major, minor, patch, 1000),
            0o644,
            None,
        ),
        (f"{top}/lib", None, 0o755, None),
        (
            f"{top}/lib/libcudnn.so.8.4.0",
            stub_library(f"NVIDIA cuDNN {CUDNN8_VERSION} (libcudnn.so.8.4.0)"),
            0o755,
            None,
        ),
        (f"{top}/lib/libcudnn.so.8", None, 0o777, "libcudnn.so.8.4.0"),
        (f"{top}/lib/libcudnn.so", None, 0o777, "libcudnn.so.8"),
    ]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, content, mode, link in sorted(entries, key=lambda entry: entry[0]):
            info = tarfile.TarInfo(name)
            info.mtime = TARBALL_MTIME
            info.mode = mode
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if link is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = link
                tar.addfile(info)
            elif content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    data = lzma.compress(buffer.getvalue(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6)
    dest_dir.mkdir(parents=True, exist_ok=True)
    name = f"{top}.tar.xz"
    (dest_dir / name).write_bytes(data)
    digest = sha256_bytes(data)
    (dest_dir / f"{name}.sha256").write_text(f"{digest}  {name}\n")
    return {"name": name, "sha256": digest, "size": len(data)}


# --------------------------------------------------------------------------------------------
# PyTorch wheel index


def wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.count("/") == 1 and member.endswith(".dist-info/METADATA"):
                return archive.read(member).decode("utf-8")
    raise BuildError(f"{wheel.name} has no .dist-info/METADATA")


def metadata_field(metadata: str, name: str) -> list[str]:
    header = metadata.split("\n\n", 1)[0]
    prefix = f"{name}: "
    return [line[len(prefix) :].strip() for line in header.splitlines() if line.startswith(prefix)]


def runtime_requirements(wheel: Path) -> list[str]:
    """Requires-Dist entries of the wheel that are not behind an extra."""
    requirements = []
    for entry in metadata_field(wheel_metadata(wheel), "Requires-Dist"):
        marker = entry.partition(";")[2]
        if re.search(r"\bextra\s*==", marker):
            continue
        requirements.append(entry)
    return requirements


def download_dependencies(torch_wheel: Path, cache: Path) -> list[Path]:
    """pip-download torch's runtime dependencies (and theirs) for CPython 3.11 into cache."""
    requirements = runtime_requirements(torch_wheel)
    key = sha256_bytes(json.dumps([requirements, PIP_TARGET_ARGS]).encode())[:16]
    manifest = cache / f"manifest-{key}.json"
    if manifest.is_file():
        names = json.loads(manifest.read_text())["files"]
        if all((cache / name).is_file() for name in names):
            return [cache / name for name in names]
    cache.mkdir(parents=True, exist_ok=True)
    log(f"fixture wheels: pip download {len(requirements)} torch dependencies into {cache}")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        *PIP_TARGET_ARGS,
        "-d",
        cache,
        *requirements,
    ]
    output = run(cmd).stdout.decode(errors="replace")
    names = sorted(
        {
            Path(match.group(2).strip()).name
            for match in re.finditer(r"^\s*(Saved|File was already downloaded) (.+)$", output, re.M)
        }
    )
    if not names:
        raise BuildError(f"pip download reported no files:\n{output[-2000:]}")
    manifest.write_text(json.dumps({"requirements": requirements, "files": names}, indent=2))
    return [cache / name for name in names]


def normalize_project(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel_index(wheels: list[Path], index: Path) -> dict:
    index.mkdir(parents=True)
    projects: dict[str, list[dict]] = {}
    for wheel in sorted(wheels, key=lambda path: path.name):
        link_or_copy(wheel, index / wheel.name)
        metadata = wheel_metadata(wheel)
        project = normalize_project(metadata_field(metadata, "Name")[0])
        requires_python = (metadata_field(metadata, "Requires-Python") or [""])[0]
        projects.setdefault(project, []).append(
            {
                "filename": wheel.name,
                "sha256": sha256_file(wheel),
                "size": wheel.stat().st_size,
                "requires_python": requires_python,
                "version": metadata_field(metadata, "Version")[0],
            }
        )
    head = '<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" content="1.0">\n'
    root_links = []
    for project, files in sorted(projects.items()):
        links = []
        for entry in files:
            href = "../" + urllib.parse.quote(entry["filename"]) + "#sha256=" + entry["sha256"]
            attrs = f'href="{html.escape(href)}"'
            if entry["requires_python"]:
                attrs += f' data-requires-python="{html.escape(entry["requires_python"])}"'
            links.append(f"<a {attrs}>{html.escape(entry['filename'])}</a><br/>")
        page = (
            f"{head}<title>Links for {project}</title>\n</head>\n<body>\n"
            f"<!-- Kindling test fixture: stand-in for the PyTorch wheel index -->\n"
            f"<h1>Links for {project}</h1>\n" + "\n".join(links) + "\n</body>\n</html>\n"
        )
        (index / project).mkdir()
        (index / project / "index.html").write_text(page)
        root_links.append(f'<a href="{project}/">{project}</a><br/>')
    (index / "index.html").write_text(
        f"{head}<title>Simple index</title>\n</head>\n<body>\n"
        "<!-- Kindling test fixture: stand-in for https://download.pytorch.org/whl/cpu/ -->\n"
        + "\n".join(root_links)
        + "\n</body>\n</html>\n"
    )
    return projects


# --------------------------------------------------------------------------------------------
# stamp / driver


def build_inputs_digest(torch_wheel: Path, keys: dict) -> str:
    digest = hashlib.sha256()
    own = [Path(__file__).resolve(), *sorted(p for p in STANDINS.rglob("*") if p.is_file())]
    for path in own + [CAPTURES / name for name in CAPTURE_FILES]:
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0")
        digest.update(sha256_file(path).encode())
    stat = torch_wheel.stat()
    digest.update(f"{torch_wheel.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(json.dumps(keys, sort_keys=True).encode())
    return digest.hexdigest()


def check_tools() -> None:
    missing = sorted({pkg for tool, pkg in REQUIRED_TOOLS.items() if shutil.which(tool) is None})
    if missing:
        raise BuildError(
            "missing build tools; install them with: apt-get install " + " ".join(missing)
        )


def find_torch_wheel(explicit: str | None) -> Path:
    wheel = Path(explicit or os.environ.get("KINDLING_TORCH_WHEEL") or DEFAULT_TORCH_WHEEL)
    if not wheel.is_file():
        raise BuildError(
            f"torch wheel not found at {wheel}.\n"
            f"The PyTorch index fixture serves the real CPU wheel {TORCH_WHEEL_NAME}; it is not\n"
            f"committed. Download it from {TORCH_WHEEL_ORIGIN}\n"
            f"and place it at {DEFAULT_TORCH_WHEEL} (or pass --torch-wheel PATH, or set\n"
            "KINDLING_TORCH_WHEEL)."
        )
    return wheel.resolve()


def index_page(info: dict) -> str:
    rows = []
    for label, path in (
        ("NVIDIA CUDA apt repository stand-in (flat, signed)", APT_REPO_PATH + "/"),
        ("cuDNN redistributable tarball stand-in", CUDNN_REDIST_PATH + "/"),
        ("PyTorch CPU wheel index stand-in (PEP 503)", WHEEL_INDEX_PATH + "/"),
        ("Test signing keys", "keys/"),
        ("What is served (JSON)", "fixtures.json"),
        ("Checksums (JSON)", "checksums.json"),
    ):
        rows.append(f'<li><a href="{path}">{html.escape(path)}</a> - {html.escape(label)}</li>')
    return (
        "<!DOCTYPE html>\n<html>\n<head><title>Kindling test fixture server</title></head>\n"
        "<body>\n<h1>Kindling test fixture server</h1>\n"
        "<p>This is a <strong>test fixture</strong> for Kindling's Molecule tests: local "
        "stand-ins for NVIDIA's package repositories and the PyTorch wheel index, built by "
        "<code>tests/fixture_sources/build_fixtures.py</code> and served on loopback. The apt "
        "packages and the cuDNN tarball are stand-ins, not NVIDIA software; they are signed "
        "with a TEST key (fingerprint "
        f"<code>{html.escape(info['keys']['fixture']['fingerprint'])}</code>). The torch wheel "
        "and its dependencies are the real ones. See docs/FIXTURES.md.</p>\n"
        "<ul>\n" + "\n".join(rows) + "\n</ul>\n</body>\n</html>\n"
    )


def build(out: Path, torch_wheel: Path, wheel_cache: Path, keys: dict, jobs: int) -> dict:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        srv = work / "srv"
        srv.mkdir()
        exported = export_keys(out, keys, srv)
        template = make_equivs_template(work)
        packages = all_packages(exported["binary"])
        extra = later_packages()
        log(
            f"fixture packages: building {len(packages) + len(extra)} packages with equivs "
            f"({jobs} at a time)"
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            debs = list(pool.map(lambda pkg: build_package(pkg, work, template), packages))
            later_debs = list(pool.map(lambda pkg: build_package(pkg, work, template), extra))
        repo = srv / APT_REPO_PATH
        build_apt_repo(debs, repo, out, keys, exported["armored"])
        verify_repo(repo, srv / "keys" / KEYRING_NAME)
        versions = parse_packages((repo / "Packages").read_text())
        later = srv / LATER_REPO_PREFIX / APT_REPO_PATH
        later_debs = [
            deb for deb in debs if not deb.name.startswith(CANARY_PACKAGE + "_")
        ] + later_debs
        build_apt_repo(later_debs, later, out, keys, exported["armored"])
        verify_repo(later, srv / "keys" / KEYRING_NAME)
        rotated = srv / ROTATED_REPO_PREFIX / APT_REPO_PATH
        build_apt_repo(debs, rotated, out, keys, exported["armored"], signer="wrong")
        verify_repo(rotated, srv / "keys" / WRONG_KEYRING_NAME)

        tarball = build_cudnn_tarball(srv / CUDNN_REDIST_PATH)

        wheels = [torch_wheel, *download_dependencies(torch_wheel, wheel_cache)]
        projects = build_wheel_index(wheels, srv / WHEEL_INDEX_PATH)

        checksums = {
            f"{CUDNN_REDIST_PATH}/{tarball['name']}": {
                "sha256": tarball["sha256"],
                "size": tarball["size"],
            }
        }
        for deb in sorted(repo.glob("*.deb")):
            checksums[f"{APT_REPO_PATH}/{deb.name}"] = {
                "sha256": sha256_file(deb),
                "size": deb.stat().st_size,
            }
        for files in projects.values():
            for entry in files:
                checksums[f"{WHEEL_INDEX_PATH}/{entry['filename']}"] = {
                    "sha256": entry["sha256"],
                    "size": entry["size"],
                }
        (srv / "checksums.json").write_text(json.dumps(checksums, indent=2, sort_keys=True) + "\n")

        info = {
            "kind": "kindling-test-fixture",
            "notice": FIXTURE_NOTICE,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "keys": exported["info"],
            "apt_repository": {
                "stands_in_for": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
                "path": APT_REPO_PATH + "/",
                "sources_line": (
                    "deb [signed-by=/usr/share/keyrings/kindling-fixture-archive-keyring.gpg] "
                    f"http://127.0.0.1:PORT/{APT_REPO_PATH}/ /"
                ),
                "key_file": f"{APT_REPO_PATH}/{keys['fixture']['fingerprint'][-8:].lower()}.pub",
                "packages": versions,
                "later_snapshot": {
                    "path": f"{LATER_REPO_PREFIX}/{APT_REPO_PATH}/",
                    "adds": {
                        **{
                            f"nvidia-driver-{branch}": f"{version}-1"
                            for branch, version in LATER_POINT_RELEASES.items()
                        },
                        CANARY_PACKAGE: "2.0-1",
                    },
                },
                "rotated_key_copy": {
                    "path": f"{ROTATED_REPO_PREFIX}/{APT_REPO_PATH}/",
                    "signed_by": keys["wrong"]["fingerprint"],
                },
                "dkms_delay_file": DKMS_DELAY_FILE,
                "driver_branches": DRIVER_BRANCHES,
                "gpu_identity": FIXTURE_GPU,
            },
            "cudnn_tarball": {
                "stands_in_for": "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/linux-x86_64/",
                "path": f"{CUDNN_REDIST_PATH}/{tarball['name']}",
                "version": CUDNN8_VERSION,
                "cuda": "11.6",
                "sha256": tarball["sha256"],
                "size": tarball["size"],
            },
            "pytorch_index": {
                "stands_in_for": "https://download.pytorch.org/whl/cpu/",
                "path": WHEEL_INDEX_PATH + "/",
                "note": "real wheels: the CPU torch wheel and its runtime dependencies from PyPI",
                "projects": {
                    project: [{k: e[k] for k in ("filename", "version", "sha256")} for e in files]
                    for project, files in projects.items()
                },
            },
        }
        (srv / "fixtures.json").write_text(json.dumps(info, indent=2) + "\n")
        (srv / "index.html").write_text(index_page(info))

        final = out / "srv"
        if final.exists():
            final.rename(work / "old-srv")
        srv.rename(final)
        return {
            "debs": len(debs),
            "wheels": len(wheels),
            "tarball": tarball,
            "seconds": time.monotonic() - started,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Build Kindling's test-fixture package sources (stand-ins for vendor servers)."
    )
    parser.add_argument("--out", required=True, help="output dir; the document root is <out>/srv")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument(
        "--new-keys", action="store_true", help="generate new test keys (implies --force)"
    )
    parser.add_argument(
        "--torch-wheel",
        help=f"CPU torch wheel to serve (default $KINDLING_TORCH_WHEEL or {DEFAULT_TORCH_WHEEL})",
    )
    parser.add_argument(
        "--wheel-cache", help="where pip-downloaded dependency wheels are kept (<out>/wheel-cache)"
    )
    parser.add_argument(
        "--jobs", type=int, default=max(2, os.cpu_count() or 2), help="parallel package builds"
    )
    args = parser.parse_args(argv)

    out = Path(args.out).resolve()
    started = time.monotonic()
    try:
        check_tools()
        torch_wheel = find_torch_wheel(args.torch_wheel)
        out.mkdir(parents=True, exist_ok=True)
        with (out / ".build.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                for stale in out.glob(".build-*"):  # left by an interrupted build
                    shutil.rmtree(stale, ignore_errors=True)
                keys = ensure_keys(out, args.new_keys)
                digest = build_inputs_digest(torch_wheel, keys)
                stamp = out / ".build-stamp"
                complete = (out / "srv" / "fixtures.json").is_file()
                if (
                    not (args.force or args.new_keys)
                    and complete
                    and stamp.is_file()
                    and json.loads(stamp.read_text()).get("inputs") == digest
                ):
                    print(
                        f"kindling fixtures: up to date in {out / 'srv'} "
                        f"(inputs {digest[:12]}, checked in {time.monotonic() - started:.1f}s; "
                        "--force rebuilds)"
                    )
                    return 0
                stamp.unlink(missing_ok=True)
                wheel_cache = Path(args.wheel_cache).resolve() if args.wheel_cache else None
                result = build(
                    out, torch_wheel, wheel_cache or out / "wheel-cache", keys, max(1, args.jobs)
                )
                stamp.write_text(json.dumps({"inputs": digest, "built_at": time.time()}) + "\n")
            finally:
                stop_gpg_agent(out)
    except BuildError as exc:
        print(f"build_fixtures: error: {exc}", file=sys.stderr)
        return 1
    print(
        f"kindling fixtures: built {result['debs']} debs (signed repo), cuDNN tarball "
        f"{result['tarball']['sha256'][:12]}, {result['wheels']} wheels into {out / 'srv'} "
        f"in {result['seconds']:.1f}s (test key {keys['fixture']['fingerprint']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
