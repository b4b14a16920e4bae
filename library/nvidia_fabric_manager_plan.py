#!/usr/bin/python
"""Ansible module: where NVIDIA's fabric manager stands against the driver (read-only)."""

from __future__ import annotations

from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.driver_state import query_dpkg
from ansible.module_utils.fabric_manager import (
    UNIT,
    UNIT_PROPERTIES,
    decide,
    parse_systemctl_show,
    upstream_version,
)
from ansible.module_utils.gpu_fabric import parse_fabric_xml
from ansible.module_utils.nvidia_smi import parse_xml, xml_command
from ansible.module_utils.stack_plan import fabric_manager_packages

DOCUMENTATION = r"""
---
module: nvidia_fabric_manager_plan
short_description: Whether the NVSwitch fabric manager is installed at the driver's version and runs
description:
  - Reads the dpkg status of the fabric manager packages and of the driver package, and
    C(systemctl show nvidia-fabricmanager.service), and returns the outcome that
    module_utils/fabric_manager.py decides (C(not-needed), C(install), C(missing),
    C(version-mismatch), C(not-running), C(fabric-not-completed), C(ok)) with a one-line
    message and the command that fixes it.
  - Read-only; runs the same way in check mode.
version_added: "0.4.0"
author:
  - Kindling maintainers
options:
  needed:
    description: Whether this host's fabric needs the fabric manager (module_utils/gpu_fabric.py).
    type: bool
    required: true
  needed_reason:
    description: One sentence saying why it is needed or not.
    type: str
    default: ""
  packages:
    description:
      - The fabric manager packages (gpu_stack_plan's C(packages.fabric_manager)). Empty means
        the catalogue's names for the driver's branch (verify run on its own, without the
        stage's plan).
    type: list
    elements: str
    default: []
  driver_version:
    description:
      - The driver's version (nvidia-smi's). When empty, the installed version of
        O(driver_package) is used (the module may not be loaded yet).
    type: str
    default: ""
  driver_package:
    description: The driver package whose installed version is the driver's version.
    type: str
    default: ""
  fabric_states:
    description: The GPUs' fabric states, C([{gpu, state, status}]), where nvidia-smi reports them.
    type: list
    elements: dict
    default: []
  install_allowed:
    description:
      - Whether the role may install the fabric manager. V(false) (an adopted driver, and
        verify after the stage) reports C(missing) and C(version-mismatch) instead of
        C(install).
    type: bool
    default: true
  read_nvidia_smi:
    description:
      - Run C(nvidia-smi -q -x) and take the driver's version and the GPUs' fabric states from
        it (over O(driver_version) and O(fabric_states)), so that a task retried with
        C(until) sees the fabric state change. A failing or missing nvidia-smi leaves the
        options' values in place.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Where does the fabric manager stand?
  nvidia_fabric_manager_plan:
    needed: true
    needed_reason: "4 NVSwitches on the PCI bus."
    packages: [nvidia-fabricmanager, libnvidia-nscq]
    driver_package: nvidia-driver-cuda
  register: fabric_manager
"""

RETURN = r"""
outcome:
  description: >-
    not-needed, install, missing, version-mismatch, not-running, fabric-not-completed or ok.
  returned: always
  type: str
message:
  description: One sentence for the operator.
  returned: always
  type: str
fix:
  description: The command that fixes it (empty when nothing needs fixing).
  returned: always
  type: str
driver_version:
  description: The driver version the fabric manager must match.
  returned: always
  type: str
installed_versions:
  description: Installed fabric manager packages and their upstream versions.
  returned: always
  type: dict
held:
  description: Those of the packages that are held.
  returned: always
  type: list
unit_active:
  description: Whether nvidia-fabricmanager.service is active.
  returned: always
  type: bool
"""

#: Seconds systemctl show and nvidia-smi -q -x may take; past it they answer nothing.
READ_TIMEOUT = 120


def _unit(module: AnsibleModule) -> Dict[str, str]:
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return {}
    args = [systemctl, "show", "--no-pager"]
    for prop in UNIT_PROPERTIES:
        args.extend(["-p", prop])
    try:
        rc, out, _err = run([*args, UNIT], READ_TIMEOUT, env_update={"LC_ALL": "C"})
    except CommandError:
        return {}
    return parse_systemctl_show(out) if rc == 0 else {}


def _from_nvidia_smi(module: AnsibleModule) -> Dict[str, Any]:
    smi = module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])
    if not smi:
        return {}
    try:
        rc, out, _err = run(xml_command(smi), READ_TIMEOUT, env_update={"LC_ALL": "C"})
    except CommandError:
        return {}
    if rc != 0:
        return {}
    try:
        return {"driver_version": parse_xml(out)["driver_version"], "fabric": parse_fabric_xml(out)}
    except ValueError:
        return {}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "needed": {"type": "bool", "required": True},
            "needed_reason": {"type": "str", "default": ""},
            "packages": {"type": "list", "elements": "str", "default": []},
            "driver_version": {"type": "str", "default": ""},
            "driver_package": {"type": "str", "default": ""},
            "fabric_states": {"type": "list", "elements": "dict", "default": []},
            "install_allowed": {"type": "bool", "default": True},
            "read_nvidia_smi": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    driver_version = p["driver_version"]
    fabric_states = p["fabric_states"]
    if p["read_nvidia_smi"]:
        smi = _from_nvidia_smi(module)
        driver_version = smi.get("driver_version") or driver_version
        fabric_states = smi.get("fabric", fabric_states)
    names = list(p["packages"]) + ([p["driver_package"]] if p["driver_package"] else [])
    dpkg = query_dpkg(module, list(dict.fromkeys(names)))
    if not driver_version and p["driver_package"]:
        row = dpkg.get(p["driver_package"]) or {}
        if row.get("state") == "installed":
            driver_version = upstream_version(row.get("version"))
    packages = list(p["packages"])
    if not packages and driver_version:
        packages = fabric_manager_packages(driver_version.split(".")[0])["packages"]
        dpkg.update(query_dpkg(module, packages))
    if not packages:
        module.fail_json(
            msg="nvidia_fabric_manager_plan: give packages, or a driver version to name them"
        )
    result = decide(
        needed=p["needed"],
        needed_reason=p["needed_reason"],
        packages=packages,
        installed={name: row for name, row in dpkg.items() if name in packages},
        driver_version=driver_version,
        unit=_unit(module),
        fabric_states=fabric_states,
        install_allowed=p["install_allowed"],
    )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
