"""The cloud hand-off: an inventory built from moto's EC2 emulator reaches a podman host.

MOTO STANDS IN FOR AWS (tests/cloud_emulator.py). playbooks/cloud_fleet.yml launches one
emulated instance; the amazon.aws.aws_ec2 plugin builds the run's inventory from the
emulator, grouped by the run id; kindling_cloud_host_vars points that instance's
connection at this suite's Debian 12 test host (the kindling_podman connection) instead
of SSH. The hand-off is then real: wait_for_connection, site.yml and the fleet report all
reach the test host through that inventory. The host has no GPU, so site.yml's preflight
refuses it: the converge stage fails, the fleet report still names the host and why,
and the teardown gives the instance back.
"""

from __future__ import annotations

import json

import cloud_emulator
import pytest
from cloud_emulator import base_vars, moto_server, one_line, run_playbook
from conftest import CONTAINER, playbook_env, snapshot, snapshot_diff


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    yield from moto_server(tmp_path_factory.mktemp("moto"))


def test_emulated_fleet_inventory_reaches_the_podman_host(moto, test_host, tmp_path):
    ec2 = moto.client()
    ec2.create_key_pair(KeyName="kindling-test-key")
    before = snapshot()
    extra = base_vars(
        moto,
        tmp_path / "reports",
        kindling_cloud_run_id="run-handoff",
        kindling_cloud_capacity="on-demand",
        kindling_cloud_ssh_timeout=60,
        kindling_cloud_host_vars={
            "ansible_connection": "kindling_podman",
            "ansible_host": CONTAINER,
            # The test host has root only; an EC2 Ubuntu image's user is ubuntu.
            "ansible_user": "root",
            "ansible_python_interpreter": "/usr/bin/python3",
        },
        kindling_cloud_converge_vars={
            "gpu_check_device": "cpu",
            "gpu_check_python": "/usr/bin/python3",
            "gpu_check_report_dir": str(tmp_path / "controller"),
        },
    )
    env = dict(playbook_env(), **{k: v for k, v in moto.env().items() if k.startswith("AWS_")})
    result = run_playbook(moto, "cloud_fleet.yml", extra, env=env)
    out = one_line(result.stdout)
    assert result.returncode != 0, out[-3000:]
    (instance,) = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
    iid = instance["InstanceId"]
    assert instance["State"]["Name"] == "terminated"
    record = json.loads((tmp_path / "reports" / "run-handoff" / "cloud-run.json").read_text())
    # wait_for_connection reached the host through the emulator's inventory; site.yml
    # ran against it and its preflight refused the GPU-less host.
    assert record["stages"] == {
        "launch": "ok",
        "handoff": "ok",
        "converge": "failed",
        "report": "failed",
    }, out[-3000:]
    assert record["released"] == [iid]
    assert "The converge and report stage failed" in out
    # The fleet report judged the host under its instance id, the name the plugin gave it.
    (run_dir,) = [
        p for p in (tmp_path / "reports" / "run-handoff" / "fleet").iterdir() if p.is_dir()
    ]
    hosts = json.loads((run_dir / "results.json").read_text())["hosts"]
    assert list(hosts) == [iid]
    assert hosts[iid]["status"] == "failed"
    # The refused converge changed nothing on the host.
    assert snapshot() == before, snapshot_diff(before, snapshot())
    assert cloud_emulator.FAKE_SECRET not in result.stdout + result.stderr
