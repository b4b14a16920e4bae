"""tools/bench_controller.py: the inventory it writes and the parser of a run's output.

The benchmark itself is never run here (it converges site.yml over up to 50 aliases of
this machine and takes minutes).
"""

from __future__ import annotations

import sys

import yaml
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import bench_controller

OUTPUT = """\
PLAY [Stage 0, check the inventory] ********************************************

TASK [Refuse an inventory whose target group is empty] *************************
ok: [localhost]

PLAY RECAP *********************************************************************
bench-000                  : ok=111  changed=4    unreachable=0    failed=0    skipped=45   rescued=0    ignored=0   
bench-001                  : ok=109  changed=0    unreachable=1    failed=0    skipped=43   rescued=0    ignored=0   
localhost                  : ok=1    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0   


TASKS RECAP ********************************************************************
Saturday 05 December 2026  20:19:24 +0000 (0:00:00.011)       0:00:12.393 ***** 
=============================================================================== 
conda_pytorch : Read the installed Debian packages ---------------------- 2.16s
Gathering Facts --------------------------------------------------------- 1.68s
gpu_preflight : List NVIDIA GPUs and NVSwitches on the PCI bus, and read nvidia-smi when a driver is there --- 0.43s
"""  # noqa: E501, W291


def test_inventory_gives_each_alias_its_own_state_and_lock(tmp_path):
    inventory = bench_controller.make_inventory(
        3, "/var/lib/kindling-bench/run", "/venv/bin/python"
    )
    path = tmp_path / "hosts.yml"
    bench_controller.write_inventory(path, inventory)
    hosts = yaml.safe_load(path.read_text())["all"]["children"]["gpu_hosts"]["hosts"]
    assert list(hosts) == ["bench-000", "bench-001", "bench-002"]
    for name, host in hosts.items():
        assert host["ansible_connection"] == "local"
        assert host["ansible_host"] == "localhost"
        assert host["ansible_python_interpreter"] == "/venv/bin/python"
        assert host["site_lock_dir"] == f"/var/lib/kindling-bench/run/{name}/site.lock"
        for var in bench_controller.STATE_VARS:
            assert host[var].startswith(f"/var/lib/kindling-bench/run/{name}/")
    locks = [h["site_lock_dir"] for h in hosts.values()]
    assert len(set(locks)) == len(locks)


def test_state_vars_are_role_defaults():
    """Every per-host path the tool moves is a variable some role really reads."""
    defaults = {}
    for path in (REPO_ROOT / "roles").glob("*/defaults/main.yml"):
        defaults.update(yaml.safe_load(path.read_text()) or {})
    for var in bench_controller.STATE_VARS:
        assert var in defaults, var


def test_parses_recap_and_profile():
    recap = bench_controller.parse_recap(OUTPUT)
    assert recap["bench-000"] == {
        "ok": 111,
        "changed": 4,
        "unreachable": 0,
        "failed": 0,
        "skipped": 45,
        "rescued": 0,
        "ignored": 0,
    }
    assert recap["bench-001"]["unreachable"] == 1
    assert set(recap) == {"bench-000", "bench-001", "localhost"}
    tasks = bench_controller.parse_profile(OUTPUT)
    assert tasks[0] == {
        "task": "conda_pytorch : Read the installed Debian packages",
        "seconds": 2.16,
    }
    assert tasks[2]["seconds"] == 0.43
    assert len(tasks) == 3


def test_summary_counts_only_the_aliases_and_divides_per_host():
    s = bench_controller.summarise(OUTPUT, wall=20.0, cpu_user=18.0, cpu_sys=2.0, n=2)
    assert s["hosts_in_recap"] == 2
    assert s["cpu_s"] == 20.0
    assert s["cpu_per_host_s"] == 10.0
    assert s["wall_per_host_s"] == 10.0
    assert s["tasks_ok_per_host"] == 110
    assert s["tasks_skipped_per_host"] == 44
    assert s["changed"] == 4
    assert s["failed"] == 1
    assert s["top_tasks"][0]["seconds"] == 2.16


def test_table_takes_the_median_of_repeats():
    runs = []
    for wall in (10.0, 30.0, 12.0):
        r = bench_controller.summarise(OUTPUT, wall=wall, cpu_user=wall, cpu_sys=0.0, n=2)
        r.update(tree="/tmp/bench-before", mode="check", env=[], load_before="1.00 1.00 1.00")
        runs.append(r)
    table = bench_controller.table(runs)
    row = table.splitlines()[-1]
    assert "| bench-before | check | 2 | 3 | 12.0 | 12.0 | 6.00 | - | 110 |" in row
