#!/usr/bin/env python3
"""Generate module_utils/debian_units.py: the systemd unit names Debian's system ships.

A unit name a Kindling role writes (jupyter_service_name) must never be one of the
operating system's: a unit of that name in /etc/systemd/system would shadow the
package's (ssh, dbus, cron). The host check in role_inputs refuses a name that is
installed on the host; this list refuses the names of Debian's base-system and common
service packages everywhere, also on a host where the package is not installed (yet).

Source: Debian's Contents index (which package ships which file) and Packages index
(each package's Priority) of one release, read from the archive:

    http://deb.debian.org/debian/dists/<suite>/main/Contents-all.gz
    http://deb.debian.org/debian/dists/<suite>/main/Contents-amd64.gz
    http://deb.debian.org/debian/dists/<suite>/main/binary-amd64/Packages.xz

The packages are those of Priority required, important and standard (Debian's base
system and its standard task) and SERVICE_PACKAGES below (services people commonly
install beside Kindling). Every unit file those packages ship under lib/systemd/system
or usr/lib/systemd/system gives its name without the unit type (ssh.service and
ssh.socket give ssh; getty@.service gives getty@, a template whose instances are refused
too). Usage:

    python tools/debian_units.py [--suite bookworm] [--cache DIR] [--out PATH]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import lzma
import os
import re
import sys
import urllib.request
from typing import Dict, Iterable, Set

MIRROR = "http://deb.debian.org/debian"
UNIT_DIRS = ("lib/systemd/system/", "usr/lib/systemd/system/")
UNIT_TYPES = (
    "service",
    "socket",
    "timer",
    "target",
    "path",
    "mount",
    "automount",
    "swap",
    "slice",
    "scope",
    "device",
)
PRIORITIES = ("required", "important", "standard")
# Services commonly installed beside Kindling, whose units a role must never shadow.
SERVICE_PACKAGES = (
    "systemd",
    "systemd-timesyncd",
    "systemd-resolved",
    "udev",
    "dbus",
    "dbus-daemon",
    "dbus-system-bus-common",
    "openssh-server",
    "openssh-client",
    "cron",
    "anacron",
    "rsyslog",
    "logrotate",
    "ifupdown",
    "network-manager",
    "netplan.io",
    "isc-dhcp-client",
    "chrony",
    "ntpsec",
    "docker.io",
    "containerd",
    "runc",
    "podman",
    "unattended-upgrades",
    "apt",
    "e2fsprogs",
    "lvm2",
    "mdadm",
    "nfs-common",
    "nfs-kernel-server",
    "rpcbind",
    "avahi-daemon",
    "cups",
    "exim4-base",
    "exim4-daemon-light",
    "postfix",
    "nginx-common",
    "apache2",
    "haveged",
    "irqbalance",
    "smartmontools",
    "sudo",
    "polkitd",
    "accountsservice",
    "ufw",
    "nftables",
    "iptables",
    "fail2ban",
    "snapd",
    "cloud-init",
    "qemu-guest-agent",
    "open-vm-tools",
    "lxcfs",
    "prometheus-node-exporter",
    "prometheus",
    "grafana",
    "munge",
    "slurmd",
    "slurmctld",
)
# Names the packages enable as aliases (Alias= in the unit), which the Contents index
# does not list as files: sshd is openssh-server's ssh.service.
ALIASES = {
    "sshd": "openssh-server",
    "syslog": "rsyslog",
    "dbus-org.freedesktop.timesync1": "systemd-timesyncd",
}


def fetch(url: str, cache: str) -> bytes:
    name = os.path.join(cache, url.replace("://", "_").replace("/", "_"))
    if not os.path.exists(name):
        os.makedirs(cache, exist_ok=True)
        with urllib.request.urlopen(url, timeout=300) as response, open(
            name + ".part", "wb"
        ) as out:
            out.write(response.read())
        os.replace(name + ".part", name)
    with open(name, "rb") as handle:
        return handle.read()


def priority_packages(packages_index: str) -> Set[str]:
    found, name = set(), None
    for line in packages_index.splitlines():
        if line.startswith("Package: "):
            name = line.split(None, 1)[1].strip()
        elif (
            line.startswith("Priority: ") and name and line.split(None, 1)[1].strip() in PRIORITIES
        ):
            found.add(name)
    return found


UNIT_FILE = re.compile(r"\A(?:usr/)?lib/systemd/system/([^/]+)\.(" + "|".join(UNIT_TYPES) + r")\Z")


def units_of(contents: Iterable[str], wanted: Set[str]) -> Dict[str, Set[str]]:
    """{unit name without its type: {packages that ship it}} for the wanted packages."""
    units: Dict[str, Set[str]] = {}
    for line in contents:
        if not line.startswith(UNIT_DIRS):
            continue
        path, _, owners = line.rstrip("\n").rpartition(" ")
        match = UNIT_FILE.match(path.strip())
        if not match:
            continue
        packages = {o.rsplit("/", 1)[-1] for o in owners.strip().split(",")}
        for package in packages & wanted:
            units.setdefault(match.group(1), set()).add(package)
    return units


def render(suite: str, urls: Iterable[str], packages: Set[str], units: Dict[str, Set[str]]) -> str:
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        '"""The systemd unit names that Debian\'s base-system and common service packages ship.',
        "",
        "GENERATED by tools/debian_units.py; do not edit. Regenerate with",
        f"`python tools/debian_units.py --suite {suite}`.",
        '"""',
        "",
        f"SUITE = {json.dumps(suite)}",
        f"GENERATED = {json.dumps(today)}",
        "SOURCES = (",
        *[f"    {json.dumps(u)}," for u in urls],
        ")",
        f"PRIORITIES = ({', '.join(json.dumps(p) for p in PRIORITIES)})",
        f"PACKAGE_COUNT = {len(packages)}",
        "# unit name (without .service, .socket, ...): the package that ships it",
        "UNITS = {",
    ]
    for name in sorted(units):
        lines.append(f"    {json.dumps(name)}: {json.dumps(sorted(units[name])[0])},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--mirror", default=MIRROR)
    parser.add_argument(
        "--cache", default=os.path.join(os.environ.get("KINDLING_CACHE", "/tmp"), "debian-index")
    )
    parser.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "..", "module_utils", "debian_units.py"),
    )
    args = parser.parse_args(argv)
    base = f"{args.mirror}/dists/{args.suite}/main"
    packages_url = f"{base}/binary-amd64/Packages.xz"
    contents_urls = [f"{base}/Contents-all.gz", f"{base}/Contents-amd64.gz"]
    index = lzma.decompress(fetch(packages_url, args.cache)).decode("utf-8", "replace")
    wanted = priority_packages(index) | set(SERVICE_PACKAGES)
    units: Dict[str, Set[str]] = {}
    for url in contents_urls:
        text = gzip.decompress(fetch(url, args.cache)).decode("utf-8", "replace")
        for name, owners in units_of(text.splitlines(), wanted).items():
            units.setdefault(name, set()).update(owners)
    for alias, package in ALIASES.items():
        units.setdefault(alias, set()).add(package)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(render(args.suite, [packages_url, *contents_urls], wanted, units))
    print(f"wrote {os.path.normpath(args.out)}: {len(units)} unit names of {len(wanted)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
