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
    # --diff shows the deb822 source it would write (apt_repository_trust's diff).
    assert "/etc/apt/sources.list.d/cuda-debian12-x86_64.sources" in output
    assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in output
    assert "TASK [conda_pytorch :" in output and "TASK [jupyter :" in output
    assert before == after, "site.yml --check changed the host:\n" + snapshot_diff(before, after)
    # One plan, checked once: stage 1 refuses what each GPU stage would, and each stage takes
    # its part of the plan without checking again (nothing changed the driver in between).
    assert (
        "TASK [gpu_preflight : Refuse now what a GPU stage would refuse (its part of the plan)]"
        in output
    )
    for task in STAGE_PARTS:
        assert rechecked_flags(result.stdout, task) == [False], task
    assert "TASK [nvidia_driver : Check the planned driver" not in output


# Each GPU stage's host_plan `part` task (its preflight).
STAGE_PARTS = (
    "nvidia_driver : Take the driver stage's part of the host's plan (module_utils/host_plan.py)",
    "cuda : Take the cuda stage's part of the host's plan, checked again if the driver changed "
    "(module_utils/host_plan.py)",
    "conda_pytorch : Take the conda_pytorch stage's part of the host's plan, checked again if the "
    "driver changed (host_plan.py)",
)


def rechecked_flags(stdout: str, task: str) -> list:
    """Each run of ``task`` in a -v run's output, in order: whether it checked again."""
    flags = []
    for block in stdout.split("\nTASK [")[1:]:
        if not block.startswith(task + "]"):
            continue
        found = re.findall(r"^\s*rechecked: (true|false)$", block, flags=re.MULTILINE)
        assert found, f"{task}: no result with a rechecked flag:\n{block[:2000]}"
        flags.append(found[0] == "true")
    return flags
