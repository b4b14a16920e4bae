"""Controller side of site_inputs_plan: check the site's own inputs and the roles' together.

Runs in stage 1 of site.yml (playbooks/preflight.yml) after every role's own check; see
module_utils/site_inputs.py. Reads only, on the controller; nothing changes.

Unknown variables: only the user's own variables are held to the declared names. The task
variables mix them with role defaults, play vars, facts, set_fact and registered results,
so the names are not taken from there. ``user_variable_names`` asks Ansible's
VariableManager for the layers that are the user's, the way VariableManager.get_vars
builds them: the extra vars (-e), and the inventory's vars for this host - the host's and
its groups' own vars (inventory files) and the vars plugins' answer for the inventory
sources (group_vars/ and host_vars/ beside an inventory). Play-adjacent group_vars
(beside playbooks/, Kindling's own), role defaults and vars, play vars and facts are
other layers, which it never reads, so no name Kindling itself sets can be mistaken for
the user's. tests/unit/test_unknown_variables.py builds a real VariableManager to hold
it to that.
"""

from __future__ import annotations

import os

import ansible.module_utils
import yaml
from ansible import constants as C
from ansible.plugins.action import ActionBase
from ansible.vars.plugins import get_vars_from_inventory_sources

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import host_plan, site_inputs  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_variable_names(variable_manager, loader, hostname):
    """The names of the variables the user set for ``hostname``: inventory and extra vars."""
    names = set(variable_manager.extra_vars or {})
    inventory = variable_manager._inventory
    host = inventory.get_host(hostname)
    if host is None:
        return names
    groups = list(host.get_groups())
    names |= set(host.vars or {})
    for group in groups:
        names |= set(group.get_vars() or {})
    names |= set(
        get_vars_from_inventory_sources(loader, inventory._sources, [*groups, host], "inventory")
        or {}
    )
    names |= set(
        get_vars_from_inventory_sources(loader, inventory._sources, [*groups, host], "task") or {}
    )
    return names


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def declared_names(repo=REPO):
    """(roles, every declared name): argument specs (all entry points), interfaces' sets,
    host_plan.RENAMED, the cloud playbooks' inputs; site_inputs adds KINDLING_GLOBALS."""
    roles_dir = os.path.join(repo, "roles")
    roles = sorted(
        d for d in os.listdir(roles_dir) if os.path.isdir(os.path.join(roles_dir, d, "meta"))
    )
    declared = set(host_plan.RENAMED)
    for role in roles:
        meta = os.path.join(roles_dir, role, "meta")
        specs = os.path.join(meta, "argument_specs.yml")
        if os.path.exists(specs):
            for entry in (_load(specs).get("argument_specs") or {}).values():
                declared |= set((entry or {}).get("options") or {})
        interface = os.path.join(meta, "interface.yml")
        if os.path.exists(interface):
            declared |= set(_load(interface).get("sets") or {})
    cloud = os.path.join(repo, "playbooks", "cloud", "vars", "defaults.yml")
    if os.path.exists(cloud):
        declared |= set(_load(cloud))
    return roles, declared


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "site_inputs_plan"
    SPEC = site_inputs.ARGUMENT_SPEC

    def answer(self, params):
        task_vars = self._task_vars
        values = {
            name: self._templar.template(task_vars[name])
            for name in site_inputs.SITE_SHAPES
            if name in task_vars
        }
        unknown = []
        allow = values.get("kindling_allow_unknown_variables") or []
        if isinstance(allow, (list, tuple)):  # else its shape refuses it
            roles, declared = declared_names()
            names = user_variable_names(
                self._task._variable_manager, self._loader, task_vars["inventory_hostname"]
            )
            unknown = site_inputs.unknown_variables(names, roles, declared, allow)
        problems = site_inputs.check_site(values, params["effective"], unknown)
        if problems:
            return {
                "changed": False,
                "failed": True,
                "problems": problems,
                "msg": f"site: {len(problems)} input(s) refused before any change:\n"
                + "\n".join(problems),
            }
        return {"changed": False, "problems": [], "msg": f"site: {len(values)} input(s) checked"}
