#!/usr/bin/env python3
"""Build Kindling's TEST FIXTURE package sources: local stand-ins for vendor servers.

The build/test machine cannot reach NVIDIA's repositories or the PyTorch wheel index, so the
Molecule tests install the roles' real package names from stand-ins built here, from code in this
directory, and served on loopback by serve_fixtures.py. Nothing built here is NVIDIA or PyTorch
software except the CPU torch wheel for CPython 3.11 and its PyPI dependencies, which are real and
served as is. The torch wheel for CPython 3.9 is a STAND-IN built here (STANDIN_TORCH below).

    python3 tests/fixture_sources/build_fixtures.py --out .cache/fixtures [--force]

writes into <out>/srv (the HTTP document root):

    keys/                                   test signing key (+ an unrelated "wrong" key)
    compute/cuda/repos/debian12/x86_64/     signed flat apt repo shaped like NVIDIA's (debian)
    compute/cuda/repos/ubuntu2204/x86_64/   the same for the ubuntu layout (driver packages only)
    compute/cudnn/redist/                   redistrib_<ver>.json + cudnn/linux-x86_64/<archive>
    whl/cpu/                                PEP 503 index: real CPU torch wheel (cp311) + deps,
                                            stand-in torch 2.8.0+cpu (cp39) + real deps
    index.html, fixtures.json, checksums.json   what is served, and that it is a fixture

The driver packages carry a stand-in nvidia-smi (real H200 captures; a constructed 8-GPU HGX set
for NVSwitch tests), and beside each driver release are stand-ins for NVIDIA's fabric manager and
NSCQ packages at its version (and nvlsm), so the roles' NVSwitch steps run too.

The build is skipped when a stamp of its inputs (this script, standins/, the captures, the HGX
case, the vendor catalogue modules, the torch wheel, the keys) matches; --force rebuilds. See
docs/FIXTURES.md.

Needs the project's virtualenv (for ansible.module_utils: the package names come from the vendor
catalogue through module_utils/stack_plan.py) plus equivs, apt-utils, gnupg and dpkg-dev.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import fcntl
import gzip
import hashlib
import html
import html.parser
import io
import json
import lzma
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
STANDINS = HERE / "standins"
CAPTURES = REPO_ROOT / "tests" / "fixtures" / "captures" / "h200"
MODULE_UTILS = REPO_ROOT / "module_utils"
# The vendor catalogue and the decisions made from it: package names come from here.
CATALOGUE_FILES = ("vendor_catalogue.py", "stack_plan.py", "gpu_compat.py")

import ansible.module_utils  # noqa: E402  (the project's module_utils, imported as the tests do)

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))
from ansible.module_utils import gpu_compat, stack_plan  # noqa: E402
from ansible.module_utils.vendor_catalogue import CATALOGUE  # noqa: E402

REPOSITORIES = stack_plan.REPOSITORIES
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
# The real wheel's interpreter: its dependencies are downloaded for this Python.
TORCH_WHEEL_PYTHON = "3.11"


def pip_target_args(python_version: str) -> tuple[str, ...]:
    """pip download's options for wheels that install on CPython python_version, x86_64 Linux."""
    return (
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--platform",
        "manylinux2014_x86_64",
        "--platform",
        "manylinux_2_17_x86_64",
        "--platform",
        "any",
    )


# The STAND-IN torch for CPython 3.9 (Debian 11's python3): no registry these machines reach
# serves a CPU torch for cp39 (download.pytorch.org is unreachable; PyPI's Linux torch wheels
# are CUDA builds of about 1 GB that need GBs of nvidia-* wheels). So the build makes a wheel
# under the real CPU wheel's name whose metadata is the real release's (Requires-Python and
# Requires-Dist from PyPI's torch 2.8.0 cp39 wheel, minus the CUDA-only requirements, which
# PyTorch's CPU wheels don't declare) and whose code is standins/torch/: a minimal torch that
# answers what module_utils/torch_probe.py asks on a CPU host. docs/FIXTURES.md says more.
STANDIN_TORCH = {
    "version": "2.8.0",
    "local": "cpu",
    "python": "3.9",
    "tag": "cp39-cp39-manylinux_2_28_x86_64",
    # The real wheel on PyPI whose metadata the stand-in carries, and where its page is.
    "pypi_wheel": "torch-2.8.0-cp39-cp39-manylinux_2_28_x86_64.whl",
    "pypi_simple": "https://pypi.org/simple/torch/",
    # Stands in for this file of PyTorch's CPU index.
    "origin": "https://download.pytorch.org/whl/cpu/torch-2.8.0%2Bcpu-cp39-cp39-manylinux_2_28_x86_64.whl",
    # Fixed zip entry time (the real release's upload day), so the wheel's sha256 is stable.
    "date_time": (2025, 8, 6, 0, 0, 0),
}
STANDIN_TORCH_WHEEL = (
    f"torch-{STANDIN_TORCH['version']}+{STANDIN_TORCH['local']}-{STANDIN_TORCH['tag']}.whl"
)
# Requirements of PyPI's (CUDA) torch wheel that PyTorch's CPU wheels don't have.
CUDA_ONLY_REQUIREMENT = re.compile(r"^(nvidia[-_.]|triton\b)", re.IGNORECASE)

APT_REPO_PATH = "compute/cuda/repos/debian12/x86_64"
CONTAINER_TOOLKIT_REPO_PATH = "libnvidia-container/stable/deb/amd64"
CUDNN_REDIST_ROOT = "compute/cudnn/redist"
CUDNN_REDIST_PATH = f"{CUDNN_REDIST_ROOT}/cudnn/linux-x86_64"
WHEEL_INDEX_PATH = "whl/cpu"
KEYRING_NAME = "kindling-fixture-archive-keyring.gpg"
WRONG_KEYRING_NAME = "wrong-archive-keyring.gpg"

MAINTAINER = "Kindling test fixtures <test-fixtures@kindling.invalid>"
FIXTURE_NOTICE = (
    "Kindling test fixture: local stand-in for a vendor package source, built by "
    "tests/fixture_sources/build_fixtures.py. Not NVIDIA or PyTorch software."
)

# The GPU identity the stand-in nvidia-smi reports. The captures come from an H200, which needs
# CUDA >= 11.8; the fixture claims an A100 (Ampere, runs every fixture branch and CUDA).
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

# The NVSwitch host the stand-in nvidia-smi can also be: the constructed 8-GPU H100 NVLink case
# (not a capture), packaged in the hgx/ subdirectory of the captures and chosen by writing
# HGX_CASE to SMI_CASE_FILE. Its GPUs' fabric state is the stand-in fabric manager's
# (FABRIC_STATE_FILE). Another part of the tests owns the case and may add a <fabric> element and
# an nvlink-s.txt to it; the build reads whatever is there and makes what is missing.
HGX_SOURCE = REPO_ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-8gpu"
HGX_CASE = "hgx"
HGX_GPUS = 8
# Per-link speed nvidia-smi nvlink -s reports for H100/H200 NVLink 4 links (users' posts of
# `nvidia-smi nvlink --status` on DGX/HGX H100 and H200 hosts).
HGX_NVLINK_SPEED = "26.562 GB/s"
HGX_XML_COMMENT = (
    "<!-- Kindling test stand-in: CONSTRUCTED 8-GPU HGX document (not a capture) from "
    "tests/fixtures/nvidia_smi/h100-8gpu with the package's driver/CUDA versions -->"
)
SMI_CASE_FILE = "/etc/kindling-fixture/nvidia-smi-case"
FABRIC_STATE_FILE = "/run/nvidia-fabricmanager/fabric-state"
FABRIC_MANAGER_FAIL_FILE = "/etc/kindling-fixture/fabric-manager-fail"

# The fixture repositories and their driver releases: the one place that says which branches
# and versions the stand-ins have. Package names and dependency shapes are not spelt here: they
# come from the vendor catalogue (data/vendor_catalogue.yml) through module_utils/stack_plan.py,
# for the layout the catalogue gives each repository ("debian" for debian12, "ubuntu" for
# ubuntu2204). debian12 is what the Molecule hosts use; ubuntu2204 exists so that the unit tests
# can show the other layout (branch-suffixed names up to 580, NVIDIA's unsuffixed names and
# pinning packages from 590).
FIXTURE_REPOS = {
    "debian12": {
        "branches": {
            "550": {"version": "550.54.15", "cuda": "12.4"},
            "580": {"version": "580.95.05", "cuda": "13.0"},
        },
        # A point release NVIDIA published after a host was set up: only in the "later"
        # snapshot of the repository (LATER_REPO_PREFIX), which the fault tests switch a
        # converged host to, to prove a held driver does not move under apt-get upgrade or
        # unattended-upgrade.
        "later": {"580": "580.105.08"},
    },
    "ubuntu2204": {
        "branches": {
            "550": {"version": "550.54.15", "cuda": "12.4"},
            "580": {"version": "580.95.05", "cuda": "13.0"},
            "590": {"version": "590.48.01", "cuda": "13.1"},
        },
        "later": {},
    },
}
PRIMARY_REPO = "debian12"
LATER_POINT_RELEASES = FIXTURE_REPOS[PRIMARY_REPO]["later"]
# Debian revision of the driver packages per layout (NVIDIA's: 580.95.05-1 on Debian,
# 580.95.05-0ubuntu1 on Ubuntu), and of the branch-pinning packages (590-1ubuntu1).
DRIVER_REVISIONS = {"debian": "1", "ubuntu": "0ubuntu1"}
PINNING_REVISIONS = {"debian": "1", "ubuntu": "1ubuntu1"}
# The Debian layout's open-module metapackage. The catalogue names it only as a branch/flavour
# selection package (driver_selection_packages), not in a driver_packages row; the build
# checks that it is still there.
DEBIAN_OPEN_METAPACKAGE = "nvidia-open"
# Virtual packages of the stand-ins (not NVIDIA names): the ubuntu layout's driver packages
# (which carry their kernel modules) conflict through DRIVER_VIRTUAL, the debian layout's
# kernel-module packages through KERNEL_MODULE_VIRTUAL.
DRIVER_VIRTUAL = "kindling-fixture-nvidia-driver"
KERNEL_MODULE_VIRTUAL = "kindling-fixture-nvidia-kernel-module"
# What the stand-in nvidia-persistenced writes and the stand-in nvidia-smi reads.
PERSISTENCE_STATE_FILE = "/run/nvidia-persistenced/persistence-mode"

# NVIDIA's fabric manager and NSCQ packages (names: the catalogue's fabric_manager_packages),
# one pair per driver release, at the driver's upstream version. Their Debian revision is not
# the driver's: NVIDIA builds them with REVISION 1 (NVIDIA/apt-packaging-fabric-manager and
# apt-packaging-libnvidia-nscq debian/rules, changelog "#VERSION#-#REVISION#"), on Ubuntu too
# (NVIDIA/gpu-driver-container @4fa1eba ubuntu22.04/Dockerfile installs
# nvidia-fabricmanager-${DRIVER_BRANCH}=${DRIVER_VERSION}-1; a user's Ubuntu pin file has
# nvidia-fabricmanager-560 at 560.35.03-1 beside drivers at 560.35.03-0ubuntu1). Ubuntu's
# packages of the branches with a pinning package (590+) carry -1ubuntu1 (a user's listing of
# NVIDIA's ubuntu2404 repository: libnvidia-nscq 595.71.05-1ubuntu1).
FABRIC_MANAGER_REVISION = {"default": "1", "ubuntu-pinned": "1ubuntu1"}
# From 570 NVIDIA's unit starts the daemon through nvidia-fabricmanager-start.sh (--mode
# precheck as ExecStartPre, --mode start as ExecStart; spectrocloud/CanvOS PR 700 on 570+, a
# 590.48.01 host's `systemctl status`); before, ExecStart runs nv-fabricmanager itself.
FABRIC_MANAGER_START_SCRIPT_FROM = 570
# NSCQ's library file and the SONAME link consumers open (libnvidia-nscq.so.2: DCGM's and the
# NVIDIA attestation SDK's dlopen names, as third-party code and crash traces show).
NSCQ_LIBRARY_DIR = "/usr/lib/x86_64-linux-gnu"
NSCQ_LIBRARY = "libnvidia-nscq.so"
NSCQ_SONAME = "2"
# NVLink 5 packages: nvlsm is NVIDIA's, with a date-based version (users install
# nvlsm_2025.10.11-1_amd64.deb from NVIDIA's ubuntu2204 repository); infiniband-diags, the other
# package of the catalogue's nvlink5_packages row, is the distribution's own (Debian's and
# Ubuntu's archives serve it, real), so the fixture does not stand in for it.
NVLSM_VERSION = "2025.10.11-1"
NVLSM_CONFIG = "/usr/share/nvidia/nvlsm/nvlsm.conf"  # gpu-driver-container's nvlsm_config_file
DISTRIBUTION_NVLINK5_PACKAGES = {"infiniband-diags"}


def repo_path(repo_id: str) -> str:
    return f"compute/cuda/repos/{repo_id}/x86_64"


# A package with no pin and no hold: 1.0 in the repository, 2.0 in the later snapshot. The
# upgrade tests assert that it DOES move, so they can tell "held" from "nothing to upgrade".
CANARY_PACKAGE = "kindling-fixture-canary"
# Copies of the debian12 repository under a prefix, as served (see docs/FIXTURES.md):
#   later/   the same packages plus LATER_POINT_RELEASES and canary 2.0, signed by the test key
#   rotated/ the same packages, but Release signed by the "wrong" key while the .pub beside the
#            packages is still the old one: apt reports NO_PUBKEY, as every host did after
#            NVIDIA's 2022 key rotation
LATER_REPO_PREFIX = "later"
ROTATED_REPO_PREFIX = "rotated"
# The stand-in kernel-module package's postinst (in the ubuntu layout: the driver package's),
# the place where a real nvidia-kernel-dkms builds the kernel module for minutes. A test that
# must interrupt an install in the middle writes a number of seconds to this file; without it
# the postinst returns at once.
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
    "13.0": {
        "package_version": "13.0.2-1",
        "full": "13.0.2",
        "nvcc": "13.0.88",
        "year": "2025",
        "built_on": "Wed_Aug_20_01:58:59_PM_PDT_2025",
        "build": "cuda_13.0.r13.0/compiler.36424714_0",
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
# The all-in-one `cuda` metapackage (which the roles never install: it pulls a driver in).
CUDA_METAPACKAGE = {"name": "cuda", "version": "13.0.2-1", "cuda": "13.0", "driver_branch": "580"}

# cuDNN from apt: one build, for each CUDA major of the toolkits (names from the catalogue's
# cudnn_apt_naming via gpu_compat.cudnn_packages).
CUDNN_APT_VERSION = "9.14.0.64"
CUDNN_APT_CUDA = ("13.0", "12.4")
# cuDNN redistributable archive, served as NVIDIA's redist tree: a redistrib_<X.Y.Z>.json
# manifest beside cudnn/linux-x86_64/<archive>.
CUDNN_REDIST = {
    "version": "9.13.0.50",
    "label": "9.13.0",
    "release_date": "2025-09-04",
    "cuda_variants": ["12", "13"],  # what the manifest says the release has
    "variant": "13",  # the one archive the fixture builds
}
TARBALL_MTIME = 1756944000  # 2025-09-04T00:00:00Z: fixed so the tarball's sha256 is stable

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
    "gcc": "gcc libc6-dev",
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
        "topology, the XML DTD version) is the H200's, unchanged. The hgx/ subdirectory holds "
        "a different, CONSTRUCTED set (an 8-GPU NVSwitch host, see hgx/README)."
    )
    heading = "Kindling test fixture: nvidia-smi captures for the stand-in /usr/bin/nvidia-smi."
    return (heading + "\n\n" + textwrap.fill(text, 78) + "\n").encode()


# --------------------------------------------------------------------------------------------
# the NVSwitch (HGX) capture set: a CONSTRUCTED 8-GPU document packaged beside the H200 captures


def _strip_constructed_header(text: str) -> str:
    """The constructed documents' leading '#' lines say what they are; the output has none
    (the package's README says it instead, as tests/fixtures/bin/nvidia-smi strips them too)."""
    lines = text.split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines)


def _gpu_elements(xml: str) -> list[re.Match]:
    return list(re.finditer(r"(?s)\t<gpu id=\"[^\"]*\">.*?\t</gpu>\n", xml))


def _with_fabric_elements(xml: str) -> tuple[str, int]:
    """Give every <gpu> a <fabric> element (state/status N/A: the stand-in nvidia-smi fills them
    in from the fabric manager's state file), where the H200 capture has it: after
    </clock_policy>. Returns the document and how many were inserted."""
    fabric = "\t\t<fabric>\n\t\t\t<state>N/A</state>\n\t\t\t<status>N/A</status>\n\t\t</fabric>\n"
    pieces, last, inserted = [], 0, 0
    for match in _gpu_elements(xml):
        block = match.group(0)
        if "<fabric>" not in block:
            anchor = "\t\t</clock_policy>\n"
            if anchor in block:
                block = block.replace(anchor, anchor + fabric, 1)
            else:
                block = block.replace("\t</gpu>\n", fabric + "\t</gpu>\n")
            inserted += 1
        pieces += [xml[last : match.start()], block]
        last = match.end()
    return "".join(pieces) + xml[last:], inserted


def _text(gpu: ET.Element, path: str, default: str = "N/A") -> str:
    value = gpu.findtext(path)
    return value.strip() if value is not None and value.strip() else default


def _number(value: str) -> str:
    """'30 C' -> '30', '16x' -> '16', '69.13 W' -> '69.13'."""
    match = re.match(r"^(-?[\d.]+)", value)
    return match.group(1) if match else value


def _power_draw(gpu: ET.Element) -> str:
    for path in (
        "gpu_power_readings/instant_power_draw",
        "gpu_power_readings/power_draw",
        "gpu_power_readings/average_power_draw",
        "power_readings/power_draw",
    ):
        value = _text(gpu, path)
        if value != "N/A":
            return value
    return "N/A"


def _power_limit(gpu: ET.Element) -> str:
    for path in ("gpu_power_readings/current_power_limit", "power_readings/power_limit"):
        value = _text(gpu, path)
        if value != "N/A":
            return value
    return "N/A"


def _volatile_uncorrected(gpu: ET.Element) -> str:
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None or _text(gpu, "ecc_mode/current_ecc") != "Enabled":
        return "N/A"
    values = [
        child.text.strip()
        for child in volatile
        if "uncorrectable" in child.tag or child.tag == "double_bit"
    ]
    numbers = [int(v) for v in values if v.isdigit()]
    return str(sum(numbers)) if numbers else "N/A"


# NVML's clocks event reason bits (nvmlClocksEventReason*), as --query-gpu prints their sum.
CLOCKS_EVENT_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clocks_setting": 0x100,
}


def _clocks_event_mask(gpu: ET.Element) -> str:
    reasons = gpu.find("clocks_event_reasons")
    if reasons is None:
        reasons = gpu.find("clocks_throttle_reasons")
    if reasons is None:
        return "[N/A]"
    mask = 0
    for child in reasons:
        name = re.sub(r"^clocks_(event|throttle)_reason_", "", child.tag)
        if (child.text or "").strip() == "Active":
            mask |= CLOCKS_EVENT_BITS.get(name, 0)
    return f"0x{mask:016x}"


def _csv_value(value: str) -> str:
    return "[N/A]" if value == "N/A" else value


def hgx_query_csv(root: ET.Element, compute_caps: dict[str, str], header: list[str]) -> str:
    """`--query-gpu=<header> --format=csv` for every GPU of the document, from its XML.

    `header` is the H200 capture's column list (so the same fields answer), plus fabric.state
    and fabric.status (which the stand-in fills in from the fabric manager's state file)."""
    driver = root.findtext("driver_version")
    extract = {
        "name": lambda g: _text(g, "product_name"),
        "uuid": lambda g: _text(g, "uuid"),
        "serial": lambda g: _text(g, "serial"),
        "pci.bus_id": lambda g: _text(g, "pci/pci_bus_id"),
        "driver_version": lambda g: driver,
        "vbios_version": lambda g: _text(g, "vbios_version"),
        "compute_cap": lambda g: compute_caps.get(_text(g, "pci/pci_bus_id"), "N/A"),
        "memory.total [MiB]": lambda g: _text(g, "fb_memory_usage/total"),
        "memory.used [MiB]": lambda g: _text(g, "fb_memory_usage/used"),
        "memory.free [MiB]": lambda g: _text(g, "fb_memory_usage/free"),
        "utilization.gpu [%]": lambda g: _text(g, "utilization/gpu_util"),
        "temperature.gpu": lambda g: _number(_text(g, "temperature/gpu_temp")),
        "power.draw [W]": _power_draw,
        "power.limit [W]": _power_limit,
        "clocks.current.sm [MHz]": lambda g: _text(g, "clocks/sm_clock"),
        "clocks.max.sm [MHz]": lambda g: _text(g, "max_clocks/sm_clock"),
        "clocks.current.memory [MHz]": lambda g: _text(g, "clocks/mem_clock"),
        "pcie.link.gen.current": lambda g: _text(
            g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"
        ),
        "pcie.link.gen.max": lambda g: _text(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
        "pcie.link.width.current": lambda g: _number(
            _text(g, "pci/pci_gpu_link_info/link_widths/current_link_width")
        ),
        "pcie.link.width.max": lambda g: _number(
            _text(g, "pci/pci_gpu_link_info/link_widths/max_link_width")
        ),
        "persistence_mode": lambda g: _text(g, "persistence_mode"),
        "mig.mode.current": lambda g: _text(g, "mig_mode/current_mig"),
        "ecc.mode.current": lambda g: _text(g, "ecc_mode/current_ecc"),
        "ecc.errors.uncorrected.volatile.total": _volatile_uncorrected,
        "retired_pages.pending": lambda g: _text(g, "retired_pages/pending_retirement"),
        "clocks_event_reasons.active": _clocks_event_mask,
        "fabric.state": lambda g: _text(g, "fabric/state"),
        "fabric.status": lambda g: _text(g, "fabric/status"),
    }
    columns = [c for c in header if c != "index"]
    missing = [c for c in columns if c not in extract]
    if missing:
        raise BuildError(f"HGX capture set: no XML source for the CSV columns {missing}")
    lines = [", ".join(["index", *columns])]
    for index, gpu in enumerate(root.findall("gpu")):
        lines.append(", ".join([str(index), *(_csv_value(extract[c](gpu)) for c in columns)]))
    return "\n".join(lines) + "\n"


def _watts(value: str) -> str:
    return "N/A" if value == "N/A" else f"{int(float(_number(value)))}W"


def _mib(value: str) -> str:
    return value.replace(" MiB", "MiB")


def smi_table_rows(index: int, gpu: ET.Element) -> list[str]:
    """One GPU's three lines of the plain `nvidia-smi` table, in the layout of the H200
    capture's (580-era, 91 columns); the unit tests check them against that capture."""
    name = _text(gpu, "product_name")
    persistence = "On " if _text(gpu, "persistence_mode") == "Enabled" else "Off"
    display = "On " if _text(gpu, "display_active") == "Enabled" else "Off"
    temp = _text(gpu, "temperature/gpu_temp")
    temp = "N/A" if temp == "N/A" else f"{_number(temp)}C"
    util = _text(gpu, "utilization/gpu_util").replace(" %", "%")
    mig = _text(gpu, "mig_mode/current_mig")
    first = (
        f"|{index:>4}  {name:<31}{persistence} "
        f"|{_text(gpu, 'pci/pci_bus_id'):>19} {display} "
        f"|{_volatile_uncorrected(gpu):>21} |"
    )
    second = (
        f"| {_text(gpu, 'fan_speed'):<3}{temp:>6}{_text(gpu, 'performance_state'):>6}"
        f"{_watts(_power_draw(gpu)):>16} / {_watts(_power_limit(gpu)):>5} "
        f"|{_mib(_text(gpu, 'fb_memory_usage/used')):>11} / "
        f"{_mib(_text(gpu, 'fb_memory_usage/total')):>9} "
        f"|{util:>8}{_text(gpu, 'compute_mode'):>13} |"
    )
    third = f"|{'':41}|{'':24}|{mig:>21} |"
    return [first, second, third]


def hgx_smi_table(root: ET.Element, h200_table: str, driver: str, cuda: str) -> str:
    """The plain table for every GPU of the document: the H200 capture's header and process
    section (driver and CUDA versions substituted) around rows built from the XML."""
    lines = h200_table.split("\n")
    top = next(n for n, line in enumerate(lines) if line.startswith("|===="))
    rule = lines[top + 4]
    if not rule.startswith("+---") or not lines[top + 1].startswith("|"):
        raise BuildError("the H200 smi.txt capture does not have one GPU block after |====")
    rows = []
    for index, gpu in enumerate(root.findall("gpu")):
        rows += [*smi_table_rows(index, gpu), rule]
    stamp = root.findtext("timestamp") or lines[0].strip()
    head = [stamp.ljust(len(lines[0])), *lines[1 : top + 1]]
    text = "\n".join(head + rows + lines[top + 5 :])
    old = re.search(r"Driver Version: (\S+)\s+CUDA Version: (\S+)", text)
    if not old:
        raise BuildError("the H200 smi.txt capture has no Driver/CUDA Version header")
    text = _fit(text, old.group(1), driver, "hgx smi.txt", "left")
    return _fit(
        text, f"CUDA Version: {old.group(2)}", f"CUDA Version: {cuda}", "hgx smi.txt", "left"
    )


def _q_line(indent: int, label: str, value: str | None = None) -> str:
    prefix = " " * indent + label
    return prefix if value is None else f"{prefix:<55}: {value}"


def hgx_query_text(root: ET.Element) -> str:
    """`nvidia-smi -q` for the document: CONSTRUCTED from its XML, with the labels and layout of
    the H200 capture's text, and only the fields Kindling reads (identity, persistence, MIG,
    PCI, memory, utilization, ECC, temperature, power, Fabric)."""
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        _q_line(0, "Timestamp", _text(root, "timestamp")),
        _q_line(0, "Driver Version", _text(root, "driver_version")),
        _q_line(0, "CUDA Version", _text(root, "cuda_version")),
        "",
        _q_line(0, "Attached GPUs", _text(root, "attached_gpus")),
    ]
    for gpu in root.findall("gpu"):

        def t(path: str, gpu: ET.Element = gpu) -> str:
            return _text(gpu, path)

        out += [
            f"GPU {gpu.get('id')}",
            _q_line(4, "Product Name", t("product_name")),
            _q_line(4, "Product Brand", t("product_brand")),
            _q_line(4, "Product Architecture", t("product_architecture")),
            _q_line(4, "Persistence Mode", t("persistence_mode")),
            _q_line(4, "MIG Mode"),
            _q_line(8, "Current", t("mig_mode/current_mig")),
            _q_line(8, "Pending", t("mig_mode/pending_mig")),
            _q_line(4, "Serial Number", t("serial")),
            _q_line(4, "GPU UUID", t("uuid")),
            _q_line(4, "Minor Number", t("minor_number")),
            _q_line(4, "VBIOS Version", t("vbios_version")),
            _q_line(4, "PCI"),
            _q_line(8, "Device Id", f"0x{t('pci/pci_device_id')}"),
            _q_line(8, "Bus Id", t("pci/pci_bus_id")),
            _q_line(4, "Performance State", t("performance_state")),
            _q_line(4, "FB Memory Usage"),
            _q_line(8, "Total", t("fb_memory_usage/total")),
            _q_line(8, "Reserved", t("fb_memory_usage/reserved")),
            _q_line(8, "Used", t("fb_memory_usage/used")),
            _q_line(8, "Free", t("fb_memory_usage/free")),
            _q_line(4, "Compute Mode", t("compute_mode")),
            _q_line(4, "Utilization"),
            _q_line(8, "GPU", t("utilization/gpu_util")),
            _q_line(8, "Memory", t("utilization/memory_util")),
            _q_line(4, "ECC Mode"),
            _q_line(8, "Current", t("ecc_mode/current_ecc")),
            _q_line(8, "Pending", t("ecc_mode/pending_ecc")),
            _q_line(4, "Temperature"),
            _q_line(8, "GPU Current Temp", t("temperature/gpu_temp")),
            _q_line(4, "GPU Power Readings"),
            _q_line(8, "Instantaneous Power Draw", _power_draw(gpu)),
            _q_line(8, "Current Power Limit", _power_limit(gpu)),
            _q_line(4, "Fabric"),
            _q_line(8, "State", t("fabric/state")),
            _q_line(8, "Status", t("fabric/status")),
            _q_line(4, "Processes", "None"),
            "",
        ]
    return "\n".join(out) + "\n"


def hgx_nvlink_status(root: ET.Element, links: int, speed: str) -> str:
    """`nvidia-smi nvlink -s` for every GPU: `links` links at `speed` (used when the constructed
    case does not carry its own nvlink-s.txt)."""
    out = []
    for index, gpu in enumerate(root.findall("gpu")):
        out.append(f"GPU {index}: {_text(gpu, 'product_name')} (UUID: {_text(gpu, 'uuid')})")
        out += [f"\t Link {link}: {speed}" for link in range(links)]
    return "\n".join(out) + "\n"


def _nvlinks_per_gpu(topo: str) -> int:
    """The NV# of the document's topology matrix (every GPU pair the same: an NVSwitch host)."""
    found = set(re.findall(r"\bNV(\d+)\b", topo))
    if len(found) != 1:
        raise BuildError(f"HGX topo.txt: expected one NV# link count, found {sorted(found)}")
    return int(found.pop())


def hgx_captures(driver_version: str, cuda_version: str) -> dict[str, bytes]:
    """The NVSwitch capture set for a driver package: the constructed 8-GPU H100 case
    (HGX_SOURCE) with the package's driver and CUDA versions, and the files the stand-in
    nvidia-smi needs that the case lacks built from its XML. Read at build time; copes with a
    case that has no <fabric> elements or no nvlink-s.txt yet (both are then built here)."""
    source = HGX_SOURCE
    xml_path = source / "nvidia-smi-q.xml"
    if not xml_path.is_file():
        raise BuildError(f"the HGX capture set needs {xml_path}")
    xml = xml_path.read_text(encoding="utf-8")
    old_driver = re.search(r"<driver_version>([^<]+)</driver_version>", xml)
    old_cuda = re.search(r"<cuda_version>([^<]+)</cuda_version>", xml)
    if not (old_driver and old_cuda):
        raise BuildError(f"{xml_path.name} of the HGX case has no driver or CUDA version")
    where = "hgx nvidia-smi-q.xml"
    xml = _replace(xml, old_driver.group(1), driver_version, where)
    xml = _replace(
        xml, f"<cuda_version>{old_cuda.group(1)}<", f"<cuda_version>{cuda_version}<", where
    )
    xml, _inserted = _with_fabric_elements(xml)
    declaration, newline, rest = xml.partition("\n")
    if not declaration.startswith("<?xml"):
        raise BuildError("the HGX nvidia-smi-q.xml does not start with an XML declaration")
    xml = declaration + newline + HGX_XML_COMMENT + "\n" + rest
    root = ET.fromstring(xml.encode("utf-8"))
    gpus = root.findall("gpu")
    if len(gpus) != HGX_GPUS or len(_gpu_elements(xml)) != HGX_GPUS:
        raise BuildError(f"the HGX case has {len(gpus)} GPUs, expected {HGX_GPUS}")

    compute_caps = {}
    query = source / "query.csv"
    if query.is_file():
        lines = [line for line in _strip_constructed_header(query.read_text()).splitlines() if line]
        header = lines[0].split(", ")
        if {"pci.bus_id", "compute_cap"} <= set(header):
            for row in lines[1:]:
                values = dict(zip(header, row.split(", ")))
                compute_caps[values["pci.bus_id"]] = values["compute_cap"]
    h200_header = (CAPTURES / "query-full.csv").read_text().splitlines()[0].split(", ")
    csv_text = hgx_query_csv(root, compute_caps, [*h200_header, "fabric.state", "fabric.status"])

    topo_path = source / "topo.txt"
    if not topo_path.is_file():
        raise BuildError(f"the HGX capture set needs {topo_path}")
    topo = _strip_constructed_header(topo_path.read_text(encoding="utf-8"))
    nvlink_path = source / "nvlink-s.txt"
    if nvlink_path.is_file():
        nvlink = _strip_constructed_header(nvlink_path.read_text(encoding="utf-8"))
        nvlink = nvlink.replace(old_driver.group(1), driver_version)
    else:
        nvlink = hgx_nvlink_status(root, _nvlinks_per_gpu(topo), HGX_NVLINK_SPEED)
    smi_l = "".join(
        f"GPU {index}: {_text(gpu, 'product_name')} (UUID: {_text(gpu, 'uuid')})\n"
        for index, gpu in enumerate(gpus)
    )
    result = {
        "nvidia-smi-q.xml": xml,
        "nvidia-smi-q.txt": hgx_query_text(root),
        "query-full.csv": csv_text,
        "smi.txt": hgx_smi_table(
            root, (CAPTURES / "smi.txt").read_text(encoding="utf-8"), driver_version, cuda_version
        ),
        "smi-L.txt": smi_l,
        "topo.txt": topo,
        "nvlink-s.txt": nvlink,
    }
    return {name: text.encode("utf-8") for name, text in result.items()}


def hgx_readme(driver_version: str, cuda_version: str) -> bytes:
    """Which HGX files come from the constructed case and which the build made from it."""
    source = (
        HGX_SOURCE.relative_to(REPO_ROOT) if HGX_SOURCE.is_relative_to(REPO_ROOT) else HGX_SOURCE
    )
    xml = (HGX_SOURCE / "nvidia-smi-q.xml").read_text(encoding="utf-8")
    had_fabric = _with_fabric_elements(xml)[1] == 0
    had_nvlink = (HGX_SOURCE / "nvlink-s.txt").is_file()
    paragraphs = [
        "Kindling test fixture: the NVSwitch (HGX) capture set of the stand-in "
        f"/usr/bin/nvidia-smi, printed when {SMI_CASE_FILE} says '{HGX_CASE}'. EVERYTHING "
        "HERE IS CONSTRUCTED: none of it was captured on a real machine. It is the "
        "constructed 8-GPU NVIDIA H100 80GB HBM3 "
        f"NVLink case of the Kindling repository's {source}/ (a 550-era document built by hand "
        "for Kindling's tests), packaged like the real H200 captures beside it.",
        f"The build substituted: driver version -> {driver_version} (everywhere it occurs, the "
        f"GSP firmware version included), CUDA version -> {cuda_version}. Unlike the H200 set, "
        "the GPU identity is left as the case has it (H100, compute capability 9.0).",
        "Taken from the case: nvidia-smi-q.xml (with an XML comment saying so"
        + ("" if had_fabric else "; the build gave each GPU a <fabric> element")
        + "), topo.txt"
        + (", nvlink-s.txt" if had_nvlink else "")
        + " (their '#' header lines removed), and compute_cap from query.csv. Built here from "
        "nvidia-smi-q.xml: query-full.csv (the H200 capture's columns plus fabric.state and "
        "fabric.status), nvidia-smi-q.txt (the H200 capture's labels and layout, a subset of "
        "the fields), smi.txt (the H200 capture's table layout, one block per GPU), smi-L.txt"
        + (
            ""
            if had_nvlink
            else f", nvlink-s.txt (every link at {HGX_NVLINK_SPEED}, the NV# count of topo.txt)"
        )
        + ".",
        "Fabric State/Status in the XML, the text and the CSV are placeholders: the stand-in "
        f"nvidia-smi prints them from {FABRIC_STATE_FILE}, which the stand-in nv-fabricmanager "
        "writes (Completed/Success while it runs; In Progress/N/A otherwise).",
    ]
    heading = "Kindling test fixture: CONSTRUCTED nvidia-smi documents (HGX, 8 GPUs)."
    body = "\n\n".join(textwrap.fill(p, 78) for p in paragraphs)
    return (heading + "\n\n" + body + "\n").encode()


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


def _only(names, what: str) -> str:
    names = sorted(set(names))
    if len(names) != 1:
        raise BuildError(f"vendor catalogue: expected one {what}, found {names}")
    return names[0]


def driver_names(layout: str, branch: str) -> dict:
    """Which package does what, for a layout and branch, read from the catalogue's rows.

    debian: the userspace package is the one the proprietary and open nvidia-driver rows
    share; each row's other package is its kernel-module package; the cuda-drivers row's
    extra package is the metapackage. ubuntu: each flavour's driver package carries its kernel
    modules; from 590 the catalogue has no proprietary nvidia-driver row, and the proprietary
    driver is the open one's name without "-open" (NVIDIA's rename dropped only the branch).
    """
    choices = {
        choice: stack_plan.driver_packages(layout, branch, *choice)
        for choice in stack_plan.driver_package_choices(layout, branch)
    }
    proprietary = choices.get(("proprietary", "nvidia-driver"))
    opened = choices.get(("open", "nvidia-driver"))
    meta = choices.get(("proprietary", "cuda-drivers"))
    if opened is None or meta is None:
        raise BuildError(f"vendor catalogue: {layout} {branch} lacks an open or cuda-drivers row")
    pinning = {row["pinning"] for row in choices.values() if row["pinning"]}
    names: dict = {"choices": choices, "pinning": None}
    if pinning:
        names["pinning"] = _only(pinning, "pinning package")
    if layout == "debian":
        if proprietary is None:
            raise BuildError(f"vendor catalogue: debian branch {branch} has no proprietary row")
        owned = set(proprietary["packages"])
        userspace = _only(owned & set(opened["packages"]), "userspace package")
        names["userspace"] = userspace
        names["kernel"] = {
            "proprietary": _only(owned - {userspace}, "proprietary module package"),
            "open": _only(set(opened["packages"]) - {userspace}, "open module package"),
        }
        names["meta"] = _only(set(meta["packages"]) - owned, "cuda-drivers metapackage")
        if DEBIAN_OPEN_METAPACKAGE not in CATALOGUE["driver_selection_packages"][layout]:
            raise BuildError(
                f"vendor catalogue: {DEBIAN_OPEN_METAPACKAGE} is not a debian selection package"
            )
        names["open_meta"] = DEBIAN_OPEN_METAPACKAGE
    else:
        open_name = _only(opened["packages"], "open driver package")
        if proprietary is not None:
            proprietary_name = _only(proprietary["packages"], "proprietary driver package")
        elif open_name.endswith("-open"):
            proprietary_name = open_name[: -len("-open")]
        else:
            raise BuildError(f"vendor catalogue: no proprietary driver for {layout} {branch}")
        names["drivers"] = {"proprietary": proprietary_name, "open": open_name}
        names["meta"] = _only(set(meta["packages"]) - {proprietary_name}, "cuda-drivers package")
    return names


# Where the stand-in CUDA driver library goes: the multiarch library directory, which the
# dynamic loader searches by default, as the driver's libcuda.so.1 is found there.
LIBCUDA_PATH = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


def standin_libcuda(cuda: str) -> bytes:
    """standins/libcuda_standin.c compiled for a driver of CUDA ``cuda`` ("13.0" -> 13000)."""
    major, minor = (int(part) for part in cuda.split(".")[:2])
    with tempfile.TemporaryDirectory(prefix="kindling-libcuda-") as work:
        target = Path(work) / "libcuda.so.1"
        run(
            [
                "gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
                "-Wl,--build-id=none", "-Wl,-soname,libcuda.so.1",
                f"-DKINDLING_CUDA_VERSION={major * 1000 + minor * 10}",
                "-o", str(target), str(STANDINS / "libcuda_standin.c"),
            ]
        )  # fmt: skip
        return target.read_bytes()


def _driver_userspace_files(branch: str, spec: dict) -> list[tuple[str, bytes, int]]:
    """The userspace stand-ins: nvidia-smi with its captures, nvidia-persistenced and its unit,
    and libcuda.so.1 for the cuInit probe (module_utils/cuda_init.py)."""
    captures = substituted_captures(spec["version"], spec["cuda"])
    files = [
        ("/usr/bin/nvidia-smi", (STANDINS / "nvidia_smi.py").read_bytes(), 0o755),
        (LIBCUDA_PATH, standin_libcuda(spec["cuda"]), 0o644),
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
        ("/usr/share/kindling-fixture/driver-version", f"{spec['version']}\n".encode(), 0o644),
        (
            "/usr/share/kindling-fixture/nvidia-smi/README",
            capture_readme(spec["version"], spec["cuda"]),
            0o644,
        ),
    ]
    files += [
        (f"/usr/share/kindling-fixture/nvidia-smi/{capture}", data, 0o644)
        for capture, data in captures.items()
    ]
    hgx = f"/usr/share/kindling-fixture/nvidia-smi/{HGX_CASE}"
    files.append((f"{hgx}/README", hgx_readme(spec["version"], spec["cuda"]), 0o644))
    files += [
        (f"{hgx}/{capture}", data, 0o644)
        for capture, data in hgx_captures(spec["version"], spec["cuda"]).items()
    ]
    return files


def _flavour_file(flavour: str) -> tuple[str, bytes, int]:
    return ("/usr/share/kindling-fixture/driver-flavour", f"{flavour}\n".encode(), 0o644)


USERSPACE_DETAIL = (
    "Ships a stand-in /usr/bin/nvidia-smi that replays real NVIDIA H200 captures with the "
    "driver version, CUDA version and GPU identity ({gpu}) substituted and reports Persistence "
    "Mode from " + PERSISTENCE_STATE_FILE + ", a stand-in nvidia-persistenced with its systemd "
    "unit (ExecStart with --no-persistence-mode, as Ubuntu's packaged unit), and "
    "/usr/share/kindling-fixture/driver-branch and driver-version. No libraries."
)


def pinning_package(layout: str, branch: str, name: str, pinned: list[str]) -> Package:
    """NVIDIA's branch-pinning package: an apt preference that holds the driver to a branch."""
    preferences = (
        f"# Kindling test fixture: stand-in for NVIDIA's {name} (not NVIDIA's file).\n"
        f"Package: {' '.join(sorted(pinned))}\nPin: version {branch}.*\nPin-Priority: 1000\n"
    )
    return Package(
        name=name,
        version=f"{branch}-{PINNING_REVISIONS[layout]}",
        arch="all",
        summary_detail=(
            f"Pins the driver packages to branch {branch}: ships /etc/apt/preferences.d/{name} "
            f"(Pin: version {branch}.*, priority 1000 for {', '.join(sorted(pinned))})."
        ),
        files=[(f"/etc/apt/preferences.d/{name}", preferences.encode(), 0o644)],
    )


def debian_driver_packages(branch: str, spec: dict, dummy: bool = False) -> list[Package]:
    """Debian layout: one userspace package, two kernel-module packages, metapackages.

    ``dummy``: control data only (no files, no maintainer scripts, no python3 dependency).
    """
    names = driver_names("debian", branch)
    upstream = spec["version"]
    version = f"{upstream}-{DRIVER_REVISIONS['debian']}"
    userspace = names["userspace"]
    kernel = names["kernel"]
    gpu = FIXTURE_GPU["name"]
    packages = [
        Package(
            name=userspace,
            version=version,
            section="non-free/libs",
            summary_detail=(
                f"Driver {upstream} (branch {branch}, CUDA {spec['cuda']}), the userspace. "
                + USERSPACE_DETAIL.format(gpu=gpu)
                + f" Depends on {kernel['proprietary']} or {kernel['open']} of the same version."
            ),
            depends=[
                *([] if dummy else ["python3"]),
                f"{kernel['proprietary']} (= {version}) | {kernel['open']} (= {version})",
            ],
            files=[] if dummy else _driver_userspace_files(branch, spec),
        )
    ]
    for flavour, name in kernel.items():
        other = kernel["open" if flavour == "proprietary" else "proprietary"]
        packages.append(
            Package(
                name=name,
                version=version,
                section="non-free/kernel",
                summary_detail=(
                    f"The {flavour} kernel modules of driver {upstream}: ships only "
                    f"/usr/share/kindling-fixture/driver-flavour ({flavour}); its postinst stands "
                    f"in for the DKMS build (sleeps when {DKMS_DELAY_FILE} says so). No kernel "
                    f"module. Conflicts with {other}."
                ),
                provides=[KERNEL_MODULE_VIRTUAL],
                conflicts=[KERNEL_MODULE_VIRTUAL, other],
                replaces=[KERNEL_MODULE_VIRTUAL, other],
                files=[] if dummy else [_flavour_file(flavour)],
                postinst=None if dummy else DRIVER_POSTINST,
            )
        )
    metas = [(names["meta"], kernel["proprietary"]), (names["open_meta"], kernel["open"])]
    for meta, module in metas:
        packages.append(
            Package(
                name=meta,
                version=version,
                summary_detail=(
                    f"Metapackage for driver {upstream}: depends on {userspace} and {module} "
                    f"at >= {version} only, as NVIDIA's Debian packages do, so without a pin apt "
                    "takes the newest driver in the repository."
                ),
                depends=[f"{userspace} (>= {version})", f"{module} (>= {version})"],
            )
        )
    if names["pinning"]:
        pinned = [userspace, *kernel.values(), names["meta"], names["open_meta"]]
        packages.append(pinning_package("debian", branch, names["pinning"], pinned))
    return packages


def ubuntu_driver_packages(branch: str, spec: dict, dummy: bool = False) -> list[Package]:
    """Ubuntu layout: a driver package per flavour (with its modules), a metapackage.

    ``dummy``: control data only (no files, no maintainer scripts, no python3 dependency).
    """
    names = driver_names("ubuntu", branch)
    upstream = spec["version"]
    version = f"{upstream}-{DRIVER_REVISIONS['ubuntu']}"
    drivers = names["drivers"]
    packages = []
    for flavour, name in drivers.items():
        conflicts = [DRIVER_VIRTUAL] + ([drivers["proprietary"]] if flavour == "open" else [])
        packages.append(
            Package(
                name=name,
                version=version,
                section="non-free/libs",
                summary_detail=(
                    f"Driver {upstream} (branch {branch}, {flavour} kernel modules, CUDA "
                    f"{spec['cuda']}). "
                    + USERSPACE_DETAIL.format(gpu=FIXTURE_GPU["name"])
                    + " Also /usr/share/kindling-fixture/driver-flavour; its postinst stands in "
                    "for the DKMS build. Conflicts with the other fixture driver packages."
                ),
                depends=[] if dummy else ["python3"],
                provides=[DRIVER_VIRTUAL],
                conflicts=conflicts,
                replaces=[DRIVER_VIRTUAL],
                files=(
                    []
                    if dummy
                    else [*_driver_userspace_files(branch, spec), _flavour_file(flavour)]
                ),
                postinst=None if dummy else DRIVER_POSTINST,
            )
        )
    packages.append(
        Package(
            name=names["meta"],
            version=version,
            summary_detail=(
                f"Metapackage for driver {upstream}: depends on {drivers['proprietary']} "
                f"(= {version})."
            ),
            depends=[f"{drivers['proprietary']} (= {version})"],
        )
    )
    if names["pinning"]:
        pinned = [*drivers.values(), names["meta"]]
        packages.append(pinning_package("ubuntu", branch, names["pinning"], pinned))
    return packages


def fabric_manager_revision(layout: str, branch: str) -> str:
    """The Debian revision of NVIDIA's fabric manager and NSCQ packages (see the constant)."""
    if layout == "ubuntu" and driver_names(layout, branch)["pinning"]:
        return FABRIC_MANAGER_REVISION["ubuntu-pinned"]
    return FABRIC_MANAGER_REVISION["default"]


def _glob_matches(glob: str, version: str) -> bool:
    return re.fullmatch(re.escape(glob).replace(r"\*", ".*"), version) is not None


def _unsuffixed(name: str, branch: str) -> str | None:
    """nvidia-fabricmanager-550 -> nvidia-fabricmanager: the name NVIDIA's branch packages
    provide and conflict with; None for a name without the branch."""
    suffix = f"-{branch}"
    return name[: -len(suffix)] if name.endswith(suffix) else None


def fabric_manager_packages(layout: str, branch: str, spec: dict) -> list[Package]:
    """NVIDIA's fabric manager and NSCQ packages for one driver release, at its version.

    Names from the catalogue's fabric_manager_packages row for the branch (through
    stack_plan.fabric_manager_packages), which lists the fabric manager first and NSCQ second.
    Relationships as NVIDIA's Debian packaging templates have them
    (NVIDIA/apt-packaging-fabric-manager, NVIDIA/apt-packaging-libnvidia-nscq: a branch package
    Provides, Conflicts and Replaces the unsuffixed name; the fabric manager Depends on libc6
    (>= 2.2.1), NSCQ on nothing; neither depends on the driver). The unsuffixed packages of 580+
    are not in those templates: the fixture gives them the same Depends and no relationships of
    their own (nothing was found that says otherwise).
    """
    upstream = spec["version"]
    plan = stack_plan.fabric_manager_packages(branch, upstream)
    if len(plan["packages"]) != 2:
        raise BuildError(f"vendor catalogue: fabric manager packages of {branch}: {plan}")
    manager, nscq = plan["packages"]
    version = f"{upstream}-{fabric_manager_revision(layout, branch)}"
    if not _glob_matches(plan["version"], version):
        raise BuildError(f"fabric manager version {version} does not match {plan['version']}")
    start_script = int(branch) >= FABRIC_MANAGER_START_SCRIPT_FROM
    config = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
    if start_script:
        exec_lines = (
            "ExecStartPre=/usr/bin/nvidia-fabricmanager-start.sh --mode precheck\n"
            "ExecStart=/usr/bin/nvidia-fabricmanager-start.sh --mode start"
        )
    else:
        exec_lines = f"ExecStart=/usr/bin/nv-fabricmanager -c {config}"
    files = [
        ("/usr/bin/nv-fabricmanager", standin("nv_fabricmanager.py", FM_VERSION=upstream), 0o755),
        (
            "/lib/systemd/system/nvidia-fabricmanager.service",
            standin("nvidia-fabricmanager.service", EXEC_LINES=exec_lines),
            0o644,
        ),
        (config, (STANDINS / "fabricmanager.cfg").read_bytes(), 0o644),
        ("/usr/share/kindling-fixture/fabric-manager-version", f"{upstream}\n".encode(), 0o644),
    ]
    if start_script:
        files.append(
            (
                "/usr/bin/nvidia-fabricmanager-start.sh",
                standin("nvidia-fabricmanager-start.sh", BRANCH=branch),
                0o755,
            )
        )
    manager_virtual, nscq_virtual = _unsuffixed(manager, branch), _unsuffixed(nscq, branch)
    library = f"{NSCQ_LIBRARY_DIR}/{NSCQ_LIBRARY}.{upstream}"
    return [
        Package(
            name=manager,
            version=version,
            summary_detail=(
                f"Fabric manager {upstream} (branch {branch}): ships a stand-in "
                "/usr/bin/nv-fabricmanager that starts only when the driver's version (from "
                "/usr/share/kindling-fixture/driver-version) is exactly its own, as NVIDIA's "
                f"does, then writes Completed to {FABRIC_STATE_FILE} (which the stand-in "
                "nvidia-smi reports as the GPUs' fabric state) and waits; the unit "
                "nvidia-fabricmanager.service (Type=forking"
                + (", through nvidia-fabricmanager-start.sh" if start_script else "")
                + ", not enabled on install) and fabricmanager.cfg. Fault switch: "
                f"{FABRIC_MANAGER_FAIL_FILE}."
            ),
            depends=["python3", "libc6 (>= 2.2.1)"],
            provides=[manager_virtual] if manager_virtual else [],
            conflicts=[manager_virtual] if manager_virtual else [],
            replaces=[manager_virtual] if manager_virtual else [],
            files=files,
        ),
        Package(
            name=nscq,
            version=version,
            section="libs",
            summary_detail=(
                f"NVSwitch Configuration and Query library {upstream} (branch {branch}): ships "
                f"{library} (a text file) and the {NSCQ_LIBRARY}.{NSCQ_SONAME} link."
            ),
            provides=[nscq_virtual] if nscq_virtual else [],
            conflicts=[nscq_virtual] if nscq_virtual else [],
            replaces=[nscq_virtual] if nscq_virtual else [],
            files=[(library, stub_library(f"NVIDIA's NSCQ library {upstream}"), 0o644)],
            links=[(library, f"{NSCQ_LIBRARY_DIR}/{NSCQ_LIBRARY}.{NSCQ_SONAME}")],
        ),
    ]


def nvlink5_packages(repo_id: str) -> list[Package]:
    """NVIDIA's NVLink 5 packages of the catalogue's nvlink5_packages row (nvlsm), once per
    repository that has a fixture branch in the row's range; the row's packages that the
    distribution's archive serves (DISTRIBUTION_NVLINK5_PACKAGES) are not stood in for."""
    wanted: set[str] = set()
    for branch in FIXTURE_REPOS[repo_id]["branches"]:
        wanted |= set(stack_plan.fabric_manager_packages(branch)["nvlink5_packages"])
    if not wanted:
        return []
    missing = DISTRIBUTION_NVLINK5_PACKAGES - set(CATALOGUE["nvlink5_packages"]["packages"])
    if missing:
        raise BuildError(f"vendor catalogue: nvlink5_packages no longer lists {sorted(missing)}")
    packages = []
    for name in sorted(wanted - DISTRIBUTION_NVLINK5_PACKAGES):
        config = (
            f"# Kindling test fixture: stand-in for NVIDIA's {name} configuration (not NVIDIA's "
            "file). The fixture's NVSwitch host is not an NVLink 5 system: nothing reads this.\n"
        )
        packages.append(
            Package(
                name=name,
                version=NVLSM_VERSION,
                summary_detail=(
                    "The NVLink Subnet Manager that NVLink 5 (Blackwell HGX) fabric managers "
                    f"need: ships only {NVLSM_CONFIG} and "
                    "/usr/share/kindling-fixture/nvlsm-version; no daemon (the fixture's NVSwitch "
                    "host is an H100 one). Version is date-based, as NVIDIA's; its dependencies "
                    "are not in the sources read, so it declares none."
                ),
                files=[
                    (NVLSM_CONFIG, config.encode(), 0o644),
                    (
                        "/usr/share/kindling-fixture/nvlsm-version",
                        f"{NVLSM_VERSION}\n".encode(),
                        0o644,
                    ),
                ],
            )
        )
    return packages


def driver_packages(repo_id: str, releases: dict[str, str] | None = None) -> list[Package]:
    """The driver packages of every fixture branch of a repository, or of `releases`
    ({branch: version}) only."""
    layout = REPOSITORIES[repo_id]["layout"]
    build_branch = {"debian": debian_driver_packages, "ubuntu": ubuntu_driver_packages}[layout]
    packages = []
    for branch, spec in FIXTURE_REPOS[repo_id]["branches"].items():
        if releases is not None:
            if branch not in releases:
                continue
            spec = dict(spec, version=releases[branch])
        packages += build_branch(branch, spec)
        packages += fabric_manager_packages(layout, branch, spec)
    if releases is None:
        packages += nvlink5_packages(repo_id)
    return packages


def toolkit_packages(layout: str) -> list[Package]:
    packages = []
    for release, spec in CUDA_TOOLKITS.items():
        (name,) = stack_plan.toolkit_packages(layout, [release])
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
                name=name,
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
    meta = CUDA_METAPACKAGE
    (toolkit,) = stack_plan.toolkit_packages(layout, [meta["cuda"]])
    drivers = driver_names(layout, meta["driver_branch"])["meta"]
    driver_version = FIXTURE_REPOS[PRIMARY_REPO]["branches"][meta["driver_branch"]]["version"]
    toolkit_version = CUDA_TOOLKITS[meta["cuda"]]["full"]
    packages.append(
        Package(
            name=meta["name"],
            version=meta["version"],
            section="devel",
            summary_detail=(
                f"The all-in-one CUDA {toolkit_version} metapackage: depends on {toolkit} and "
                f"{drivers}, which is why the roles install the toolkit and driver packages "
                "separately instead."
            ),
            depends=[f"{toolkit} (>= {toolkit_version})", f"{drivers} (>= {driver_version})"],
        )
    )
    return packages


def cudnn_packages() -> list[Package]:
    """cuDNN 9 from apt for each CUDA major of CUDNN_APT_CUDA. The variants ship the same paths
    (the stand-ins are not co-installable: each conflicts with the others)."""
    libdir = "/usr/lib/x86_64-linux-gnu"
    full = CUDNN_APT_VERSION
    major, minor, patch = (int(part) for part in full.split(".")[:3])
    so = f"libcudnn.so.{major}.{minor}.{patch}"
    plans = [gpu_compat.cudnn_packages(full, cuda) for cuda in CUDNN_APT_CUDA]
    packages = []
    for cuda, plan in zip(CUDNN_APT_CUDA, plans):
        others_runtime = [p["runtime"] for p in plans if p is not plan]
        others_dev = [p["dev"] for p in plans if p is not plan]
        version = plan["version"]
        cuda_major = cuda.split(".")[0]
        packages += [
            Package(
                name=plan["runtime"],
                version=version,
                section="libs",
                summary_detail=(
                    f"cuDNN {full} runtime for CUDA {cuda_major}: ships {libdir}/{so} (a text "
                    f"file) and the libcudnn.so.{major} symlink."
                ),
                conflicts=others_runtime,
                replaces=others_runtime,
                files=[
                    (
                        f"{libdir}/{so}",
                        stub_library(f"NVIDIA cuDNN {full} for CUDA {cuda_major} ({so})"),
                        0o644,
                    )
                ],
                links=[(f"{libdir}/{so}", f"{libdir}/libcudnn.so.{major}")],
            ),
            Package(
                name=plan["dev"],
                version=version,
                section="libdevel",
                summary_detail=(
                    f"cuDNN {major}.{minor} development files for CUDA {cuda_major}: "
                    f"/usr/include/x86_64-linux-gnu/cudnn_version_v{major}.h (where the real "
                    "package puts it) with the real header's version macros."
                ),
                depends=[f"{plan['runtime']} (= {version})"],
                conflicts=others_dev,
                replaces=others_dev,
                files=[
                    (
                        f"/usr/include/x86_64-linux-gnu/cudnn_version_v{major}.h",
                        cudnn_version_header(major, minor, patch, 10000),
                        0o644,
                    )
                ],
            ),
            Package(
                name=plan["meta"],
                version=version,
                summary_detail=(
                    f"cuDNN {major} for CUDA {cuda_major} metapackage: depends on the runtime "
                    "and dev packages."
                ),
                depends=[f"{plan['runtime']} (= {version})", f"{plan['dev']} (= {version})"],
            ),
        ]
    return packages


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
    """The debian12 repository's packages."""
    layout = REPOSITORIES[PRIMARY_REPO]["layout"]
    return (
        tool_packages(keyring)
        + driver_packages(PRIMARY_REPO)
        + toolkit_packages(layout)
        + cudnn_packages()
        + [canary_package("1.0-1")]
    )


def later_packages() -> list[Package]:
    """What only the later snapshot of the debian12 repository has."""
    return [*driver_packages(PRIMARY_REPO, LATER_POINT_RELEASES), canary_package("2.0-1")]


def other_layout_packages() -> dict[str, list[Package]]:
    """The driver packages of the other fixture repositories (with cuda-keyring beside them)."""
    return {repo: driver_packages(repo) for repo in FIXTURE_REPOS if repo != PRIMARY_REPO}


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
# The sbsa (aarch64) layout of a repository
#
# NVIDIA serves Grace hosts (GH200, GB200) from compute/cuda/repos/<os>/sbsa/: Architecture arm64
# packages under the names of the x86_64 repository (the catalogue's repositories `arches` and
# driver_packages `arches_source`). The stand-in holds DUMMY arm64 packages (control data only: no
# files, no maintainer scripts) of one branch's driver packages, every package flavour and kernel-
# module flavour the catalogue has for the layout, with the x86_64 stand-ins' relationships. They
# are built with dpkg-deb, which is there wherever apt is (equivs needs build tools and builds for
# the machine's own architecture), into an unsigned flat repository that apt reads with
# [trusted=yes]. tests/unit/test_stack_plan_grace.py simulates the driver stage's install against
# it with APT::Architecture=arm64. Deterministic: fixed file times (SOURCE_DATE_EPOCH), sorted
# index, fixed Release date.

SBSA_ARCH = "sbsa"
SBSA_DEB_ARCH = "arm64"
SBSA_EPOCH = TARBALL_MTIME
SBSA_RELEASE_DATE = "Thu, 04 Sep 2025 00:00:00 UTC"


def arch_repo_path(repo_id: str, arch: str) -> str:
    return f"compute/cuda/repos/{repo_id}/{arch}"


def fixture_release(branch: str) -> dict:
    """The fixture's driver release of a branch ({version, cuda}), from FIXTURE_REPOS."""
    for spec in FIXTURE_REPOS.values():
        if branch in spec["branches"]:
            return dict(spec["branches"][branch])
    raise BuildError(f"no fixture release of branch {branch}: add it to FIXTURE_REPOS")


def sbsa_driver_packages(repo_id: str, branch: str) -> list[Package]:
    """The dummy arm64 driver packages of a branch for the repository's sbsa layout."""
    row = REPOSITORIES[repo_id]
    if SBSA_ARCH not in row["arches"]:
        raise BuildError(f"vendor catalogue: {repo_id} is not served for {SBSA_ARCH}")
    build_branch = {"debian": debian_driver_packages, "ubuntu": ubuntu_driver_packages}
    packages = build_branch[row["layout"]](branch, fixture_release(branch), dummy=True)
    # The branch-pinning package (590+) keeps its name and relationships, not its preferences file.
    return [
        replace(pkg, arch=pkg.arch if pkg.arch == "all" else SBSA_DEB_ARCH, files=[], links=[])
        for pkg in packages
    ]


def build_control_only_deb(pkg: Package, dest: Path, work: Path) -> Path:
    """A .deb of control data only, by dpkg-deb, with fixed times (reproducible)."""
    if pkg.files or pkg.links or pkg.postinst or pkg.postrm:
        raise BuildError(f"{pkg.name}: a control-only package has no files or scripts")
    root = work / f"{pkg.name}_{pkg.version}_{pkg.arch}"
    (root / "DEBIAN").mkdir(parents=True)
    fields = [
        ("Package", pkg.name),
        ("Version", pkg.version),
        ("Architecture", pkg.arch),
        ("Maintainer", MAINTAINER),
        ("Section", pkg.section),
        ("Priority", "optional"),
    ]
    for name, values in (
        ("Depends", pkg.depends),
        ("Provides", pkg.provides),
        ("Conflicts", pkg.conflicts),
        ("Replaces", pkg.replaces),
    ):
        if values:
            fields.append((name, ", ".join(values)))
    fields.append(("Description", pkg.description))
    control = root / "DEBIAN" / "control"
    control.write_text("".join(f"{name}: {value}\n" for name, value in fields))
    for path in (control, control.parent, root):
        os.utime(path, (SBSA_EPOCH, SBSA_EPOCH))
    deb = dest / f"{pkg.name}_{pkg.version.split(':', 1)[-1]}_{pkg.arch}.deb"
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(SBSA_EPOCH), "LC_ALL": "C.UTF-8"}
    run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", root, deb], env=env)
    return deb


def flat_repo_index(repo: Path, debs: list[Path], description: str) -> None:
    """Packages and Release of a flat repository (sorted; no apt-ftparchive needed)."""
    stanzas = []
    for deb in sorted(debs, key=lambda path: path.name):
        control = run(["dpkg-deb", "--field", deb]).stdout.decode().strip()
        data = deb.read_bytes()
        stanzas.append(
            f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
            f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    packages = "\n".join(stanzas).encode()
    (repo / "Packages").write_bytes(packages)
    archs = sorted({line.split(": ", 1)[1] for s in stanzas for line in s.splitlines()
                    if line.startswith("Architecture: ")})  # fmt: skip
    release = (
        "Origin: NVIDIA\nLabel: NVIDIA CUDA\n"
        f"Architectures: {' '.join(archs)}\nDate: {SBSA_RELEASE_DATE}\n"
        f"Description: {description}\nSHA256:\n"
        f" {hashlib.sha256(packages).hexdigest()} {len(packages)} Packages\n"
    )
    (repo / "Release").write_text(release)


def build_sbsa_repo(srv: Path, repo_id: str, branch: str) -> Path:
    """The sbsa layout of ``repo_id`` holding one branch's dummy arm64 driver packages, under
    ``srv`` at NVIDIA's path; returns the repository directory."""
    repo = srv / arch_repo_path(repo_id, SBSA_ARCH)
    repo.mkdir(parents=True)
    packages = sbsa_driver_packages(repo_id, branch)
    with tempfile.TemporaryDirectory(prefix="kindling-sbsa-") as work:
        debs = [build_control_only_deb(pkg, repo, Path(work)) for pkg in packages]
    row = REPOSITORIES[repo_id]
    flat_repo_index(
        repo,
        debs,
        "Kindling test fixture: stand-in for NVIDIA's CUDA repository for "
        f"{row['distribution']} {row['release']} ({repo_id}/{SBSA_ARCH}), dummy {SBSA_DEB_ARCH} "
        "driver packages built by tests/fixture_sources/build_fixtures.py; not NVIDIA software",
    )
    return repo


# --------------------------------------------------------------------------------------------
# apt repository


def build_apt_repo(
    debs: list[Path],
    repo: Path,
    out: Path,
    keys: dict,
    armored: bytes,
    signer: str = "fixture",
    repo_id: str = PRIMARY_REPO,
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
            "Kindling test fixture: stand-in for NVIDIA's CUDA repository for "
            f"{REPOSITORIES[repo_id]['distribution']} {REPOSITORIES[repo_id]['release']} "
            f"({repo_id}), built by tests/fixture_sources/build_fixtures.py; not NVIDIA software"
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


def _version_key(version: str) -> list:
    """Sort key for the plain Debian versions used here (digits compared as numbers)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", version)]


def parse_packages(text: str) -> dict[str, list[str]]:
    """{package: [versions, oldest first]}: a flat repository may list several of one package."""
    versions: dict[str, list[str]] = {}
    for stanza in text.strip().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        versions.setdefault(fields["Package"], []).append(fields["Version"])
    return {name: sorted(found, key=_version_key) for name, found in sorted(versions.items())}


# --------------------------------------------------------------------------------------------
# cuDNN redistributable tarball


def cudnn_archive_name() -> str:
    spec = CUDNN_REDIST
    return f"cudnn-linux-x86_64-{spec['version']}_cuda{spec['variant']}-archive"


def build_cudnn_tarball(dest_dir: Path) -> dict:
    """Write the reproducible cuDNN redist archive stand-in and its .sha256 file into dest_dir."""
    spec = CUDNN_REDIST
    top = cudnn_archive_name()
    major, minor, patch = (int(part) for part in spec["version"].split(".")[:3])
    so = f"libcudnn.so.{major}.{minor}.{patch}"
    readme = (
        f"Kindling test fixture: stand-in for NVIDIA's cuDNN {spec['version']} redistributable\n"
        f"archive for CUDA {spec['variant']}, built by tests/fixture_sources/build_fixtures.py. "
        "Same layout\nand file names as the real archive; the library is a text file. Not NVIDIA "
        "software.\n"
    ).encode()
    entries = [
        (f"{top}", None, 0o755, None),
        (f"{top}/KINDLING-TEST-FIXTURE.txt", readme, 0o644, None),
        (f"{top}/LICENSE", stub_library("the cuDNN license file"), 0o644, None),
        (f"{top}/include", None, 0o755, None),
        (
            f"{top}/include/cudnn_version.h",
            cudnn_version_header(major, minor, patch, 10000),
            0o644,
            None,
        ),
        (f"{top}/lib", None, 0o755, None),
        (
            f"{top}/lib/{so}",
            stub_library(f"NVIDIA cuDNN {spec['version']} for CUDA {spec['variant']} ({so})"),
            0o755,
            None,
        ),
        (f"{top}/lib/libcudnn.so.{major}", None, 0o777, so),
        (f"{top}/lib/libcudnn.so", None, 0o777, f"libcudnn.so.{major}"),
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
    return {
        "name": name,
        "sha256": digest,
        "md5": hashlib.md5(data).hexdigest(),  # the manifest's field, not for security
        "size": len(data),
    }


def build_cudnn_redist(root: Path) -> dict:
    """NVIDIA's redist tree under root (= compute/cudnn/redist): the archive under
    cudnn/linux-x86_64/ and redistrib_<label>.json, in the real manifest's format, listing it."""
    spec = CUDNN_REDIST
    tarball = build_cudnn_tarball(root / "cudnn" / "linux-x86_64")
    (root / "cudnn" / "LICENSE.txt").write_bytes(stub_library("the cuDNN license file"))
    relative = f"cudnn/linux-x86_64/{tarball['name']}"
    manifest = {
        "release_date": spec["release_date"],
        "release_label": spec["label"],
        "release_product": "cudnn",
        "cudnn": {
            "name": "NVIDIA CUDA Deep Neural Network library",
            "license": "cudnn",
            "license_path": "cudnn/LICENSE.txt",
            "version": spec["version"],
            "cuda_variant": list(spec["cuda_variants"]),
            "linux-x86_64": {
                f"cuda{spec['variant']}": {
                    "relative_path": relative,
                    "sha256": tarball["sha256"],
                    "md5": tarball["md5"],
                    "size": str(tarball["size"]),
                }
            },
        },
    }
    manifest_name = f"redistrib_{spec['label']}.json"
    (root / manifest_name).write_text(json.dumps(manifest, indent=4) + "\n")
    return {**tarball, "relative_path": relative, "manifest": manifest_name}


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


def download_dependencies(torch_wheel: Path, cache: Path, python_version: str) -> list[Path]:
    """pip-download torch's runtime dependencies (and theirs) for CPython python_version."""
    requirements = runtime_requirements(torch_wheel)
    target = pip_target_args(python_version)
    key = sha256_bytes(json.dumps([requirements, list(target)]).encode())[:16]
    manifest = cache / f"manifest-{key}.json"
    if manifest.is_file():
        names = json.loads(manifest.read_text())["files"]
        if all((cache / name).is_file() for name in names):
            return [cache / name for name in names]
    cache.mkdir(parents=True, exist_ok=True)
    log(
        f"fixture wheels: pip download {len(requirements)} dependencies of {torch_wheel.name} "
        f"for Python {python_version} into {cache}"
    )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        *target,
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


class _Anchors(html.parser.HTMLParser):
    """The <a> elements of a PEP 503 simple page: [(text, {attribute: value})]."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[tuple[str, dict]] = []
        self._open: dict | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            self.anchors.append(("".join(self._text).strip(), self._open))
            self._open = None


def _fetch(url: str, dest=None) -> bytes:
    """GET url (through the machine's proxy settings and CA bundle); into dest if given."""
    context = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or None)
    request = urllib.request.Request(url, headers={"User-Agent": "kindling-build-fixtures"})
    try:
        with urllib.request.urlopen(request, timeout=120, context=context) as response:
            if dest is None:
                return response.read()
            shutil.copyfileobj(response, dest, 1 << 20)
            return b""
    except (OSError, urllib.error.URLError) as exc:
        raise BuildError(f"could not fetch {url}: {exc}") from exc


def real_torch_metadata(cache: Path, simple_url: str | None = None) -> tuple[str, dict]:
    """The METADATA of PyPI's real torch wheel that the cp39 stand-in mirrors, and its origin.

    Fetched once and kept in the wheel cache (later builds are offline). The simple index's
    link gives the wheel's sha256 and, where the index serves PEP 658 metadata, the metadata
    file's sha256 (data-core-metadata or data-dist-info-metadata): then only that file is
    fetched and checked. An index without it (the PyPI these machines reach serves none) makes
    the build download the wheel itself once, check its sha256 against the link's and read
    METADATA from it; the wheel is not kept.
    """
    wheel_name = STANDIN_TORCH["pypi_wheel"]
    stored = cache / f"{wheel_name}.metadata"
    provenance_file = cache / f"{wheel_name}.metadata.json"
    if stored.is_file() and provenance_file.is_file():
        provenance = json.loads(provenance_file.read_text())
        text = stored.read_text(encoding="utf-8")
        if sha256_bytes(text.encode("utf-8")) == provenance.get("metadata_sha256"):
            return text, provenance
    page_url = simple_url or STANDIN_TORCH["pypi_simple"]
    log(f"fixture wheels: reading {wheel_name}'s metadata from {page_url} (once)")
    parser = _Anchors()
    parser.feed(_fetch(page_url).decode("utf-8", errors="replace"))
    links = [attrs for text, attrs in parser.anchors if text == wheel_name]
    if not links:
        raise BuildError(f"{page_url} lists no {wheel_name}")
    href = urllib.parse.urljoin(page_url, links[0].get("href", ""))
    url, _, fragment = href.partition("#")
    wheel_sha256 = fragment.partition("sha256=")[2]
    if not re.fullmatch(r"[0-9a-f]{64}", wheel_sha256):
        raise BuildError(f"{page_url}: the link to {wheel_name} carries no sha256 ({href})")
    advertised = links[0].get("data-core-metadata") or links[0].get("data-dist-info-metadata")
    metadata_sha256 = (advertised or "").partition("sha256=")[2]
    provenance = {"wheel": wheel_name, "url": url, "wheel_sha256": wheel_sha256}
    if re.fullmatch(r"[0-9a-f]{64}", metadata_sha256):
        data = _fetch(url + ".metadata")
        if sha256_bytes(data) != metadata_sha256:
            raise BuildError(f"{url}.metadata does not match the index's sha256 {metadata_sha256}")
        provenance["source"] = "PEP 658 metadata file, sha256 checked against the index"
    else:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache, prefix=".torch-", suffix=".whl") as part:
            log(f"fixture wheels: the index serves no PEP 658 metadata; downloading {url} once")
            _fetch(url, part)
            part.flush()
            if sha256_file(Path(part.name)) != wheel_sha256:
                raise BuildError(f"{url} does not match the index's sha256 {wheel_sha256}")
            data = wheel_metadata(Path(part.name)).encode("utf-8")
        provenance["source"] = "METADATA of the wheel, whose sha256 was checked against the index"
    text = data.decode("utf-8")
    version = metadata_field(text, "Version")
    if version != [STANDIN_TORCH["version"]]:
        raise BuildError(f"{wheel_name}'s metadata says version {version}")
    provenance["metadata_sha256"] = sha256_bytes(data)
    cache.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(data)
    provenance_file.write_text(json.dumps(provenance, indent=2) + "\n")
    return text, provenance


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_standin_torch_wheel(metadata: str, dest_dir: Path) -> tuple[Path, dict]:
    """The cp39 stand-in wheel: the real release's requirements, standins/torch/ as its code.

    Reproducible (sorted entries, fixed times and modes), so its sha256 stays the same from
    build to build while its inputs do.
    """
    version = f"{STANDIN_TORCH['version']}+{STANDIN_TORCH['local']}"
    requires_python = metadata_field(metadata, "Requires-Python")
    requirements = metadata_field(metadata, "Requires-Dist")
    kept = [r for r in requirements if not CUDA_ONLY_REQUIREMENT.match(r)]
    dropped = [r for r in requirements if CUDA_ONLY_REQUIREMENT.match(r)]
    if not requires_python or not kept:
        raise BuildError("the real torch metadata has no Requires-Python or Requires-Dist")
    summary = (
        f"KINDLING TEST FIXTURE, not PyTorch: stand-in for the CPU torch {version} wheel for "
        f"CPython {STANDIN_TORCH['python']} (answers only Kindling's torch probe)"
    )
    body = (
        f"Kindling test fixture: a stand-in for PyTorch's {STANDIN_TORCH_WHEEL} "
        f"({STANDIN_TORCH['origin']}), built by tests/fixture_sources/build_fixtures.py. "
        "Its Requires-Python and Requires-Dist are those of the real torch "
        f"{STANDIN_TORCH['version']} wheel on PyPI ({STANDIN_TORCH['pypi_wheel']}) without "
        "the CUDA-only requirements (nvidia-*, triton); its code is a minimal torch package "
        "that answers only what Kindling's torch probe asks on a CPU host. Not PyTorch "
        "software. See docs/FIXTURES.md."
    )
    lines = [
        "Metadata-Version: 2.1",
        "Name: torch",
        f"Version: {version}",
        f"Summary: {summary}",
        "License: Apache-2.0 (Kindling test fixture)",
        f"Requires-Python: {requires_python[0]}",
        *(f"Requires-Dist: {r}" for r in kept),
        *(f"Provides-Extra: {e}" for e in metadata_field(metadata, "Provides-Extra")),
    ]
    dist_info = f"torch-{version}.dist-info"
    values = {"VERSION": version, "WHEEL": STANDIN_TORCH_WHEEL}
    files: dict[str, bytes] = {}
    code_root = STANDINS / "torch"
    for path in sorted(p for p in code_root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace(f"@{key}@", value)
        leftover = re.search(r"@[A-Z_]+@", text)
        if leftover:
            raise BuildError(f"{path}: placeholder {leftover.group(0)} was not substituted")
        files[path.relative_to(code_root).as_posix()] = text.encode("utf-8")
    files[f"{dist_info}/METADATA"] = ("\n".join(lines) + "\n\n" + body + "\n").encode("utf-8")
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: kindling build_fixtures.py\nRoot-Is-Purelib: false\n"
        f"Tag: {STANDIN_TORCH['tag']}\n"
    ).encode()
    files[f"{dist_info}/top_level.txt"] = b"torch\n"
    record = [f"{name},{_record_hash(data)},{len(data)}" for name, data in sorted(files.items())]
    files[f"{dist_info}/RECORD"] = ("\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n").encode()
    dest_dir.mkdir(parents=True, exist_ok=True)
    wheel = dest_dir / STANDIN_TORCH_WHEEL
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():  # RECORD last, as wheels have it
            info = zipfile.ZipInfo(name, date_time=STANDIN_TORCH["date_time"])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel, {"kept": kept, "dropped": dropped, "requires_python": requires_python[0]}


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
    own += [MODULE_UTILS / name for name in CATALOGUE_FILES]
    own += [CAPTURES / name for name in CAPTURE_FILES]
    own += sorted(path for path in HGX_SOURCE.glob("*") if path.is_file())
    for path in own:
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
    entries = [
        (
            f"NVIDIA CUDA apt repository stand-in for {repo_id} ({entry['layout']} layout; "
            "flat, signed)",
            entry["path"],
        )
        for repo_id, entry in info["apt_repositories"].items()
    ]
    entries += [
        ("cuDNN redist manifest stand-in", info["cudnn_tarball_install"]["manifest"]),
        ("cuDNN redistributable tarball stand-in", info["cudnn_tarball_install"]["path"]),
        ("PyTorch CPU wheel index stand-in (PEP 503)", WHEEL_INDEX_PATH + "/"),
        ("Test signing keys", "keys/"),
        ("What is served (JSON)", "fixtures.json"),
        ("Checksums (JSON)", "checksums.json"),
    ]
    for label, path in entries:
        rows.append(f'<li><a href="{path}">{html.escape(path)}</a> - {html.escape(label)}</li>')
    return (
        "<!DOCTYPE html>\n<html>\n<head><title>Kindling test fixture server</title></head>\n"
        "<body>\n<h1>Kindling test fixture server</h1>\n"
        "<p>This is a <strong>test fixture</strong> for Kindling's Molecule tests: local "
        "stand-ins for NVIDIA's package repositories and the PyTorch wheel index, built by "
        "<code>tests/fixture_sources/build_fixtures.py</code> and served on loopback. The apt "
        "packages and the cuDNN tarball are stand-ins, not NVIDIA software; they are signed "
        "with a TEST key (fingerprint "
        f"<code>{html.escape(info['keys']['fixture']['fingerprint'])}</code>). The cp311 torch "
        "wheel and the dependencies are the real ones; the cp39 torch wheel "
        f"<code>{html.escape(STANDIN_TORCH_WHEEL)}</code> is a stand-in. "
        "See docs/FIXTURES.md.</p>\n"
        "<ul>\n" + "\n".join(rows) + "\n</ul>\n</body>\n</html>\n"
    )


def _repo_info(repo_id: str, versions: dict, keys: dict) -> dict:
    path = repo_path(repo_id)
    layout = REPOSITORIES[repo_id]["layout"]
    revision = DRIVER_REVISIONS[layout]
    branches = {}
    for branch, spec in FIXTURE_REPOS[repo_id]["branches"].items():
        names = driver_names(layout, branch)
        fabric = stack_plan.fabric_manager_packages(branch, spec["version"])
        branches[branch] = {
            **spec,
            "package_version": f"{spec['version']}-{revision}",
            "fabric_manager": {
                "packages": fabric["packages"],
                "package_version": f"{spec['version']}-{fabric_manager_revision(layout, branch)}",
                "nvlink5_packages": fabric["nvlink5_packages"],
            },
            "choices": {
                f"{modules}/{flavor}": {
                    "packages": row["packages"],
                    "pinning": row["pinning"],
                    "version": row["version"],
                }
                for (modules, flavor), row in names["choices"].items()
            },
        }
    return {
        "stands_in_for": f"https://developer.download.nvidia.com/{path}/",
        "layout": layout,
        "path": path + "/",
        "sources_line": (
            "deb [signed-by=/usr/share/keyrings/kindling-fixture-archive-keyring.gpg] "
            f"http://127.0.0.1:PORT/{path}/ /"
        ),
        "key_file": f"{path}/{keys['fixture']['fingerprint'][-8:].lower()}.pub",
        "packages": versions,
        "driver_branches": branches,
    }


def build(out: Path, torch_wheel: Path, wheel_cache: Path, keys: dict, jobs: int) -> dict:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        srv = work / "srv"
        srv.mkdir()
        exported = export_keys(out, keys, srv)
        template = make_equivs_template(work)
        groups = {
            PRIMARY_REPO: all_packages(exported["binary"]),
            LATER_REPO_PREFIX: later_packages(),
            **other_layout_packages(),
        }
        count = sum(len(packages) for packages in groups.values())
        log(f"fixture packages: building {count} packages with equivs ({jobs} at a time)")
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {
                group: [
                    pool.submit(build_package, pkg, work / "pkg" / group, template)
                    for pkg in packages
                ]
                for group, packages in groups.items()
            }
            built = {group: [f.result() for f in found] for group, found in futures.items()}
        debs = built[PRIMARY_REPO]
        keyring_deb = [deb for deb in debs if deb.name.startswith("cuda-keyring_")]
        keyring = srv / "keys" / KEYRING_NAME
        armored = exported["armored"]

        repo = srv / APT_REPO_PATH
        build_apt_repo(debs, repo, out, keys, armored)
        verify_repo(repo, keyring)
        later = srv / LATER_REPO_PREFIX / APT_REPO_PATH
        later_debs = [deb for deb in debs if not deb.name.startswith(CANARY_PACKAGE + "_")] + built[
            LATER_REPO_PREFIX
        ]
        build_apt_repo(later_debs, later, out, keys, armored)
        verify_repo(later, keyring)
        rotated = srv / ROTATED_REPO_PREFIX / APT_REPO_PATH
        build_apt_repo(debs, rotated, out, keys, armored, signer="wrong")
        verify_repo(rotated, srv / "keys" / WRONG_KEYRING_NAME)
        # NVIDIA serves the Container Toolkit from another URL than the CUDA repository
        # (nvidia.github.io/libnvidia-container/stable/deb/<arch>); the fixture serves the same
        # flat repository there too, so that a host trusting both (each with its own keyring)
        # has two URLs, as a real one does: apt refuses one URL with two Signed-By values.
        toolkit = srv / CONTAINER_TOOLKIT_REPO_PATH
        toolkit.parent.mkdir(parents=True, exist_ok=True)
        toolkit.symlink_to(os.path.relpath(repo, toolkit.parent), target_is_directory=True)
        repos = {PRIMARY_REPO: repo}
        for repo_id in FIXTURE_REPOS:
            if repo_id == PRIMARY_REPO:
                continue
            repos[repo_id] = srv / repo_path(repo_id)
            build_apt_repo(
                keyring_deb + built[repo_id], repos[repo_id], out, keys, armored, repo_id=repo_id
            )
            verify_repo(repos[repo_id], keyring)

        tarball = build_cudnn_redist(srv / CUDNN_REDIST_ROOT)
        tarball_path = f"{CUDNN_REDIST_ROOT}/{tarball['relative_path']}"

        metadata, provenance = real_torch_metadata(wheel_cache)
        standin, requirements = build_standin_torch_wheel(metadata, work / "standin")
        wheels = [
            torch_wheel,
            *download_dependencies(torch_wheel, wheel_cache, TORCH_WHEEL_PYTHON),
            standin,
            *download_dependencies(standin, wheel_cache, STANDIN_TORCH["python"]),
        ]
        wheels = list({wheel.name: wheel for wheel in wheels}.values())
        projects = build_wheel_index(wheels, srv / WHEEL_INDEX_PATH)

        checksums = {tarball_path: {"sha256": tarball["sha256"], "size": tarball["size"]}}
        for repo_id, where in repos.items():
            for deb in sorted(where.glob("*.deb")):
                checksums[f"{repo_path(repo_id)}/{deb.name}"] = {
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

        repositories = {
            repo_id: _repo_info(repo_id, parse_packages((where / "Packages").read_text()), keys)
            for repo_id, where in repos.items()
        }
        primary = repositories[PRIMARY_REPO]
        later_versions = parse_packages((later / "Packages").read_text())
        adds = {}
        for name, found in later_versions.items():
            new = [v for v in found if v not in primary["packages"].get(name, [])]
            if new:
                adds[name] = new[-1]
        primary.update(
            {
                "later_snapshot": {"path": f"{LATER_REPO_PREFIX}/{APT_REPO_PATH}/", "adds": adds},
                "rotated_key_copy": {
                    "path": f"{ROTATED_REPO_PREFIX}/{APT_REPO_PATH}/",
                    "signed_by": keys["wrong"]["fingerprint"],
                },
                "dkms_delay_file": DKMS_DELAY_FILE,
                "persistence_state_file": PERSISTENCE_STATE_FILE,
                "fabric_state_file": FABRIC_STATE_FILE,
                "fabric_manager_fail_file": FABRIC_MANAGER_FAIL_FILE,
                "nvidia_smi_case_file": SMI_CASE_FILE,
                "nvidia_smi_cases": {
                    "h200": "real H200 captures",
                    HGX_CASE: "constructed 8-GPU HGX",
                },
                "gpu_identity": FIXTURE_GPU,
            }
        )
        info = {
            "kind": "kindling-test-fixture",
            "notice": FIXTURE_NOTICE,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "keys": exported["info"],
            "apt_repository": primary,
            "apt_repositories": repositories,
            "cudnn_tarball_install": {
                "stands_in_for": (
                    f"https://developer.download.nvidia.com/{CUDNN_REDIST_ROOT}/"
                    f"{tarball['relative_path']}"
                ),
                "manifest": f"{CUDNN_REDIST_ROOT}/{tarball['manifest']}",
                "path": tarball_path,
                "version": CUDNN_REDIST["version"],
                "cuda_variant": CUDNN_REDIST["variant"],
                "sha256": tarball["sha256"],
                "size": tarball["size"],
            },
            "pytorch_index": {
                "stands_in_for": "https://download.pytorch.org/whl/cpu/",
                "path": WHEEL_INDEX_PATH + "/",
                "note": (
                    f"real wheels (the CPU torch wheel {torch_wheel.name} and the runtime "
                    "dependencies from PyPI) except the STAND-IN "
                    f"{STANDIN_TORCH_WHEEL}, see standins"
                ),
                "standins": {
                    STANDIN_TORCH_WHEEL: {
                        "stands_in_for": STANDIN_TORCH["origin"],
                        "what": (
                            "Kindling test fixture, not PyTorch: the real release's "
                            "Requires-Python and Requires-Dist (without CUDA-only requirements) "
                            "and a minimal torch package that answers Kindling's torch probe "
                            "on a CPU host (torch.KINDLING_FIXTURE_STANDIN is True)"
                        ),
                        "metadata_from": provenance,
                        "requires_python": requirements["requires_python"],
                        "requires_dist": requirements["kept"],
                        "dropped_cuda_only": requirements["dropped"],
                    }
                },
                "projects": {
                    project: [{k: e[k] for k in ("filename", "version", "sha256")} for e in files]
                    for project, files in projects.items()
                },
            },
        }
        (srv / "fixtures.json").write_text(json.dumps(info, indent=2) + "\n")
        (srv / "index.html").write_text(index_page(info))

        deb_count = len({deb.name for where in repos.values() for deb in where.glob("*.deb")})
        final = out / "srv"
        if final.exists():
            final.rename(work / "old-srv")
        srv.rename(final)
        return {
            "debs": deb_count,
            "repos": len(repos),
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
        f"kindling fixtures: built {result['debs']} debs ({result['repos']} signed repos), "
        f"cuDNN tarball "
        f"{result['tarball']['sha256'][:12]}, {result['wheels']} wheels into {out / 'srv'} "
        f"in {result['seconds']:.1f}s (test key {keys['fixture']['fingerprint']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
