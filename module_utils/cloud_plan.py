"""Kindling's cloud decisions: refuse bad launch inputs, plan a run, judge its instances.

Provider-neutral where it can be: the inputs are the ``kindling_cloud_*`` variables, the
facts come from a provider's data file (data/cloud_aws.yml for EC2), handed in as a dict.
library/cloud_launch_plan.py and library/cloud_fleet_plan.py reach these functions from
the playbooks (playbooks/cloud_fleet.yml, playbooks/cloud_sweep.yml); tests/unit reaches
them directly.

- ``check_inputs``: every problem with the inputs, one line each, naming the variable,
  its value and the fix, before anything is launched.
- ``launch_plan``: what a run launches: the AMI filter, the tags (run id, owner, expiry),
  the spot options, the SSH rule (the controller's /32 only) and the inventory group.
- ``fleet_state``: each Kindling instance's verdict for a run report or the sweeper:
  running, interrupted (spot capacity taken back), lost (gone, not by Kindling),
  released (terminated by Kindling), and which ones the sweeper must terminate (past
  their expiry tag). Instances without Kindling's run tag are never in the answer.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional

PREFIX = "kindling_cloud_"
PROVIDERS = ("aws",)
CAPACITIES = ("spot", "on-demand")

# The tags every instance carries; the sweeper and the inventory read them.
TAG_RUN = "kindling-run-id"
TAG_OWNER = "kindling-owner"
TAG_EXPIRES = "kindling-expires"
TAG_CAPACITY = "kindling-capacity"
TAG_RELEASED = "kindling-released"

RUN_ID = re.compile(r"\A[a-z0-9][a-z0-9-]{2,39}\Z")
OWNER = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}\Z")
KEY_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._ -]{0,254}\Z")
REGION = re.compile(r"\A[a-z]{2}(-gov)?-[a-z]+-[0-9]\Z")
SUBNET = re.compile(r"\Asubnet-[0-9a-f]{8,17}\Z")
PROFILE = re.compile(r"\A[A-Za-z0-9._-]{1,64}\Z")

# AWS's instance-state-reason code for a spot instance taken back.
# The text inputs checked by a whole-string pattern: (name, pattern, may be empty, the fix).
TEXT_INPUTS = (
    (
        "run_id",
        RUN_ID,
        False,
        "3 to 40 characters of a-z, 0-9 and -, starting with a letter or digit "
        "(leave it unset for a generated one)",
    ),
    (
        "owner",
        OWNER,
        False,
        "set it to who answers for these instances (a user or team name: letters, "
        "digits and . _ @ + -, at most 64)",
    ),
    (
        "aws_key_name",
        KEY_NAME,
        False,
        "set it to the name of an EC2 key pair you hold the private key of "
        "(aws ec2 describe-key-pairs lists them)",
    ),
    ("region", REGION, False, "must be an AWS region such as us-east-1"),
    (
        "aws_subnet_id",
        SUBNET,
        True,
        "must be a subnet id (subnet-...), or empty for the default VPC",
    ),
    ("aws_profile", PROFILE, True, "must be a profile name from ~/.aws/config"),
)
SPOT_REASON = "Server.SpotInstanceTermination"


def _quoted(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _problem(name: str, value: Any, problem: str) -> str:
    return f"{PREFIX}{name} is {_quoted(value)}: {problem}"


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _integer(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        return int(value.strip())
    return None


def fact(entry: Any) -> Any:
    """A catalogued value: ``{value: x, source: ...}`` is x; a bare value is itself."""
    return entry["value"] if isinstance(entry, Mapping) and "value" in entry else entry


def check_inputs(values: Mapping[str, Any], catalogue: Mapping[str, Any]) -> List[str]:
    """Every problem with the launch inputs (names without the prefix), one line each."""
    problems: List[str] = []
    types = catalogue.get("instance_types") or {}
    max_count = int(fact(catalogue["max_count"]))
    max_hours = int(fact(catalogue["max_lifetime_hours"]))

    provider = values.get("provider", "aws")
    if provider not in PROVIDERS:
        problems.append(
            _problem(
                "provider",
                provider,
                f"Kindling launches on {', '.join(PROVIDERS)} only (docs/CLOUD.md says what "
                "a GCP launch would take); set it to aws",
            )
        )

    itype = values.get("instance_type")
    if itype not in types:
        problems.append(
            _problem(
                "instance_type",
                itype,
                "not an instance type Kindling knows the GPU of; use one of "
                + ", ".join(sorted(types))
                + " (data/cloud_aws.yml lists them with their source)",
            )
        )

    count = _integer(values.get("count"))
    if count is None or count < 1:
        problems.append(_problem("count", values.get("count"), "must be a whole number, 1 or more"))
    elif count > max_count:
        problems.append(
            _problem(
                "count",
                values.get("count"),
                f"over the cap of {max_count} instances a run may rent "
                "(data/cloud_aws.yml max_count); ask for fewer, or raise the cap there",
            )
        )

    capacity = values.get("capacity")
    if capacity not in CAPACITIES:
        problems.append(_problem("capacity", capacity, "must be spot or on-demand"))

    price = values.get("max_price")
    if price not in (None, ""):
        number = _number(price)
        if number is None or number != number or number in (float("inf"), float("-inf")):
            problems.append(
                _problem("max_price", price, "must be a price in USD per hour, such as 0.60")
            )
        elif number <= 0:
            problems.append(
                _problem(
                    "max_price",
                    price,
                    "a price of zero or less can never be met; give the most you will pay "
                    "per instance-hour in USD (such as 0.60), or leave it empty for AWS's "
                    "default cap (the on-demand price)",
                )
            )
        elif capacity == "on-demand":
            problems.append(
                _problem(
                    "max_price",
                    price,
                    "a maximum price applies to spot capacity only; set "
                    f"{PREFIX}capacity to spot, or leave {PREFIX}max_price empty",
                )
            )

    image = values.get("image")
    os_name = values.get("os")
    images = catalogue.get("images") or {}
    if image not in images:
        problems.append(_problem("image", image, "must be one of " + ", ".join(sorted(images))))
    elif os_name not in images[image]:
        problems.append(
            _problem("os", os_name, "must be one of " + ", ".join(sorted(images[image])))
        )

    for name, pattern, optional, fix in TEXT_INPUTS:
        value = values.get(name)
        if optional and value in (None, ""):
            continue
        if not isinstance(value, str) or not pattern.match(value):
            problems.append(_problem(name, value, fix))

    hours = _integer(values.get("lifetime_hours"))
    if hours is None or not 1 <= hours <= max_hours:
        problems.append(
            _problem(
                "lifetime_hours",
                values.get("lifetime_hours"),
                f"must be a whole number of hours from 1 to {max_hours}: the sweeper "
                "terminates the run's instances after it",
            )
        )

    if "root_volume_gb" in values:
        size = _integer(values.get("root_volume_gb"))
        if size is None or not 20 <= size <= 16384:
            problems.append(
                _problem(
                    "root_volume_gb",
                    values.get("root_volume_gb"),
                    "must be a whole number of GiB from 20 to 16384 (the CUDA toolkit and "
                    "PyTorch need about 20 GiB beyond the OS)",
                )
            )

    problems.extend(_check_controller_ip(values.get("controller_ip")))
    return problems


def _check_controller_ip(value: Any) -> List[str]:
    fix = (
        "give the controller's own public IPv4 address (SSH is admitted from that /32 "
        "only), or leave it empty to look it up"
    )
    if value in (None, ""):
        return [_problem("controller_ip", value, "it was not found: " + fix)]
    try:
        address = ipaddress.ip_address(str(value).strip())
    except ValueError:
        return [_problem("controller_ip", value, "not an IP address: " + fix)]
    if address.version != 4 or address.is_unspecified or address.is_multicast:
        return [_problem("controller_ip", value, "not a host's IPv4 address: " + fix)]
    return []


def image_filter(values: Mapping[str, Any], catalogue: Mapping[str, Any]) -> Dict[str, Any]:
    entry = catalogue["images"][values["image"]][values["os"]]
    return {
        "owners": [str(entry["owner"])],
        "filters": {
            "name": entry["name"],
            "architecture": "x86_64",
            "state": "available",
            "virtualization-type": "hvm",
        },
        "ssh_user": entry["ssh_user"],
    }


def inventory_group(run_id: str) -> str:
    """The inventory group the aws_ec2 plugin's keyed_groups makes for a run."""
    return "kindling_run_" + re.sub(r"[^A-Za-z0-9_]", "_", run_id)


def expiry(now: dt.datetime, hours: int) -> str:
    return (now + dt.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def launch_plan(
    values: Mapping[str, Any], catalogue: Mapping[str, Any], now: dt.datetime
) -> Dict[str, Any]:
    """What a run launches; call only when check_inputs found nothing."""
    run_id = values["run_id"]
    spot = values["capacity"] == "spot"
    market: Dict[str, Any] = {}
    if spot:
        spot_options: Dict[str, Any] = {
            "spot_instance_type": "one-time",
            "instance_interruption_behavior": "terminate",
        }
        if values.get("max_price") not in (None, ""):
            spot_options["max_price"] = str(_number(values["max_price"]))
        market = {"market_type": "spot", "spot_options": spot_options}
    image = image_filter(values, catalogue)
    itype = catalogue["instance_types"][values["instance_type"]]
    price = itype.get("on_demand_usd_per_hour") or {}
    return {
        "run_id": run_id,
        "group": inventory_group(run_id),
        "name": f"kindling-{run_id}",
        "count": int(_integer(values["count"]) or 0),
        "instance_type": values["instance_type"],
        "gpus": itype["gpus"],
        "on_demand_usd_per_hour": price.get("usd") if isinstance(price, Mapping) else None,
        "image": image,
        "tags": {
            "Name": f"kindling-{run_id}",
            TAG_RUN: run_id,
            TAG_OWNER: values["owner"],
            TAG_EXPIRES: expiry(now, int(_integer(values["lifetime_hours"]) or 0)),
            TAG_CAPACITY: values["capacity"],
        },
        "instance_market_options": market,
        "root_volume_gb": int(_integer(values.get("root_volume_gb", 100)) or 100),
        "ssh_cidr": f"{ipaddress.ip_address(str(values['controller_ip']).strip())}/32",
    }


def parse_time(text: Any) -> Optional[dt.datetime]:
    if not isinstance(text, str):
        return None
    try:
        when = dt.datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return when.replace(tzinfo=dt.timezone.utc)


def _state(instance: Mapping[str, Any]) -> str:
    state = instance.get("state") or {}
    return str(state.get("name", "")) if isinstance(state, Mapping) else str(state)


def _reason(instance: Mapping[str, Any]) -> str:
    reason = instance.get("state_reason") or {}
    return str(reason.get("code", "")) if isinstance(reason, Mapping) else ""


def instance_verdict(instance: Mapping[str, Any]) -> str:
    """running, interrupted, lost or released, from the state, the reason and the tags."""
    tags = instance.get("tags") or {}
    state = _state(instance)
    if state in ("pending", "running"):
        return "running"
    if tags.get(TAG_RELEASED):
        return "released"
    spot = tags.get(TAG_CAPACITY) == "spot" or instance.get("instance_lifecycle") == "spot"
    if _reason(instance) == SPOT_REASON or spot:
        # Spot capacity is the one thing besides Kindling that takes a run's instance
        # away: not a failed host, an interrupted one.
        return "interrupted"
    return "lost"


def fleet_state(
    instances: List[Mapping[str, Any]], now: dt.datetime, run_id: str = ""
) -> Dict[str, Any]:
    """Each Kindling instance's verdict, and the ones past their expiry to terminate."""
    hosts: Dict[str, Dict[str, Any]] = {}
    expired: List[str] = []
    unreadable: List[str] = []
    for instance in instances:
        tags = instance.get("tags") or {}
        run = tags.get(TAG_RUN)
        if not run or (run_id and run != run_id):
            continue  # not Kindling's, or another run's: never touched
        iid = str(instance.get("instance_id"))
        verdict = instance_verdict(instance)
        expires = parse_time(tags.get(TAG_EXPIRES))
        alive = _state(instance) in ("pending", "running", "stopping", "stopped")
        is_expired = expires is not None and expires <= now
        if alive and expires is None:
            unreadable.append(iid)
        if alive and is_expired:
            expired.append(iid)
        hosts[iid] = {
            "run_id": run,
            "owner": tags.get(TAG_OWNER, ""),
            "expires": tags.get(TAG_EXPIRES, ""),
            "state": _state(instance),
            "state_reason": _reason(instance),
            "verdict": verdict,
            "expired": bool(alive and is_expired),
        }
    interrupted = sorted(i for i, h in hosts.items() if h["verdict"] == "interrupted")
    lost = sorted(i for i, h in hosts.items() if h["verdict"] == "lost")
    return {
        "instances": hosts,
        "expired": sorted(expired),
        "unreadable_expiry": sorted(unreadable),
        "interrupted": interrupted,
        "lost": lost,
        "running": sorted(i for i, h in hosts.items() if h["verdict"] == "running"),
    }


def run_outcome(stages: Mapping[str, str], state: Mapping[str, Any]) -> str:
    """The run's one word: passed, interrupted (spot took hosts) or failed."""
    failed = [name for name, result in stages.items() if result not in ("ok", "skipped")]
    if not failed:
        return "interrupted" if state.get("interrupted") else "passed"
    if state.get("interrupted") and not state.get("lost"):
        return "interrupted"
    return "failed"
