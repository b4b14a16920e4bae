#!/usr/bin/python3
"""nvidia-smi -- Kindling test stand-in, NOT NVIDIA's nvidia-smi.

Installed as /usr/bin/nvidia-smi by the Kindling test-fixture driver userspace packages
(nvidia-driver on Debian, nvidia-driver-<branch> on Ubuntu; built by
tests/fixture_sources/build_fixtures.py). It talks to no GPU and no driver: it prints
real captures from an NVIDIA H200 host, copied from the Kindling repository's
tests/fixtures/captures/h200/, in which the fixture build substituted the package's driver version,
its CUDA version and the GPU identity (NVIDIA A100-SXM4-40GB, compute capability 8.0, 40960 MiB).

Supported: no arguments, -L, -q, -q -x (also -x -q, --query --xml-format), topo -m, nvlink -s,
--query-gpu=<fields> --format=csv[,noheader][,nounits], -i/--id <index>.
KINDLING_FAKE_SMI_FAIL=no-driver|mismatch reproduces the real failure messages and exit codes; so
does that word in the file /etc/kindling-fixture/nvidia-smi-fail (for tests that cannot set the
environment of the process that runs nvidia-smi). KINDLING_FAKE_SMI_DIR overrides where the
captures are read from.

Persistence Mode is not the capture's: it is read when printing from the file the stand-in
nvidia-persistenced writes, /run/nvidia-persistenced/persistence-mode ("Enabled", or "Disabled"
when the daemon runs with --no-persistence-mode); without the file it is "Disabled", as on a
host where nothing turned it on. KINDLING_FAKE_PERSISTENCE_FILE overrides the path.

NVSwitch host mode: when /etc/kindling-fixture/nvidia-smi-case says "hgx" (or
KINDLING_FAKE_SMI_CASE=hgx) it prints the HGX capture set in the hgx/ subdirectory of the
captures instead: a CONSTRUCTED 8-GPU H100 NVLink host (tests/fixtures/nvidia_smi/h100-8gpu/,
with the package's driver identity substituted; its README says what is constructed). "h200" or
no file: the H200 captures. On that host the GPUs' fabric State/Status (the <fabric> element of
-q -x, the "Fabric" block of -q, --query-gpu=fabric.state,fabric.status) come from the file the
stand-in nv-fabricmanager writes, /run/nvidia-fabricmanager/fabric-state: "Completed"/"Success"
while it says Completed, and "In Progress"/"N/A" when it says so or is absent (no fabric manager
has configured the NVSwitch fabric: CUDA would fail with error 802). `nvlink -s` (--status)
prints the set's per-link speeds (nothing for the H200 set, which has no NVLink capture: what
nvidia-smi prints on a host without NVLink). -i/--id takes a GPU index of the set.
KINDLING_FAKE_SMI_CASE_FILE and KINDLING_FAKE_FABRIC_STATE_FILE override the two paths.
"""

import os
import re
import sys

CAPTURE_DIR = os.environ.get("KINDLING_FAKE_SMI_DIR", "/usr/share/kindling-fixture/nvidia-smi")
FAIL_FILE = os.environ.get("KINDLING_FAKE_SMI_FAIL_FILE", "/etc/kindling-fixture/nvidia-smi-fail")
PERSISTENCE_FILE = os.environ.get(
    "KINDLING_FAKE_PERSISTENCE_FILE", "/run/nvidia-persistenced/persistence-mode"
)
CASE_FILE = os.environ.get("KINDLING_FAKE_SMI_CASE_FILE", "/etc/kindling-fixture/nvidia-smi-case")
FABRIC_STATE_FILE = os.environ.get(
    "KINDLING_FAKE_FABRIC_STATE_FILE", "/run/nvidia-fabricmanager/fabric-state"
)
# Capture sets: case name -> subdirectory of CAPTURE_DIR ("" = the H200 captures themselves).
CASES = {"h200": "", "hgx": "hgx"}
# Sets whose GPUs hang off an NVSwitch fabric: their fabric state is the fabric manager's.
NVSWITCH_CASES = {"hgx"}
# The fabric state NVML reports (nvidia-smi prints these names) and the status beside it; the
# status is meaningful only once the state is Completed.
FABRIC_READY = ("Completed", "Success")
FABRIC_NOT_READY = ("In Progress", "N/A")

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


class StandinError(Exception):
    pass


def selected_case():
    case = os.environ.get("KINDLING_FAKE_SMI_CASE", "")
    if not case:
        try:
            with open(CASE_FILE, encoding="utf-8") as handle:
                case = handle.read().strip()
        except OSError:
            case = ""
    case = case or "h200"
    if case not in CASES:
        raise StandinError(
            f"Kindling test stand-in nvidia-smi: unknown case {case!r} (from "
            f"KINDLING_FAKE_SMI_CASE or {CASE_FILE}; known: {', '.join(sorted(CASES))})"
        )
    return case


def persistence_mode():
    """ "Enabled" or "Disabled", from the stand-in nvidia-persistenced's state file."""
    try:
        with open(PERSISTENCE_FILE, encoding="utf-8") as handle:
            state = handle.read().strip()
    except OSError:
        return "Disabled"
    return "Enabled" if state == "Enabled" else "Disabled"


def fabric_state():
    """(state, status) of the NVSwitch fabric, from the stand-in fabric manager's state file."""
    try:
        with open(FABRIC_STATE_FILE, encoding="utf-8") as handle:
            state = handle.read().strip()
    except OSError:
        return FABRIC_NOT_READY
    return FABRIC_READY if state == FABRIC_READY[0] else FABRIC_NOT_READY


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


def _with_fabric(name, text):
    state, status = fabric_state()
    if name == "nvidia-smi-q.xml":
        return re.sub(
            r"(<fabric>\s*<state>)[^<]*(</state>\s*<status>)[^<]*(</status>)",
            rf"\g<1>{state}\g<2>{status}\g<3>",
            text,
        )
    if name == "nvidia-smi-q.txt":
        return re.sub(
            r"(?m)^(\s*Fabric\n\s*State\s+: )[^\n]*\n(\s*Status\s+: )[^\n]*$",
            rf"\g<1>{state}\n\g<2>{status}",
            text,
        )
    return text


def _pick_block(text, start, index):
    """The lines before the first GPU and the lines of GPU `index` (blocks begin at `start`)."""
    lines = text.split("\n")
    starts = [n for n, line in enumerate(lines) if re.match(start, line)]
    if not starts:
        return text
    ends = [*starts[1:], len(lines)]
    result = "\n".join(lines[: starts[0]] + lines[starts[index] : ends[index]])
    return result if result.endswith("\n") else result + "\n"


def _pick_table_row(text, index):
    """The plain table with only GPU `index`'s block (its lines and the rule closing it)."""
    lines = text.split("\n")
    top = next((n for n, line in enumerate(lines) if line.startswith("|====")), None)
    if top is None:
        return text
    out, n = lines[: top + 1], top + 1
    while n < len(lines) and lines[n].startswith("|"):
        block = []
        while n < len(lines) and lines[n].startswith("|"):
            block.append(lines[n])
            n += 1
        if n < len(lines) and lines[n].startswith("+"):
            block.append(lines[n])
            n += 1
        match = re.match(r"^\|\s+(\d+)\s", block[0])
        if match and int(match.group(1)) == index:
            out.extend(block)
    if out[-1].startswith("|===="):  # the selected GPU was the last: close the table
        out.append(lines[n - 1])
    return "\n".join(out + lines[n:])


def _only_gpu(name, text, index):
    """The output for one GPU (-i), for the outputs that list GPUs."""
    if name == "nvidia-smi-q.xml":
        gpus = list(re.finditer(r"(?s)\t<gpu id=\"[^\"]*\">.*?</gpu>\n", text))
        if not gpus:
            return text
        return text[: gpus[0].start()] + gpus[index].group(0) + text[gpus[-1].end() :]
    if name == "nvidia-smi-q.txt":
        return _pick_block(text, r"^GPU [0-9A-Fa-f]{8}:", index)
    if name in ("smi-L.txt", "nvlink-s.txt"):
        return _pick_block(text, r"^GPU \d+: ", index)
    if name == "smi.txt":
        return _pick_table_row(text, index)
    return text


def _read(case, name):
    path = os.path.join(CAPTURE_DIR, CASES[case], name)
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise StandinError(
            f"Kindling test stand-in nvidia-smi: cannot read capture {path}: {exc}"
        ) from exc


def _emit(case, name, index=None):
    text = _with_persistence(name, _read(case, name))
    if case in NVSWITCH_CASES:
        text = _with_fabric(name, text)
    if index is not None:
        text = _only_gpu(name, text, index)
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
    return 0


def _csv_table(case):
    lines = [line for line in _read(case, "query-full.csv").splitlines() if line.strip()]
    header = lines[0].split(", ")
    rows = [line.split(", ") for line in lines[1:]]
    dynamic = {"persistence_mode": persistence_mode()}
    if case in NVSWITCH_CASES:
        dynamic["fabric.state"], dynamic["fabric.status"] = fabric_state()
    for column_name, value in dynamic.items():
        if column_name in header:
            column = header.index(column_name)
            for row in rows:
                row[column] = value
    return header, rows


def _query_gpu(case, fields_spec, format_spec, index):
    if format_spec is None:
        print("The --format argument is required with --query-gpu (e.g. --format=csv).")
        return 2
    fmt = [part.strip().lower() for part in format_spec.split(",")]
    if "csv" not in fmt or any(part not in ("csv", "noheader", "nounits") for part in fmt):
        print(f'"{format_spec}" is not a valid format.')
        return 2
    header, rows = _csv_table(case)
    count = len(rows)
    if index is not None:
        rows = [rows[index]]
    columns = {}
    for position, title in enumerate(header):
        name, _, unit = title.partition(" [")
        columns[name.strip().lower()] = (title, unit.rstrip("]"), position)
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
        for _title, unit, position in wanted:
            value = str(count) if position is None else row[position]
            if "nounits" in fmt and unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1]
            values.append(value)
        out.append(", ".join(values))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _gpu_count(case):
    return len(_csv_table(case)[1])


def _nvlink(case, args, index):
    if args not in (["-s"], ["--status"]):
        print(INVALID_ARGS)
        return 2
    path = os.path.join(CAPTURE_DIR, CASES[case], "nvlink-s.txt")
    if not os.path.isfile(path):
        return 0  # a host without NVLink: nvidia-smi prints nothing (the H200 set)
    return _emit(case, "nvlink-s.txt", index)


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
    case = selected_case()

    args = []
    query_fields = None
    format_spec = None
    gpu = None
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
        elif arg.startswith("--id="):
            gpu = arg.split("=", 1)[1]
        elif arg in ("-qx", "-xq"):
            args.extend(["-q", "-x"])
        else:
            args.append(arg)
    index = None
    if gpu is not None:
        if not gpu.isdigit() or int(gpu) >= _gpu_count(case):
            print("No devices were found")
            return 6
        index = int(gpu)

    if query_fields is not None:
        if args:
            print(INVALID_ARGS)
            return 2
        return _query_gpu(case, query_fields, format_spec, index)
    if format_spec is not None:
        print(INVALID_ARGS)
        return 2
    if not args:
        return _emit(case, "smi.txt", index)
    if args in (["-L"], ["--list-gpus"]):
        return _emit(case, "smi-L.txt", index)
    if args[0] == "topo" and args[1:] in (["-m"], ["--matrix"]):
        return _emit(case, "topo.txt")
    if args[0] == "nvlink":
        return _nvlink(case, args[1:], index)
    if args in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    flags = set(args)
    query = {"-q", "--query"} & flags
    xml = {"-x", "--xml-format"} & flags
    if len(query) == 1 and len(args) == 1:
        return _emit(case, "nvidia-smi-q.txt", index)
    if len(query) == 1 and len(xml) == 1 and len(args) == 2:
        return _emit(case, "nvidia-smi-q.xml", index)
    print(INVALID_ARGS)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except StandinError as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(1)
