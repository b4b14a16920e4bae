"""Issue 34's unknown-variables and dict-keys classes (module_utils/site_inputs.py,
action_plugins/site_inputs_plan.py, input_types.DictOf/Record).

The action plugin takes the user's variable names from a real VariableManager: inventory
(host and group vars, group_vars/ and host_vars/ beside the inventory) and extra vars,
never facts, set_fact, registered results, role defaults or play vars.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.module_utils import input_types as it
from ansible.module_utils import role_inputs as ri
from ansible.module_utils import site_inputs as si
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager
from conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location(
    "site_inputs_action", REPO_ROOT / "action_plugins" / "site_inputs_plan.py"
)
action = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(action)

ROLES, DECLARED = action.declared_names(str(REPO_ROOT))


def unknown(*names, allow=()):
    return si.unknown_variables(names, ROLES, DECLARED, allow)


# --- the rule


def test_a_misspelled_role_variable_names_the_nearest():
    (message,) = unknown("nvidia_driver_brach")
    assert message.startswith(
        "nvidia_driver_brach is not a variable the nvidia_driver role reads: "
        "did you mean nvidia_driver_branch?"
    )
    assert "kindling_allow_unknown_variables" in message


def test_a_misspelled_site_variable_names_the_nearest():
    (message,) = unknown("kindling_serail")
    assert (
        "kindling_serail is not a variable Kindling reads: did you mean kindling_serial?" in message
    )


def test_declared_names_pass():
    assert (
        unknown(
            "nvidia_driver_branch",  # argument spec, main
            "gpu_preflight_disk_paths",
            "nvidia_driver_outcome",  # interface.yml sets
            "kindling_serial",
            "kindling_target_hosts",
            "kindling_cloud_region",  # playbooks/cloud/vars/defaults.yml
            "cuda__cudnn_archive",  # <role>__<name>: internal
            "gpu_required",  # no Kindling prefix
            "my_thing",
            "ansible_host",
        )
        == []
    )


def test_every_entry_point_counts():
    specs = yaml.safe_load((REPO_ROOT / "roles/gpu_preflight/meta/argument_specs.yml").read_text())
    others = [e for e in specs["argument_specs"] if e != "main"]
    assert others
    for entry in others:
        for name in specs["argument_specs"][entry].get("options") or {}:
            assert name in DECLARED


def test_renamed_variables_are_left_to_their_own_message():
    assert unknown("cuda_driver_branch", "gpu_preflight_plan") == []


def test_the_opt_out_takes_names_and_prefixes():
    assert (
        unknown("jupyter_mylab_theme", "nouveau_note", allow=["jupyter_mylab_", "nouveau_note"])
        == []
    )
    assert len(unknown("jupyter_mylab_theme", allow=["jupyter_mylab"])) == 1  # not a prefix
    problems = si.check_site({"kindling_allow_unknown_variables": "jupyter_"}, {})
    assert problems and problems[0].startswith("kindling_allow_unknown_variables is 'jupyter_'")
    assert si.check_site({"kindling_allow_unknown_variables": ["Bad Name"]}, {})


def test_globals_are_described_once():
    assert all(text.strip() for text in si.KINDLING_GLOBALS.values())
    assert all(n.startswith("kindling_") for n in si.KINDLING_GLOBALS)
    assert set(si.SITE_SHAPES) <= set(si.KINDLING_GLOBALS)


# --- whose variables: a real VariableManager


def _manager(tmp_path, host_vars, extra=None, group_vars=None):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        json.dumps({"all": {"children": {"gpu_hosts": {"hosts": {"h1": host_vars}}}}})
    )
    if group_vars:
        (tmp_path / "group_vars").mkdir()
        (tmp_path / "group_vars" / "gpu_hosts.yml").write_text(json.dumps(group_vars))
    loader = DataLoader()
    manager = VariableManager(loader=loader, inventory=InventoryManager(loader, [str(inventory)]))
    if extra:
        manager._extra_vars = extra
    return manager, loader


def test_user_names_are_inventory_and_extra_vars(tmp_path):
    manager, loader = _manager(
        tmp_path,
        {"nvidia_driver_brach": "570"},
        extra={"kindling_serail": 2},
        group_vars={"cuda_verison": "13.0"},
    )
    names = action.user_variable_names(manager, loader, "h1")
    assert {"nvidia_driver_brach", "kindling_serail", "cuda_verison"} <= names


def test_facts_set_fact_and_registered_results_are_not_the_users(tmp_path):
    manager, loader = _manager(tmp_path, {"nvidia_driver_branch": "580"})
    manager.set_nonpersistent_facts(
        "h1", {"nvidia_driver__result": 1, "kindling_effective_inputs": {}}
    )
    manager.set_host_facts("h1", {"gpu_preflight_whatever_fact": 1})
    manager.set_host_variable("h1", "cuda_included_var", 1)
    names = action.user_variable_names(manager, loader, "h1")
    assert "nvidia_driver_branch" in names
    assert not names & {
        "nvidia_driver__result",
        "kindling_effective_inputs",
        "gpu_preflight_whatever_fact",
        "cuda_included_var",
    }
    # The fact is there for the run (under ansible_facts: ansible.cfg inject_facts_as_vars is
    # false; as a top-level variable too where facts are injected), just not the user's.
    from ansible import constants as C

    seen = manager.get_vars(host=manager._inventory.get_host("h1"))
    assert "gpu_preflight_whatever_fact" in seen["ansible_facts"]
    assert ("gpu_preflight_whatever_fact" in seen) is bool(C.INJECT_FACTS_AS_VARS)


@pytest.mark.parametrize("inventory", ["gpu", "local", "preinstalled"])
def test_the_repos_inventories_pass(inventory):
    loader = DataLoader()
    manager = VariableManager(
        loader=loader,
        inventory=InventoryManager(loader, [str(REPO_ROOT / "inventories" / inventory)]),
    )
    for host in manager._inventory.get_hosts():
        names = action.user_variable_names(manager, loader, host.name)
        assert unknown(*names) == [], (inventory, host.name)


def test_molecule_default_passes():
    names = set()

    def keys(node):
        if isinstance(node, dict):
            for key, value in node.items():
                names.add(str(key))
                keys(value)
        elif isinstance(node, list):
            for value in node:
                keys(value)

    for path in ("molecule/default/molecule.yml", ".config/molecule/config.yml"):
        keys(yaml.safe_load((REPO_ROOT / path).read_text()))
    assert unknown(*names) == []


# --- dict keys: every dict input declares its keys


def _dict_options():
    for role in sorted(ri.SHAPES):
        specs = yaml.safe_load((REPO_ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
        for name, option in specs["argument_specs"]["main"]["options"].items():
            if option.get("type") == "dict" or option.get("elements") == "dict":
                yield role, name, option


def test_every_dict_input_declares_its_keys():
    found = list(_dict_options())
    assert len(found) == 4, found
    for role, name, option in found:
        shape = ri.SHAPES[role][name]
        if option.get("type") == "list":
            assert isinstance(shape, it.ListOf), name
            shape = shape.element
        assert isinstance(shape, (it.Record, it.DictOf)), name


@pytest.mark.parametrize(
    "role, name, value, expect",
    [
        (
            "conda_pytorch",
            "conda_pytorch_miniforge_sha256",
            {"x86-64": "0" * 64},
            "unknown key 'x86-64': did you mean x86_64?",
        ),
        (
            "gpu_preflight",
            "gpu_preflight_supported_os",
            {"Debain": ["12"]},
            "unknown key 'Debain': did you mean Debian?",
        ),
        (
            "gpu_preflight",
            "gpu_preflight_supported_arch",
            {"arm64": ["Ubuntu"], "x86_64": ["Debian"]},
            "unknown key 'arm64'",
        ),
        (
            "dcgm_exporter",
            "dcgm_exporter_counters",
            [{"field": "DCGM_FI_DEV_GPU_UTIL", "tpye": "gauge"}],
            "unknown key 'tpye': did you mean type?",
        ),
    ],
)
def test_an_unknown_key_is_refused_naming_the_nearest(role, name, value, expect):
    problem = ri.SHAPES[role][name].check(value)
    assert problem and expect in problem, problem
