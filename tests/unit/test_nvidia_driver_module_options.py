"""The driver role applies the plan's kernel-module options (issue 35, item 5).

- module_utils/nvidia_module_options.py: what the loaded module runs with
  (/proc/driver/nvidia/params), when the options need a reboot, and verify's judgement;
- module_utils/driver_state.py: the reboot plan and the verdict take them;
- roles/nvidia_driver/tasks/module-options.yml writes exactly the plan's ``options ...`` lines,
  and the preflight keeps the plan's options less nvidia_driver_module_options_skip;
- the two new role inputs: the file is one modprobe reads, and the option names to leave out
  are the vendor catalogue's.
"""

from __future__ import annotations

import copy
import functools
import types
from typing import Any, Dict, List

import pytest
import yaml
from ansible.module_utils import driver_state, stack_plan
from ansible.module_utils import nvidia_module_options as nmo
from ansible.module_utils import role_inputs as ri
from ansible.module_utils.vendor_catalogue import CATALOGUE
from conftest import REPO_ROOT

CDMM = "NVreg_CoherentGPUMemoryMode"
GB200 = {"name": "NVIDIA GB200", "index": 0}
H100 = {"name": "NVIDIA H100 80GB HBM3", "index": 0}
FILE = "/etc/modprobe.d/kindling-nvidia-options.conf"
ROLE = REPO_ROOT / "roles" / "nvidia_driver"

# /proc/driver/nvidia/params of a loaded module, in its own format (an excerpt; the shape
# of the lines as the R580 module prints them, values made up for the cases).
PARAMS_UNSET = 'CoherentGPUMemoryMode: ""\nEnableMSI: 1\nRegistryDwords: ""\n'
PARAMS_DRIVER = 'CoherentGPUMemoryMode: "driver"\nEnableMSI: 1\nRegistryDwords: ""\n'
PARAMS_OLD_BRANCH = 'EnableMSI: 1\nRegistryDwords: ""\n'  # a 575 module: no such key


def grace_options() -> List[Dict[str, Any]]:
    return stack_plan.module_options([GB200], "580")


LOADED = {"state": "loaded", "reason": "module 580.95.05 is loaded", "loaded_version": "580.95.05"}
BUILT = {
    "state": "built",
    "reason": "module 580.95.05 is built but not loaded",
    "next_step": "reboot",
}
SMI_OK = {"present": True, "driver_version": "580.95.05", "gpus": []}


# --- module_utils/nvidia_module_options.py


def test_params_are_parsed_as_the_module_prints_them():
    assert nmo.parse_params(PARAMS_DRIVER) == {
        "CoherentGPUMemoryMode": "driver",
        "EnableMSI": "1",
        "RegistryDwords": "",
    }
    assert nmo.parse_params("") == {}
    assert nmo.param_name(CDMM) == "CoherentGPUMemoryMode"


def test_an_option_in_effect_is_no_mismatch():
    assert nmo.mismatches(grace_options(), PARAMS_DRIVER) == []


@pytest.mark.parametrize(
    ("params", "loaded"),
    [(PARAMS_UNSET, ""), ('CoherentGPUMemoryMode: "numa"\n', "numa"), (PARAMS_OLD_BRANCH, None)],
)
def test_an_option_not_in_effect_is_a_mismatch(params, loaded):
    found = nmo.mismatches(grace_options(), params)
    assert found == [
        {
            "option": CDMM,
            "line": f"options nvidia {CDMM}=driver",
            "wanted": "driver",
            "loaded": loaded,
        }
    ]


def test_numbers_compare_as_numbers_and_other_modules_are_not_read_here():
    options = [
        {"module": "nvidia", "option": "NVreg_EnableMSI", "value": "0x1", "line": "x"},
        {"module": "nvidia_uvm", "option": "uvm_perf_access_counter_mimc_migration_enable",
         "value": "0", "line": "y"},
    ]  # fmt: skip
    assert nmo.mismatches(options, PARAMS_UNSET) == []


def test_no_reboot_for_a_module_that_is_not_loaded():
    """Its next load reads the file: a fresh install needs no reboot for the options."""
    assert nmo.reboot_reason(grace_options(), None, FILE, True, False) == ""


def test_reboot_when_the_loaded_module_runs_without_the_option():
    reason = nmo.reboot_reason(grace_options(), PARAMS_UNSET, FILE, False, True)
    assert CDMM in reason and FILE in reason and "reboot" in reason
    # The same in every run of the boot, so that the request stands until the reboot.
    assert reason == nmo.reboot_reason(grace_options(), PARAMS_UNSET, FILE, True, True)


def test_no_reboot_when_the_loaded_module_already_runs_with_the_option():
    assert nmo.reboot_reason(grace_options(), PARAMS_DRIVER, FILE, True, True) == ""


def test_unread_params_the_change_of_the_file_decides():
    assert nmo.reboot_reason(grace_options(), None, FILE, False, True) == ""
    reason = nmo.reboot_reason(grace_options(), None, FILE, True, True)
    assert f"options nvidia {CDMM}=driver" in reason and FILE in reason


def test_a_removed_file_under_a_loaded_module_asks_for_a_reboot_naming_what_was_left_out():
    reason = nmo.reboot_reason([], None, FILE, True, True, skipped=[CDMM])
    assert "removed" in reason and CDMM in reason and "nvidia_driver_module_options_skip" in reason
    assert nmo.reboot_reason([], None, FILE, False, True) == ""


def test_verify_names_the_option_and_the_remedy():
    problem = nmo.verify_problem(grace_options(), PARAMS_UNSET, FILE)
    assert f"{CDMM}=driver (loaded: unset)" in problem
    assert "Reboot the host" in problem and "modprobe -c" in problem
    pending = nmo.verify_problem(grace_options(), PARAMS_UNSET, FILE, True, ["driver changed"])
    assert "A reboot is pending (driver changed)" in pending
    assert nmo.verify_problem(grace_options(), PARAMS_DRIVER, FILE) == ""
    assert nmo.verify_problem(grace_options(), None, FILE) == ""  # not read: not judged
    assert nmo.verify_problem([], PARAMS_UNSET, FILE) == ""


# --- module_utils/driver_state.py: the reboot plan and the verdict


def reboot_params(**changes) -> Dict[str, Any]:
    params = {
        "changed_now": False,
        "state_dir": None,
        "change_record": {"record": None, "boot_id": "b1"},
        "nvidia_smi": SMI_OK,
        "kernel_module": LOADED,
        "policy": "auto",
        "packages": ["nvidia-driver-580-open"],
        "version_glob": "580.*",
        "module_options": [],
        "module_options_file": FILE,
        "module_options_changed": False,
        "module_options_skipped": [],
        "module_params": None,
    }
    params.update(changes)
    return params


def test_reboot_plan_without_options_is_as_before():
    plan = driver_state.reboot_plan_for(reboot_params())
    assert plan["reboot_needed"] is False
    assert plan["reason"] == "the NVIDIA driver is loaded (580.95.05)"


def test_reboot_plan_asks_for_a_reboot_naming_the_option():
    plan = driver_state.reboot_plan_for(
        reboot_params(module_options=grace_options(), module_params=PARAMS_UNSET)
    )
    assert plan["reboot_needed"] is True
    assert plan["changed_this_boot"] is False
    assert CDMM in plan["reason"]


def test_reboot_plan_joins_the_option_to_a_driver_change():
    plan = driver_state.reboot_plan_for(
        reboot_params(changed_now=True, module_options=grace_options(), module_params=PARAMS_UNSET)
    )
    assert plan["reason"].startswith("the NVIDIA driver packages changed in this boot")
    assert f"; also, the loaded nvidia module runs without {CDMM}" in plan["reason"]


def test_reboot_plan_not_loaded_module_needs_no_reboot_for_the_options():
    plan = driver_state.reboot_plan_for(
        reboot_params(
            kernel_module=BUILT, module_options=grace_options(), module_options_changed=True
        )
    )
    assert plan["reboot_needed"] is False


def test_the_specs_take_the_new_options():
    for name in ("module_options", "module_options_file", "module_params"):
        assert name in driver_state.REBOOT_PLAN_SPEC and name in driver_state.VERDICT_SPEC
    assert driver_state.REBOOT_PLAN_SPEC["module_params"].get("default") is None


def verdict_params(**changes) -> Dict[str, Any]:
    params = {
        "nvidia_smi": SMI_OK,
        "kernel_module": LOADED,
        "outcome": "present",
        "branch": "580",
        "reboot_pending": False,
        "reboot_reasons": [],
        "module_options": grace_options(),
        "module_params": PARAMS_UNSET,
        "module_options_file": FILE,
    }
    params.update(changes)
    return params


def test_verdict_reports_an_option_not_in_effect_with_the_remedy():
    problem = driver_state.verdict_for(verdict_params())["problem"]
    assert CDMM in problem and "Reboot the host" in problem
    assert driver_state.verdict_for(verdict_params(module_params=PARAMS_DRIVER))["problem"] == ""
    assert driver_state.verdict_for(verdict_params(module_params=None))["problem"] == ""


def test_verdict_a_broken_driver_comes_first():
    problem = driver_state.verdict_for(verdict_params(nvidia_smi={"present": False}))["problem"]
    assert problem.startswith("nvidia-smi is not installed") and CDMM not in problem


# --- the role's tasks, templated as Ansible does


# Renders the roles' templates: controller mode, put back afterwards (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("controller_mode")


@functools.lru_cache(maxsize=None)
def ansible() -> types.SimpleNamespace:
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    return types.SimpleNamespace(loader=DataLoader(), Templar=Templar)


def tasks(name: str) -> List[Dict[str, Any]]:
    path = ROLE / "tasks" / name
    return ansible().loader.load_from_file(str(path), trusted_as_template=True)


def template(expression: Any, variables: Dict[str, Any]) -> Any:
    return ansible().Templar(loader=ansible().loader, variables=variables).template(expression)


def written(options: List[Dict[str, Any]]) -> str:
    task = next(t for t in tasks("module-options.yml") if "managed_files_write" in t)
    variables = dict(
        copy.deepcopy(task["vars"]),
        nvidia_driver__module_options=options,
        nvidia_driver_module_options_file=FILE,
    )
    files = template(task["managed_files_write"]["files"], variables)
    assert [f["path"] for f in files] == [FILE]
    assert files[0]["mode"] == "0644"
    return files[0]["content"]


def test_the_file_holds_exactly_the_plans_option_lines():
    options = grace_options()
    content = written(options)
    assert content.endswith("\n")
    lines = content.splitlines()
    assert all(line.startswith(("#", "options ")) for line in lines), content
    assert [line for line in lines if not line.startswith("#")] == [o["line"] for o in options]
    assert [o["line"] for o in options] == [f"options nvidia {CDMM}=driver"]
    # Each option's comment says what it changes from; nothing in it depends on the GPUs'
    # names as this run read them (PCI or nvidia-smi), so a second run writes the same.
    assert f"# {CDMM}=driver, not the module's own default numa" in lines
    assert content == written(stack_plan.module_options([{"name": "GB200", "index": 3}], "595"))


def test_several_options_each_get_their_line_and_one_comment():
    options = [
        *grace_options(),
        {"module": "nvidia", "option": "NVreg_Example", "value": "1", "module_default": "0",
         "line": "options nvidia NVreg_Example=1", "why": "a reason\nover two lines"},
    ]  # fmt: skip
    lines = written(options).splitlines()
    assert [line for line in lines if not line.startswith("#")] == [o["line"] for o in options]
    assert "# NVreg_Example=1, not the module's own default 0" in lines


def preflight_facts(outcome: str, planned: List[Dict[str, Any]], skip: List[str]) -> Dict[str, Any]:
    task = next(
        t
        for t in tasks("preflight.yml")
        if "nvidia_driver__module_options" in (t.get("ansible.builtin.set_fact") or {})
    )
    facts = task["ansible.builtin.set_fact"]
    variables = dict(
        copy.deepcopy(task["vars"]),
        nvidia_driver__state={"outcome": outcome},
        nvidia_driver__plan={"packages": {"module_options": planned}},
        nvidia_driver_module_options_skip=skip,
        ansible_facts={"nvidia_pci": {}, "nvidia_smi": {}},
    )
    return {
        name: template(facts[name], variables)
        for name in ("nvidia_driver__module_options", "nvidia_driver__module_options_skipped")
    }


def test_the_preflight_keeps_the_plans_options():
    facts = preflight_facts("install", grace_options(), [])
    assert facts == {
        "nvidia_driver__module_options": grace_options(),
        "nvidia_driver__module_options_skipped": [],
    }


def test_an_option_left_out_is_not_written_and_is_named():
    facts = preflight_facts("present", grace_options(), [CDMM])
    assert facts == {
        "nvidia_driver__module_options": [],
        "nvidia_driver__module_options_skipped": [CDMM],
    }


def test_an_adopted_driver_gets_no_options_and_a_plan_without_them_none():
    assert preflight_facts("adopted", grace_options(), [])["nvidia_driver__module_options"] == []
    none = stack_plan.module_options([H100], "580")
    assert none == []
    assert preflight_facts("install", none, [])["nvidia_driver__module_options"] == []


def test_the_options_are_written_before_the_driver_packages():
    imports = [t.get("ansible.builtin.import_tasks") for t in tasks("install-driver.yml")]
    assert imports.index("module-options.yml") < imports.index("packages.yml")


# --- the role inputs


def argument_specs() -> Dict[str, Any]:
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"]


def test_the_options_to_leave_out_are_the_catalogues():
    option = argument_specs()["nvidia_driver_module_options_skip"]
    assert option["type"] == "list" and option["elements"] == "str"
    assert option["default"] == []
    assert sorted(option["choices"]) == sorted(
        {r["option"] for r in CATALOGUE["kernel_module_options"]}
    )


def check(**changes) -> List[str]:
    options = argument_specs()
    values = {
        name: o["default"] for name, o in options.items() if "{{" not in str(o.get("default"))
    }
    values.update(changes)
    spec = {name: {k: v for k, v in o.items() if k != "default"} for name, o in options.items()}
    return ri.check_role("nvidia_driver", spec, values, host=False, context={"machine": "aarch64"})


def test_the_defaults_pass():
    assert check() == []
    assert check(nvidia_driver_module_options_skip=[CDMM]) == []
    assert check(nvidia_driver_module_options_file="/etc/modprobe.d/zz-gpu.conf") == []


@pytest.mark.parametrize(
    "path",
    [
        "/etc/modprobe.d/kindling-nvidia-options",  # modprobe reads *.conf only
        "/etc/modprobe.d/kindling nvidia.conf",
        "/etc/kindling-nvidia-options.conf",  # not a modprobe.d directory
        "/etc/modprobe.d/../kindling.conf",
        "etc/modprobe.d/kindling.conf",
    ],
)
def test_a_file_modprobe_does_not_read_is_refused_naming_the_variable(path):
    problems = check(nvidia_driver_module_options_file=path)
    assert len(problems) == 1, problems
    assert problems[0].startswith("nvidia_driver_module_options_file is "), problems
    assert "modprobe" in problems[0] and "/etc/modprobe.d/" in problems[0]


def test_an_unknown_option_name_is_refused_with_the_known_ones():
    problems = check(nvidia_driver_module_options_skip=["NVreg_CoherentGpuMemoryMode"])
    assert problems == [
        "value of nvidia_driver_module_options_skip must be one or more of: "
        f"{CDMM}. Got no match for: NVreg_CoherentGpuMemoryMode"
    ]


def test_the_file_shape_is_modprobe_d():
    shape = ri.SHAPES["nvidia_driver"]["nvidia_driver_module_options_file"]
    assert shape.check(FILE) is None
    assert (
        ri.SHAPES["nvidia_driver"]["nvidia_driver_module_options_skip"].__class__.__name__ == "Spec"
    )
