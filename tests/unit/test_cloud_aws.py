"""The cloud launch, hand-off, teardown and sweeper against moto's EC2 emulator.

MOTO STANDS IN FOR AWS (tests/cloud_emulator.py): nothing here reaches Amazon. The
playbooks run for real (ansible-playbook, the amazon.aws modules, the aws_ec2 inventory
plugin) with their endpoint pointed at moto on loopback. The hosts they launch do not
exist, so the hand-off stage fails here by design: the teardown must still give every
instance back. tests/reliability/test_cloud_handoff.py hands an emulated run's inventory
to a real podman test host.
"""

from __future__ import annotations

import json

import pytest
from cloud_emulator import FAKE_SECRET, base_vars, moto_server, one_line, run_playbook

REFUSED = "Refusing to launch anything"


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    yield from moto_server(tmp_path_factory.mktemp("moto"))


@pytest.fixture()
def ec2(moto):
    moto.reset()
    client = moto.client()
    client.create_key_pair(KeyName="kindling-test-key")
    return client


def instances(ec2, *states):
    found = [
        i
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
        if not states or i["State"]["Name"] in states
    ]
    return found


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


# A stage that fails fast: every launched host is reached at a closed loopback port.
UNREACHABLE = {"ansible_host": "127.0.0.1", "ansible_port": 9}


def test_failed_stage_still_gives_every_instance_back(moto, ec2, tmp_path):
    extra = base_vars(
        moto,
        tmp_path,
        kindling_cloud_run_id="run-fail",
        kindling_cloud_count=2,
        kindling_cloud_max_price="0.75",
        kindling_cloud_host_vars=UNREACHABLE,
    )
    result = run_playbook(moto, "cloud_fleet.yml", extra)
    out = one_line(result.stdout)
    assert result.returncode != 0, out
    assert "Wait until every instance answers" in out and "Its instances were terminated" in out
    launched = instances(ec2)
    assert len(launched) == 2
    for inst in launched:
        assert inst["State"]["Name"] == "terminated"
        t = tags(inst)
        assert t["kindling-run-id"] == "run-fail"
        assert t["kindling-owner"] == "kindling-tests"
        assert t["kindling-capacity"] == "spot"
        assert t["kindling-expires"].endswith("Z") and "kindling-released" in t
        assert inst["InstanceType"] == "g4dn.xlarge"  # data/cloud_aws.yml's default
        # The newest Canonical jammy image, not the newer decoy of another account.
        assert inst["ImageId"] == "ami-0a1b2c3d4e5f60002"
        assert inst["KeyName"] == "kindling-test-key"
    # The security group and launch template are gone too.
    groups = ec2.describe_security_groups()["SecurityGroups"]
    assert not [g for g in groups if g["GroupName"] == "kindling-run-fail"]
    templates = ec2.describe_launch_templates()["LaunchTemplates"]
    assert not [t for t in templates if t["LaunchTemplateName"] == "kindling-run-fail"]
    record = json.loads((tmp_path / "run-fail" / "cloud-run.json").read_text())
    assert record["stages"] == {"launch": "ok", "handoff": "failed"}
    assert record["outcome"] == "failed"
    assert sorted(record["released"]) == sorted(i["InstanceId"] for i in launched)
    # The inventory the aws_ec2 plugin read: grouped by the run id, at the emulator.
    inventory = (tmp_path / "run-fail" / "aws_ec2.yml").read_text()
    assert "plugin: amazon.aws.aws_ec2" in inventory and moto.url in inventory
    assert FAKE_SECRET not in result.stdout + result.stderr + inventory
    # Each fresh host key is trusted on first contact, then held to in the run's own
    # known_hosts: host key checking stays on.
    known = f"UserKnownHostsFile={(tmp_path / 'run-fail').resolve()}/known_hosts"
    assert "StrictHostKeyChecking=accept-new" in inventory and known in inventory


def test_launch_tags_security_group_spot_template_and_grouping(moto, ec2, tmp_path):
    """Launch only (the hand-off skipped by a stop in the middle), read what AWS holds."""
    extra = base_vars(
        moto,
        tmp_path,
        kindling_cloud_run_id="run-look",
        kindling_cloud_count=2,
        kindling_cloud_max_price="0.75",
        kindling_cloud_host_vars=UNREACHABLE,
    )
    # --start-at-task can't stop a block halfway; instead, look from inside the run: a
    # second playbook run's check mode reads back the same state. Here the sweeper's
    # check mode lists the live instances before the first run's teardown: so the
    # launch is inspected through moto while the hand-off waits for SSH.
    import subprocess
    import sys
    import threading
    import time

    seen = {}

    def watch():
        deadline = time.time() + 120
        while time.time() < deadline and "instances" not in seen:
            live = instances(ec2, "running")
            if len(live) == 2:
                seen["instances"] = live
                seen["groups"] = ec2.describe_security_groups(
                    Filters=[{"Name": "group-name", "Values": ["kindling-run-look"]}]
                )["SecurityGroups"]
                seen["template"] = ec2.describe_launch_template_versions(
                    LaunchTemplateName="kindling-run-look"
                )["LaunchTemplateVersions"]
                inv = tmp_path / "run-look" / "aws_ec2.yml"
                for _ in range(100):
                    if inv.exists():
                        break
                    time.sleep(0.1)
                seen["graph"] = subprocess.run(
                    [
                        str(
                            __import__("pathlib").Path(sys.executable).parent / "ansible-inventory"
                        ),
                        "-i",
                        str(inv),
                        "--graph",
                    ],
                    capture_output=True,
                    text=True,
                    env=moto.env(),
                    check=False,
                ).stdout
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = run_playbook(moto, "cloud_fleet.yml", extra)
    watcher.join()
    assert result.returncode != 0  # the hosts are unreachable: the hand-off fails
    assert "instances" in seen, "the launch never showed 2 running instances"
    (group,) = seen["groups"]
    assert tags(group)["kindling-run-id"] == "run-look"
    ingress = group["IpPermissions"]
    assert [(p["IpProtocol"], p["FromPort"], p["ToPort"]) for p in ingress] == [("tcp", 22, 22)]
    assert [r["CidrIp"] for r in ingress[0]["IpRanges"]] == ["203.0.113.7/32"]
    assert not ingress[0].get("Ipv6Ranges")
    data = seen["template"][0]["LaunchTemplateData"]
    assert data["InstanceMarketOptions"]["MarketType"] == "spot"
    assert data["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "0.75"
    ids = sorted(i["InstanceId"] for i in seen["instances"])
    assert "@kindling_run_run_look:" in seen["graph"], seen["graph"]
    for iid in ids:
        assert f"|--{iid}" in seen["graph"]
    # After the run, nothing of it is left running.
    assert instances(ec2, "pending", "running") == []


def test_check_mode_launches_nothing(moto, ec2, tmp_path):
    extra = base_vars(moto, tmp_path, kindling_cloud_run_id="run-check")
    result = run_playbook(moto, "cloud_fleet.yml", extra, "--check")
    assert result.returncode == 0, one_line(result.stdout)
    assert instances(ec2) == []
    assert not [
        g
        for g in ec2.describe_security_groups()["SecurityGroups"]
        if g["GroupName"].startswith("kindling-")
    ]


BAD_INPUTS = [
    (
        {"kindling_cloud_instance_type": "g9.mega"},
        "kindling_cloud_instance_type is 'g9.mega': not an instance type",
    ),
    ({"kindling_cloud_max_price": "0"}, "kindling_cloud_max_price is '0': a price of zero or less"),
    ({"kindling_cloud_count": 9}, "kindling_cloud_count is 9: over the cap of 8"),
    ({"kindling_cloud_owner": ""}, "kindling_cloud_owner is '': set it to who answers"),
    (
        {"kindling_cloud_controller_ip": "0.0.0.0"},
        "kindling_cloud_controller_ip is '0.0.0.0': not a host",
    ),
    ({"kindling_cloud_aws_key_name": "nobody-has-this"}, "no such EC2 key pair in us-east-1"),
]


@pytest.mark.parametrize(
    "override, message", BAD_INPUTS, ids=[m.split(" ")[0] for _, m in BAD_INPUTS]
)
def test_bad_input_is_refused_before_anything_is_launched(moto, ec2, tmp_path, override, message):
    extra = base_vars(moto, tmp_path, kindling_cloud_run_id="run-bad")
    extra.update(override)
    result = run_playbook(moto, "cloud_fleet.yml", extra)
    out = one_line(result.stdout + result.stderr)
    assert result.returncode != 0
    assert REFUSED in out and message in out, out[-3000:]
    assert instances(ec2) == []
    assert not (tmp_path / "run-bad").exists()


def test_missing_credentials_are_refused_and_never_shown(moto, ec2, tmp_path):
    env = moto.env()
    env.pop("AWS_ACCESS_KEY_ID")
    env.pop("AWS_SECRET_ACCESS_KEY")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
    env["AWS_CONFIG_FILE"] = str(tmp_path / "none")
    result = run_playbook(moto, "cloud_fleet.yml", base_vars(moto, tmp_path), env=env)
    out = one_line(result.stdout + result.stderr)
    assert result.returncode != 0
    assert f"{REFUSED}: no AWS credentials found: export AWS_ACCESS_KEY_ID" in out, out[-2000:]
    assert instances(ec2) == []


def test_credentials_never_appear_in_verbose_output(moto, ec2, tmp_path):
    extra = base_vars(
        moto, tmp_path, kindling_cloud_run_id="run-quiet", kindling_cloud_host_vars=UNREACHABLE
    )
    result = run_playbook(moto, "cloud_fleet.yml", extra, "-vvv")
    assert "Find AWS credentials (never shown)" in result.stdout
    assert FAKE_SECRET not in result.stdout + result.stderr
    assert instances(ec2, "pending", "running") == []


def _launch_raw(ec2, run_id, expires, capacity="spot", **extra_tags):
    tag_list = [
        {"Key": "kindling-run-id", "Value": run_id},
        {"Key": "kindling-owner", "Value": "someone"},
        {"Key": "kindling-expires", "Value": expires},
        {"Key": "kindling-capacity", "Value": capacity},
    ] + [{"Key": k, "Value": v} for k, v in extra_tags.items()]
    reservation = ec2.run_instances(
        ImageId="ami-0a1b2c3d4e5f60002",
        MinCount=1,
        MaxCount=1,
        InstanceType="g5.xlarge",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tag_list}],
    )
    return reservation["Instances"][0]["InstanceId"]


def test_sweeper_removes_only_expired_kindling_instances(moto, ec2, tmp_path):
    expired = _launch_raw(ec2, "old-run", "2020-01-01T00:00:00Z")
    fresh = _launch_raw(ec2, "new-run", "2999-01-01T00:00:00Z")
    unreadable = _launch_raw(ec2, "odd-run", "next tuesday")
    foreign = ec2.run_instances(
        ImageId="ami-0a1b2c3d4e5f60002",
        MinCount=1,
        MaxCount=1,
        InstanceType="g5.xlarge",
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [{"Key": "kindling-expires", "Value": "2020-01-01T00:00:00Z"}],
            }
        ],
    )["Instances"][0]["InstanceId"]
    untagged = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60002", MinCount=1, MaxCount=1)[
        "Instances"
    ][0]["InstanceId"]
    # A spot instance of a live run that AWS took back (moto can't interrupt: the test does).
    interrupted = _launch_raw(ec2, "spot-run", "2999-01-01T00:00:00Z")
    ec2.terminate_instances(InstanceIds=[interrupted])

    check = run_playbook(
        moto, "cloud_sweep.yml", {"kindling_cloud_aws_endpoint_url": moto.url}, "--check"
    )
    assert check.returncode == 0, one_line(check.stdout)
    assert {i["InstanceId"]: i["State"]["Name"] for i in instances(ec2)}[expired] == "running"

    result = run_playbook(moto, "cloud_sweep.yml", {"kindling_cloud_aws_endpoint_url": moto.url})
    out = one_line(result.stdout)
    assert result.returncode == 0, out
    states = {i["InstanceId"]: i["State"]["Name"] for i in instances(ec2)}
    assert states[expired] == "terminated"
    for kept in (fresh, unreadable, foreign, untagged):
        assert states[kept] == "running", (kept, states)
    assert f'expired (terminated now): ["{expired}"]' in out
    assert f'interrupted by spot: ["{interrupted}"]' in out
    assert f'expiry tag unreadable (kept): ["{unreadable}"]' in out
