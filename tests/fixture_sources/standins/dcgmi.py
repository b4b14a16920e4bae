#!/usr/bin/python3
"""dcgmi -- Kindling test stand-in, NOT NVIDIA's DCGM command line.

Installed as /usr/bin/dcgmi by the Kindling test-fixture package datacenter-gpu-manager (built by
tests/fixture_sources/build_fixtures.py). It implements `dcgmi --version` and
`dcgmi discovery -l`; like the real tool it needs the host engine: when the stand-in
nv-hostengine is not running (its pid file is missing or stale) it fails to connect.
The GPU it lists comes from the stand-in nvidia-smi captures if a fixture driver is installed.
"""

import os
import sys

VERSION = "@VERSION@"
PID_FILE = os.environ.get("KINDLING_FAKE_DCGM_PIDFILE", "/run/nvhostengine.pid")
SMI_CSV = os.environ.get(
    "KINDLING_FAKE_SMI_CSV", "/usr/share/kindling-fixture/nvidia-smi/query-full.csv"
)


def _hostengine_running():
    try:
        with open(PID_FILE, encoding="ascii") as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _gpus():
    try:
        with open(SMI_CSV, encoding="utf-8") as handle:
            lines = [line for line in handle.read().splitlines() if line.strip()]
    except OSError:
        return []
    header = [title.partition(" [")[0] for title in lines[0].split(", ")]
    return [dict(zip(header, line.split(", "))) for line in lines[1:]]


def discovery():
    gpus = _gpus()
    rule = "+--------+----------------------------------------------------------------------+"
    print(f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'} found.")
    print(rule)
    print("| GPU ID | Device Information                                                   |")
    print(rule)
    for gpu in gpus:
        cells = [
            (gpu.get("index", "0"), "Name: " + gpu.get("name", "")),
            ("", "PCI Bus ID: " + gpu.get("pci.bus_id", "")),
            ("", "Device UUID: " + gpu.get("uuid", "")),
        ]
        for left, right in cells:
            print(f"| {left:<6} | {right:<68} |")
        print(rule)
    print("0 NvSwitches found.")
    print("+-----------+")
    print("| Switch ID |")
    print("+-----------+")
    print("+-----------+")
    return 0


def main(argv):
    if argv in (["--version"], ["-v"]):
        print()
        print(f"dcgmi  version: {VERSION}")
        print()
        return 0
    if not _hostengine_running():
        print("Error: unable to establish a connection to the specified host: localhost")
        print(
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."
        )
        return 255
    if argv[:1] == ["discovery"] and ("-l" in argv or "--list" in argv):
        return discovery()
    command = " ".join(argv)
    sys.stderr.write(f"Kindling test stand-in dcgmi: {command!r} is not implemented\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
