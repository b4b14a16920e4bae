"""module_utils/cloud_plan.py: the launch inputs refused, the plan, each instance's verdict."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from ansible.module_utils.cloud_plan import (
    check_inputs,
    fleet_state,
    inventory_group,
    launch_plan,
    run_outcome,
)
from conftest import REPO_ROOT

CATALOGUE = yaml.safe_load((REPO_ROOT / "data" / "cloud_aws.yml").read_text())
NOW = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)
GOOD = {
    "provider": "aws",
    "region": "us-east-1",
    "instance_type": "g5.xlarge",
    "count": "2",
    "capacity": "spot",
    "max_price": "0.60",
    "image": "plain",
    "os": "ubuntu2204",
    "root_volume_gb": "100",
    "owner": "ml-team",
    "aws_key_name": "my-key",
    "aws_profile": "",
    "aws_subnet_id": "",
    "controller_ip": "203.0.113.7",
    "run_id": "kr-20261202-1",
    "lifetime_hours": "4",
}


def test_good_inputs_pass():
    assert check_inputs(GOOD, CATALOGUE) == []


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("instance_type", "g9.mega", "not an instance type Kindling knows"),
        ("count", "0", "1 or more"),
        ("count", "9", "over the cap of 8"),
        ("count", "two", "whole number"),
        ("max_price", "0", "zero or less"),
        ("max_price", "-1", "zero or less"),
        ("max_price", "cheap", "a price in USD"),
        ("capacity", "reserved", "spot or on-demand"),
        ("image", "windows", "must be one of"),
        ("os", "debian12", "must be one of"),
        ("owner", "", "who answers"),
        ("aws_key_name", "", "key pair"),
        ("controller_ip", "", "not found"),
        ("controller_ip", "0.0.0.0", "not a host"),
        ("controller_ip", "10.0.0.0/8", "not an IP address"),
        ("controller_ip", "2001:db8::1", "not a host's IPv4"),
        ("run_id", "Bad Run", "3 to 40 characters"),
        ("lifetime_hours", "73", "from 1 to 72"),
        ("region", "mars-1", "AWS region"),
        ("provider", "gcp", "aws only"),
        ("root_volume_gb", "8", "from 20"),
        ("aws_subnet_id", "my-subnet", "subnet id"),
    ],
)
def test_each_bad_input_is_named_with_its_fix(name, value, words):
    problems = check_inputs(dict(GOOD, **{name: value}), CATALOGUE)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"kindling_cloud_{name} is ") and words in problems[0]


def test_a_max_price_with_on_demand_capacity_is_refused():
    (problem,) = check_inputs(dict(GOOD, capacity="on-demand"), CATALOGUE)
    assert "spot capacity only" in problem


def test_plan_tags_spot_options_ssh_rule_and_group():
    plan = launch_plan(GOOD, CATALOGUE, NOW)
    assert plan["tags"]["kindling-run-id"] == "kr-20261202-1"
    assert plan["tags"]["kindling-owner"] == "ml-team"
    assert plan["tags"]["kindling-expires"] == "2026-12-02T13:00:00Z"
    assert plan["instance_market_options"]["spot_options"]["max_price"] == "0.6"
    assert plan["ssh_cidr"] == "203.0.113.7/32"
    assert plan["group"] == "kindling_run_kr_20261202_1" == inventory_group("kr-20261202-1")
    assert plan["image"]["owners"] == ["099720109477"]
    assert plan["count"] == 2 and plan["gpus"]["model"] == "NVIDIA A10G"


def test_on_demand_has_no_market_options_and_preinstalled_uses_the_dlami():
    plan = launch_plan(
        dict(GOOD, capacity="on-demand", max_price="", image="preinstalled"), CATALOGUE, NOW
    )
    assert plan["instance_market_options"] == {}
    assert plan["image"]["owners"] == ["898082745236"]
    assert "Deep Learning OSS Nvidia Driver AMI GPU PyTorch" in plan["image"]["filters"]["name"]


def test_every_catalogue_fact_has_a_source():
    ids = set(CATALOGUE["sources"])
    for name, row in CATALOGUE["instance_types"].items():
        sources = row["source"] if isinstance(row["source"], list) else [row["source"]]
        assert set(sources) <= ids, name
        price = row["on_demand_usd_per_hour"]
        assert "unknown" in price or (price["source"] in ids and price["date"]), name
    for flavour in CATALOGUE["images"].values():
        for row in flavour.values():
            assert set(row["source"]) <= ids
    assert CATALOGUE["default_instance_type"] in CATALOGUE["instance_types"]


def _instance(
    iid, run, state="running", expires="2999-01-01T00:00:00Z", capacity="spot", reason="", **tags
):
    all_tags = {
        "kindling-run-id": run,
        "kindling-expires": expires,
        "kindling-capacity": capacity,
        **tags,
    }
    if run is None:
        all_tags = dict(tags)
    return {
        "instance_id": iid,
        "state": {"name": state},
        "state_reason": {"code": reason},
        "tags": all_tags,
    }


def test_fleet_state_verdicts_and_expiry():
    found = [
        _instance("i-live", "a"),
        _instance("i-old", "b", expires="2020-01-01T00:00:00Z"),
        _instance("i-spot", "a", state="terminated"),
        _instance(
            "i-spot2",
            "a",
            state="terminated",
            capacity="on-demand",
            reason="Server.SpotInstanceTermination",
        ),
        _instance("i-lost", "a", state="terminated", capacity="on-demand"),
        _instance(
            "i-done", "a", state="terminated", **{"kindling-released": "2026-12-02T00:00:00Z"}
        ),
        _instance("i-odd", "c", expires="soon"),
        _instance("i-foreign", None, expires="2020-01-01T00:00:00Z"),
    ]
    state = fleet_state(found, NOW)
    assert state["expired"] == ["i-old"]
    assert state["interrupted"] == ["i-spot", "i-spot2"]
    assert state["lost"] == ["i-lost"]
    assert state["instances"]["i-done"]["verdict"] == "released"
    assert state["unreadable_expiry"] == ["i-odd"]
    assert "i-foreign" not in state["instances"]
    assert set(fleet_state(found, NOW, run_id="b")["instances"]) == {"i-old"}


def test_run_outcome():
    assert run_outcome({"launch": "ok", "converge": "ok"}, {"interrupted": []}) == "passed"
    assert (
        run_outcome({"converge": "failed"}, {"interrupted": ["i-1"], "lost": []}) == "interrupted"
    )
    assert (
        run_outcome({"converge": "failed"}, {"interrupted": ["i-1"], "lost": ["i-2"]}) == "failed"
    )
    assert run_outcome({"converge": "failed"}, {"interrupted": []}) == "failed"
