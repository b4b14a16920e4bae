#!/usr/bin/env python3
"""Measure the controller's cost of site.yml over 1, 10 and 50 hosts on this machine.

    python tools/bench_controller.py                          # check and no-op, 1/10/50 hosts
    python tools/bench_controller.py --hosts 1,10 --repeat 3 --modes check
    python tools/bench_controller.py --tree /tmp/bench-before # measure another checkout
    python tools/bench_controller.py --hosts 10 --modes check --cprofile /tmp/site.prof
    python tools/bench_controller.py --hosts 10 --env ANSIBLE_PIPELINING=true

The "hosts" are N aliases of this machine (``bench-000`` ... in group ``gpu_hosts``), each
with ``ansible_connection: local`` and ``ansible_host: localhost``, and each with its own
state directories and run lock under ``--state-root`` (site_lock_dir,
nvidia_driver_state_dir, cuda_state_dir, reboot_coordinator_state_dir,
gpu_check_host_report_dir), so that the aliases never share a lock. They run the GPU-less
path (``-e gpu_required=false``) with ``-f 25`` by default.

Because the hosts are this machine, the CPU measured (user + sys of ansible-playbook and
every process it waited for: its forks and the modules they ran) counts the hosts' own
module CPU as well as the controller's. Wall time is the playbook's, from start to exit.

Modes:

- ``check``: ``site.yml --check``, every stage, as a user's dry run.
- ``noop``: a real converge with nothing to change (every host must end with changed=0,
  else the run is reported as not a no-op). On a developer machine without a GPU the
  conda_pytorch stage would install conda and the PyTorch environment for real, so this
  mode skips that stage's tag (``--noop-skip-tags``, default ``conda_pytorch``); every
  other stage runs for real and changes nothing here (a first real run already ends with
  changed=0; ``--noop-warmup`` makes one unmeasured real run first all the same).

Every run gets a fresh fact cache (facts are gathered, as on a first run in the hour) and
its own KINDLING_REPORT_DIR. Results are printed as a Markdown table and, with ``--json``,
written as one JSON object per run. The machine's load average before each run is recorded:
this machine is shared, so compare runs made alternately within minutes.

The benchmark itself never runs in CI; tests/unit/test_bench_controller.py checks the
inventory it writes and the parser of a run's output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent

# Where Kindling keeps per-host state on a host; each alias gets its own (site_lock's input
# check wants its lock under /var/lib, /var/run or /run).
STATE_VARS = {
    "site_lock_dir": "site.lock",
    "nvidia_driver_state_dir": "state",
    "cuda_state_dir": "state",
    "reboot_coordinator_state_dir": "state",
    "gpu_check_host_report_dir": "gpu-check",
}

DEFAULT_STATE_ROOT = "/var/lib/kindling-bench"

RECAP_RE = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)\s+"
    r"skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)\s+ignored=(?P<ignored>\d+)"
)
# profile_tasks' summary line: "<task name> ---- 1.23s"
PROFILE_RE = re.compile(r"^(?P<task>.+?)\s+-{3,}\s+(?P<seconds>\d+(?:\.\d+)?)s\s*$")


# Runs ansible-playbook in this interpreter and, at exit, writes the main process's own CPU
# (its forks leave through os._exit and never run atexit): the strategy, variables,
# templating of includes and callbacks, apart from the workers and the modules.
SELF_CPU_WRAPPER = """
import atexit, json, os, resource, runpy, sys
def _write():
    u = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["KINDLING_BENCH_SELF_CPU"], "w") as f:
        json.dump({"user": u.ru_utime, "sys": u.ru_stime}, f)
atexit.register(_write)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def alias(index: int) -> str:
    return f"bench-{index:03d}"


def make_inventory(n: int, state_root: str, python: str) -> Dict:
    """The inventory of n local aliases, each with its own state directories and lock."""
    hosts = {}
    for i in range(n):
        name = alias(i)
        host = {
            "ansible_connection": "local",
            "ansible_host": "localhost",
            "ansible_python_interpreter": python,
        }
        for var, leaf in STATE_VARS.items():
            host[var] = f"{state_root}/{name}/{leaf}"
        hosts[name] = host
    return {"all": {"children": {"gpu_hosts": {"hosts": hosts}}}}


def write_inventory(path: Path, inventory: Dict) -> None:
    # JSON is YAML: Ansible's yaml inventory plugin reads it as it is.
    path.write_text(json.dumps(inventory, indent=1) + "\n")


def parse_recap(text: str) -> Dict[str, Dict[str, int]]:
    """Each host's PLAY RECAP counters."""
    recap: Dict[str, Dict[str, int]] = {}
    in_recap = False
    for line in text.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        if in_recap:
            m = RECAP_RE.match(line.strip())
            if m:
                counts = m.groupdict()
                host = counts.pop("host")
                recap[host] = {k: int(v) for k, v in counts.items()}
            elif line.strip() and not line.startswith(" "):
                in_recap = False
    return recap


def parse_profile(text: str) -> List[Dict]:
    """profile_tasks' TASKS RECAP: each task with its seconds, longest first."""
    tasks = []
    in_profile = False
    for line in text.splitlines():
        if line.startswith("TASKS RECAP"):
            in_profile = True
            continue
        if in_profile:
            m = PROFILE_RE.match(line.rstrip())
            if m:
                tasks.append({"task": m.group("task"), "seconds": float(m.group("seconds"))})
    return tasks


def summarise(text: str, wall: float, cpu_user: float, cpu_sys: float, n: int) -> Dict:
    """One run's numbers from its output, wall time and rusage."""
    recap = parse_recap(text)
    targets = {h: c for h, c in recap.items() if h.startswith("bench-")}
    ok = [c["ok"] for c in targets.values()]
    skipped = [c["skipped"] for c in targets.values()]
    cpu = cpu_user + cpu_sys
    return {
        "hosts": n,
        "hosts_in_recap": len(targets),
        "wall_s": round(wall, 2),
        "cpu_user_s": round(cpu_user, 2),
        "cpu_sys_s": round(cpu_sys, 2),
        "cpu_s": round(cpu, 2),
        "cpu_per_host_s": round(cpu / n, 2) if n else None,
        "wall_per_host_s": round(wall / n, 2) if n else None,
        "tasks_ok_per_host": round(statistics.mean(ok), 1) if ok else None,
        "tasks_skipped_per_host": round(statistics.mean(skipped), 1) if skipped else None,
        "changed": sum(c["changed"] for c in targets.values()),
        "failed": sum(c["failed"] + c["unreachable"] for c in targets.values()),
        "top_tasks": parse_profile(text)[:10],
    }


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_once(args, tree: Path, n: int, mode: str, workdir: Path, measured: bool = True) -> Dict:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{mode}-{n}-", dir=workdir))
    # check runs leave nothing; no-op runs of one size share their state (a re-run's).
    state_root = f"{args.state_root}/{run_dir.name if mode == 'check' else f'noop-{n}'}"
    inventory = run_dir / "hosts.yml"
    write_inventory(inventory, make_inventory(n, state_root, args.python))
    env = dict(os.environ)
    env.update(
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(run_dir / "facts"),
        KINDLING_REPORT_DIR=str(run_dir / "reports"),
        ANSIBLE_NOCOLOR="1",
    )
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    self_cpu = run_dir / "self_cpu.json"
    env["KINDLING_BENCH_SELF_CPU"] = str(self_cpu)
    if args.cprofile and measured:
        cmd = [args.python, "-m", "cProfile", "-o", args.cprofile]
    else:
        cmd = [args.python, "-c", SELF_CPU_WRAPPER]
    cmd += [
        args.ansible_playbook,
        "playbooks/site.yml",
        "-i",
        str(inventory),
        "-e",
        "gpu_required=false",
        "-f",
        str(args.forks),
    ]
    if mode == "check":
        cmd.append("--check")
    elif args.noop_skip_tags:
        cmd += ["--skip-tags", args.noop_skip_tags]
    cmd += args.extra
    load = loadavg()
    out_path = run_dir / "output.txt"
    start = time.monotonic()
    with out_path.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(errors="replace")
    result = summarise(text, wall, usage.ru_utime, usage.ru_stime, n)
    if self_cpu.exists():
        main_cpu = json.loads(self_cpu.read_text())
        result["main_process_cpu_s"] = round(main_cpu["user"] + main_cpu["sys"], 2)
    result.update(
        mode=mode,
        tree=str(tree),
        rc=proc.returncode,
        load_before=load,
        load_after=loadavg(),
        output=str(out_path),
        env=args.env,
        date=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    )
    if mode == "noop" and result["changed"]:
        result["note"] = "not a no-op: changed > 0"
    return result


def table(results: List[Dict]) -> str:
    lines = [
        "| tree | mode | hosts | runs | wall s (median) | CPU s | CPU s/host | "
        "main process CPU s | tasks ok/host | skipped/host | changed | failed | load before |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: Dict[tuple, List[Dict]] = {}
    for r in results:
        groups.setdefault((r["tree"], r["mode"], r["hosts"], tuple(r["env"])), []).append(r)
    for (tree, mode, n, env), runs in groups.items():

        def med(key, runs=runs):
            return statistics.median(r[key] for r in runs)

        label = Path(tree).name + (" " + " ".join(env) if env else "")
        mains = [r["main_process_cpu_s"] for r in runs if "main_process_cpu_s" in r]
        main_cpu = f"{statistics.median(mains):.1f}" if mains else "-"
        lines.append(
            f"| {label} | {mode} | {n} | {len(runs)} | {med('wall_s'):.1f} | {med('cpu_s'):.1f} | "
            f"{med('cpu_per_host_s'):.2f} | {main_cpu} | {runs[0]['tasks_ok_per_host']} | "
            f"{runs[0]['tasks_skipped_per_host']} | {max(r['changed'] for r in runs)} | "
            f"{max(r['failed'] for r in runs)} | {', '.join(r['load_before'] for r in runs)} |"
        )
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tree",
        type=Path,
        default=REPO_ROOT,
        help="checkout whose site.yml and ansible.cfg run (default: this one)",
    )
    parser.add_argument("--hosts", default="1,10,50", help="comma-separated host counts")
    parser.add_argument("--modes", default="check,noop", help="check, noop or both")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (host count, mode)")
    parser.add_argument("--forks", type=int, default=25)
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the venv's python (also the aliases' ansible_python_interpreter)",
    )
    parser.add_argument("--ansible-playbook", default=None)
    parser.add_argument("--state-root", default=DEFAULT_STATE_ROOT)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep outputs here (default: a temp dir)"
    )
    parser.add_argument("--noop-skip-tags", default="conda_pytorch")
    parser.add_argument(
        "--noop-warmup",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="one unmeasured real run first (the measured one must show changed=0)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for ansible-playbook, e.g. ANSIBLE_PIPELINING=true",
    )
    parser.add_argument("--cprofile", default=None, help="write a cProfile of the controller here")
    parser.add_argument("--json", type=Path, default=None, help="append one JSON line per run here")
    parser.add_argument("extra", nargs="*", help="after --: more ansible-playbook arguments")
    args = parser.parse_args(argv)
    if args.ansible_playbook is None:
        args.ansible_playbook = str(Path(args.python).parent / "ansible-playbook")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kindling-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    tree = args.tree.resolve()
    results = []
    for n in [int(x) for x in args.hosts.split(",")]:
        for mode in args.modes.split(","):
            if mode == "noop" and args.noop_warmup:
                run_once(args, tree, n, mode, workdir, measured=False)
            for _ in range(args.repeat):
                r = run_once(args, tree, n, mode, workdir)
                results.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "top_tasks"}), flush=True)
                if args.json:
                    with args.json.open("a") as f:
                        f.write(json.dumps(r) + "\n")
    print(table(results))
    if args.state_root.startswith(DEFAULT_STATE_ROOT):
        shutil.rmtree(args.state_root, ignore_errors=True)
    return 0 if all(r["rc"] == 0 and not r["failed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
