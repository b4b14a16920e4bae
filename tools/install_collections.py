#!/usr/bin/env python3
"""Copy the collections requirements.yml lists out of the `ansible` bundle's wheel.

The `ansible` community bundle carries about a hundred collections (some 470 MB
installed); the playbooks use three. Galaxy is not reachable from every controller, so
`make site` downloads the bundle's wheel once (pip, into --cache) and extracts only the
collections requirements.yml names into --dest (ansible.cfg's collections_path).

- requirements.yml is the list: one entry per collection, each with an exact version.
- The bundle's version is the one pin requirements-dev.txt holds (`ansible==X`), so the
  test venv's bundle and the controller's collections are the same release.
- A collection the wheel lacks, or carries at a version other than requirements.yml's,
  fails the install with both versions named.
- A stamp (<dest>/.kindling-collections.json) records what was installed; when it matches
  and every collection's MANIFEST.json is still there, a second run changes nothing.
  Collections a previous run installed that requirements.yml no longer lists are removed.

Usage: install_collections.py [--dest collections] [--cache DIR] [--wheel FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS_YML = ROOT / "requirements.yml"
REQUIREMENTS_DEV = ROOT / "requirements-dev.txt"
STAMP_NAME = ".kindling-collections.json"
EXACT_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
BUNDLE_PIN = re.compile(r"^ansible==(?P<version>\S+)\s*(#.*)?$")


class InstallError(Exception):
    """A problem the user must fix; the message says which."""


def wanted(path: Path = REQUIREMENTS_YML) -> dict[str, str]:
    """requirements.yml's collections: {"namespace.name": "exact version"}."""
    data = yaml.safe_load(path.read_text()) or {}
    result: dict[str, str] = {}
    for entry in data.get("collections") or []:
        if not isinstance(entry, dict) or "name" not in entry:
            raise InstallError(f"{path.name}: each collection needs a name and a version: {entry}")
        name, version = str(entry["name"]), str(entry.get("version", ""))
        if name.count(".") != 1:
            raise InstallError(f"{path.name}: {name!r} is not namespace.name")
        if not EXACT_VERSION.match(version):
            raise InstallError(
                f"{path.name}: {name} has version {version!r}; give the exact version the "
                "bundle carries (X.Y.Z), so that Galaxy users get the same one"
            )
        if name in result:
            raise InstallError(f"{path.name}: {name} is listed twice")
        result[name] = version
    if not result:
        raise InstallError(f"{path.name} lists no collections")
    return result


def bundle_version(path: Path = REQUIREMENTS_DEV) -> str:
    """The `ansible` bundle's version pinned in requirements-dev.txt."""
    found = [m["version"] for m in map(BUNDLE_PIN.match, path.read_text().splitlines()) if m]
    if len(found) != 1:
        raise InstallError(f"{path.name} must pin the bundle exactly once (ansible==X.Y.Z)")
    return found[0]


def download(version: str, cache: Path) -> Path:
    """The bundle's wheel in the cache, downloaded with pip when it is not there yet."""
    name = f"ansible-{version}-py3-none-any.whl"
    wheel = cache / name
    if wheel.is_file():
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check"]
    cmd += ["--no-deps", "--only-binary=:all:", "--no-cache-dir"]  # one copy: the one in cache
    cmd += ["--dest", str(cache), f"ansible=={version}"]
    print(f"install_collections: downloading ansible=={version} into {cache}", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not wheel.is_file():
        raise InstallError(
            f"pip could not download ansible=={version} ({' '.join(cmd)}):\n"
            f"{proc.stdout}{proc.stderr}"
        )
    return wheel


def manifest_version(tree: Path, name: str) -> str | None:
    """The version in an installed collection's MANIFEST.json, or None."""
    manifest = tree.joinpath("ansible_collections", *name.split("."), "MANIFEST.json")
    try:
        return json.loads(manifest.read_text())["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        return None


def up_to_date(dest: Path, stamp: dict) -> bool:
    try:
        recorded = json.loads((dest / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return False
    return recorded == stamp and all(
        manifest_version(dest, name) == version for name, version in stamp["collections"].items()
    )


def extract(wheel: Path, collections: dict[str, str], into: Path) -> None:
    """Extract each collection's directory from the wheel into `into`/ansible_collections."""
    with zipfile.ZipFile(wheel) as archive:
        members = archive.namelist()
        for name, version in collections.items():
            prefix = "ansible_collections/" + name.replace(".", "/") + "/"
            mine = [m for m in members if m.startswith(prefix)]
            if not mine:
                raise InstallError(f"{wheel.name} carries no {name}; requirements.yml lists it")
            manifest = json.loads(archive.read(prefix + "MANIFEST.json"))
            carried = manifest["collection_info"]["version"]
            if carried != version:
                raise InstallError(
                    f"{wheel.name} carries {name} {carried}, requirements.yml asks for "
                    f"{version}: make the two agree"
                )
            for member in mine:
                archive.extract(member, into)


def install(
    dest: Path,
    cache: Path,
    wheel: Path | None = None,
    requirements: Path = REQUIREMENTS_YML,
    requirements_dev: Path = REQUIREMENTS_DEV,
) -> bool:
    """Install what requirements.yml lists into dest; True when something changed."""
    collections = wanted(requirements)
    version = bundle_version(requirements_dev)
    stamp = {"bundle": f"ansible=={version}", "collections": collections}
    stamp_file = dest / STAMP_NAME
    if up_to_date(dest, stamp):
        os.utime(stamp_file)  # make compares the stamp's time with its prerequisites'
        print(f"install_collections: {', '.join(collections)} already in {dest}")
        return False

    previous: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError):
        previous = json.loads(stamp_file.read_text()).get("collections", {})
    wheel = wheel or download(version, cache)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".extract-") as tmp:
        try:
            extract(wheel, collections, Path(tmp))
        except zipfile.BadZipFile as err:
            raise InstallError(f"{wheel} is not a whole wheel ({err}): delete it") from err
        stamp_file.unlink(missing_ok=True)  # a run stopped below leaves no valid stamp
        for name in sorted(set(previous) | set(collections)):
            target = dest.joinpath("ansible_collections", *name.split("."))
            if target.exists():
                shutil.rmtree(target)
            if name in collections:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(Path(tmp).joinpath("ansible_collections", *name.split(".")), target)
    stamp_file.write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    listed = ", ".join(f"{n} {v}" for n, v in collections.items())
    print(f"install_collections: {listed} from ansible=={version} into {dest}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / "collections")
    default_cache = Path(os.environ.get("KINDLING_CACHE", Path.home() / ".cache/kindling"))
    parser.add_argument("--cache", type=Path, default=default_cache / "wheels")
    parser.add_argument("--wheel", type=Path, help="use this bundle wheel (no download)")
    args = parser.parse_args(argv)
    try:
        install(args.dest, args.cache, args.wheel)
    except InstallError as err:
        print(f"install_collections: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
