"""The catalogue of bad inputs: each is refused before anything on the host changes.

Every case names the playbook it runs, the variables it sets, and the exact words the
user must see. tests/reliability/test_bad_inputs.py runs each against a fresh Debian 12
test host and compares the host's state before and after; docs/RELIABILITY.md is
rendered from this list (a test keeps it in step).
"""

from __future__ import annotations

from typing import Dict, List

FIXTURE = "{fixture}"  # replaced by the fixture server's URL at run time

CASES: List[Dict[str, object]] = [
    # --- wrong types and unknown choices, caught by meta/argument_specs.yml
    {
        "id": "nouveau-policy-choice",
        "input": "nouveau_reboot_policy: sometimes",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_reboot_policy": "sometimes"},
        "expect": "value of nouveau_reboot_policy must be one of: never, auto, always, got: sometimes",
    },
    {
        "id": "nouveau-bool-type",
        "input": "nouveau_blacklist_enabled: maybe",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_blacklist_enabled": "maybe"},
        "expect": "argument 'nouveau_blacklist_enabled' is of type str and we were unable to convert to bool",
    },
    {
        "id": "nouveau-modprobe-path",
        "input": "nouveau_modprobe_file: /etc/nouveau.txt",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_modprobe_file": "/etc/nouveau.txt"},
        "expect": "nouveau_modprobe_file is '/etc/nouveau.txt', but modprobe only reads /etc/modprobe.d/*.conf",
    },
    {
        "id": "gpu-check-profile-choice",
        "input": "gpu_check_profile: huge",
        "playbook": "verify.yml",
        "vars": {"gpu_check_profile": "huge"},
        "expect": "value of gpu_check_profile must be one of: quick, full, got: huge",
    },
    {
        "id": "gpu-check-tolerance-range",
        "input": "gpu_check_tolerance: 1.5",
        "playbook": "verify.yml",
        "vars": {"gpu_check_tolerance": 1.5},
        "expect": "gpu_check_tolerance is 1.5; it is the fraction of the reference img/s a mode must reach",
    },
    {
        "id": "gpu-check-nccl-debug-choice",
        "input": "gpu_check_nccl_debug: LOUD",
        "playbook": "verify.yml",
        "vars": {"gpu_check_nccl_debug": "LOUD"},
        "expect": "value of gpu_check_nccl_debug must be one of: VERSION, WARN, INFO, TRACE, got: LOUD",
    },
    {
        "id": "site-lock-wait-type",
        "input": "site_lock_wait_seconds: soon",
        "playbook": "site.yml",
        "vars": {"site_lock_wait_seconds": "soon"},
        "expect": "argument 'site_lock_wait_seconds' is of type str and we were unable to convert to int",
    },
    # --- host and inventory
    {
        "id": "no-gpu",
        "input": "a host without an NVIDIA GPU, gpu_required left true",
        "playbook": "preflight.yml",
        "vars": {},
        "expect": "No NVIDIA GPU found on kindling-reliability: no PCI display controller with vendor 10de",
    },
    {
        "id": "unsupported-os",
        "input": "a distribution outside gpu_preflight_supported_os",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "gpu_preflight_supported_os": {"Ubuntu": ["24.04"]}},
        "expect": "is not supported. Kindling supports Ubuntu 24.04.",
    },
    {
        "id": "empty-inventory-group",
        "input": "an inventory whose gpu_hosts group has no hosts",
        "playbook": "site.yml",
        "vars": {},
        "inventory": "empty",
        "expect": "The inventory group gpu_hosts has no hosts",
    },
    # --- stacks that can't work, caught by the compatibility matrix before any change
    {
        "id": "driver-470-cuda-11.6",
        "input": "nvidia_driver_branch 470 with cuda_version 11.6 (the seed's pairing)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "nvidia_driver_branch": "470", "cuda_version": "11.6"},
        "expect": "Driver 470 is too old for CUDA 11.6, which needs Linux driver >= 510.39.01",
    },
    {
        "id": "cuda-does-not-exist",
        "input": "cuda_version 11.9 (there is no CUDA 11.9)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "cuda_version": "11.9"},
        "expect": "CUDA 11.9 is not in the compatibility table (known: 11.0 to 13.2; there is no "
        "12.7); set cuda_version to a released toolkit such as 11.8.",
    },
    {
        "id": "torch-no-wheel-for-variant",
        "input": "conda_pytorch_version 2.11.0 with conda_pytorch_cuda_variant cu116",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu116",
        },
        "expect": "torch 2.11.0 has no cu116 wheel (it ships cu126, cu128, cu130); set "
        "conda_pytorch_cuda_variant to cu130.",
    },
    {
        "id": "python-unsupported-by-torch",
        "input": "conda_pytorch_python_version 3.7 with torch 2.11.0",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu130",
            "conda_pytorch_python_version": "3.7",
        },
        "expect": "torch 2.11.0 has wheels for Python 3.10 to 3.14, not 3.7; set "
        "conda_pytorch_python_version to 3.10",
    },
    {
        "id": "cudnn-cuda-mismatch",
        "input": "cuda_cudnn_version 8.4.0 with cuda_version 13.0",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "cuda_version": "13.0",
            "cuda_cudnn_version": "8.4.0",
            "nvidia_driver_branch": "580",
        },
        "expect": "cuDNN 8.4.0 does not match CUDA 13.0: cuDNN 8 has builds for CUDA 10.2 to 12.x "
        "only",
    },
]
