"""Controller side of the host_plan module: the host's plan, worked out once.

The plan itself is decided here, on the controller (module_utils/host_plan.py). What it
must read on the host is read first, each by its own module run, and only where an input
asks for it (adopt mode): the torch the driver stage adopts by (torch_cuda_facts, depth
build), the toolkit cuda_home holds (cuda_toolkit_plan with adopt), and the interpreter
that makes or is conda_pytorch's environment (python_interpreter_info; none when the
torch read already ran the same interpreter).

The inputs are every role's effective inputs as stage 1 checked them
(``kindling_effective_inputs``); for a stage run alone, each input the plan reads as the
task variables hold it (the user's, a play's or block's, the running role's default), else
the owning role's argument_specs default. Besides those, the task variables are read only for the
names set for the host: a retired one is refused with its new name.

With ``part`` the plugin answers a stage's part of an existing plan (host_plan.take_part),
from its arguments alone.
"""

from __future__ import annotations

import json
import os

import ansible.module_utils
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules do
# (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import default_stack, host_plan, stack_record  # noqa: E402
from ansible.module_utils.atomic_file import write_atomic  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


def _user_variable_names(task, loader, hostname):
    """site_inputs_plan's user_variable_names (the user's inventory and extra vars), loaded
    from the plugin beside this one."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_inputs_plan.py")
    spec = importlib.util.spec_from_file_location("kindling_site_inputs_plan", path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    return plugin.user_variable_names(task._variable_manager, loader, hostname)


def _playbook_names(task):
    """The names a playbook sets for this task: its play's vars (an import_playbook's vars
    are its plays'), its blocks' and its own vars, include parameters and role parameters.
    A kept value is a fact, which outranks all of these, so each counts as chosen."""
    names = set(task.get_vars() or {}) | set(task.get_include_params() or {})
    role = getattr(task, "_role", None)
    if role is not None:
        names |= set(role.get_role_params() or {})
    node = task
    while node is not None:
        play = getattr(node, "_play", None)
        if play is not None:
            names |= set(play.vars or {})
            break
        node = getattr(node, "_parent", None)
    return names


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "host_plan"
    SPEC = host_plan.ARGUMENT_SPEC
    CONSTRAINTS = {"required_together": host_plan.REQUIRED_TOGETHER}  # noqa: RUF012

    def _role_default(self, name):
        """The argument_specs default of the role that owns ``name``, templated (None where
        it can't be)."""
        roles_dir = os.path.dirname(self._task_vars.get("role_path") or "")
        if not roles_dir:
            return None
        owners = [d for d in os.listdir(roles_dir) if name.startswith(d + "_")]
        for owner in sorted(owners, key=len, reverse=True):
            spec_file = os.path.join(roles_dir, owner, "meta", "argument_specs.yml")
            if not os.path.exists(spec_file):
                continue
            specs = self._loader.load_from_file(spec_file) or {}
            option = specs.get("argument_specs", {}).get("main", {}).get("options", {}).get(name)
            if option and "default" in option:
                try:
                    return self._templar.template(option["default"])
                except AnsibleError:
                    return None
        return None

    def _inputs(self, given):
        """Stage 1's checked inputs (kindling_effective_inputs), then ``given``; without stage 1
        (a stage run alone), each input the plan reads as the task variables hold it now
        (the user's value, a play's or block's vars, the running role's default), else the
        owning role's default."""
        inputs = dict(self._task_vars.get("kindling_effective_inputs") or {})
        inputs.update(given)
        for name in host_plan.PLAN_INPUTS:
            if name in inputs:
                continue
            if name in self._task_vars:
                inputs[name] = self._templar.template(self._task_vars[name])
            else:
                default = self._role_default(name)
                if default is not None:
                    inputs[name] = default
        return inputs

    def _read(self, module, args):
        """One read-only module run on the host; its failure fails the plan, named."""
        result = self._execute_module(
            module_name=module, module_args=args, task_vars=self._task_vars
        )
        if result.get("failed"):
            raise ValueError(f"{module} {args}: {result.get('msg', 'failed')}")
        for key in ("invocation", "ansible_facts", "changed", "_ansible_no_log"):
            result.pop(key, None)
        return result

    def answer(self, params):
        if params.get("part"):
            return host_plan.answer(params)
        inputs = self._inputs(params["inputs"])
        defined = list(params["defined"]) + [n for n in self._task_vars if n in host_plan.RENAMED]
        if host_plan.refusals(defined):
            return host_plan.answer(dict(params, inputs=inputs, defined=defined))
        gpus = host_plan.choose_gpus(params["nvidia_pci"], params["nvidia_smi"])["gpus"]
        reads = dict(params["reads"])
        torch_args = host_plan.torch_read_args(inputs, gpus)
        if torch_args and "torch" not in reads:
            reads["torch"] = self._read("torch_cuda_facts", torch_args)
        toolkit_args = host_plan.toolkit_read_args(
            inputs, gpus, str(params["facts"].get("architecture") or "")
        )
        if toolkit_args and "toolkit" not in reads:
            reads["toolkit"] = self._read("cuda_toolkit_plan", toolkit_args)
        interpreter_args = host_plan.interpreter_read_args(inputs, reads.get("torch"))
        if interpreter_args and "interpreter" not in reads:
            reads["interpreter"] = self._read("python_interpreter_info", interpreter_args)
        kept = self._stack_keep(inputs)
        inputs.update(kept["kept"])
        result = host_plan.answer(dict(params, inputs=inputs, reads=reads))
        if "plan" in result:
            result["plan"]["stack_keep"] = kept
        if params.get("report_path") and not result.get("failed"):
            result["report_path"] = self._write_report(params["report_path"], result["plan"])
        return result

    def _value(self, name, inputs):
        """An input as the plan has it, else as the task variables hold it, else the owning
        role's default."""
        if name in inputs:
            return inputs[name]
        if name in self._task_vars:
            return self._templar.template(self._task_vars[name])
        return self._role_default(name)

    def _stack_keep(self, inputs):
        """Issue 35: the stack the stages left on this host, kept for each stack variable the
        user did not set, unless kindling_stack_upgrade is true (default_stack.keep). One
        module run (stack_record_info) reads, for each stage with a variable left to the role's
        default, the stage's record, else what Kindling's own files say (a host converged
        before the records); none where every stack variable is the user's."""
        for name in stack_record.STACK_VARIABLES:
            if name not in inputs:
                value = self._value(name, inputs)
                if value is not None:
                    inputs[name] = value
        user = default_stack.chosen(
            inputs,
            {name: self._role_default(name) for name in stack_record.STACK_VARIABLES},
            _user_variable_names(
                self._task, self._loader, self._task_vars.get("inventory_hostname")
            )
            | _playbook_names(self._task),
        )
        upgrade = self._templar.template(self._task_vars.get(default_stack.UPGRADE_VARIABLE, False))
        stages = {
            stage: paths
            for stage, paths in stack_record.record_paths(
                {name: self._value(name, inputs) for name in stack_record.PATH_VARIABLES},
                host_plan.environment(inputs),
            ).items()
            if not all(n in user for n in stack_record.STAGE_VARIABLES[stage])
        }
        found = self._read("stack_record_info", {"stages": stages})["stages"] if stages else {}
        recorded = {}
        for stage in found.values():
            recorded.update(stage.get("values") or {})
        kept = default_stack.keep(inputs, recorded, user, upgrade)
        kept["recorded"] = recorded
        kept["sources"] = sorted(
            {p for stage in found.values() for p in stage.get("sources") or []}
        )
        kept["files"] = {name: stage["file"] for name, stage in found.items() if stage.get("file")}
        return kept

    @staticmethod
    def _write_report(path, plan):
        """plan.json beside gpu_check's reports, on the controller, also in check mode (it is
        what the check decided); only rewritten when it differs."""
        text = json.dumps(plan, indent=4, sort_keys=True) + "\n"
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    return path
        except OSError:
            pass
        write_atomic(path, text, mode=0o644)
        return path
