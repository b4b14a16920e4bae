"""Kindling GPU throughput check: how fast does this host train ResNet-50?

A standalone program (standard library + torch + torchvision; numpy only for the
input-pipeline probe). It needs no Ansible: run it with the PyTorch environment's
Python, e.g. ``/opt/conda/envs/pytorch/bin/python /opt/kindling/bin/kindling_bench
--profile quick``, or ``python -m kindling_bench`` with its parent directory on the path.
It still names itself ``gpu_throughput_measure.py`` (usage line, log tag, the report's
``program``), as it did when it was one file.

It trains torchvision's ResNet-50 (SGD with momentum 0.9, cross-entropy) on synthetic
data that lives on the device, in several numeric modes, and writes one JSON document
(schema_version 1) to stdout or ``--output``. Progress goes to stderr.

Modes (the names are the stable keys of the JSON ``modes`` object):
  fp32         FP32 with TF32 off for matmul and cuDNN (the seed's FP32 row)
  tf32         FP32 tensors, TF32 tensor cores on
  amp_fp16     autocast fp16 + GradScaler, NCHW (the seed's AMP recipe; alias seed_recipe)
  amp_bf16     autocast bf16, NCHW (GPUs with bf16 tensor cores only)
  amp_fp16_cl  amp_fp16 with channels_last
  amp_bf16_cl  amp_bf16 with channels_last
  compile      torch.compile on the best AMP channels_last dtype of this run
  ddp          DistributedDataParallel over all local GPUs, one process per GPU

Every GPU at once: on a host with several GPUs the single-GPU modes run on every GPU
concurrently, one process per GPU (``--gpus``), so the wall time stays that of one GPU.
The report's ``per_gpu`` holds each GPU's results; ``modes`` holds the host's median GPU
per mode. CUDA numbers the GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID), as
nvidia-smi does. ``--device cpu --gpus N`` runs N such processes on the CPU (tests).
After the modes, ddp runs over the same GPUs, then the h2d, membw and matmul probes run
on each of them in turn, one GPU at a time (``probes.<name>.gpus``).

Exit codes: 0 the report was written (modes may still be skipped or failed inside it);
2 bad arguments; 3 torch or torchvision not importable; 4 CUDA requested but unavailable.

The modules, by concern:
  cli        arguments, profiles, the resolved plan, main and its exit codes
  report     the run of a plan and its JSON document (environment, seed ratio)
  modes      the training modes, one mode's run and its --sweep variants
  train      one configuration timed: model, optimizer, warm-up, CUDA graphs, windows
  gpus       every GPU at once: one worker process per GPU
  ddp        the ddp mode: one worker process per rank
  probes     h2d (both ways, the PCIe link under load), membw, matmul (each GPU in turn)
             and input_pipeline (once)
  context    torch imported lazily, TF32, bf16 support, out-of-memory, the Context
  common     exit codes, the run's clock, the progress file and log lines
  reference  FLOP per image and MFU: a symlink to module_utils/resnet_flops.py, the one
             copy that the judge (module_utils/gpu_throughput_ref.py) uses too

Every module imports only the standard library at import time: torch, torchvision and
numpy are imported when something is measured, so ``--help`` and bad arguments work
without them. Python 3.8 syntax.
"""

from __future__ import annotations

from .cli import PROFILES, main
from .modes import MODE_ALIASES, MODE_ORDER, MODES
from .probes import PROBE_ORDER, PROBES

__all__ = ["MODES", "MODE_ALIASES", "MODE_ORDER", "PROBES", "PROBE_ORDER", "PROFILES", "main"]
