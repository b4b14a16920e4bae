"""module_utils/reboot_coordinator.py and library/reboot_coordinator_plan.py: which reboot
requests are pending, whether to reboot now, and why not here."""

from __future__ import annotations

import json

import pytest
import reboot_coordinator_plan
from ansible.module_utils.reboot_coordinator import (
    parse_record,
    pending_requests,
    plan,
    suppressed_reason,
)
from ansible.module_utils.testing import patch_module_args

DRIVER = {"role": "nvidia_driver", "needed": True, "policy": "auto", "reason": "the driver changed"}
NOUVEAU = {"role": "nouveau", "needed": True, "policy": "never", "reason": "nouveau is loaded"}


def test_a_record_of_this_boot_stays_pending_until_its_role_answers():
    earlier = {"boot_id": "b1", "requests": [NOUVEAU, DRIVER]}
    # nvidia_driver answered again in this run (no longer needed): only nouveau's stays.
    answered = [dict(DRIVER, needed=False)]
    assert pending_requests(earlier, "b1", answered) == [NOUVEAU]
    # After a reboot (another boot id) the record says nothing.
    assert pending_requests(earlier, "b2", []) == []
    assert pending_requests({}, "b1", [DRIVER, dict(NOUVEAU, needed=False)]) == [DRIVER]


@pytest.mark.parametrize(
    "allowed, connection, vtype, vrole, expect",
    [
        (True, "ssh", "kvm", "guest", ""),
        (False, "ssh", "kvm", "guest", "reboot_coordinator_allowed is false"),
        (
            True,
            "local",
            "",
            "",
            "this is the controller (local connection); Kindling never reboots it",
        ),
        (True, "ssh", "podman", "guest", "the host is a podman container"),
        (True, "ssh", "podman", "host", ""),
    ],
)
def test_why_kindling_must_not_reboot_here(allowed, connection, vtype, vrole, expect):
    assert (
        suppressed_reason(allowed, connection, vtype, vrole, ["podman", "docker", "lxc"]) == expect
    )


def test_the_plan_reboots_only_for_auto_or_always_and_records_what_it_does_not_do():
    now = plan("b1", None, [DRIVER], True, "ssh", "kvm", "guest", ["podman"])
    assert now["reboot_now"] and now["record"] is None and not now["required"]
    held = plan("b1", None, [DRIVER], True, "ssh", "podman", "guest", ["podman"])
    assert not held["reboot_now"] and held["required"]
    assert held["record"] == {"boot_id": "b1", "requests": [DRIVER]}
    never = plan(
        "b1", json.dumps({"boot_id": "b1", "requests": [NOUVEAU]}), [], True, "ssh", "", "", []
    )
    assert never["pending"] == [NOUVEAU] and not never["wanted"] and never["required"]
    assert never["reasons"] == ["nouveau is loaded"] and never["recorded"]
    nothing = plan("b1", None, [], True, "ssh", "", "", [])
    assert nothing["pending"] == [] and nothing["record"] is None and not nothing["required"]


def test_a_damaged_record_is_no_record():
    assert (
        parse_record("{not json") == {} and parse_record("[1]") == {} and parse_record(None) == {}
    )


def test_the_module_reads_the_boot_id_and_the_record(tmp_path, capsys):
    (tmp_path / "boot_id").write_text("b1\n")
    (tmp_path / "reboot-required.json").write_text(
        json.dumps({"boot_id": "b1", "requests": [NOUVEAU]})
    )
    args = {
        "state_dir": str(tmp_path),
        "requests": [DRIVER],
        "connection": "ssh",
        "boot_id_path": str(tmp_path / "boot_id"),
    }
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        reboot_coordinator_plan.main()
    result = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and result["changed"] is False
    assert result["pending"] == [NOUVEAU, DRIVER] and result["reboot_now"] is True
    with patch_module_args(dict(args, boot_id_path=str(tmp_path / "none"))), pytest.raises(
        SystemExit
    ):
        reboot_coordinator_plan.main()
    assert "could not read the boot id" in json.loads(capsys.readouterr().out)["msg"]
