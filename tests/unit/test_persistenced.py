"""nvidia-persistenced with persistence mode on: the command line and the drop-in."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.persistenced import dropin, exec_start_argv, persistence_on
from ansible.module_utils.vendor_catalogue import CATALOGUE

# systemctl show -p ExecStart of Ubuntu's packaged unit (canonical/nvidia-graphics-drivers).
UBUNTU = (
    "ExecStart={ path=/usr/bin/nvidia-persistenced ; argv[]=/usr/bin/nvidia-persistenced "
    "--user nvidia-persistenced --no-persistence-mode --verbose ; ignore_errors=no ; "
    "start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }"
)
OFF = CATALOGUE["persistenced"]["disables_persistence"]
ON = CATALOGUE["persistenced"]["enables_persistence"]


def test_reads_the_argv_systemd_shows():
    assert exec_start_argv(UBUNTU) == [
        "/usr/bin/nvidia-persistenced",
        "--user",
        "nvidia-persistenced",
        "--no-persistence-mode",
        "--verbose",
    ]


@pytest.mark.parametrize("text", ["", "ExecStart=", None, "ExecStart={ path=/bin/true }"])
def test_no_command_gives_no_argv(text):
    assert exec_start_argv(text) == []


def test_ubuntus_flag_is_replaced_and_the_rest_kept():
    wanted = persistence_on(exec_start_argv(UBUNTU), OFF, ON)
    assert wanted == [
        "/usr/bin/nvidia-persistenced",
        "--user",
        "nvidia-persistenced",
        "--verbose",
        "--persistence-mode",
    ]
    assert "--no-persistence-mode" not in wanted


def test_a_command_already_on_is_left_as_it_is():
    argv = ["/usr/bin/nvidia-persistenced", "--persistence-mode", "--verbose"]
    assert persistence_on(argv, OFF, ON) == argv


def test_dropin_resets_execstart_and_quotes_arguments():
    text = dropin(["/usr/bin/nvidia-persistenced", "--user", "a b"])
    assert text.splitlines() == [
        "[Service]",
        "ExecStart=",
        "ExecStart=/usr/bin/nvidia-persistenced --user 'a b'",
    ]


def test_module_reads_systemctl_and_returns_the_dropin(monkeypatch, capsys):
    import nvidia_persistenced_plan
    from ansible.module_utils.command import Result
    from ansible.module_utils.testing import patch_module_args

    def fake_run(args, timeout, **kwargs):
        assert args[:3] == ["systemctl", "show", "-p"], args
        return Result(0, UBUNTU + "\n", "")

    monkeypatch.setattr(nvidia_persistenced_plan, "run", fake_run)
    with patch_module_args({}), pytest.raises(SystemExit):
        nvidia_persistenced_plan.main()
    result = json.loads(capsys.readouterr().out)
    assert result["disabled_by_unit"] is True
    assert "--persistence-mode" in result["wanted_argv"]
    assert result["dropin"].startswith(
        "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced"
    )
