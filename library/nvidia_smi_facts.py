#!/usr/bin/python
"""Ansible module: gather NVIDIA GPU facts from nvidia-smi (read-only)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run, runner
from ansible.module_utils.gpu_fabric import PCI_ROOT, pci_facts
from ansible.module_utils.gpu_fabric import collect as collect_fabric
from ansible.module_utils.gpu_health import dmesg_command, journal_command, journal_has_entries
from ansible.module_utils.nvidia_smi import (
    absent_facts,
    build_facts,
    classify_error,
    query_command,
    topo_command,
    xml_command,
)

DOCUMENTATION = r"""
---
module: nvidia_smi_facts
short_description: Gather NVIDIA GPU, driver, topology and health facts from nvidia-smi
description:
  - Runs C(nvidia-smi -q -x) once, at most one C(nvidia-smi --query-gpu=...) call (for the
    compute capability, which the XML lacks), and C(nvidia-smi topo -m) only when there is
    more than one GPU.
  - Sets C(ansible_facts.nvidia_smi) with the driver, every GPU, the GPU-to-GPU link types
    and a C(health) list of problems the owner must act on.
  - Understands several driver generations of the XML schema (470-era
    C(clocks_throttle_reasons) and C(retired_pages), 535+ C(clocks_event_reasons) and
    C(remapped_rows)), "N/A" fields, MIG-enabled GPUs and 8-GPU NVLink hosts.
  - Classifies nvidia-smi failures. "couldn't communicate with the NVIDIA driver" and
    "Driver/library version mismatch" set C(reboot_required) with the reason.
  - A PCIe link generation below max while the GPU is idle (clock event reason
    C(gpu_idle) active) is normal power saving; it is reported in C(health_notes), not in
    C(health). A lower link width, or a lower generation under load, is a health problem.
  - Reads this boot's kernel log (C(journalctl -k -b 0 --no-pager -o short-monotonic),
    else C(dmesg)) for the driver's Xid events, counts them per GPU and code, and classifies
    each code with NVIDIA's Xid catalogue (data/vendor_catalogue.yml, C(xid_events)). A
    failing code (such as 48, 79, 95, 119) is a C(health) problem, an application error or
    informational code (such as 13, 31, 43, 94) a C(health_notes) entry. A kernel log that
    cannot be read is a C(kernel-log-unreadable) note and C(xid_error), never a failure.
  - Memory errors. Retired pages, rows remapped for uncorrectable errors, banks without
    spare rows and the lifetime uncorrectable ECC count are notes above zero. Past the
    limits of the catalogue's C(memory_error_limits), and with the SRAM threshold flag set,
    they are health problems.
  - Every code of C(health) and C(health_notes) is listed, with its meaning and remedy, in
    docs/HEALTH_CODES.md.
  - Reads the NVSwitch fabric (module_utils/gpu_fabric.py) into C(fabric) - NVSwitches on the
    PCI bus, each GPU's NVLink fabric state, the NVLinks up - and runs C(nvidia-smi nvlink -s)
    only with more than one GPU or a GPU in an NVLink fabric, and C(nv-fabricmanager --version)
    only on a host that needs the fabric manager. Their problems (C(nvlink-down),
    C(fabric-state-not-completed), C(fabric-state-failed), C(fabric-manager-missing),
    C(fabric-manager-version-mismatch)) join C(health); a failing C(nvlink -s) is recorded in
    C(fabric.nvlink_error) and never fails the module.
  - With C(pci_facts=true) it also sets C(ansible_facts.nvidia_pci), exactly what
    M(nvidia_pci_facts) returns (the same code reads the same sysfs tree,
    C(pci_sysfs_root)), in this one module run. The PCI bus is read first, needs no driver,
    and is returned on every outcome - nvidia-smi missing, failing or unparseable, and a
    failure with C(require=true) too.
  - Never changes the host.
version_added: "0.1.0"
author:
  - Kindling maintainers
options:
  require:
    description:
      - When V(false), a host without nvidia-smi (or whose nvidia-smi fails) reports
        C(present=false) or an C(error) instead of failing.
      - When V(true), the task fails unless nvidia-smi runs and reports its GPUs. The
        failure message says whether a reboot is the remedy.
    type: bool
    default: false
  expect_mig:
    description:
      - Whether MIG mode is expected on the GPUs. With V(false) a GPU with MIG enabled is
        a health problem (C(mig-enabled-unexpected)); with V(true) a MIG-capable GPU with
        MIG disabled is (C(mig-not-enabled)).
    type: bool
    default: false
  nvidia_smi_path:
    description:
      - Path of the nvidia-smi executable. By default it is searched on E(PATH) and in
        C(/usr/bin).
    type: path
  pci_sysfs_root:
    description:
      - Where the PCI devices are in sysfs (NVSwitches and NVLink 5 bridges, and the GPUs of
        C(pci_facts)); tests point it at a copy. The same default as M(nvidia_pci_facts)'s
        C(sysfs_root).
    type: path
    default: /sys/bus/pci/devices
  pci_facts:
    description:
      - Whether to also set C(ansible_facts.nvidia_pci), exactly what M(nvidia_pci_facts)
        returns for C(pci_sysfs_root) (GPUs and NVSwitches from sysfs, named by C(lspci -mm)
        when it is installed, and what the PCI bus alone says about the fabric manager).
      - It is read before nvidia-smi runs and returned whatever nvidia-smi does, so one
        task reads both on a host with or without a driver. The C(lspci) calls are not
        listed in C(commands).
    type: bool
    default: false
  timeout:
    description:
      - Seconds each nvidia-smi, journalctl or dmesg call may take before it is abandoned.
    type: int
    default: 30
  read_kernel_log:
    description:
      - Whether to read this boot's kernel log for the driver's Xid events
        (C(journalctl -k -b 0), falling back to C(dmesg)). Either is searched for on
        E(PATH), then in C(/usr/bin) and C(/bin).
      - Reading it needs root (or the C(adm)/C(systemd-journal) group, and
        C(kernel.dmesg_restrict=0) for dmesg). When neither can be read, C(xid_error) says
        why and C(health_notes) has a C(kernel-log-unreadable) entry.
      - It is not read when nvidia-smi is not found.
      - Events stay in the log until the next reboot, so a GPU reset does not clear them;
        after a reset (not a reboot) set V(false) to gate on nvidia-smi alone.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  facts:
    support: full
    description: Sets C(ansible_facts.nvidia_smi), and C(nvidia_pci) with C(pci_facts=true).
notes:
  - Compute capability comes from C(--query-gpu=compute_cap) when the driver knows that
    field, else from the product-name table in module_utils/gpu_compat.py
    (C(compute_capability_source) says which).
  - The C(dmesg) fallback sees only what the kernel ring buffer still holds; old events of
    a long-running host may have been overwritten.
seealso:
  - module: torch_cuda_facts
  - module: gpu_stack_plan
"""

EXAMPLES = r"""
- name: Read the GPUs (a host without a driver reports present=false)
  nvidia_smi_facts:

- name: Read the PCI bus and nvidia-smi in one module run (nvidia_pci and nvidia_smi)
  nvidia_smi_facts:
    pci_facts: true

- name: Require a working driver and no MIG
  nvidia_smi_facts:
    require: true
    expect_mig: false

- name: Reboot when the driver was upgraded underneath a loaded module
  ansible.builtin.reboot:
    reboot_timeout: 900
  when: ansible_facts.nvidia_smi.reboot_required

- name: Stop on hardware problems
  ansible.builtin.assert:
    that: ansible_facts.nvidia_smi.health | length == 0
    fail_msg: "{{ ansible_facts.nvidia_smi.health | map(attribute='message') | list }}"

- name: Use a non-standard nvidia-smi
  nvidia_smi_facts:
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi
    timeout: 60

- name: Gate on nvidia-smi alone, right after a GPU reset (Xid events last until a reboot)
  nvidia_smi_facts:
    read_kernel_log: false

- name: Stop on a GPU that fell off the bus or logged another failing Xid
  ansible.builtin.assert:
    that: >-
      ansible_facts.nvidia_smi.xid_events
      | selectattr('severity', 'eq', 'failing') | list | length == 0
    fail_msg: "{{ ansible_facts.nvidia_smi.health | map(attribute='message') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    nvidia_smi:
      description: What nvidia-smi reports.
      returned: always
      type: complex
      contains:
        present:
          description: Whether an nvidia-smi executable was found (even if it then failed).
          type: bool
          sample: true
        driver_version:
          description: Driver version; null when nvidia-smi is absent or failed.
          type: str
          sample: "580.159.04"
        cuda_driver_version:
          description: Highest CUDA version the driver supports (nvidia-smi's "CUDA Version").
          type: str
          sample: "13.0"
        gpu_count:
          description: Number of attached GPUs (0 when absent or failed).
          type: int
          sample: 1
        gpus:
          description:
            - One entry per GPU. Values nvidia-smi prints as "N/A" are null.
            - Keys are index, name, uuid, pci_bus_id, product_architecture,
              compute_capability ("9.0"), compute_capability_source (nvidia-smi or name),
              architecture, memory_total_mib, memory_used_mib, persistence_mode (bool),
              mig_mode (bool), mig_mode_pending (bool), mig_devices (list), ecc_mode (bool),
              ecc_uncorrected_volatile (int), ecc_uncorrected_aggregate (int),
              ecc_sram_threshold_exceeded (bool), retired_pages_pending (bool),
              retired_pages_sbe and retired_pages_dbe (pages retired for single-bit and
              double-bit errors, int), remapped_rows_pending (bool), remapped_rows_failure
              (bool), remapped_rows_correctable and remapped_rows_uncorrectable (int),
              row_remap_banks_low and row_remap_banks_none (banks of the row remapper
              histogram, int), pcie_gen_current, pcie_gen_max,
              pcie_width_current, pcie_width_max, temperature_c, power_limit_w,
              power_default_limit_w (the board's default; a lower power_limit_w was
              lowered on this host), power_draw_w, utilization_gpu_pct,
              utilization_memory_pct, processes (the processes nvidia-smi lists on the
              GPU, each with pid, type, name and used_memory_mib; a container may hide
              the name or list a pid of another PID namespace), clocks_sm_mhz,
              clocks_max_sm_mhz, performance_state,
              clock_event_reasons_active (list of short names such as gpu_idle,
              sw_power_cap, hw_thermal_slowdown; from clocks_event_reasons, or
              clocks_throttle_reasons on older drivers), clock_event_reasons_schema.
            - The software power cap (sw_power_cap) alone is a note (power-cap-reached),
              never a health problem. Thermal slowdown, hw_slowdown and the power brake
              are problems.
          type: list
          elements: dict
        topology:
          description:
            - From C(nvidia-smi topo -m) when there is more than one GPU, else null.
            - Keys gpus, matrix (GPU to GPU link type such as NV18, PXB, SYS), nic_links,
              cpu_affinity, numa_affinity, nics, link_types, all_nvlink.
          type: dict
          sample: {"matrix": {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}}
        health:
          description:
            - Problems to act on, each with code, gpu (index; null when the finding is about
              no GPU that nvidia-smi lists) and message. docs/HEALTH_CODES.md lists every code.
          type: list
          elements: dict
          sample: [{"code": "row-remap-pending", "gpu": 0, "message": "GPU 0 ... reset"}]
        health_notes:
          description: Informational observations that are not problems (same shape as health).
          type: list
          elements: dict
        xid_events:
          description:
            - The kernel log's Xid events of this boot, one entry per GPU and code, in the
              order first logged. Empty when the log was not read or holds none.
            - Keys xid (int), code (the health code, such as xid-79, or xid-unlisted),
              mnemonic, description, severity (failing or informational), action
              (application, none, reset-gpu, reboot, drain, contact-support; null for an
              unlisted code), gpu (index; null when nvidia-smi lists no GPU at that address),
              pci_bus_id, count, first_seen and last_seen (timestamps as logged, the wall
              clock or else the seconds since boot; null when the line has none), message (the
              first one) and processes (the process names logged).
          type: list
          elements: dict
          sample: [{"xid": 79, "code": "xid-79", "severity": "failing", "action": "reboot",
                    "gpu": 0, "pci_bus_id": "00000000:18:00.0", "count": 1,
                    "first_seen": "1843.308145", "last_seen": "1843.308145"}]
        kernel_log_source:
          description: Where the Xid events were read (journalctl or dmesg); null when not read.
          type: str
          sample: journalctl
        xid_error:
          description: Why the kernel log could not be read (xid_events is then empty), else null.
          type: str
        reboot_required:
          description: Whether nvidia-smi's failure is one a reboot fixes.
          type: bool
          sample: false
        reboot_reason:
          description: Why a reboot is required; null otherwise.
          type: str
        error:
          description:
            - Null on success. Else a dict with kind (not_found, driver_not_loaded,
              driver_library_mismatch, gpu_lost, no_devices, nvml_missing,
              permission_denied, nvml_unknown_error, timeout, unparseable, unknown),
              message, reboot_required, reboot_reason and rc.
          type: dict
        query_error:
          description: Why the --query-gpu call gave nothing (the name table was used).
          type: str
        topology_error:
          description: Why topo -m gave nothing.
          type: str
        fabric:
          description:
            - The NVSwitch fabric (module_utils/gpu_fabric.py); null when nvidia-smi did not run
              (nvidia_pci_facts decides from PCI alone before a driver exists).
            - Keys nvswitch_count, nvswitch_generation (1-4), nvswitches (pci_slot, device,
              generation), nvlink5_bridges (slots of NVLink 5 management functions), fabric
              (per GPU - gpu, name, pci_bus_id, state (not_supported, not_started,
              in_progress, completed, unknown, or null), state_text, status, clique_id,
              cluster_uuid, health_summary), fabric_attached, nvlinks_up, nvlinks_total and
              nvlinks_expected (by GPU index, from nvlink -s and topo -m),
              needs_fabric_manager, needs_nvlink5 (nvlsm, infiniband-diags, mlx5_core and
              ib_umad too), reason (one sentence), evidence (list), nvlink_error, and
              fabric_manager (found, path, version, error; null unless needed).
          type: dict
          sample: {"nvswitch_count": 4, "needs_fabric_manager": true, "needs_nvlink5": false}
    nvidia_pci:
      description:
        - What M(nvidia_pci_facts) returns (see its RETURN) - C(gpus), C(gpu_count),
          C(nvswitches), C(present), C(nvswitch_count), C(nvswitch_generation),
          C(nvlink5_bridges), C(fabric_manager_needed_by_pci), C(nvlink5_needed_by_pci),
          C(fabric_reason), C(fabric_evidence).
      returned: when pci_facts is true, whatever nvidia-smi did
      type: dict
commands:
  description: The nvidia-smi, journalctl and dmesg command lines that ran, in order.
  returned: always
  type: list
  elements: str
  sample: ["/usr/bin/nvidia-smi -q -x", "/usr/bin/nvidia-smi --query-gpu=... --format=csv"]
"""


def _run(cmd: List[str], timeout: int, log: List[str]) -> Tuple[int, str, str]:
    """Run one nvidia-smi command; rc -1 with a message on timeout or exec failure."""
    log.append(" ".join(cmd))
    try:
        return run(cmd, timeout, env_update={"LC_ALL": "C"})
    except CommandError as exc:
        if exc.timed_out:
            return -1, "", f"timed out after {timeout} s"
        return -1, "", f"could not execute: {exc.reason}"


def _find(module: AnsibleModule, path: Optional[str]) -> Optional[str]:
    if path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])


#: Where journalctl and dmesg are looked for when PATH lacks them.
TOOL_DIRS = ["/usr/bin", "/bin"]


def _tool(name: str) -> Optional[str]:
    """An executable on PATH, else in TOOL_DIRS."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d] + TOOL_DIRS
    for directory in dirs:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _why(name: str, rc: int, out: str, err: str) -> str:
    """Why a kernel-log command gave nothing, with its first line of output."""
    lines = [line.strip() for line in (err + "\n" + out).splitlines() if line.strip()]
    detail = f": {lines[0]}" if lines else ""
    if rc == -1:
        return f"{name} {err}"
    if rc == 0:
        return f"{name} printed no kernel messages for this boot{detail}"
    return f"{name} failed (rc={rc}){detail}"


def _kernel_log(timeout: int, commands: List[str]) -> Dict[str, Any]:
    """This boot's kernel log: ``{"text", "source", "error"}``; journalctl, else dmesg."""
    reasons = []
    journalctl = _tool("journalctl")
    if journalctl:
        rc, out, err = _run(journal_command(journalctl), timeout, commands)
        if rc == 0 and journal_has_entries(out):
            return {"text": out, "source": "journalctl", "error": None}
        reasons.append(_why("journalctl", rc, out, err))
    else:
        reasons.append("journalctl not found")
    dmesg = _tool("dmesg")
    if dmesg:
        rc, out, err = _run(dmesg_command(dmesg), timeout, commands)
        if rc == 0:
            return {"text": out, "source": "dmesg", "error": None}
        reasons.append(_why("dmesg", rc, out, err))
    else:
        reasons.append("dmesg not found")
    return {"text": None, "source": None, "error": "; ".join(reasons)}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "require": {"type": "bool", "default": False},
            "expect_mig": {"type": "bool", "default": False},
            "nvidia_smi_path": {"type": "path"},
            "timeout": {"type": "int", "default": 30},
            "pci_sysfs_root": {"type": "path", "default": PCI_ROOT},
            "read_kernel_log": {"type": "bool", "default": True},
            "pci_facts": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    require = module.params["require"]
    timeout = module.params["timeout"]
    if timeout < 1:
        module.fail_json(msg=f"timeout must be at least 1 second, got {timeout}")
    commands: List[str] = []
    # First, and on every way out below: sysfs needs no driver (exactly nvidia_pci_facts).
    pci = (
        pci_facts(module.params["pci_sysfs_root"], runner(timeout))
        if module.params["pci_facts"]
        else None
    )

    def finish(facts: Dict[str, Any], failed_msg: Optional[str] = None) -> None:
        facts.setdefault("fabric", None)
        ansible_facts = {"nvidia_smi": facts}
        if pci is not None:
            ansible_facts["nvidia_pci"] = pci
        result = {"changed": False, "ansible_facts": ansible_facts, "commands": commands}
        if failed_msg and require:
            module.fail_json(msg=failed_msg, **result)
        module.exit_json(**result)

    smi = _find(module, module.params["nvidia_smi_path"])
    if smi is None:
        where = module.params["nvidia_smi_path"] or "PATH and /usr/bin"
        error = {
            "kind": "not_found",
            "message": f"nvidia-smi not found (looked in {where}): install the NVIDIA driver, "
            "or set nvidia_smi_path to the executable",
            "reboot_required": False,
            "reboot_reason": None,
            "rc": None,
        }
        finish(absent_facts(error), error["message"])
        return

    rc, out, err = _run(xml_command(smi), timeout, commands)
    klog = _kernel_log(timeout, commands) if module.params["read_kernel_log"] else None
    if rc != 0:
        if rc == -1:
            error = {
                "kind": "timeout" if "timed out" in err else "unknown",
                "message": f"{smi} -q -x {err}",
                "reboot_required": False,
                "reboot_reason": None,
                "rc": None,
            }
        else:
            error = classify_error(out, err, rc)
        msg = error["message"]
        if error["reboot_required"]:
            msg += " (reboot_required: reboot the host, then run this again)"
        finish(absent_facts(error, present=True, kernel_log=klog), msg)
        return

    query_text: Optional[str] = None
    query_error: Optional[str] = None
    topo_text: Optional[str] = None
    topo_error: Optional[str] = None
    try:
        preview = build_facts(out)
    except ValueError as exc:
        error = {
            "kind": "unparseable",
            "message": f"{smi} -q -x printed something that is not nvidia-smi XML: {exc}",
            "reboot_required": False,
            "reboot_reason": None,
            "rc": rc,
        }
        finish(absent_facts(error, present=True, kernel_log=klog), error["message"])
        return
    if preview["gpu_count"] >= 1:
        q_rc, q_out, q_err = _run(query_command(smi), timeout, commands)
        if q_rc == 0:
            query_text = q_out
        else:
            query_error = classify_error(q_out, q_err, q_rc)["message"]
    if preview["gpu_count"] > 1:
        t_rc, t_out, t_err = _run(topo_command(smi), timeout, commands)
        if t_rc == 0:
            topo_text = t_out
        else:
            topo_error = classify_error(t_out, t_err, t_rc)["message"]
    expect_mig = module.params["expect_mig"]
    try:
        facts = build_facts(out, query_text, topo_text, expect_mig=expect_mig, kernel_log=klog)
    except ValueError as exc:  # a malformed CSV or topo: keep the XML facts
        query_error = query_error or str(exc)
        facts = build_facts(out, None, topo_text, expect_mig=expect_mig, kernel_log=klog)
    facts["query_error"] = query_error
    facts["topology_error"] = topo_error
    facts["fabric"], fabric_issues = collect_fabric(
        out,
        facts,
        lambda cmd: _run(cmd, timeout, commands),
        smi,
        lambda name: module.get_bin_path(name, opt_dirs=["/usr/bin"]),
        module.params["pci_sysfs_root"],
    )
    facts["health"].extend(fabric_issues)
    if facts["gpu_count"] == 0:
        finish(facts, "nvidia-smi runs but reports no GPU: check that the GPU is attached")
        return
    finish(facts)


if __name__ == "__main__":
    main()
