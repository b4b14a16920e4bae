"""`ansible-playbook playbooks/site.yml --check` on a fresh host changes nothing.

The host is the bad-input host (tests/reliability/conftest.py), which nothing may change;
the variables are the default Molecule scenario's (the whole stack against the fixture
sources), read from molecule/default/molecule.yml so there is one copy of them.
"""

from __future__ import annotations

import re

from conftest import (
    CONTAINER,
    one_line,
    run_playbook,
    scenario_group_vars,
    snapshot,
    snapshot_diff,
    write_inventory,
)


def test_site_check_mode_on_a_fresh_host_reports_and_changes_nothing(
    test_host, tmp_path, monkeypatch
):
    monkeypatch.setenv("MOLECULE_EPHEMERAL_DIRECTORY", str(tmp_path))
    inventory = write_inventory(tmp_path / "hosts.yml", CONTAINER, scenario_group_vars("default"))
    before = snapshot()
    result = run_playbook(test_host, "site.yml", {}, "--check", "--diff", "-v", inventory=inventory)
    after = snapshot()
    output = one_line(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout[-5000:]
    match = re.search(r"changed=(\d+)\s+unreachable=0\s+failed=0", result.stdout)
    assert match and int(match.group(1)) > 10, result.stdout[-3000:]
    # It says what it would do: the driver packages under NVIDIA's debian12 names, the
    # repository entry, the toolkit, the venv.
    assert "cuda-drivers-580, nvidia-driver, nvidia-kernel-dkms at 580.*" in output
    assert "install cuda-toolkit-13-0" in output
    assert (
        "TASK [nvidia_driver : Trust NVIDIA's CUDA repository with its pinned key only, "
        "tried in a scratch apt first] " in output
    )
    # --diff shows the deb822 source it would write (apt_signed_repository's diff).
    assert "/etc/apt/sources.list.d/cuda-debian12-x86_64.sources" in output
    assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in output
    assert "TASK [conda_pytorch :" in output and "TASK [jupyter :" in output
    assert before == after, "site.yml --check changed the host:\n" + snapshot_diff(before, after)
    # One stack, checked once: each GPU stage's check runs in stage 1, before any change, and
    # the stage gets that result back (nothing changed the driver in between).
    for task in STAGE_CHECKS:
        assert reused_flags(result.stdout, task) == [False, True], task


# Each GPU stage's gpu_stack_check task (its tasks/stack.yml, the `stack` entry point).
STAGE_CHECKS = (
    "nvidia_driver : Check the planned driver and work out its packages "
    "(module_utils/stack_plan.py)",
    "cuda : Check the toolkits and cuDNN and work out their packages (module_utils/stack_plan.py)",
    "conda_pytorch : Check torch, the wheel variant, Python and the GPUs against the "
    "compatibility table",
)


def reused_flags(stdout: str, task: str) -> list:
    """Each run of ``task`` in a -v run's output, in order: whether its result was reused.

    A loop's item results each carry the flag; the task counts as reused when all do.
    """
    flags = []
    for block in stdout.split("\nTASK [")[1:]:
        if not block.startswith(task + "]"):
            continue
        found = re.findall(r"^\s*reused: (true|false)$", block, flags=re.MULTILINE)
        assert found, f"{task}: no result with a reused flag:\n{block[:2000]}"
        flags.append(all(flag == "true" for flag in found))
    return flags
