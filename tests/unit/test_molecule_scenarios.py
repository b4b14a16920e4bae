"""Molecule scenarios: each converges twice, and the platform settings are written once.

Molecule's idempotence step fails a scenario whose second converge changes anything; these
tests make sure no scenario drops that step from its test sequence, that no scenario repeats
the podman settings every test host shares, and that the driver sees them on every platform.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = yaml.safe_load((REPO_ROOT / ".config" / "molecule" / "config.yml").read_text())
SCENARIOS = sorted(p.parent.name for p in (REPO_ROOT / "molecule").glob("*/molecule.yml"))


def test_there_are_scenarios():
    assert len(SCENARIOS) >= 9


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_runs_idempotence_after_converge(scenario):
    config = yaml.safe_load((REPO_ROOT / "molecule" / scenario / "molecule.yml").read_text())
    sequence = (config.get("scenario") or {}).get("test_sequence") or SHARED["scenario"][
        "test_sequence"
    ]
    assert "converge" in sequence and "idempotence" in sequence, sequence
    assert sequence.index("idempotence") > sequence.index("converge")
    assert sequence.index("verify") > sequence.index("idempotence")


# ---------------------------------------------------------------- shared platform settings
# The podman settings every test host shares live once, in .config/molecule/config.yml
# (provisioner.inventory.group_vars.all.kindling_platform_defaults). A group_vars/all copy of
# molecule_yml puts them under each platform, so the podman driver's own create and destroy
# playbooks (which loop over molecule_yml.platforms) see them; the platform's keys win.
SHARED_VARS = SHARED["provisioner"]["inventory"]["group_vars"]["all"]
PLATFORM_DEFAULTS = SHARED_VARS["kindling_platform_defaults"]
BUILD_IMAGE = (REPO_ROOT / "molecule" / "_shared" / "image" / "build-image.sh").read_text()
# The images build-image.sh builds, one per release of its table.
IMAGES = {
    name + ":latest"
    for name in re.findall(
        r"^\s*\[debian\d+\]=(?:\$\{[A-Z_]+:-)?(localhost/[\w.-]+)", BUILD_IMAGE, re.M
    )
}


def _scenario(scenario: str) -> dict:
    return yaml.safe_load((REPO_ROOT / "molecule" / scenario / "molecule.yml").read_text())


def test_the_shared_platform_settings():
    assert PLATFORM_DEFAULTS == {
        "image": "localhost/kindling-debian12-systemd:latest",
        "pre_build_image": True,
        "pull": False,
        "command": "/sbin/init",
        "systemd": "always",
        "network": "host",
        "ulimits": ["nofile=20000:20000", "nproc=32768:32768"],
    }
    assert sorted(IMAGES) == [
        "localhost/kindling-debian11-systemd:latest",
        "localhost/kindling-debian12-systemd:latest",
    ]
    assert PLATFORM_DEFAULTS["image"] in IMAGES


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_platforms_carry_only_their_own_keys(scenario):
    """No scenario repeats a shared setting; `image` only to pick another release's image."""
    platforms = _scenario(scenario)["platforms"]
    assert platforms, scenario
    for platform in platforms:
        repeated = sorted(set(platform) & set(PLATFORM_DEFAULTS) - {"image"})
        assert not repeated, (
            f"molecule/{scenario}: platform {platform['name']} repeats {repeated}, which "
            ".config/molecule/config.yml (kindling_platform_defaults) gives every platform"
        )
        if "image" in platform:
            assert platform["image"] in IMAGES - {PLATFORM_DEFAULTS["image"]}, platform


def test_the_driver_sees_the_shared_settings_under_each_platform(tmp_path):
    """Render molecule_yml as the podman driver's create.yml does: through an inventory
    shaped like Molecule's (its molecule_yml in the inventory file, ours in group_vars/all)."""
    scenario = tmp_path / "molecule.yml"
    platforms = [
        {"name": "plain", "groups": ["gpu_hosts"]},
        {
            "name": "older",
            "image": "localhost/kindling-debian11-systemd:latest",
            "volumes": ["a:b"],
        },
    ]
    scenario.write_text(yaml.safe_dump({"platforms": platforms, "driver": {"name": "podman"}}))
    molecule_vars = {
        "molecule_file": str(scenario),
        "molecule_yml": "{{ lookup('file', molecule_file) | from_yaml }}",
    }
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "ansible_inventory.yml").write_text(
        yaml.safe_dump(
            {
                "all": {"hosts": {"plain": None, "older": None}, "vars": molecule_vars},
                "gpu_hosts": {"hosts": {"plain": None}, "vars": molecule_vars},
            }
        )
    )
    (inventory / "group_vars" / "all").write_text(yaml.safe_dump(SHARED_VARS))
    out = tmp_path / "platforms.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "ansible.builtin.copy": {
                                "content": "{{ molecule_yml.platforms | to_json }}",
                                "dest": str(out),
                                "mode": "0644",
                            }
                        }
                    ],
                }
            ]
        )
    )
    env = {
        **os.environ,
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
    }
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            str(playbook),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rendered = json.loads(out.read_text())
    assert rendered == [{**PLATFORM_DEFAULTS, **platform} for platform in platforms]
    assert rendered[1]["image"] == "localhost/kindling-debian11-systemd:latest"
