"""The shape Kindling's action plugins share: a module whose answer the controller can give.

Several modules decide from their arguments alone, or from what an earlier module run of
the same stage read and passed on. Running them on the host would only add a module run
there, most of a task's cost. Their action plugins (action_plugins/) mix this class into
ActionBase: it validates the task's arguments against the module's own argument spec, asks
the plugin's ``answer`` and returns that, through the same JSON round trip a module's result
takes. Where ``answer`` returns None the host must be read, and the module runs there with
the task's arguments, less those only the controller uses (CONTROLLER_ONLY).

``answer`` may read the task variables (``self._task_vars``, the play's view of the host),
and may run the module on the host itself, with arguments it chooses, through
``run_on_host``: for an answer made on the controller from the variables, with only a
part of it (what must look at the host) asked of the host.

Imported by action plugins on the controller only (never by a module, so never shipped to
a host); it keeps to what module_utils may use all the same.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Dict, Optional, Sequence

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


class ControllerAnswer:
    """Mix into ActionBase, before it: ``class ActionModule(ControllerAnswer, ActionBase)``."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    # The module's name, its argument spec and ArgumentSpecValidator's other keyword
    # arguments (mutually_exclusive, required_by, ...).
    MODULE = ""
    SPEC: ClassVar[Dict[str, Any]] = {}
    CONSTRAINTS: ClassVar[Dict[str, Any]] = {}
    # Arguments the controller reads and the module does not take.
    CONTROLLER_ONLY: Sequence[str] = ()

    # This task's variables, set by run() before answer() is asked.
    _task_vars: Dict[str, Any]

    def answer(self, params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The module's result for the validated ``params``, or None where the host must be
        read. A ValueError fails the task with its message."""
        raise NotImplementedError

    def run_on_host(self, module_args: Dict[str, Any]) -> Dict[str, Any]:
        """The module's result on the host, run with ``module_args`` (for ``answer``)."""
        return self._execute_module(
            module_name=self.MODULE, module_args=module_args, task_vars=self._task_vars
        )

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        self._task_vars = task_vars
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        validated = ArgumentSpecValidator(self.SPEC, **self.CONSTRAINTS).validate(args)
        if validated.error_messages:
            result.update(failed=True, msg=f"{self.MODULE}: " + "; ".join(validated.error_messages))
            return result
        try:
            answered = self.answer(validated.validated_parameters)
        except ValueError as exc:
            message = str(exc)
            if not message.startswith(f"{self.MODULE}:"):
                message = f"{self.MODULE}: {message}"
            result.update(failed=True, msg=message)
            return result
        if answered is None:
            for name in self.CONTROLLER_ONLY:
                args.pop(name, None)
            result.update(self.run_on_host(args))
            return result
        result.update(json.loads(json.dumps(answered)))
        return result
