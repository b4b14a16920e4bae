#!/usr/bin/python3
"""nvidia-smi -- Kindling test stand-in, NOT NVIDIA's nvidia-smi.

Installed as /usr/bin/nvidia-smi by the Kindling test-fixture driver userspace packages
(nvidia-driver on Debian, nvidia-driver-<branch> on Ubuntu; built by
tests/fixture_sources/build_fixtures.py). It talks to no GPU and no driver: it prints
real captures from an NVIDIA H200 host, copied from the Kindling repository's
tests/fixtures/captures/h200/, in which the fixture build substituted the package's driver version,
its CUDA version and the GPU identity (NVIDIA A100-SXM4-40GB, compute capability 8.0, 40960 MiB).

Supported: no arguments, -L, -q, -q -x (also -x -q, --query --xml-format), topo -m,
--query-gpu=<fields> --format=csv[,noheader][,nounits], -i/--id 0.
KINDLING_FAKE_SMI_FAIL=no-driver|mismatch reproduces the real failure messages and exit codes; so
does that word in the file /etc/kindling-fixture/nvidia-smi-fail (for tests that cannot set the
environment of the process that runs nvidia-smi). KINDLING_FAKE_SMI_DIR overrides where the
captures are read from.

Persistence Mode is not the capture's: it is read when printing from the file the stand-in
nvidia-persistenced writes, /run/nvidia-persistenced/persistence-mode ("Enabled", or "Disabled"
when the daemon runs with --no-persistence-mode); without the file it is "Disabled", as on a
host where nothing turned it on. KINDLING_FAKE_PERSISTENCE_FILE overrides the path.
"""

import os
import re
import sys

CAPTURE_DIR = os.environ.get("KINDLING_FAKE_SMI_DIR", "/usr/share/kindling-fixture/nvidia-smi")
FAIL_FILE = os.environ.get("KINDLING_FAKE_SMI_FAIL_FILE", "/etc/kindling-fixture/nvidia-smi-fail")
PERSISTENCE_FILE = os.environ.get(
    "KINDLING_FAKE_PERSISTENCE_FILE", "/run/nvidia-persistenced/persistence-mode"
)

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."

# Alternative names real nvidia-smi accepts for a --query-gpu field (canonical name on the right).
ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_serial": "serial",
    "gpu_bus_id": "pci.bus_id",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
}


def persistence_mode():
    """ "Enabled" or "Disabled", from the stand-in nvidia-persistenced's state file."""
    try:
        with open(PERSISTENCE_FILE, encoding="utf-8") as handle:
            state = handle.read().strip()
    except OSError:
        return "Disabled"
    return "Enabled" if state == "Enabled" else "Disabled"


def _with_persistence(name, text):
    mode = persistence_mode()
    if name == "nvidia-smi-q.xml":
        return re.sub(
            r"<persistence_mode>[^<]*</persistence_mode>",
            f"<persistence_mode>{mode}</persistence_mode>",
            text,
        )
    if name == "nvidia-smi-q.txt":
        return re.sub(r"(?m)^(\s*Persistence Mode\s+: )\S+$", rf"\g<1>{mode}", text)
    if name == "smi.txt":
        # The GPU row's first column ends with Persistence-M, "On " or "Off" (same width).
        lines = text.split("\n")
        for number, line in enumerate(lines):
            if re.match(r"^\|\s+\d+\s", line):
                value = "On " if mode == "Enabled" else "Off"
                lines[number] = re.sub(r"(On |Off)( \|)", rf"{value}\2", line, count=1)
        return "\n".join(lines)
    return text


def _emit(name):
    path = os.path.join(CAPTURE_DIR, name)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        sys.stderr.write(f"Kindling test stand-in nvidia-smi: cannot read capture {path}: {exc}\n")
        return 1
    sys.stdout.buffer.write(_with_persistence(name, text).encode("utf-8"))
    sys.stdout.flush()
    return 0


def _csv_table():
    with open(os.path.join(CAPTURE_DIR, "query-full.csv"), encoding="utf-8") as handle:
        lines = [line for line in handle.read().splitlines() if line.strip()]
    header = lines[0].split(", ")
    rows = [line.split(", ") for line in lines[1:]]
    if "persistence_mode" in header:
        column = header.index("persistence_mode")
        mode = persistence_mode()
        for row in rows:
            row[column] = mode
    return header, rows


def _query_gpu(fields_spec, format_spec):
    if format_spec is None:
        print("The --format argument is required with --query-gpu (e.g. --format=csv).")
        return 2
    fmt = [part.strip().lower() for part in format_spec.split(",")]
    if "csv" not in fmt or any(part not in ("csv", "noheader", "nounits") for part in fmt):
        print(f'"{format_spec}" is not a valid format.')
        return 2
    header, rows = _csv_table()
    columns = {}
    for index, title in enumerate(header):
        name, _, unit = title.partition(" [")
        columns[name.strip().lower()] = (title, unit.rstrip("]"), index)
    wanted = []  # (header title, unit, column index or None for "count")
    for raw in fields_spec.split(","):
        field = ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if field == "count":
            wanted.append(("count", "", None))
        elif field in columns:
            wanted.append(columns[field])
        else:
            print(f'Field "{raw.strip()}" is not a valid field to query.')
            print()
            return 2
    out = []
    if "noheader" not in fmt:
        out.append(", ".join(title for title, _unit, _index in wanted))
    for row in rows:
        values = []
        for _title, unit, index in wanted:
            value = str(len(rows)) if index is None else row[index]
            if "nounits" in fmt and unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1]
            values.append(value)
        out.append(", ".join(values))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def main(argv):
    fail = os.environ.get("KINDLING_FAKE_SMI_FAIL", "")
    if not fail:
        try:
            with open(FAIL_FILE, encoding="utf-8") as handle:
                fail = handle.read().strip()
        except OSError:
            pass
    if fail == "no-driver":
        print(NO_DRIVER)
        print()
        return 9
    if fail == "mismatch":
        print(MISMATCH)
        return 18

    args = []
    query_fields = None
    format_spec = None
    it = iter(argv)
    for arg in it:
        if arg.startswith("--query-gpu="):
            query_fields = arg.split("=", 1)[1]
        elif arg == "--query-gpu":
            query_fields = next(it, "")
        elif arg.startswith("--format="):
            format_spec = arg.split("=", 1)[1]
        elif arg == "--format":
            format_spec = next(it, "")
        elif arg in ("-i", "--id"):
            gpu = next(it, "")
            if gpu not in ("0",):
                print("No devices were found")
                return 6
        elif arg.startswith("--id="):
            if arg.split("=", 1)[1] != "0":
                print("No devices were found")
                return 6
        elif arg in ("-qx", "-xq"):
            args.extend(["-q", "-x"])
        else:
            args.append(arg)

    if query_fields is not None:
        if args:
            print(INVALID_ARGS)
            return 2
        return _query_gpu(query_fields, format_spec)
    if format_spec is not None:
        print(INVALID_ARGS)
        return 2
    if not args:
        return _emit("smi.txt")
    if args in (["-L"], ["--list-gpus"]):
        return _emit("smi-L.txt")
    if args[0] == "topo" and args[1:] in (["-m"], ["--matrix"]):
        return _emit("topo.txt")
    if args in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    flags = set(args)
    query = {"-q", "--query"} & flags
    xml = {"-x", "--xml-format"} & flags
    if len(query) == 1 and len(args) == 1:
        return _emit("nvidia-smi-q.txt")
    if len(query) == 1 and len(xml) == 1 and len(args) == 2:
        return _emit("nvidia-smi-q.xml")
    print(INVALID_ARGS)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
