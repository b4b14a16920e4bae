#!/usr/bin/python
"""Ansible module gpu_throughput_measure: run the ResNet-50 throughput program and judge it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_throughput_measure
short_description: Measure ResNet-50 training throughput on a host and judge it against references
description:
  - Runs the standalone benchmark program, the package C(kindling_bench) (shipped in
    C(roles/gpu_check/files/kindling_bench/)), as C(python <script>) with the PyTorch
    environment's interpreter. It parses the program's JSON report and compares every
    mode's images/s with a reference table keyed by GPU model and mode
    (C(module_utils/gpu_throughput_ref.py)).
  - Each reference row names its source. These are the seed article's A100 table
    (C(seed 001 section 7)), published numbers (Lambda's deeplearning-benchmark, NVIDIA
    DeepLearningExamples), or this project's own H200 measurements.
  - A mode passes when measured / reference reaches O(tolerance). The reference is a
    measured row, or for a GPU no row measures a rate derived from its datasheet, judged
    at a wider tolerance (C(docs/BENCHMARKS.md)).
  - Every mode and probe ends as V(pass), V(fail) or V(not_run), with a reason. A mode
    without a reference is measured and reported as V(not_run); with O(require_all) any
    V(not_run) fails the host.
  - On a host with several GPUs the program measures every GPU at once, one process per
    GPU. Each GPU gets its own img/s, ratio and verdict, and a GPU more than O(gpu_margin)
    below the median of the host's other GPUs fails the host, with its index, bus id and
    likely cause, even where the table passes it.
  - A failing host gets one message. It names each slow mode with measured vs reference,
    and the likely causes that the O(nvidia_smi) and O(torch_cuda) facts show.
    Those causes are a downgraded PCIe link, throttled clocks, MIG on, other processes
    on the GPU, or the wrong torch build.
  - Before it starts the program (O(device=cuda)), the module reads C(nvidia-smi -q -x)
    and finds the GPUs that are busy. A GPU is busy when another compute process runs on
    it (named by pid, process name and memory; a pid this host's /proc lacks, or a process
    without a name, is counted as hidden by a container), when more than 1024 MiB of its
    memory is in use, or when its utilisation is 10% or more. O(busy_gpu) decides what
    happens to them, and a GPU left out is reported as not measured because busy, never
    as slow. When no GPU is free the program does not run and the verdict is
    V(not_measured).
  - While the program runs, a thread reads C(nvidia-smi -q -x) every 5 s and records per
    GPU the processes that are not the program's (its pid and descendants), the highest
    utilisation and the clock-event reasons seen (RV(contention)). Another process on a
    GPU is the cause named first. The software power cap (C(sw_power_cap)) under load is
    normal and never a fault; thermal slowdown, hardware slowdown, the power brake and a
    lowered power limit are each a cause of their own.
  - The O(nvidia_smi) facts' C(health) and C(health_notes) come back as C(health_codes)
    (failing first, each with its severity and remedy) and C(health_line), so that the
    reports show them next to the verdict. A slow host's message names the failing codes.
    Every code is in C(docs/HEALTH_CODES.md) of the Kindling repository.
  - The module never changes the host and C(changed) is always false. With O(output_dir)
    set, it also keeps a copy of the report in that directory.
version_added: "0.1.0"
author:
  - Kindling maintainers
options:
  python:
    description: Interpreter of the PyTorch environment that runs the program.
    type: path
    default: /opt/conda/envs/pytorch/bin/python
  script:
    description:
      - Path of the benchmark program on the managed host, run as C(python <script>).
      - The C(kindling_bench) package directory (the gpu_check role installs it as
        C(<gpu_check_install_dir>/kindling_bench); Python runs its C(__main__.py)), or a
        single-file program that takes the same arguments.
    type: path
    required: true
  profile:
    description:
      - V(quick) runs fp32, amp_fp16 (the seed recipe), amp_fp16_cl (about 35 s on an
        H200; its fp16 modes take cuDNN's heuristic algorithms) and the h2d, membw and
        matmul probes that the floors judge (O(floor_waivers)).
      - V(full) adds tf32, both bf16 modes, torch.compile, DDP over the GPUs measured
        (every local GPU but those O(busy_gpu) left out), and the input_pipeline probe.
    type: str
    choices: [quick, full]
    default: quick
  modes:
    description:
      - Modes to run instead of the profile's.
      - The choices are fp32, tf32, amp_fp16, amp_bf16, amp_fp16_cl, amp_bf16_cl, compile
        and ddp. The alias seed_recipe means amp_fp16.
    type: list
    elements: str
  probes:
    description:
      - Probes to run instead of the profile's (h2d, membw, matmul, input_pipeline).
      - An empty list runs none.
    type: list
    elements: str
  batch_size:
    description: Batch size per GPU for every mode (the program's default is 256).
    type: int
  device:
    description: V(cuda), or V(cpu) for CI hosts without a GPU (use a tiny O(image_size)).
    type: str
    choices: [cuda, cpu]
    default: cuda
  image_size:
    description:
      - Square image side (the program's default is 224).
      - The references are for 224. Any other size is reported only and never judged.
    type: int
  extra_args:
    description: More arguments for the program, e.g. C(["--batch", "amp_bf16_cl=384"]).
    type: list
    elements: str
    default: []
  tolerance:
    description: A mode passes when measured / reference >= tolerance (0 < tolerance <= 1).
    type: float
    default: 0.8
  gpu_name_override:
    description:
      - GPU name used for the reference lookup instead of the one the program reports.
      - An example is C(NVIDIA H200).
    type: str
  nvidia_smi:
    description:
      - Facts shaped like C(ansible_facts.nvidia_smi), used to diagnose a slow mode.
      - These facts are gpus[] with pcie_gen_current/max, pcie_width_current/max,
        clock_event_reasons_active, mig_mode and an optional processes count, and the
        health and health_notes findings (returned as C(health_codes)).
    type: dict
  torch_cuda:
    description:
      - Facts shaped like C(ansible_facts.torch_cuda), used to diagnose a slow mode.
      - These facts are verdict, arch_list, built_cuda_version and cuda_available.
    type: dict
  fail_on_slow:
    description: Fail the task when the verdict is V(fail); with V(false) it only warns.
    type: bool
    default: true
  require_all:
    description: Count every mode or probe that did not run (V(not_run)) as a failure.
    type: bool
    default: false
  gpu_margin:
    description:
      - A GPU more than this fraction below the median of the host's other GPUs, in any
        mode, fails the host (0 < gpu_margin < 1).
    type: float
    default: 0.1
  floor_waivers:
    description:
      - Floors to waive (C(module_utils/gpu_floors.py), the catalogue's C(throughput_floors)).
        A waived floor is judged and reported as V(waived), with the status it would have
        had, and never fails the host.
      - The floors hold each measured GPU's PCIe link under load to what GPU and slot
        support (V(pcie_link)), pinned copies both ways to 75% of that link's rate (V(h2d),
        V(d2h)), device memory bandwidth to 75% of the datasheet's (V(membw)), and dense
        matmul to half the datasheet's TFLOP/s per precision (warn only). A waiver waives
        the floor on every GPU.
    type: list
    elements: str
    choices: [pcie_link, h2d, d2h, membw, matmul_fp32, matmul_tf32, matmul_bf16, matmul_fp16]
    default: []
  host:
    description:
      - The host's name as the inventory gives it, for RV(headline_line); V(this host) when
        omitted.
    type: str
  busy_gpu:
    description:
      - What to do with a GPU that another process uses when the check starts.
      - V(wait) re-reads nvidia-smi every 5 s for up to O(busy_wait) seconds, then leaves
        out the GPUs still busy. V(skip) leaves them out at once. V(measure) measures them
        anyway; the causes still name the other process.
      - A GPU left out is measured by nobody (the program gets C(--gpus) with the free
        ones, so its single-GPU modes, its probes and its ddp world are those GPUs) and
        reported as not measured because busy, naming the process.
    type: str
    choices: [skip, wait, measure]
    default: wait
  busy_wait:
    description: Seconds to wait for busy GPUs to become free with O(busy_gpu=wait).
    type: int
    default: 120
  timeout:
    description: Seconds the program may run before it is killed and the task fails.
    type: int
    default: 600
  output_dir:
    description: >-
      Directory on the host where the JSON report is kept, as
      C(gpu_throughput_measure.json).
    type: path
  progress_file:
    description:
      - File on the host that the program keeps up to date with the step running now and
        the steps done (C(--progress)); M(gpu_throughput_progress_info) reads it.
    type: path
attributes:
  check_mode:
    description: In check mode the benchmark is not run; the result says so with C(skipped).
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
notes:
  - The program needs torch and torchvision in O(python). Its exit codes are 2 for bad
    arguments, 3 when torch or torchvision is not importable, and 4 when CUDA was
    requested but is unavailable. Each failure message explains its code.
  - MFU uses 24.7 GFLOP per image per training step and the peak dense TFLOP/s of the
    GPU's datasheet, when the GPU is in the table.
  - The method, the modes and the reference table with its sources are in
    C(docs/BENCHMARKS.md) of the Kindling repository.
"""

EXAMPLES = r"""
- name: Prove the host trains ResNet-50 as fast as its GPU should
  gpu_throughput_measure:
    script: /opt/kindling/bin/kindling_bench
    nvidia_smi: "{{ ansible_facts.nvidia_smi | default(omit) }}"
    torch_cuda: "{{ ansible_facts.torch_cuda | default(omit) }}"
  register: throughput

- name: Full profile, only report (never fail), keep the JSON on the host
  gpu_throughput_measure:
    script: /opt/kindling/bin/kindling_bench
    profile: full
    fail_on_slow: false
    timeout: 900
    output_dir: /var/lib/kindling

- name: CPU smoke test in CI
  gpu_throughput_measure:
    python: /usr/bin/python3
    script: /opt/kindling/bin/kindling_bench
    device: cpu
    modes: [fp32]
    probes: []
    image_size: 32
    batch_size: 2
    extra_args: [--warmup, "1", --steps, "1", --windows, "2"]
"""

RETURN = r"""
throughput:
  description: The program's raw JSON report (schema_version 1).
  returned: when the program ran
  type: dict
  contains:
    environment:
      description: GPU names, count, capability, driver, torch, CUDA, cuDNN, NCCL, python, host.
      type: dict
    config:
      description: The resolved plan (modes, batch sizes, steps, windows, options).
      type: dict
    modes:
      description:
        - Per mode, its status (ok, skipped or failed), reason, img_s, ms_per_step,
          peak_memory_mib, mfu, batch_size, windows, warmup_seconds and compile_seconds.
        - The ddp mode also has world_size, img_s_per_gpu and scaling_efficiency.
      type: dict
    probes:
      description:
        - h2d (pinned copies both ways, gb_s and d2h_gb_s, and link_under_load, the PCIe
          link read while they ran), membw, matmul and input_pipeline results.
        - h2d, membw and matmul run on every measured GPU, one GPU at a time after the
          modes; each has C(gpus), every GPU's result with its C(gpu_index), and is itself
          the first GPU's result (as a one-GPU report has it).
      type: dict
    seed_ratio:
      description: Best single-GPU mode vs the seed recipe (amp_fp16, NCHW).
      type: dict
    wall_seconds:
      description: Wall time of the program.
      type: float
judgement:
  description:
    - Per mode (the host's median GPU), img_s (per GPU for ddp), reference,
      reference_basis (measured or derived), tolerance, ratio, status (pass, fail or
      not_run), source, reference_batch, mfu and reason.
  returned: when the program ran
  type: dict
gpus:
  description:
    - Per measured GPU, its index, name, bus_id, verdict, outliers and modes (each judged
      as in RV(judgement), plus host_median and vs_host, its ratio to the median of the
      host's other GPUs).
  returned: when the program ran
  type: list
  elements: dict
gpu_outliers:
  description: The GPUs that trail the host's other GPUs by more than O(gpu_margin), per mode.
  returned: when the program ran
  type: list
  elements: dict
probes_judged:
  description: Per probe, its status (pass, fail or not_run) and reason.
  returned: when the program ran
  type: dict
floors:
  description:
    - The floors of every probed GPU (C(module_utils/gpu_floors.py)), GPU by GPU and in
      the catalogue's order within a GPU, each with gpu (its index), name, label,
      measured, unit, floor (warn and fail levels; fail null for a warn-only floor),
      basis, status (pass, warn, fail, not_run or waived), reason, source, and anchor
      (what NHC or DCGM fails the card below) where they have it.
    - A failed floor fails the host; warn, not_run and waived floors never do.
  returned: when the program ran
  type: list
  elements: dict
floors_line:
  description:
    - The floors in one line (counts per status, then each failed or warned floor), naming
      the GPU where more than one was probed, e.g. C(FAIL GPU 5 pcie_link Gen5 x8 (floor
      Gen5 x16)).
  returned: when the program ran
  type: str
not_run:
  description: The modes and probes that did not run or could not be judged.
  returned: when the program ran
  type: list
  elements: str
verdict:
  description:
    - pass, fail, not_run (nothing judged), or not_measured (every GPU was busy, so the
      program did not run).
  returned: when the program ran or every GPU was busy
  type: str
counts:
  description: How many modes and probes passed, failed and did not run.
  returned: when the program ran
  type: dict
tolerance:
  description: The tolerance the judgement used.
  returned: when the program ran
  type: float
rc:
  description: The program's exit code.
  returned: when the program ran
  type: int
gpu_key:
  description: Reference key derived from the GPU name (e.g. h200, a100-40gb, cpu).
  returned: when the program ran
  type: str
gpu_name:
  description: The GPU name the judgement used.
  returned: when the program ran
  type: str
summary:
  description: One line for people watching the play.
  returned: always
  type: str
failed_modes:
  description: Modes below tolerance or that could not run.
  returned: always
  type: list
  elements: str
diagnosis:
  description:
    - Likely causes of the failed modes, and of every GPU not measured, as sentences (the
      messages of RV(causes)).
  returned: always
  type: list
  elements: str
causes:
  description:
    - The same causes, structured, another process first. Each has code (stable,
      kebab-case, e.g. gpu-busy, gpu-busy-hidden, gpu-memory-in-use, power-cap-reached,
      power-limit-lowered, thermal-slowdown, hw-slowdown, power-brake,
      pcie-link-degraded, mig-enabled; C(CAUSE_CODES) in
      C(module_utils/gpu_throughput_ref.py)), gpu (index or null), message, remedy
      (or null) and fault (false for an observation that is no fault, such as the power
      cap under load).
  returned: always
  type: list
  elements: dict
busy:
  description:
    - The busy-GPU decision before the program started. It has policy, wait_s,
      waited_s, reads, busy_at_start, busy and skipped (GPU indices), measure (the GPUs
      the program ran on; null for all) and error (set when nvidia-smi could not be
      read, and then every GPU is measured).
    - Its gpus list holds each GPU at the last read, with index, name, busy, why
      (process, hidden-process, memory, utilization), processes (pid, name,
      used_memory_mib), hidden_processes, memory_used_mib, utilization_gpu_pct,
      clock_event_reasons_active and skipped.
  returned: when O(device=cuda) and not in check mode
  type: dict
not_measured:
  description: The indices of the GPUs left out because they were busy.
  returned: always
  type: list
  elements: int
contention:
  description:
    - What the reads during the measurement saw, with interval_s, samples and errors.
    - Its gpus list holds per GPU the index, name, measured, foreign_processes (pid,
      name, used_memory_mib, first_seen_s, last_seen_s), hidden_processes_max,
      samples_with_foreign, utilization_gpu_max and clock_event_reasons_seen.
  returned: when the program ran on cuda
  type: dict
headline_line:
  description:
    - The failing host's first words, the name from O(host) included, as the gpu_check role
      prints them, for example C(gpu07 is slow), or C(could not measure gpu07) followed by
      the first cause.
  returned: always
  type: str
headline:
  description:
    - How the host is announced. It is C(passed the check) when the verdict is pass. For a
      failing host it is C(is slow) when a mode measured below its reference or a GPU
      trails the others, C(could not measure) when nothing was measured, and
      C(failed the check) otherwise.
  returned: always
  type: str
health_codes:
  description:
    - The O(nvidia_smi) facts' findings, failing (C(health)) first, then informational
      (C(health_notes)), in the facts' order within each (C(report_codes) of
      C(module_utils/gpu_health.py)).
    - Each has code, gpu (the index, or null), where (C(GPU 3) or C(no GPU index)),
      severity (failing or informational), message and remediation (the health-code
      registry's one-line remedy).
    - Empty without O(nvidia_smi).
  returned: always
  type: list
  elements: dict
health_line:
  description:
    - "The findings in one line. C(GPU health: FAILING) is followed by the failing codes,
      each with its GPUs, then C(notes:) and the informational codes."
    - "C(GPU health: no findings) when there are none, C(GPU health: unknown) without
      O(nvidia_smi)."
  returned: always
  type: str
cmd:
  description: The command line that ran.
  returned: when the program ran
  type: list
  elements: str
stderr_tail:
  description: The last lines of the program's progress output.
  returned: when the program ran
  type: str
output_file:
  description: Where the JSON report was kept on the host (with O(output_dir)).
  returned: when output_dir is set
  type: str
skipped:
  description: True in check mode; the benchmark did not run.
  returned: in check mode
  type: bool
"""

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from ansible.module_utils import command, gpu_busy  # noqa: E402
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.gpu_floors import (  # noqa: E402
    FLOOR_NAMES,
    apply_to_judgement,
    judge_floors,
)
from ansible.module_utils.gpu_floors import (  # noqa: E402
    failure_reasons as floor_failure_reasons,
)
from ansible.module_utils.gpu_health import (  # noqa: E402
    FAILING,
    code_list,
    health_line,
    report_codes,
)
from ansible.module_utils.gpu_throughput_ref import (  # noqa: E402
    DEFAULT_GPU_MARGIN,
    DEFAULT_TOLERANCE,
    busy_causes,
    diagnose_causes,
    failure_message,
    gpu_model_key,
    headline,
    headline_line,
    judge_report,
    not_measured_line,
    outlier_cause_rows,
    peak_tflops_arg,
    summary_line,
)
from ansible.module_utils.nvidia_smi import parse_xml, xml_command  # noqa: E402

EXIT_MEANINGS = {
    1: "the program crashed (a Python traceback is in its stderr)",
    2: "the program rejected its arguments (check modes, probes and extra_args)",
    3: "torch or torchvision is not importable with {python}: install the PyTorch environment "
    "(the conda_pytorch role) or point python= at the right interpreter",
    4: "CUDA was requested but torch.cuda.is_available() is False: a CPU-only torch wheel or a "
    "driver problem (see torch_cuda_facts and nvidia-smi), or use device=cpu on hosts "
    "without a GPU",
}
PROFILE_BUDGET = {"quick": 85.0, "full": 540.0}


def tail(text, lines=25):
    return "\n".join(text.strip().splitlines()[-lines:])


def exit_meaning(rc, python):
    if rc < 0:
        return f"the program was killed by signal {-rc} (out of host memory?)"
    if rc in (124, 137):
        return "the program was killed (time limit or out of host memory)"
    return EXIT_MEANINGS.get(rc, "unexpected exit code").format(python=python)


def is_program(path):
    """A single-file program, or a package directory that Python runs (its __main__.py)."""
    return os.path.isfile(path) or os.path.isfile(os.path.join(path, "__main__.py"))


def build_command(params, known_key):
    cmd = [params["python"], params["script"], "--profile", params["profile"]]
    cmd += ["--device", params["device"]]
    extra = list(params["extra_args"] or [])
    if params["modes"] is not None:
        cmd += ["--modes", ",".join(params["modes"])]
    if params["probes"] is not None:
        cmd += ["--probes", ",".join(params["probes"]) or "none"]
    if params["batch_size"] is not None:
        cmd += ["--batch-size", str(params["batch_size"])]
    if params["image_size"] is not None:
        cmd += ["--image-size", str(params["image_size"])]
    if known_key and "--peak-tflops" not in extra:
        peaks = peak_tflops_arg(known_key)
        if peaks:
            cmd += ["--peak-tflops", peaks]
    if "--max-seconds" not in extra:
        # Leave the program time to finish its last mode and print the report.
        budget = params["timeout"] * 0.75
        if budget < PROFILE_BUDGET[params["profile"]]:
            cmd += ["--max-seconds", f"{max(1.0, budget):g}"]
    if params["output_dir"]:
        cmd += ["--output", os.path.join(params["output_dir"], "gpu_throughput_measure.json")]
    if params.get("progress_file"):
        cmd += ["--progress", params["progress_file"]]
    return cmd + extra


def read_smi(smi):
    """One ``nvidia-smi -q -x`` read, parsed; OSError/ValueError when it fails."""
    proc = command.run(xml_command(smi), 60)
    if proc.rc != 0:
        raise ValueError(f"nvidia-smi exited {proc.rc}: {proc.stderr.strip()[:200]}")
    return parse_xml(proc.stdout)


def pid_visible(pid):
    """Whether this host's /proc has the pid (a container's neighbours' pids are not)."""
    return gpu_busy.pid_visible_in_proc(pid)


def option_value(args, name):
    """The value of ``--name VALUE`` or ``--name=VALUE`` in a list of arguments, or None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def with_gpus(cmd, indices):
    """The command with ``--gpus`` set to these GPU indices (an earlier value replaced)."""
    out = []
    skip = False
    for arg in cmd:
        if skip:
            skip = False
            continue
        if arg == "--gpus":
            skip = True
            continue
        if arg.startswith("--gpus="):
            continue
        out.append(arg)
    return [*out, "--gpus", gpu_busy.gpus_arg(indices)]


class Sampler:
    """Reads nvidia-smi every ``interval`` s while the program runs (a daemon thread)."""

    def __init__(self, smi, measured, interval=gpu_busy.SAMPLE_INTERVAL_S):
        self.smi = smi
        self.measured = None if measured is None else list(measured)
        self.interval = interval
        self.contention = gpu_busy.new_contention(interval)
        self.pid = None
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self, proc):
        self.pid = proc.pid
        self.started = time.monotonic()
        self.thread.start()

    def run(self):
        while not self.stop.wait(self.interval):
            try:
                parsed = read_smi(self.smi)
                own = gpu_busy.descendants(self.pid, gpu_busy.proc_parents())
                gpu_busy.add_sample(
                    self.contention,
                    parsed,
                    own,
                    self.measured,
                    time.monotonic() - self.started,
                    pid_visible,
                )
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                gpu_busy.add_error(self.contention, str(exc))

    def finish(self):
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=70)
        return gpu_busy.finish_contention(self.contention)


def run_program(cmd, timeout, on_start=None):
    """(rc, stdout, stderr, timed_out); the program runs in its own process group."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    if on_start is not None:
        on_start(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                break
            try:
                out, err = proc.communicate(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                out, err = b"", b""
        return proc.returncode, out or b"", err or b"", True


def gpu_name_from(params, report):
    if params["gpu_name_override"]:
        return params["gpu_name_override"]
    if params["device"] == "cpu":
        return "cpu"
    gpus = ((report or {}).get("environment") or {}).get("gpus") or []
    if gpus and gpus[0].get("name"):
        return gpus[0]["name"]
    facts = params["nvidia_smi"] or {}
    facts_gpus = facts.get("gpus") or []
    if facts_gpus and isinstance(facts_gpus[0], dict) and facts_gpus[0].get("name"):
        return facts_gpus[0]["name"]
    return None


def fill_bus_ids(report, facts):
    """Each measured GPU's bus id from the nvidia-smi facts where torch did not give it.

    The program numbers GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID), as
    nvidia-smi does, so GPU i of the report is GPU i of the facts.
    """
    by_index = {}
    for gpu in (facts or {}).get("gpus") or []:
        if isinstance(gpu, dict) and gpu.get("index") is not None:
            by_index[str(gpu["index"])] = gpu.get("pci_bus_id")
    for gpu in report.get("per_gpu") or []:
        if not gpu.get("bus_id"):
            gpu["bus_id"] = by_index.get(str(gpu.get("index")))


def decide_busy(module, p, smi, cmd):
    """The busy-GPU decision (module_utils/gpu_busy.decide) for the GPUs the program would
    measure."""
    wanted = None
    gpus_value = option_value(cmd, "--gpus")
    if gpus_value not in (None, "all"):
        try:
            indices = [g["index"] for g in read_smi(smi).get("gpus") or []]
            wanted = gpu_busy.wanted_gpus(gpus_value, indices)
        except (OSError, ValueError, subprocess.SubprocessError):
            wanted = None
    return gpu_busy.decide(
        p["busy_gpu"],
        p["busy_wait"],
        lambda: read_smi(smi),
        time.monotonic,
        time.sleep,
        pid_visible=pid_visible,
        wanted=wanted,
    )


def not_measured(module, p, result, busy):
    """Every GPU is busy: the program does not run; the verdict is not_measured."""
    rows = busy_causes(busy)
    line = not_measured_line(busy)
    name = p["gpu_name_override"] or gpu_name_from(p, None) or "GPU"
    result.update(
        verdict="not_measured",
        causes=rows,
        diagnosis=[row["message"] for row in rows],
        headline=headline(None, "not_measured"),
        headline_line=headline_line("could not measure", p["host"], [r["message"] for r in rows]),
        summary=f"{name}; NOT MEASURED: busy: {line}",
        gpus=[],
        gpu_outliers=[],
        judgement={},
        probes_judged={},
        not_run=[],
        counts={"pass": 0, "fail": 0, "not_run": 0},
        tolerance=p["tolerance"],
        gpu_key=gpu_model_key(name),
        gpu_name=name,
        throughput={},
    )
    message = "could not measure: every GPU is busy: " + " ".join(result["diagnosis"])
    if p["fail_on_slow"]:
        module.fail_json(msg=message, **result)
    module.warn(message + " (fail_on_slow=false: the task does not fail)")
    module.exit_json(msg=result["summary"], **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path", default="/opt/conda/envs/pytorch/bin/python"),
            script=dict(type="path", required=True),
            profile=dict(type="str", choices=["quick", "full"], default="quick"),
            modes=dict(type="list", elements="str"),
            probes=dict(type="list", elements="str"),
            batch_size=dict(type="int"),
            device=dict(type="str", choices=["cuda", "cpu"], default="cuda"),
            image_size=dict(type="int"),
            extra_args=dict(type="list", elements="str", default=[]),
            tolerance=dict(type="float", default=DEFAULT_TOLERANCE),
            gpu_name_override=dict(type="str"),
            host=dict(type="str"),
            nvidia_smi=dict(type="dict"),
            torch_cuda=dict(type="dict"),
            fail_on_slow=dict(type="bool", default=True),
            require_all=dict(type="bool", default=False),
            gpu_margin=dict(type="float", default=DEFAULT_GPU_MARGIN),
            floor_waivers=dict(type="list", elements="str", default=[], choices=list(FLOOR_NAMES)),
            busy_gpu=dict(type="str", choices=list(gpu_busy.POLICIES), default="wait"),
            busy_wait=dict(type="int", default=gpu_busy.DEFAULT_WAIT_S),
            timeout=dict(type="int", default=600),
            output_dir=dict(type="path"),
            progress_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    facts = p["nvidia_smi"]
    codes = report_codes(facts.get("health"), facts.get("health_notes")) if facts else []
    result = dict(
        changed=False,
        summary="",
        failed_modes=[],
        diagnosis=[],
        causes=[],
        not_measured=[],
        headline="failed the check",
        headline_line=headline_line("failed the check", p["host"], []),
        health_codes=codes,
        health_line=health_line(codes if facts else None),
    )
    if not 0 < p["tolerance"] <= 1:
        module.fail_json(msg=f"tolerance must be in (0, 1], got {p['tolerance']}", **result)
    if not 0 < p["gpu_margin"] < 1:
        module.fail_json(msg=f"gpu_margin must be in (0, 1), got {p['gpu_margin']}", **result)
    if p["timeout"] < 1:
        module.fail_json(msg=f"timeout must be >= 1 second, got {p['timeout']}", **result)
    if p["busy_wait"] < 0:
        module.fail_json(msg=f"busy_wait must be >= 0 seconds, got {p['busy_wait']}", **result)
    for name in ("batch_size", "image_size"):
        if p[name] is not None and p[name] < 1:
            module.fail_json(msg=f"{name} must be >= 1, got {p[name]}", **result)
    if module.check_mode:
        result.update(
            skipped=True,
            summary="check mode: the GPU throughput benchmark was not run",
            msg="check mode: the GPU throughput benchmark was not run",
        )
        module.exit_json(**result)
    if not is_program(p["script"]):
        module.fail_json(
            msg=f"benchmark program {p['script']} not found on the host: copy the package "
            "roles/gpu_check/files/kindling_bench there (the gpu_check role does) or fix "
            "script=",
            **result,
        )
    if not (os.path.isfile(p["python"]) and os.access(p["python"], os.X_OK)):
        module.fail_json(
            msg=f"interpreter {p['python']} does not exist or is not executable: provision the "
            "PyTorch environment (the conda_pytorch role) or set python= to its interpreter",
            **result,
        )
    if p["output_dir"]:
        try:
            os.makedirs(p["output_dir"], exist_ok=True)
        except OSError as exc:
            module.fail_json(msg=f"cannot create output_dir {p['output_dir']}: {exc}", **result)

    if p["progress_file"]:
        # A stale file from the last run would be read as this run's progress.
        try:
            os.unlink(p["progress_file"])
        except FileNotFoundError:
            pass
        except OSError as exc:
            module.fail_json(msg=f"cannot remove the old progress_file: {exc}", **result)
    known_name = p["gpu_name_override"] or gpu_name_from(p, None)
    known_key = gpu_model_key(known_name) if known_name else None
    cmd = build_command(p, known_key)
    started = time.monotonic()
    busy, smi = None, None
    if p["device"] == "cuda":
        smi = module.get_bin_path("nvidia-smi")
    if smi:
        busy = decide_busy(module, p, smi, cmd)
        result.update(busy=busy, not_measured=busy["skipped"])
        if busy["skipped"] and busy["measure"]:
            cmd = with_gpus(cmd, busy["measure"])
        elif busy["skipped"]:
            not_measured(module, p, result, busy)
    result["cmd"] = cmd
    sampler = Sampler(smi, (busy or {}).get("measure")) if smi else None
    rc, out, err, timed_out = run_program(cmd, p["timeout"], sampler.start if sampler else None)
    contention = sampler.finish() if sampler else None
    if contention is not None:
        result["contention"] = contention
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    result["stderr_tail"] = tail(stderr)
    result["rc"] = rc
    if timed_out:
        module.fail_json(
            msg=f"gpu_throughput_measure.py did not finish within timeout={p['timeout']} s and was "
            "killed: raise timeout, use profile=quick, or lower the program's budget "
            f"(extra_args: --max-seconds). Last progress lines:\n{tail(stderr, 10)}",
            **result,
        )
    if rc != 0:
        module.fail_json(
            msg=f"gpu_throughput_measure.py exited {rc}: {exit_meaning(rc, p['python'])}. "
            f"stderr tail:\n{tail(stderr, 15)}",
            **result,
        )
    try:
        if p["output_dir"]:
            path = os.path.join(p["output_dir"], "gpu_throughput_measure.json")
            result["output_file"] = path
            with open(path) as fh:
                report = json.load(fh)
        else:
            report = json.loads(stdout)
        if not isinstance(report, dict) or report.get("schema_version") != 1:
            raise ValueError("not a schema_version 1 report")
    except (OSError, ValueError) as exc:
        module.fail_json(
            msg=f"gpu_throughput_measure.py exited 0 but did not produce a JSON report ({exc}); "
            f"stdout starts with {stdout[:200]!r}; stderr tail:\n{tail(stderr, 10)}",
            **result,
        )
    gpu_name = gpu_name_from(p, report)
    gpu_key = gpu_model_key(gpu_name)
    fill_bus_ids(report, p["nvidia_smi"])
    judged = judge_report(report, gpu_key, p["tolerance"], p["require_all"], p["gpu_margin"])
    # The floors (PCIe link and copies, memory bandwidth, matmul): a failed one fails the host.
    floors = judge_floors(report, gpu_key, p["nvidia_smi"], p["floor_waivers"])
    apply_to_judgement(judged, floors)
    names = {g.get("name") for g in (report.get("environment") or {}).get("gpus") or []}
    if len(names) > 1:
        module.warn(f"this host mixes GPU models {sorted(names)}; judged as {gpu_name}")
    failed = judged["failed_modes"]
    # The GPUs left out first, then the GPUs that trail the others, then the slow modes'
    # causes (another process first); diagnose_causes starts with the GPUs left out too.
    left_out = busy_causes(busy)
    found = diagnose_causes(failed, p["nvidia_smi"], p["torch_cuda"], report, contention, busy)
    rows = left_out + outlier_cause_rows(judged, p["nvidia_smi"], contention)
    rows += found[len(left_out) :]
    causes = [row["message"] for row in rows]
    summary = summary_line(judged, gpu_name)
    if floors["failed"] or floors["warned"]:
        summary += "; " + floors["line"]
    if not_measured_line(busy):
        summary += "; " + not_measured_line(busy)
    result.update(
        throughput=report,
        judgement=judged["modes"],
        gpus=judged["gpus"],
        gpu_outliers=judged["gpu_outliers"],
        probes_judged=judged["probes"],
        floors=floors["floors"],
        floors_line=floors["line"],
        not_run=judged["not_run"],
        require_all=p["require_all"],
        verdict=judged["verdict"],
        gpu_key=gpu_key,
        gpu_name=gpu_name,
        tolerance=p["tolerance"],
        counts=judged["counts"],
        failed_modes=failed,
        diagnosis=causes,
        causes=rows,
        headline=headline(judged, judged["verdict"]),
        headline_line=headline_line(headline(judged, judged["verdict"]), p["host"], causes),
        summary=summary,
        module_seconds=round(time.monotonic() - started, 2),
    )
    if judged["verdict"] == "fail":
        message = failure_message(judged, causes, gpu_name)
        if floors["failed"]:
            message += " Below its floors: " + "; ".join(floor_failure_reasons(floors)) + "."
        failing = [row for row in codes if row["severity"] == FAILING]
        if failing:
            message += f" Failing health codes: {code_list(failing)}."
        if p["fail_on_slow"]:
            module.fail_json(msg=message, **result)
        module.warn(message + " (fail_on_slow=false: the task does not fail)")
    module.exit_json(msg=result["summary"], **result)


if __name__ == "__main__":
    main()
