"""The catalogue of bad inputs: each is refused before anything on the host changes.

Every case names the playbook it runs, the variables it sets, the exact words the user
must see, its class (what kind of mistake it is, see CLASSES) and the role whose input it
is. tests/reliability/test_bad_inputs.py runs each against a fresh Debian 12 test host
and compares the host's state before and after; a case whose own playbook is a stage
playbook is run a second time through site.yml, where stage 1 must refuse it before
stage 2 changes anything (unless it is marked ``site: False``, with ``site_why``).
docs/RELIABILITY.md is rendered from this list (a test keeps it in step).

Optional fields of a case: ``inventory: "empty"``; ``changed_zero`` (the recap must say
changed=0); ``expect_also`` (more strings the output must hold) and ``forbid`` (strings
it must not); ``prepare`` and ``cleanup`` (shell run in the test host before the first
snapshot and after the second, so the comparison covers only the playbook's run).
"""

from __future__ import annotations

from typing import Dict, List, Optional

FIXTURE = "{fixture}"  # replaced by the fixture server's URL at run time
INJECTED = "\nExecStartPre=+/bin/sh -c id"  # a second unit line, were it written unquoted
STAGE_1_INPUTS = "PLAY [Stage 1, check every role's inputs before any change]"
STAGE_2 = "PLAY [Blacklist nouveau]"  # the first play that changes the host

# What kind of mistake each case is; the doc counts the cases of each.
CLASSES: Dict[str, str] = {
    "type": "argument_specs' type or choices, list elements included",
    "path": "a path that is /, holds `..`, whitespace or a newline, is relative, or lies outside its directory",
    "url": "a URL whose scheme or host can't be trusted for that download, or that holds whitespace",
    "range": "a number outside its range: ports, timeouts, sizes, ages",
    "pattern": "a version, name or tag that its pattern does not match whole (a trailing newline, empty, LATEST)",
    "injection": "a newline or shell syntax that would reach a systemd unit, a profile.d snippet or a command line",
    "unit-shadow": "a unit name that an installed unit not written by Kindling already has",
    "secret": "a secret file in a directory that someone other than root could plant a link in, or a link",
    "rule": "variables of one role that contradict each other",
    "privilege": "root, or another existing account, as a service's user (the role would rewrite it), or root-equivalent groups for it",
    "stack": "a driver, CUDA, cuDNN, torch and Python stack that can't work, or that NVIDIA's repository lacks",
    "stack-defaults": "a partly changed stack that fails only because of another role's default",
    "host": "the host or the inventory",
    "download": "a download that is not the pinned one",
    "count": "a count (kindling_serial) that is not a whole number 1 or more, 1%-100%, or a list of those",
    "consumer": "a file name that the program reading it (apt, modprobe, a login shell) ignores, derived names included",
    "listener": "a wildcard address without its opt-in, a privileged port for a service not run as root, two listeners on one port",
    "system-unit": "a unit name that Debian's base-system or common service packages ship (module_utils/debian_units.py)",
    "unknown-variable": "a variable under a role's prefix or kindling_ that nothing declares (a misspelled name), "
    "refused with the nearest declared name",
    "dict-key": "a key that a dict input does not declare, refused with the nearest known key",
}

# The roles, in stage order; "inventory" is site.yml's own stage 0.
ROLES = [
    "inventory",
    "gpu_preflight",
    "site_lock",
    "nouveau",
    "nvidia_driver",
    "reboot_coordinator",
    "cuda",
    "conda_pytorch",
    "jupyter",
    "dcgm_exporter",
    "gpu_check",
]

UNKNOWN_FIX = (
    "Set a declared name (docs/VARIABLES.md, docs/INPUTS.md), or, for a variable of your own under this "
    "prefix, list it in kindling_allow_unknown_variables"
)
MINIFORGE_SHA256 = "b25b828b702df4dd2a6d24d4eb56cfa912471dd8e3342cde2c3d86fe3dc2d870"
NO_GPU = {"gpu_required": False}  # this test host has no GPU; the stages then skip themselves

CASES: List[Dict[str, object]] = [
    # --- wrong types and unknown choices, caught by meta/argument_specs.yml
    {
        "id": "nouveau-policy-choice",
        "class": "type",
        "role": "nouveau",
        "input": "nouveau_reboot_policy: sometimes",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_reboot_policy": "sometimes"},
        "expect": "value of nouveau_reboot_policy must be one of: never, auto, always, got: sometimes",
    },
    {
        "id": "nouveau-bool-type",
        "class": "type",
        "role": "nouveau",
        "input": "nouveau_blacklist_enabled: maybe",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_blacklist_enabled": "maybe"},
        "expect": "argument 'nouveau_blacklist_enabled' is of type str and we were unable to convert to bool",
    },
    {
        "id": "nouveau-modprobe-path",
        "class": "path",
        "role": "nouveau",
        "input": "nouveau_modprobe_file: /etc/nouveau.txt",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_modprobe_file": "/etc/nouveau.txt"},
        "expect": "nouveau_modprobe_file is '/etc/nouveau.txt': modprobe only reads /etc/modprobe.d/*.conf "
        "(modprobe.d(5): configuration files are read from /etc/modprobe.d/*.conf); "
        "e.g. /etc/modprobe.d/blacklist-nouveau.conf",
    },
    {
        "id": "gpu-check-profile-choice",
        "class": "type",
        "role": "gpu_check",
        "input": "gpu_check_profile: huge",
        "playbook": "verify.yml",
        "vars": {"gpu_check_profile": "huge"},
        "expect": "value of gpu_check_profile must be one of: quick, full, got: huge",
    },
    {
        "id": "gpu-check-tolerance-range",
        "class": "range",
        "role": "gpu_check",
        "input": "gpu_check_tolerance: 1.5",
        "playbook": "verify.yml",
        "vars": {"gpu_check_tolerance": 1.5},
        "expect": "gpu_check_tolerance is 1.5: it must be in (0, 1]: the fraction of the reference img/s a "
        "mode must reach (default 0.8)",
    },
    {
        "id": "gpu-check-nccl-debug-choice",
        "class": "type",
        "role": "gpu_check",
        "input": "gpu_check_nccl_debug: LOUD",
        "playbook": "verify.yml",
        "vars": {"gpu_check_nccl_debug": "LOUD"},
        "expect": "value of gpu_check_nccl_debug must be one of: VERSION, WARN, INFO, TRACE, got: LOUD",
    },
    {
        "id": "site-lock-wait-type",
        "class": "type",
        "role": "site_lock",
        "input": "site_lock_wait_seconds: soon",
        "playbook": "site.yml",
        "vars": {"site_lock_wait_seconds": "soon"},
        "expect": "argument 'site_lock_wait_seconds' is of type str and we were unable to convert to int",
    },
    {
        "id": "driver-install-method-choice",
        "class": "type",
        "role": "nvidia_driver",
        "input": "nvidia_driver_install_method: runfile",
        "playbook": "nvidia_driver.yml",
        "vars": {"nvidia_driver_install_method": "runfile"},
        "expect": "value of nvidia_driver_install_method must be one of: cuda_repo, distro, got: runfile",
    },
    {
        "id": "cudnn-install-method-choice",
        "class": "type",
        "role": "cuda",
        "input": "cuda_cudnn_install_method: zip",
        "playbook": "cuda.yml",
        "vars": {"cuda_cudnn_install_method": "zip"},
        "expect": "value of cuda_cudnn_install_method must be one of: apt, tarball, got: zip",
    },
    {
        "id": "jupyter-port-type",
        "class": "type",
        "role": "jupyter",
        "input": "jupyter_port: eighty",
        "playbook": "jupyter.yml",
        "vars": {"jupyter_port": "eighty"},
        "expect": "argument 'jupyter_port' is of type str and we were unable to convert to int",
    },
    {
        "id": "jupyter-open-bind-without-tls",
        "class": "rule",
        "role": "jupyter",
        "input": "jupyter_ip: 0.0.0.0 with no TLS certificate and no acknowledgement",
        "playbook": "jupyter.yml",
        "vars": {"jupyter_ip": "0.0.0.0"},
        "expect": "jupyter_ip 0.0.0.0 is not a loopback address: anyone who reaches 0.0.0.0:8888 would talk to a server that runs code. Keep the default 127.0.0.1 and use `ssh -N -L 8888:localhost:8888 user@host`, or set jupyter_tls_cert and jupyter_tls_key (both), or jupyter_allow_insecure_bind: true.",
    },
    {
        "id": "miniforge-sha256-malformed",
        "class": "pattern",
        "role": "conda_pytorch",
        "input": "conda_pytorch_miniforge_sha256 that is not 64 hex digits",
        "playbook": "conda_pytorch.yml",
        "vars": {"conda_pytorch_miniforge_sha256": {"x86_64": "not-a-checksum", "aarch64": "zz"}},
        "expect": "conda_pytorch_miniforge_sha256 has no sha256 for x86_64 (Miniforge 26.1.1-3): its x86_64 "
        "entry is 'not-a-checksum'. Add the hex digest from the release's "
        "Miniforge3-26.1.1-3-Linux-x86_64.sh.sha256 file.",
    },
    {
        "id": "dcgm-image-latest",
        "class": "pattern",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_image_tag: latest",
        "playbook": "dcgm_exporter.yml",
        "vars": {"dcgm_exporter_image_tag": "latest"},
        "expect": "dcgm_exporter_image_tag is 'latest': 'latest' is not allowed here; give an exact value like 4.5.3-4.8.2-ubuntu22.04",
    },
    {
        "id": "dcgm-key-fingerprint-malformed",
        "class": "pattern",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_nvidia_repo_key_fingerprint: F796ECB0 (a short key id)",
        "playbook": "dcgm_exporter.yml",
        "vars": {"dcgm_exporter_nvidia_repo_key_fingerprint": "F796ECB0"},
        "expect": "dcgm_exporter_nvidia_repo_key_fingerprint is 'F796ECB0': give the key's full fingerprint, "
        "40 hex digits (a short key id is not enough)",
    },
    {
        "id": "dcgm-key-fingerprint-wrong",
        "class": "download",
        "role": "dcgm_exporter",
        "input": "the NVIDIA Container Toolkit key URL serves a key other than the expected one",
        "playbook": "dcgm_exporter.yml",
        "vars": {
            "dcgm_exporter_mode": "container",
            "dcgm_exporter_docker_source": "distro",
            "dcgm_exporter_image_digest": "sha256:" + "0" * 64,
            "dcgm_exporter_nvidia_repo_url": f"{FIXTURE}/libnvidia-container/stable/deb/amd64/",
            "dcgm_exporter_nvidia_repo_key_url": f"{FIXTURE}/keys/wrong-archive-keyring.gpg",
        },
        "expect": "expected C95B321B61E88C1809C4F759DDCAE044F796ECB0 (dcgm_exporter_nvidia_repo_key_fingerprint). It was not installed and apt was not told to trust it; nothing on the host was changed.",
        "site": False,
        "site_why": "the key's fingerprint is known only once the dcgm_exporter stage (stage 7) has "
        "downloaded it; stage 1 downloads nothing, so through site.yml this would be refused only "
        "after stages 2-6 changed the host",
    },
    {
        "id": "conda-channel-after-2.5",
        "class": "rule",
        "role": "conda_pytorch",
        "input": "conda_pytorch_install_method: conda with torch 2.11.0",
        "playbook": "conda_pytorch.yml",
        "vars": {
            "conda_pytorch_install_method": "conda",
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu130",
            "conda_pytorch_python_version": "3.12",
        },
        "expect": "the pytorch conda channel stopped receiving releases after 2.5 (pytorch/pytorch#138506), so torch 2.11.0 comes only as wheels - set conda_pytorch_install_method to pip.",
    },
    # --- host and inventory
    {
        "id": "no-gpu",
        "class": "host",
        "role": "gpu_preflight",
        "input": "a host without an NVIDIA GPU, gpu_required left true",
        "playbook": "preflight.yml",
        "vars": {},
        "expect": "No NVIDIA GPU found on kindling-reliability: no PCI display controller with vendor 10de",
    },
    {
        "id": "unsupported-os",
        "class": "host",
        "role": "gpu_preflight",
        "input": "a distribution outside gpu_preflight_supported_os",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "gpu_preflight_supported_os": {"Ubuntu": ["24.04"]}},
        "expect": "is not supported. Kindling supports Ubuntu 24.04.",
    },
    {
        "id": "empty-inventory-group",
        "class": "host",
        "role": "inventory",
        "input": "an inventory whose gpu_hosts group has no hosts",
        "playbook": "site.yml",
        "vars": {},
        "inventory": "empty",
        "expect": "The inventory group gpu_hosts has no hosts",
    },
    # --- stacks that can't work, caught by the compatibility matrix before any change
    {
        "id": "driver-470-cuda-11.6",
        "class": "stack",
        "role": "nvidia_driver",
        "input": "nvidia_driver_branch 470 with cuda_version 11.6 (the seed's pairing)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "nvidia_driver_branch": "470", "cuda_version": "11.6"},
        "expect": "Driver 470 is too old for CUDA 11.6, which needs Linux driver >= 510.39.01",
    },
    {
        "id": "cuda-does-not-exist",
        "class": "stack",
        "role": "cuda",
        "input": "cuda_version 11.9 (there is no CUDA 11.9)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "cuda_version": "11.9"},
        "expect": "CUDA 11.9 is not in the compatibility table (known: 11.0 to 13.2; there is no "
        "12.7); set cuda_version to a released toolkit such as 11.8.",
    },
    {
        "id": "torch-no-wheel-for-variant",
        "class": "stack",
        "role": "conda_pytorch",
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
        "class": "stack",
        "role": "conda_pytorch",
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
        "class": "stack",
        "role": "cuda",
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
    # --- plans NVIDIA's repository for the host's OS does not serve (the vendor catalogue)
    {
        "id": "seed-stack-on-ubuntu2204",
        "class": "stack",
        "role": "cuda",
        "input": "the seed stack (driver 510, CUDA 11.6, cuDNN 8.4.0) through site.yml, repository ubuntu2204",
        "playbook": "site.yml",
        "vars": {
            "gpu_required": False,
            "nvidia_driver_skip_without_gpu": False,
            "cuda_skip_without_gpu": False,
            "nvidia_driver_repo_distro": "ubuntu2204",
            "nvidia_driver_branch": "510",
            "cuda_version": "11.6",
            "cuda_cudnn_version": "8.4.0",
        },
        "expect": "CUDA 11.6 is not in ubuntu2204 (NVIDIA's repository for Ubuntu 22.04 serves CUDA "
        "11.7 to current); use 11.7+ here, or Ubuntu 20.04.",
        "changed_zero": True,
    },
    # ------------------------------------------------------------------------------------
    # Through site.yml: stage 1 checks every role's inputs, for every host, before stage 2
    # changes anything. gpu_required is false (this test host has no GPU) unless the case
    # is about the GPU; the driver and CUDA stages would then skip themselves.
    {
        "id": "site-bad-jupyter-port-with-gpu-stages-on",
        "class": "range",
        "role": "jupyter",
        "input": "jupyter_port: 0 through site.yml, with the driver and CUDA stages set to run "
        "(nvidia_driver_skip_without_gpu and cuda_skip_without_gpu false)",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "nvidia_driver_skip_without_gpu": False,
            "cuda_skip_without_gpu": False,
            "jupyter_port": 0,
        },
        "expect": "jupyter_port is 0: it must be from 1 to 65535 (a TCP port)",
        "expect_also": [
            STAGE_1_INPUTS,
            "TASK [jupyter : Check the jupyter role's inputs before any change]",
        ],
        "forbid": [
            STAGE_2,
            "PLAY [Install the NVIDIA driver]",
            "PLAY [Stage 1, preflight checks of the host",
        ],
        "changed_zero": True,
    },
    # --- type: argument_specs' types and choices, list elements included
    {
        "id": "gpu-check-modes-element-choice",
        "class": "type",
        "role": "gpu_check",
        "input": "gpu_check_modes: [fp64]",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_modes": ["fp64"]},
        "expect": "value of gpu_check_modes must be one or more of: fp32, tf32, amp_fp16, amp_bf16, "
        "amp_fp16_cl, amp_bf16_cl, compile, ddp",
        "expect_also": ["Got no match for: fp64"],
        "changed_zero": True,
    },
    {
        "id": "gpu-check-device-choice",
        "class": "type",
        "role": "gpu_check",
        "input": "gpu_check_device: tpu",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_device": "tpu"},
        "expect": "value of gpu_check_device must be one of: cuda, cpu, got: tpu",
        "changed_zero": True,
    },
    {
        "id": "site-lock-break-type",
        "class": "type",
        "role": "site_lock",
        "input": "site_lock_break: perhaps",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "site_lock_break": "perhaps"},
        "expect": "argument 'site_lock_break' is of type str and we were unable to convert to bool: The "
        "value 'perhaps' is not a valid boolean.",
        "changed_zero": True,
    },
    {
        "id": "nouveau-initramfs-type",
        "class": "type",
        "role": "nouveau",
        "input": "nouveau_update_initramfs: later",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nouveau_update_initramfs": "later"},
        "expect": "argument 'nouveau_update_initramfs' is of type str and we were unable to convert to "
        "bool: The value 'later' is not a valid boolean.",
        "changed_zero": True,
    },
    {
        "id": "reboot-allowed-type",
        "class": "type",
        "role": "reboot_coordinator",
        "input": "reboot_coordinator_allowed: sometimes",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "reboot_coordinator_allowed": "sometimes"},
        "expect": "argument 'reboot_coordinator_allowed' is of type str and we were unable to convert to "
        "bool: The value 'sometimes' is not a valid boolean.",
        "changed_zero": True,
    },
    {
        "id": "driver-secure-boot-choice",
        "class": "type",
        "role": "nvidia_driver",
        "input": "nvidia_driver_secure_boot_action: ignore",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_secure_boot_action": "ignore"},
        "expect": "value of nvidia_driver_secure_boot_action must be one of: warn, fail, got: ignore",
        "changed_zero": True,
    },
    {
        "id": "cudnn-install-type",
        "class": "type",
        "role": "cuda",
        "input": "cuda_cudnn_install: maybe",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_cudnn_install": "maybe"},
        "expect": "argument 'cuda_cudnn_install' is of type str and we were unable to convert to bool: The "
        "value 'maybe' is not a valid boolean.",
        "changed_zero": True,
    },
    {
        "id": "conda-backend-choice",
        "class": "type",
        "role": "conda_pytorch",
        "input": "conda_pytorch_backend: mamba",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_backend": "mamba"},
        "expect": "value of conda_pytorch_backend must be one of: conda, venv, got: mamba",
        "changed_zero": True,
    },
    {
        "id": "jupyter-show-token-type",
        "class": "type",
        "role": "jupyter",
        "input": "jupyter_show_token: please",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_show_token": "please"},
        "expect": "argument 'jupyter_show_token' is of type str and we were unable to convert to bool: The "
        "value 'please' is not a valid boolean.",
        "changed_zero": True,
    },
    {
        "id": "dcgm-mode-choice",
        "class": "type",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_mode: kubernetes",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_mode": "kubernetes"},
        "expect": "value of dcgm_exporter_mode must be one of: container, native, got: kubernetes",
        "changed_zero": True,
    },
    {
        "id": "preflight-disk-gb-type",
        "class": "type",
        "role": "gpu_preflight",
        "input": "gpu_preflight_min_free_disk_gb: lots",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_preflight_min_free_disk_gb": "lots"},
        "expect": "argument 'gpu_preflight_min_free_disk_gb' is of type str and we were unable to convert "
        "to int: \"'lots'\" cannot be converted to an int",
        "changed_zero": True,
    },
    # --- path: /, '..', whitespace, a newline, relative, outside its directory
    {
        "id": "cuda-profile-outside-profile-d",
        "class": "path",
        "role": "cuda",
        "input": "cuda_profile_file: /etc/cuda.sh",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_profile_file": "/etc/cuda.sh"},
        "expect": "cuda_profile_file is '/etc/cuda.sh': login shells read only /etc/profile.d/*.sh (bash(1) "
        "INVOCATION; Debian's /etc/profile sources `/etc/profile.d/*.sh`); e.g. /etc/profile.d/cuda.sh",
        "changed_zero": True,
    },
    {
        "id": "jupyter-token-file-in-tmp",
        "class": "path",
        "role": "jupyter",
        "input": "jupyter_token_file: /tmp/token",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_token_file": "/tmp/token"},
        "expect": "jupyter_token_file is '/tmp/token': it must lie under /etc/jupyter; e.g. /etc/jupyter/token",
        "changed_zero": True,
    },
    {
        "id": "conda-prefix-root",
        "class": "path",
        "role": "conda_pytorch",
        "input": "conda_pytorch_conda_prefix: /",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_conda_prefix": "/"},
        "expect": "conda_pytorch_conda_prefix is '/': / itself is never a place Kindling writes to; give a "
        "directory of its own such as /opt/conda",
        "changed_zero": True,
    },
    {
        "id": "venv-path-dotdot",
        "class": "path",
        "role": "conda_pytorch",
        "input": "conda_pytorch_venv_path: /opt/venvs/../pytorch",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_venv_path": "/opt/venvs/../pytorch"},
        "expect": "conda_pytorch_venv_path is '/opt/venvs/../pytorch': a path may not contain '//', '.' or "
        "'..' (it must name the place it ends up at); write it out, e.g. /opt/venvs/pytorch",
        "changed_zero": True,
    },
    {
        "id": "nouveau-modprobe-dotdot",
        "class": "path",
        "role": "nouveau",
        "input": "nouveau_modprobe_file: /etc/modprobe.d/../nouveau.conf",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nouveau_modprobe_file": "/etc/modprobe.d/../nouveau.conf"},
        "expect": "nouveau_modprobe_file is '/etc/modprobe.d/../nouveau.conf': a path may not contain '//', "
        "'.' or '..' (it must name the place it ends up at); write it out, e.g. "
        "/etc/modprobe.d/blacklist-nouveau.conf",
        "changed_zero": True,
    },
    {
        "id": "jupyter-notebook-dir-space",
        "class": "path",
        "role": "jupyter",
        "input": "jupyter_notebook_dir: /var/lib/jupyter/my notebooks",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_notebook_dir": "/var/lib/jupyter/my notebooks"},
        "expect": "jupyter_notebook_dir is '/var/lib/jupyter/my notebooks': a path may hold only letters, "
        "digits and _ . - + @ (found ' '): whitespace, quotes, $, %, ;, : and control characters would "
        "change the unit, profile or command it is written into; use e.g. /var/lib/jupyter/notebooks",
        "changed_zero": True,
    },
    {
        "id": "reboot-state-dir-newline",
        "class": "path",
        "role": "reboot_coordinator",
        "input": 'reboot_coordinator_state_dir: "/var/lib/kindling\\nx"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "reboot_coordinator_state_dir": "/var/lib/kindling\nx"},
        "expect": "reboot_coordinator_state_dir is '/var/lib/kindling\\nx': a path may hold only letters, "
        "digits and _ . - + @ (found '\\n')",
        "changed_zero": True,
    },
    {
        "id": "gpu-check-install-dir-relative",
        "class": "path",
        "role": "gpu_check",
        "input": "gpu_check_install_dir: opt/kindling/bin",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_install_dir": "opt/kindling/bin"},
        "expect": "gpu_check_install_dir is 'opt/kindling/bin': give an absolute path such as /opt/kindling/bin",
        "changed_zero": True,
    },
    {
        "id": "site-lock-dir-in-tmp",
        "class": "path",
        "role": "site_lock",
        "input": "site_lock_dir: /tmp/site.lock",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "site_lock_dir": "/tmp/site.lock"},
        "expect": "site_lock_dir is '/tmp/site.lock': it must lie under /var/lib or /var/run or /run; e.g. "
        "/var/lib/kindling/site.lock",
        "changed_zero": True,
    },
    {
        "id": "preflight-disk-path-relative",
        "class": "path",
        "role": "gpu_preflight",
        "input": "gpu_preflight_disk_paths: [opt]",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_preflight_disk_paths": ["opt"]},
        "expect": "gpu_preflight_disk_paths is ['opt']: element 0 ('opt'): give an absolute path such as /opt",
        "changed_zero": True,
    },
    # --- url: plain http to another host, ftp, whitespace
    {
        "id": "pytorch-index-http-remote",
        "class": "url",
        "role": "conda_pytorch",
        "input": "conda_pytorch_index_url: http://pypi.example.com/simple (wheels are not pinned by sha256)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_index_url": "http://pypi.example.com/simple"},
        "expect": "conda_pytorch_index_url is 'http://pypi.example.com/simple': the URL must use https (plain "
        "http only to this host's loopback): anything on the way could change what is downloaded; use e.g. "
        "https://download.pytorch.org/whl/cu130",
        "changed_zero": True,
    },
    {
        "id": "jupyter-index-ftp",
        "class": "url",
        "role": "jupyter",
        "input": "jupyter_pip_index_url: ftp://mirror.example.com/pypi",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_pip_index_url": "ftp://mirror.example.com/pypi"},
        "expect": "jupyter_pip_index_url is 'ftp://mirror.example.com/pypi': the URL must use https (plain "
        "http only to this host's loopback)",
        "changed_zero": True,
    },
    {
        "id": "jupyter-index-trailing-newline",
        "class": "url",
        "role": "jupyter",
        "input": 'jupyter_pip_index_url: "https://pypi.org/simple\\n"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_pip_index_url": "https://pypi.org/simple\n"},
        "expect": "jupyter_pip_index_url is 'https://pypi.org/simple\\n': not a URL Kindling can write into "
        "an apt line, a unit or a command line (no whitespace, quotes, $ or backslashes); give one such as "
        "https://pypi.org/simple",
        "changed_zero": True,
    },
    {
        "id": "driver-repo-url-space",
        "class": "url",
        "role": "nvidia_driver",
        "input": "nvidia_driver_repo_base_url with a space in it (a second apt source on the line)",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "nvidia_driver_repo_base_url": "https://developer.download.nvidia.com/compute/cuda/repos /",
        },
        "expect": "nvidia_driver_repo_base_url is 'https://developer.download.nvidia.com/compute/cuda/repos /': "
        "not a URL Kindling can write into an apt line, a unit or a command line",
        "changed_zero": True,
    },
    {
        "id": "cudnn-redist-ftp",
        "class": "url",
        "role": "cuda",
        "input": "cuda_cudnn_redist_base_url: ftp://developer.download.nvidia.com/compute/cudnn/redist/",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "cuda_cudnn_redist_base_url": "ftp://developer.download.nvidia.com/compute/cudnn/redist/",
        },
        "expect": "cuda_cudnn_redist_base_url is 'ftp://developer.download.nvidia.com/compute/cudnn/redist/': "
        "the URL must use https/file (plain http only to this host's loopback)",
        "changed_zero": True,
    },
    {
        "id": "dcgm-key-url-ftp",
        "class": "url",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_docker_repo_key_url: ftp://download.docker.com/linux/debian/gpg",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "dcgm_exporter_docker_repo_key_url": "ftp://download.docker.com/linux/debian/gpg",
        },
        "expect": "dcgm_exporter_docker_repo_key_url is 'ftp://download.docker.com/linux/debian/gpg': the URL "
        "must use https (plain http only to this host's loopback)",
        "changed_zero": True,
    },
    # --- range: ports, timeouts, sizes, ages
    {
        "id": "dcgm-port-70000",
        "class": "range",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_port: 70000",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_port": 70000},
        "expect": "dcgm_exporter_port is 70000: it must be from 1 to 65535 (a TCP port)",
        "changed_zero": True,
    },
    {
        "id": "gpu-check-batch-size-5000",
        "class": "range",
        "role": "gpu_check",
        "input": "gpu_check_batch_size: 5000",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_batch_size": 5000},
        "expect": "gpu_check_batch_size is 5000: it must be from 0 to 4096 (images per GPU; 0 keeps the "
        "program's default)",
        "changed_zero": True,
    },
    {
        "id": "site-lock-stale-after-10",
        "class": "range",
        "role": "site_lock",
        "input": "site_lock_stale_after: 10 (a live run's lock would be taken over)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "site_lock_stale_after": 10},
        "expect": "site_lock_stale_after is 10: it must be from 60 to 604800 seconds (a lock younger than a "
        "minute is never stale)",
        "changed_zero": True,
    },
    {
        "id": "reboot-timeout-5",
        "class": "range",
        "role": "reboot_coordinator",
        "input": "reboot_coordinator_timeout: 5",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "reboot_coordinator_timeout": 5},
        "expect": "reboot_coordinator_timeout is 5: it must be from 60 to 7200 seconds",
        "changed_zero": True,
    },
    {
        "id": "driver-repo-timeout-0",
        "class": "range",
        "role": "nvidia_driver",
        "input": "nvidia_driver_repo_timeout: 0",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_repo_timeout": 0},
        "expect": "nvidia_driver_repo_timeout is 0: it must be from 1 to 600 seconds",
        "changed_zero": True,
    },
    {
        "id": "cuda-apt-lock-timeout-huge",
        "class": "range",
        "role": "cuda",
        "input": "cuda_apt_lock_timeout: 99999",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_apt_lock_timeout": 99999},
        "expect": "cuda_apt_lock_timeout is 99999: it must be from 0 to 3600 seconds (how long to wait for "
        "dpkg's lock)",
        "changed_zero": True,
    },
    {
        "id": "preflight-ram-ratio-100",
        "class": "range",
        "role": "gpu_preflight",
        "input": "gpu_preflight_ram_per_gpu_memory: 100",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_preflight_ram_per_gpu_memory": 100},
        "expect": "gpu_preflight_ram_per_gpu_memory is 100: it must be in [0, 16]: a multiple of the GPU memory",
        "changed_zero": True,
    },
    # --- pattern: versions with a trailing newline, empty names, LATEST
    {
        "id": "cuda-version-trailing-newline",
        "class": "pattern",
        "role": "cuda",
        "input": 'cuda_version: "13.0\\n" (stage 1 checks every role\'s inputs before any change)',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_version": "13.0\n"},
        "expect": "cuda_version is '13.0\\n': a CUDA version is major.minor, quoted (it has "
        'leading or trailing whitespace or a newline); give a value like "13.0"',
        "changed_zero": True,
    },
    {
        "id": "cudnn-version-trailing-newline",
        "class": "pattern",
        "role": "cuda",
        "input": 'cuda_cudnn_version: "9.14.0\\n"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_cudnn_version": "9.14.0\n"},
        "expect": "cuda_cudnn_version is '9.14.0\\n': a cuDNN version is X.Y.Z or X.Y.Z.B (it has leading or "
        'trailing whitespace or a newline); give a value like "9.14.0"',
        "changed_zero": True,
    },
    {
        "id": "driver-branch-trailing-newline",
        "class": "pattern",
        "role": "nvidia_driver",
        "input": 'nvidia_driver_branch: "580\\n"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_branch": "580\n"},
        "expect": "nvidia_driver_branch is '580\\n': a driver branch is three digits, quoted (it has leading "
        'or trailing whitespace or a newline); give a value like "580"',
        "changed_zero": True,
    },
    {
        "id": "conda-env-name-empty",
        "class": "pattern",
        "role": "conda_pytorch",
        "input": 'conda_pytorch_env_name: ""',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_env_name": ""},
        "expect": "conda_pytorch_env_name is '': a name must be 1-64 letters, digits, _ . - (starting with a "
        "letter or digit); give a value like pytorch",
        "changed_zero": True,
    },
    {
        "id": "torch-version-local-tag",
        "class": "pattern",
        "role": "conda_pytorch",
        "input": "conda_pytorch_version: 2.11.0+cu130",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_version": "2.11.0+cu130"},
        "expect": "conda_pytorch_version is '2.11.0+cu130': a torch release is X.Y.Z without a local tag; give "
        'a value like "2.11.0"',
        "changed_zero": True,
    },
    {
        "id": "jupyter-kernel-name-empty",
        "class": "pattern",
        "role": "jupyter",
        "input": 'jupyter_kernel_name: ""',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_kernel_name": ""},
        "expect": "jupyter_kernel_name is '': a name must be 1-64 letters, digits, _ . - (starting with a "
        "letter or digit); give a value like pytorch",
        "changed_zero": True,
    },
    {
        "id": "jupyter-user-upper-case",
        "class": "pattern",
        "role": "jupyter",
        "input": "jupyter_user: Jupyter",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_user": "Jupyter"},
        "expect": "jupyter_user is 'Jupyter': a user or group name must be lower-case letters, digits, _ and - "
        "(at most 32, starting with a letter or _); give a value like jupyter",
        "changed_zero": True,
    },
    {
        "id": "jupyter-service-name-with-suffix",
        "class": "pattern",
        "role": "jupyter",
        "input": "jupyter_service_name: jupyter.service",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_service_name": "jupyter.service"},
        "expect": "jupyter_service_name is 'jupyter.service': give the name without .service, e.g. jupyter",
        "changed_zero": True,
    },
    {
        "id": "dcgm-image-tag-upper-latest",
        "class": "pattern",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_image_tag: LATEST",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_image_tag": "LATEST"},
        "expect": "dcgm_exporter_image_tag is 'LATEST': 'LATEST' is not allowed here; give an exact value like "
        "4.5.3-4.8.2-ubuntu22.04",
        "changed_zero": True,
    },
    {
        "id": "reboot-container-type-empty",
        "class": "pattern",
        "role": "reboot_coordinator",
        "input": 'reboot_coordinator_container_types: [docker, ""]',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "reboot_coordinator_container_types": ["docker", ""]},
        "expect": "reboot_coordinator_container_types is ['docker', '']: element 1 (''): a name must be 1-64 "
        "letters, digits, _ . - (starting with a letter or digit); give a value like docker",
        "changed_zero": True,
    },
    {
        "id": "gpu-check-multinode-sizes-semicolon",
        "class": "pattern",
        "role": "gpu_check",
        "input": "gpu_check_multinode_sizes: 1M;64M",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_multinode_sizes": "1M;64M"},
        "expect": "gpu_check_multinode_sizes is '1M;64M': sizes are comma-separated numbers with K, M or G; "
        'give a value like "1M,64M,1G"',
        "changed_zero": True,
    },
    # --- injection: a newline plus a unit line, $(...), '; rm'
    {
        "id": "jupyter-service-name-unit-line",
        "class": "injection",
        "role": "jupyter",
        "input": 'jupyter_service_name: "jupyter\\nExecStartPre=+/bin/sh -c id"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_service_name": "jupyter" + INJECTED},
        "expect": "jupyter_service_name is 'jupyter\\nExecStartPre=+/bin/sh -c id': a unit name must be "
        "letters, digits, _ . @ - without .service; give a value like jupyter",
        "changed_zero": True,
    },
    {
        "id": "jupyter-notebook-dir-unit-line",
        "class": "injection",
        "role": "jupyter",
        "input": 'jupyter_notebook_dir: "/var/lib/jupyter/nb\\nExecStartPre=+/bin/sh -c id" (written into '
        "the unit's WorkingDirectory and ReadWritePaths)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_notebook_dir": "/var/lib/jupyter/nb" + INJECTED},
        "expect": "jupyter_notebook_dir is '/var/lib/jupyter/nb\\nExecStartPre=+/bin/sh -c id': a path may "
        "hold only letters, digits and _ . - + @ (found '\\n', '=')",
        "changed_zero": True,
    },
    {
        "id": "dcgm-user-unit-line",
        "class": "injection",
        "role": "dcgm_exporter",
        "input": 'dcgm_exporter_user: "dcgm\\nExecStartPre=+/bin/sh -c id" (the unit\'s User=)',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_user": "dcgm" + INJECTED},
        "expect": "dcgm_exporter_user is 'dcgm\\nExecStartPre=+/bin/sh -c id': a user or group name must be "
        "lower-case letters, digits, _ and - (at most 32, starting with a letter or _)",
        "changed_zero": True,
    },
    {
        "id": "nouveau-modprobe-file-unit-line",
        "class": "injection",
        "role": "nouveau",
        "input": 'nouveau_modprobe_file: "/etc/modprobe.d/x.conf\\nExecStartPre=+/bin/sh -c id"',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nouveau_modprobe_file": "/etc/modprobe.d/x.conf" + INJECTED},
        "expect": "nouveau_modprobe_file is '/etc/modprobe.d/x.conf\\nExecStartPre=+/bin/sh -c id': a path may "
        "hold only letters, digits and _ . - + @ (found '\\n', '=')",
        "changed_zero": True,
    },
    {
        "id": "cuda-home-command-substitution",
        "class": "injection",
        "role": "cuda",
        "input": "cuda_home: /usr/local/cuda$(id) (sourced by every login shell from /etc/profile.d/cuda.sh)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_home": "/usr/local/cuda$(id)"},
        "expect": "cuda_home is '/usr/local/cuda$(id)': a path may hold only letters, digits and _ . - + @ "
        "(found '$', '(', ')'): whitespace, quotes, $, %, ;, : and control characters would change the "
        "unit, profile or command it is written into; use e.g. /usr/local/cuda",
        "changed_zero": True,
    },
    {
        "id": "cuda-profile-file-command-substitution",
        "class": "injection",
        "role": "cuda",
        "input": "cuda_profile_file: /etc/profile.d/$(id).sh",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_profile_file": "/etc/profile.d/$(id).sh"},
        "expect": "cuda_profile_file is '/etc/profile.d/$(id).sh': a path may hold only letters, digits and "
        "_ . - + @ (found '$', '(', ')')",
        "changed_zero": True,
    },
    {
        "id": "conda-prefix-command-substitution",
        "class": "injection",
        "role": "conda_pytorch",
        "input": "conda_pytorch_conda_prefix: /opt/conda$(id) (written into the profile.d snippet)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_conda_prefix": "/opt/conda$(id)"},
        "expect": "conda_pytorch_conda_prefix is '/opt/conda$(id)': a path may hold only letters, digits and "
        "_ . - + @ (found '$', '(', ')')",
        "changed_zero": True,
    },
    {
        "id": "gpu-check-extra-args-rm",
        "class": "injection",
        "role": "gpu_check",
        "input": 'gpu_check_extra_args: ["--steps=30; rm -rf /"]',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_extra_args": ["--steps=30; rm -rf /"]},
        "expect": "gpu_check_extra_args is ['--steps=30; rm -rf /']: element 0 ('--steps=30; rm -rf /'): an "
        'option or a plain value; give a value like "--steps=30"',
        "changed_zero": True,
    },
    {
        "id": "gpu-check-nccl-ifname-rm",
        "class": "injection",
        "role": "gpu_check",
        "input": "gpu_check_nccl_socket_ifname: eth0; rm -rf /",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_check_nccl_socket_ifname": "eth0; rm -rf /"},
        "expect": "gpu_check_nccl_socket_ifname is 'eth0; rm -rf /': an NCCL interface list; give a value "
        'like "eth0" or "^docker,lo"',
        "changed_zero": True,
    },
    {
        "id": "site-lock-dir-rm",
        "class": "injection",
        "role": "site_lock",
        "input": "site_lock_dir: /var/lib/kindling/site.lock; rm -rf /",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "site_lock_dir": "/var/lib/kindling/site.lock; rm -rf /"},
        "expect": "site_lock_dir is '/var/lib/kindling/site.lock; rm -rf /': a path may hold only letters, "
        "digits and _ . - + @ (found ' ', ';')",
        "changed_zero": True,
    },
    {
        "id": "driver-version-rm",
        "class": "injection",
        "role": "nvidia_driver",
        "input": "nvidia_driver_version: 580.105.08; rm -rf / (an apt package version)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_version": "580.105.08; rm -rf /"},
        "expect": "nvidia_driver_version is '580.105.08; rm -rf /': a driver version is "
        'branch.minor[.patch][-debian revision]; give a value like "580.105.08" or "580.105.08-1"',
        "changed_zero": True,
    },
    {
        "id": "dcgm-image-rm",
        "class": "injection",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_image: nvcr.io/nvidia/k8s/dcgm-exporter; rm -rf / (the unit's docker run line)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_image": "nvcr.io/nvidia/k8s/dcgm-exporter; rm -rf /"},
        "expect": "dcgm_exporter_image is 'nvcr.io/nvidia/k8s/dcgm-exporter; rm -rf /': an image repository is "
        "registry/path in lower case, without a tag or digest",
        "changed_zero": True,
    },
    # --- unit-shadow: a name an installed unit not written by Kindling has
    {
        "id": "jupyter-service-name-dbus",
        "class": "unit-shadow",
        "role": "jupyter",
        "input": "jupyter_service_name: dbus (a unit of Debian's dbus package, refused by the list "
        "before the host check)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_service_name": "dbus"},
        "expect": "jupyter_service_name is 'dbus': dbus is a unit of Debian's dbus package "
        "(module_utils/debian_units.py, generated from Debian's Contents index); a unit of that name in "
        "/etc/systemd/system would shadow or replace the system's on every host that has the package, now "
        "or later. Choose a name of its own, e.g. kindling-dbus",
        "changed_zero": True,
    },
    {
        "id": "jupyter-service-name-installed",
        "class": "unit-shadow",
        "role": "jupyter",
        "input": "jupyter_service_name: labsvc, a unit the host has (/etc/systemd/system/labsvc.service, "
        "written by someone else) that no Debian package ships",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_service_name": "labsvc"},
        "prepare": "printf '[Unit]\\nDescription=a unit of the site\\n' > /etc/systemd/system/labsvc.service",
        "cleanup": "rm -f /etc/systemd/system/labsvc.service",
        "expect": "jupyter_service_name is 'labsvc': /etc/systemd/system/labsvc.service "
        "is already installed and was not written by Kindling's jupyter role",
        "changed_zero": True,
    },
    # --- secret: the token's directory, or the token file, open to someone other than root
    {
        "id": "jupyter-token-dir-world-writable",
        "class": "secret",
        "role": "jupyter",
        "input": "the default jupyter_token_file /etc/jupyter/token, with /etc/jupyter made mode 0777 first",
        "playbook": "site.yml",
        "vars": {**NO_GPU},
        "prepare": "mkdir -p /etc/jupyter && chmod 0777 /etc/jupyter",
        "cleanup": "rm -rf /etc/jupyter",
        "expect": "jupyter_token_file is '/etc/jupyter/token': /etc/jupyter is writable by users other than "
        "root (mode 0777); keep secrets in a root-owned directory that only root can write, such as the "
        "default",
        "changed_zero": True,
    },
    {
        "id": "jupyter-token-dir-not-root-owned",
        "class": "secret",
        "role": "jupyter",
        "input": "the default jupyter_token_file, with /etc/jupyter owned by uid 1000 first",
        "playbook": "site.yml",
        "vars": {**NO_GPU},
        "prepare": "mkdir -p /etc/jupyter && chown 1000:1000 /etc/jupyter && chmod 0755 /etc/jupyter",
        "cleanup": "rm -rf /etc/jupyter",
        "expect": "jupyter_token_file is '/etc/jupyter/token': /etc/jupyter is owned by uid 1000, not root",
        "changed_zero": True,
    },
    {
        "id": "jupyter-token-file-planted-link",
        "class": "secret",
        "role": "jupyter",
        "input": "the default jupyter_token_file, with /etc/jupyter/token planted as a link to /tmp/planted",
        "playbook": "site.yml",
        "vars": {**NO_GPU},
        "prepare": "mkdir -p /etc/jupyter && ln -s /tmp/planted /etc/jupyter/token",
        "cleanup": "rm -rf /etc/jupyter",
        "expect": "jupyter_token_file is '/etc/jupyter/token': /etc/jupyter/token is a symbolic link; remove it "
        "so the secret is written to a file of its own",
        "changed_zero": True,
    },
    {
        "id": "jupyter-token-dir-is-a-link",
        "class": "secret",
        "role": "jupyter",
        "input": "jupyter_token_file: /etc/jupyter/secrets/token, with /etc/jupyter/secrets a link to /tmp",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_token_file": "/etc/jupyter/secrets/token"},
        "prepare": "mkdir -p /etc/jupyter && ln -s /tmp /etc/jupyter/secrets",
        "cleanup": "rm -rf /etc/jupyter",
        "expect": "jupyter_token_file is '/etc/jupyter/secrets/token': /etc/jupyter/secrets is a symbolic link, "
        "which someone could point anywhere",
        "changed_zero": True,
    },
    # --- rule: variables of one role that contradict each other
    {
        "id": "driver-version-of-another-branch",
        "class": "rule",
        "role": "nvidia_driver",
        "input": "nvidia_driver_version: 535.183.01 with the default nvidia_driver_branch 580",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_version": "535.183.01"},
        "expect": "nvidia_driver_version is '535.183.01': it is not a release of nvidia_driver_branch '580'; set "
        "nvidia_driver_branch to '535' or pick a 580.x version",
        "changed_zero": True,
    },
    {
        "id": "cuda-extra-lists-cuda-version",
        "class": "rule",
        "role": "cuda",
        "input": 'cuda_versions_extra: ["12.8", "13.0"] with cuda_version 13.0',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_versions_extra": ["12.8", "13.0"]},
        "expect": "cuda_versions_extra is ['12.8', '13.0']: it lists cuda_version '13.0', which is installed "
        "anyway; list only the other toolkits",
        "changed_zero": True,
    },
    {
        "id": "cudnn-tarball-url-without-sha256",
        "class": "rule",
        "role": "cuda",
        "input": "cuda_cudnn_install_method: tarball with cuda_cudnn_tarball_url and no cuda_cudnn_tarball_sha256",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "cuda_cudnn_install_method": "tarball",
            "cuda_cudnn_tarball_url": "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/"
            "linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz",
        },
        "expect": "cuda_cudnn_tarball_sha256 is '': cuda_cudnn_tarball_url is set, so give the archive's sha256 "
        "too (or leave both empty to take them from NVIDIA's manifest)",
        "changed_zero": True,
    },
    {
        "id": "conda-install-method-with-venv-backend",
        "class": "rule",
        "role": "conda_pytorch",
        "input": "conda_pytorch_install_method: conda with conda_pytorch_backend: venv (torch 2.5.1 cu124)",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "conda_pytorch_install_method": "conda",
            "conda_pytorch_backend": "venv",
            "conda_pytorch_version": "2.5.1",
            "conda_pytorch_cuda_variant": "cu124",
        },
        "expect": "conda_pytorch_install_method is 'conda': installing torch with conda needs "
        "conda_pytorch_backend conda (and no conda_pytorch_python to adopt); set it to pip",
        "changed_zero": True,
    },
    {
        "id": "dcgm-native-without-binary",
        "class": "rule",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_mode: native with no dcgm_exporter_binary_url or _sha256",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_mode": "native"},
        "expect": "dcgm_exporter_binary_url is '': dcgm_exporter_mode native needs the URL of a dcgm-exporter "
        "binary (NVIDIA publishes source and container images, not a binary download: build it, or use "
        "container mode)",
        "changed_zero": True,
    },
    {
        "id": "dcgm-port-clashes-with-node-exporter",
        "class": "rule",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_port: 9100, the default dcgm_exporter_node_exporter_port",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "dcgm_exporter_port": 9100},
        "expect": "dcgm_exporter_node_exporter_port is 9100: it is dcgm_exporter_port too; give each exporter a "
        "port of its own",
        "changed_zero": True,
    },
    {
        "id": "jupyter-tls-cert-without-key",
        "class": "rule",
        "role": "jupyter",
        "input": "jupyter_tls_cert: /etc/ssl/certs/jupyter.pem and no jupyter_tls_key",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_tls_cert": "/etc/ssl/certs/jupyter.pem"},
        "expect": "jupyter_tls_key is '': jupyter_tls_cert is set, so set jupyter_tls_key too (a certificate "
        "needs its key), or neither",
        "changed_zero": True,
    },
    {
        "id": "jupyter-notebook-dir-above-home",
        "class": "rule",
        "role": "jupyter",
        "input": "jupyter_notebook_dir: /srv/lab, above jupyter_home /srv/lab/home",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_notebook_dir": "/srv/lab", "jupyter_home": "/srv/lab/home"},
        "expect": "jupyter_notebook_dir is '/srv/lab': it is above jupyter_home, so the service could write "
        "outside its home; put it inside jupyter_home",
        "changed_zero": True,
    },
    {
        "id": "jupyter-home-system-dir",
        "class": "path",
        "role": "jupyter",
        "input": "jupyter_home: /etc (the role would chown it to the jupyter user)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_home": "/etc", "jupyter_notebook_dir": "/etc/notebooks"},
        "expect": "jupyter_home is '/etc': /etc is a system directory, and the role would make it its own "
        "(owner, mode, contents); give a directory of its own such as /var/lib/jupyter",
        "changed_zero": True,
    },
    {
        "id": "jupyter-home-another-users",
        "class": "host",
        "role": "jupyter",
        "input": "jupyter_home: /srv/alice, an existing directory of another user (uid 1000)",
        "playbook": "site.yml",
        "prepare": "mkdir -p /srv/alice && chown 1000:1000 /srv/alice",
        "cleanup": "rm -rf /srv/alice",
        "vars": {
            **NO_GPU,
            "jupyter_home": "/srv/alice",
            "jupyter_notebook_dir": "/srv/alice/notebooks",
        },
        "expect": "jupyter_home is '/srv/alice': it already exists, owned by uid 1000, and the role would hand "
        "it to jupyter; give a directory of its own, such as the default",
        "changed_zero": True,
    },
    {
        "id": "jupyter-user-existing-account",
        "class": "privilege",
        "role": "jupyter",
        "input": "jupyter_user: daemon (an existing system account the role would rewrite)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_user": "daemon"},
        "expect": "jupyter_user is 'daemon': that account already exists with home /usr/sbin (uid 1), not "
        "jupyter_home /var/lib/jupyter: the role would rewrite another account. Choose a name of its own, "
        "such as the default",
        "changed_zero": True,
    },
    {
        "id": "jupyter-user-groups-docker",
        "class": "privilege",
        "role": "jupyter",
        "input": "jupyter_user_groups: [docker] (root for every notebook user)",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_user_groups": ["docker"]},
        "expect": "jupyter_user_groups is ['docker']: docker would give everyone who can open a notebook root "
        "on the host (Docker's post-install guide: the group grants privileges equivalent to root)",
        "changed_zero": True,
    },
    {
        "id": "jupyter-tls-files-missing",
        "class": "host",
        "role": "jupyter",
        "input": "jupyter_tls_cert and jupyter_tls_key naming files the host does not have",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "jupyter_ip": "0.0.0.0",
            "jupyter_tls_cert": "/etc/ssl/certs/lab.pem",
            "jupyter_tls_key": "/etc/ssl/private/lab.key",
        },
        "expect": "jupyter_tls_cert is '/etc/ssl/certs/lab.pem': there is no such file on this host; put it "
        "there first",
        "changed_zero": True,
    },
    # --- privilege: root as the service user (the role rewrites that account's home and shell)
    {
        "id": "jupyter-user-root",
        "class": "privilege",
        "role": "jupyter",
        "input": "jupyter_user: root",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "jupyter_user": "root"},
        "expect": "jupyter_user is 'root': the server runs whatever code its users send, so it must not run "
        "as root, and the role would set root's home to jupyter_home and its shell to /usr/sbin/nologin; "
        "keep the default jupyter, a system user of its own",
        "changed_zero": True,
    },
    {
        "id": "dcgm-user-root",
        "class": "privilege",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_mode: native with dcgm_exporter_user: root (and a pinned binary)",
        "playbook": "site.yml",
        "vars": {
            **NO_GPU,
            "dcgm_exporter_mode": "native",
            "dcgm_exporter_binary_url": "https://example.com/dcgm-exporter",
            "dcgm_exporter_binary_sha256": "0" * 64,
            "dcgm_exporter_user": "root",
        },
        "expect": "dcgm_exporter_user is 'root': the role would set root's shell to /usr/sbin/nologin and its "
        "home to /nonexistent; keep the default dcgm-exporter, a system user of its own",
        "changed_zero": True,
    },
    # --- stack: what needs only the inventory is judged in stage 1 on a host without a GPU too
    # (issue 34: the repository check used to run only on the GPU path)
    {
        "id": "repo-distro-unknown-without-gpu",
        "class": "stack",
        "role": "nvidia_driver",
        "input": "nvidia_driver_repo_distro: ubuntu1804 on a host without a GPU",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_repo_distro": "ubuntu1804"},
        "expect": "[unknown-repository] NVIDIA's CUDA repository for ubuntu1804 is not in the vendor "
        "catalogue (known: debian12, ubuntu2004, ubuntu2204, ubuntu2404)",
        "changed_zero": True,
    },
    # --- dict-key: gpu_preflight's own dicts, checked by its input check in stage 1's second
    # play (its own run: a batch alias must not reach that play)
    {
        "id": "dict-key-supported-os",
        "class": "dict-key",
        "role": "gpu_preflight",
        "input": 'gpu_preflight_supported_os: {Ubunto: ["22.04"]}',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "gpu_preflight_supported_os": {"Ubunto": ["22.04"]}},
        "expect": "gpu_preflight_supported_os is {'Ubunto': ['22.04']}: unknown key 'Ubunto': did you mean "
        "Ubuntu? (keys: Ubuntu, Debian)",
        "changed_zero": True,
    },
    # --- stack-defaults: one key of the stack changed; another role's default now refuses it
    {
        "id": "only-driver-branch-535",
        "class": "stack-defaults",
        "role": "nvidia_driver",
        "input": "only nvidia_driver_branch: \"535\"; cuda's default cuda_version 13.0 and conda_pytorch's "
        "default cu130 wheel need driver >= 580",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "nvidia_driver_branch": "535"},
        "expect": "[driver-too-old-for-cuda] Driver 535 is too old for CUDA 13.0, which needs Linux driver >= "
        "580.65.06; raise nvidia_driver_branch to 580 or newer, or lower cuda_version to 12.2. Fix: "
        'nvidia_driver_branch: "580"',
        "changed_zero": True,
    },
    {
        "id": "only-cuda-version-12.8",
        "class": "stack-defaults",
        "role": "cuda",
        "input": 'only cuda_version: "12.8"; conda_pytorch\'s default torch 2.14.1 cu130 is built with CUDA 13',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_version": "12.8"},
        "expect": "[torch-cuda-major-mismatch] torch 2.14.1 cu130 is built with CUDA 13.0 but the toolkit is "
        "CUDA 12.8; torch.utils.cpp_extension refuses to build CUDA extensions across CUDA majors; set "
        'conda_pytorch_cuda_variant: "cu126".',
        "changed_zero": True,
    },
    {
        "id": "only-cuda-version-13.2",
        "class": "stack-defaults",
        "role": "cuda",
        "input": 'only cuda_version: "13.2"; nvidia_driver\'s default branch 580 is too old for it',
        "playbook": "site.yml",
        "vars": {**NO_GPU, "cuda_version": "13.2"},
        "expect": "[driver-too-old-for-cuda] Driver 580 is too old for CUDA 13.2, which needs Linux driver >= "
        "595.45.04",
        "changed_zero": True,
    },
    {
        "id": "only-torch-variant-cu126",
        "class": "stack-defaults",
        "role": "conda_pytorch",
        "input": "only conda_pytorch_cuda_variant: cu126; cuda's default toolkit is CUDA 13.0",
        "playbook": "site.yml",
        "vars": {**NO_GPU, "conda_pytorch_cuda_variant": "cu126"},
        # The fix names cu130, not the newer cu132: that wheel would need driver 595, and the
        # default branch is 580.
        "expect": "[torch-cuda-major-mismatch] torch 2.14.1 cu126 is built with CUDA 12.6 but the toolkit is "
        "CUDA 13.0; torch.utils.cpp_extension refuses to build CUDA extensions across CUDA majors; set "
        'conda_pytorch_cuda_variant: "cu130".',
        "changed_zero": True,
    },
]

# Cases run together: one `site.yml --check` over several inventory aliases of the one test
# host, each alias with one bad input as its host variables (test_bad_inputs.py's
# test_batch_case_is_refused_in_one_site_check). Each alias must be refused in stage 1 with
# its own message; the run must never reach stage 2 and the host must stay as it was.
SERIAL_FIX = (
    "give a whole number of hosts per batch (1 or more), or a percentage from 1% to 100% such as "
    '"25%", or a list of those such as [1, "25%", "100%"]'
)
APT_PREFERENCES_RULE = (
    "apt reads /etc/apt/preferences.d files that \"have either no or 'pref' as filename extension and "
    'only contain alphanumeric, hyphen (-), underscore (_) and period (.) characters"; any other file is '
    "ignored with only a notice, and the pin never applies (apt_preferences(5))"
)
PRIVILEGED_PORT = (
    "ports below 1024 are privileged (only root may listen on them), and the service runs as "
    "jupyter_user, not root; use a port from 1024 to 65535 such as the default 8888, and put a reverse "
    "proxy in front for 80 or 443"
)


def system_unit_case(name: str, package: str) -> Dict[str, object]:
    return {
        "id": f"system-unit-{name}",
        "class": "system-unit",
        "role": "jupyter",
        "input": f"jupyter_service_name: {name} (Debian's {package} ships it; the test host has no such unit)",
        "vars": {"jupyter_service_name": name},
        "expect": f"jupyter_service_name is '{name}': {name} is a unit of Debian's {package} package "
        "(module_utils/debian_units.py, generated from Debian's Contents index); a unit of that name in "
        "/etc/systemd/system would shadow or replace the system's on every host that has the package, now "
        f"or later. Choose a name of its own, e.g. kindling-{name}",
    }


BATCH_CASES: List[Dict[str, object]] = [
    # --- count: kindling_serial, checked in stage 1 (which itself runs without serial)
    {
        "id": "serial-word",
        "class": "count",
        "role": "inventory",
        "input": "kindling_serial: two",
        "vars": {"kindling_serial": "two"},
        "expect": f"kindling_serial is 'two': {SERIAL_FIX}",
    },
    {
        "id": "serial-zero",
        "class": "count",
        "role": "inventory",
        "input": "kindling_serial: 0",
        "vars": {"kindling_serial": 0},
        "expect": f"kindling_serial is 0: it must be 1 or more (0 would leave no hosts per batch); {SERIAL_FIX}",
    },
    {
        "id": "serial-negative",
        "class": "count",
        "role": "inventory",
        "input": "kindling_serial: -2",
        "vars": {"kindling_serial": -2},
        "expect": f"kindling_serial is -2: it must be 1 or more (-2 would leave no hosts per batch); {SERIAL_FIX}",
    },
    {
        "id": "serial-over-100-percent",
        "class": "count",
        "role": "inventory",
        "input": 'kindling_serial: "150%"',
        "vars": {"kindling_serial": "150%"},
        "expect": f"kindling_serial is '150%': a percentage must be from 1% to 100%; {SERIAL_FIX}",
    },
    {
        "id": "serial-list-element",
        "class": "count",
        "role": "inventory",
        "input": 'kindling_serial: [1, "0%"]',
        "vars": {"kindling_serial": [1, "0%"]},
        "expect": f"kindling_serial is [1, '0%']: element 1 ('0%'): a percentage must be from 1% to 100%; "
        f"{SERIAL_FIX}",
    },
    # --- consumer: a file another program reads, named so that it never reads it
    {
        "id": "consumer-driver-pin-conf",
        "class": "consumer",
        "role": "nvidia_driver",
        "input": "nvidia_driver_preferences_file: /etc/apt/preferences.d/kindling-nvidia.conf",
        "vars": {"nvidia_driver_preferences_file": "/etc/apt/preferences.d/kindling-nvidia.conf"},
        "expect": "nvidia_driver_preferences_file is '/etc/apt/preferences.d/kindling-nvidia.conf': "
        f"{APT_PREFERENCES_RULE}; e.g. /etc/apt/preferences.d/kindling-nvidia-driver",
    },
    {
        "id": "consumer-cudnn-pin-list",
        "class": "consumer",
        "role": "cuda",
        "input": "cuda_cudnn_preferences_file: /etc/apt/preferences.d/cudnn.list",
        "vars": {"cuda_cudnn_preferences_file": "/etc/apt/preferences.d/cudnn.list"},
        "expect": "cuda_cudnn_preferences_file is '/etc/apt/preferences.d/cudnn.list': "
        f"{APT_PREFERENCES_RULE}; e.g. /etc/apt/preferences.d/kindling-cudnn",
    },
    {
        "id": "consumer-fabric-manager-pin-derived",
        "class": "consumer",
        "role": "nvidia_driver",
        "input": "nvidia_driver_preferences_file: /etc/apt/preferences.d/kindling.pref (legal; the fabric "
        "manager's pin derived from it, 00-kindling.pref-fabricmanager, is not)",
        "vars": {"nvidia_driver_preferences_file": "/etc/apt/preferences.d/kindling.pref"},
        "expect": "nvidia_driver_preferences_file is '/etc/apt/preferences.d/kindling.pref': the role derives "
        "the fabric manager's pin from it, named 00-kindling.pref-fabricmanager, which apt preferences "
        f"ignores: {APT_PREFERENCES_RULE}; e.g. /etc/apt/preferences.d/kindling-nvidia-driver",
    },
    {
        "id": "consumer-sources-one-line-name",
        "class": "consumer",
        "role": "cuda",
        "input": "cuda_distro_sources_file: /etc/apt/sources.list.d/cuda.list (Kindling writes deb822)",
        "vars": {"cuda_distro_sources_file": "/etc/apt/sources.list.d/cuda.list"},
        "expect": "cuda_distro_sources_file is '/etc/apt/sources.list.d/cuda.list': apt reads "
        '/etc/apt/sources.list.d files whose names "may only contain letters (a-z and A-Z), digits (0-9), '
        'underscore (_), hyphen (-) and period (.) characters" and that end in ".list or .sources depending '
        'on the contained style"; Kindling writes the deb822 style, so the name ends in .sources '
        "(sources.list(5)); e.g. /etc/apt/sources.list.d/kindling-cuda-distro.sources",
    },
    {
        "id": "consumer-profile-bash",
        "class": "consumer",
        "role": "cuda",
        "input": "cuda_profile_file: /etc/profile.d/cuda.bash",
        "vars": {"cuda_profile_file": "/etc/profile.d/cuda.bash"},
        "expect": "cuda_profile_file is '/etc/profile.d/cuda.bash': login shells read only /etc/profile.d/*.sh "
        "(bash(1) INVOCATION; Debian's /etc/profile sources `/etc/profile.d/*.sh`); e.g. /etc/profile.d/cuda.sh",
    },
    # --- listener: wildcard addresses, privileged ports, two listeners on one port
    {
        "id": "listener-dcgm-wildcard-v4",
        "class": "listener",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_bind_address: 0.0.0.0 without dcgm_exporter_allow_insecure_bind",
        "vars": {"dcgm_exporter_bind_address": "0.0.0.0"},
        "expect": "dcgm_exporter_bind_address is '0.0.0.0': a wildcard address listens on every interface of "
        "the host, publishing dcgm-exporter's unauthenticated GPU metrics (a Docker-published port also "
        "bypasses the host's INPUT firewall rules) on port 9400 to every network it is on. Give the host's "
        "own address on the network your Prometheus scrapes from (e.g. 10.0.0.5) and firewall the port, keep "
        "the default 127.0.0.1, or set dcgm_exporter_allow_insecure_bind: true",
    },
    {
        "id": "listener-dcgm-wildcard-v6",
        "class": "listener",
        "role": "dcgm_exporter",
        "input": 'dcgm_exporter_bind_address: "::" without dcgm_exporter_allow_insecure_bind',
        "vars": {"dcgm_exporter_bind_address": "::"},
        "expect": "dcgm_exporter_bind_address is '::': a wildcard address listens on every interface of the "
        "host",
        "expect_also": ["or set dcgm_exporter_allow_insecure_bind: true"],
    },
    {
        "id": "listener-jupyter-port-80",
        "class": "listener",
        "role": "jupyter",
        "input": "jupyter_port: 80 (Jupyter runs as jupyter_user)",
        "vars": {"jupyter_port": 80},
        "expect": f"jupyter_port is 80: {PRIVILEGED_PORT}",
    },
    {
        "id": "listener-jupyter-port-443",
        "class": "listener",
        "role": "jupyter",
        "input": "jupyter_port: 443",
        "vars": {"jupyter_port": 443},
        "expect": f"jupyter_port is 443: {PRIVILEGED_PORT}",
    },
    {
        "id": "listener-two-on-one-port",
        "class": "listener",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_port: 8888, Jupyter's default port on the same host",
        "vars": {"dcgm_exporter_port": 8888},
        "expect": "dcgm_exporter_port is 8888: jupyter_port is 8888 too: JupyterLab already listens on that "
        "port of this host, so dcgm-exporter's metrics endpoint could not start; give dcgm_exporter_port a "
        "port of its own (e.g. 8889), or change jupyter_port",
    },
    {
        "id": "listener-wildcard-opt-in-warns",
        "class": "listener",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_bind_address: 0.0.0.0 with dcgm_exporter_allow_insecure_bind: true is accepted "
        "with a warning naming what is exposed (the alias is refused for its kindling_serial: 0)",
        "vars": {
            "dcgm_exporter_bind_address": "0.0.0.0",
            "dcgm_exporter_allow_insecure_bind": True,
            "kindling_serial": 0,
        },
        "expect": "kindling_serial is 0: it must be 1 or more",
        "expect_in_run": [
            "dcgm_exporter_bind_address is '0.0.0.0': port 9400 on every interface of this host serves "
            "dcgm-exporter's unauthenticated GPU metrics"
        ],
        "forbid": ["a wildcard address listens on every interface"],
    },
    # --- unknown-variable: a misspelled name, refused in stage 1 (site_inputs) with the nearest
    {
        "id": "unknown-variable-driver-branch",
        "class": "unknown-variable",
        "role": "nvidia_driver",
        "input": 'nvidia_driver_brach: "570"',
        "vars": {"nvidia_driver_brach": "570"},
        "expect": f"nvidia_driver_brach is not a variable the nvidia_driver role reads: did you mean "
        f"nvidia_driver_branch? {UNKNOWN_FIX}",
    },
    {
        "id": "unknown-variable-kindling-serial",
        "class": "unknown-variable",
        "role": "inventory",
        "input": "kindling_serail: 2",
        "vars": {"kindling_serail": 2},
        "expect": f"kindling_serail is not a variable Kindling reads: did you mean kindling_serial? {UNKNOWN_FIX}",
    },
    {
        "id": "unknown-variable-jupyter-port",
        "class": "unknown-variable",
        "role": "jupyter",
        "input": "jupyter_prot: 8889",
        "vars": {"jupyter_prot": 8889},
        "expect": f"jupyter_prot is not a variable the jupyter role reads: did you mean jupyter_port? {UNKNOWN_FIX}",
    },
    {
        "id": "unknown-variable-opt-out",
        "class": "unknown-variable",
        "role": "inventory",
        "input": 'jupyter_mylab_theme: dark with kindling_allow_unknown_variables: ["jupyter_mylab_"] is let '
        "through (the alias is refused for its kindling_serial: 0)",
        "vars": {
            "jupyter_mylab_theme": "dark",
            "kindling_allow_unknown_variables": ["jupyter_mylab_"],
            "kindling_serial": 0,
        },
        "expect": "kindling_serial is 0: it must be 1 or more",
        "forbid": ["jupyter_mylab_theme is not a variable"],
    },
    # --- dict-key: a key a dict input does not declare, refused naming the nearest known one
    # (gpu_preflight's dicts are checked in stage 1's second play, which a batch alias must not
    # reach: their case runs on its own, above)
    {
        "id": "dict-key-miniforge-sha256-arch",
        "class": "dict-key",
        "role": "conda_pytorch",
        "input": "conda_pytorch_miniforge_sha256: {x86-64: <sha256>}",
        "vars": {"conda_pytorch_miniforge_sha256": {"x86-64": MINIFORGE_SHA256}},
        "expect": f"conda_pytorch_miniforge_sha256 is {{'x86-64': '{MINIFORGE_SHA256}'}}: unknown key 'x86-64': "
        "did you mean x86_64? (keys: x86_64, aarch64)",
    },
    {
        "id": "dict-key-dcgm-counter-required",
        "class": "dict-key",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_counters: [{feild: DCGM_FI_DEV_GPU_UTIL, type: gauge}], a required key misspelled",
        "vars": {"dcgm_exporter_counters": [{"feild": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge"}]},
        "expect": "dcgm_exporter_counters is [{'feild': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge'}]: element 0 "
        "({'feild': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge'}): unknown key 'feild': did you mean field? "
        "(keys: field, type, help)",
    },
    {
        "id": "dict-key-dcgm-counter",
        "class": "dict-key",
        "role": "dcgm_exporter",
        "input": "dcgm_exporter_counters: [{field: DCGM_FI_DEV_GPU_UTIL, tpye: gauge}]",
        "vars": {"dcgm_exporter_counters": [{"field": "DCGM_FI_DEV_GPU_UTIL", "tpye": "gauge"}]},
        "expect": "dcgm_exporter_counters is [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'tpye': 'gauge'}]: element 0 "
        "({'field': 'DCGM_FI_DEV_GPU_UTIL', 'tpye': 'gauge'}): unknown key 'tpye': did you mean type? "
        "(keys: field, type, help)",
    },
    # --- system-unit: the operating system's unit names, refused on every host
    system_unit_case("ssh", "openssh-server"),
    system_unit_case("cron", "cron"),
    system_unit_case("docker", "docker.io"),
    system_unit_case("containerd", "containerd"),
    system_unit_case("networking", "ifupdown"),
]
for _case in BATCH_CASES:
    _case.update(playbook="site.yml", batch=True, changed_zero=True)
CASES += BATCH_CASES

# Faults, check mode and exposure. Each names the test that proves it; the ones in
# tests/reliability run in this suite, the Molecule ones in `make molecule`.
FAULTS_TEST = "tests/reliability/test_faults.py"
FAULTS: List[Dict[str, str]] = [
    {
        "id": "dpkg-interrupted",
        "input": "the driver install killed while dpkg runs the driver's postinst (the DKMS build), controller and dpkg both",
        "expect": "dpkg is left half-configured; the next run finishes it with dpkg --configure -a (and says so), installs and holds the driver; the run after that reports changed=0",
        "test": f"{FAULTS_TEST}::test_install_killed_mid_dpkg_is_repaired_by_the_next_run",
    },
    {
        "id": "repo-unreachable-fresh",
        "input": "the CUDA repository does not answer, on a fresh host",
        "expect": "stops at once naming the URL (The CUDA repository URL could not be reached); the host snapshot is unchanged",
        "test": f"{FAULTS_TEST}::test_unreachable_repository_on_a_fresh_host_changes_nothing",
    },
    {
        "id": "repo-unreachable-converged",
        "input": "the CUDA repository does not answer, on a host already set up",
        "expect": "same message; sources, keyrings and packages unchanged; apt-get update and installs from the working sources still work",
        "test": f"{FAULTS_TEST}::test_unreachable_repository_on_a_converged_host_keeps_the_working_sources",
    },
    {
        "id": "rotated-key-no-pubkey",
        "input": "the repository signed by a key the host does not trust (a real apt NO_PUBKEY, as after NVIDIA's 2022 rotation)",
        "expect": "the new source is tried in a scratch directory first; apt's NO_PUBKEY is shown with the fix; apt's sources and keyrings unchanged, apt-get update still clean",
        "test": f"{FAULTS_TEST}::test_rotated_repository_key_no_pubkey_changes_nothing",
    },
    {
        "id": "wrong-key-fingerprint",
        "input": "a repository key whose fingerprint is not the expected one",
        "expect": "refused before apt trusts it; no sources, keyring or packages left behind",
        "test": "molecule/driver_cuda_bad_input",
    },
    {
        "id": "tampered-download",
        "input": "the cuDNN tarball with a wrong sha256",
        "expect": "refused, the partial file removed, nothing installed",
        "test": "molecule/driver_cuda_bad_input",
    },
    {
        "id": "dpkg-lock-held",
        "input": "dpkg's locks held by another process (named like unattended-upgrades) for longer than nvidia_driver_apt_lock_timeout (10 s)",
        "expect": "waits the 10 s, then fails naming the lock, the holder's pid and command and the variable to raise; the host snapshot is unchanged",
        "test": f"{FAULTS_TEST}::test_held_dpkg_lock_waits_for_the_timeout_then_fails_naming_the_holder",
    },
    {
        "id": "dpkg-lock-released",
        "input": "dpkg's locks held for 45 s from before the run starts, timeout 120 s",
        "expect": "the run waits (the module reports seconds waited), then carries on and converges (changed=0)",
        "test": f"{FAULTS_TEST}::test_dpkg_lock_released_within_the_timeout_is_waited_for",
    },
    {
        "id": "held-driver-vs-upgrades",
        "input": "a newer 535 point release published; apt-get upgrade, then unattended-upgrade allowed the repository's origin",
        "expect": "the held driver stays at 535.183.01-1 (the candidate is 535.216.03-1); an unheld package from the same repository is upgraded by both, so they did run",
        "test": f"{FAULTS_TEST}::test_held_driver_survives_apt_get_upgrade_and_unattended_upgrade",
    },
    {
        "id": "held-driver-vs-branch-switch",
        "input": "apt-get upgrade and a manual apt install of another branch, on a host with branch 510 held",
        "expect": "the installed driver version does not move; a branch change happens only through nvidia_driver_branch",
        "test": "molecule/nvidia_driver_upgrade (prepare.yml, tests/test_upgrade.py)",
    },
    {
        "id": "concurrent-runs",
        "input": "two site runs against the same host at once",
        "expect": "the second refuses, naming the run that holds the lock, or waits with site_lock_wait_seconds; they never interleave",
        "test": "tests/unit/test_site_lock.py",
    },
    {
        "id": "dead-run-lock",
        "input": "a run killed mid-way left its lock",
        "expect": "the next run from the same controller takes it over with a warning; from another controller after site_lock_stale_after or with site_lock_break",
        "test": "tests/unit/test_site_lock.py",
    },
]

CHECKS: List[Dict[str, str]] = [
    {
        "id": "check-mode-site-fresh-host",
        "input": "ansible-playbook playbooks/site.yml --check --diff on a fresh Debian 12 host (the default scenario's variables)",
        "expect": "succeeds, reports the changes it would make (driver packages, repository entry, venv, Jupyter), and the host snapshot is unchanged",
        "test": "tests/reliability/test_check_mode.py",
    },
    {
        "id": "check-mode-per-stage",
        "input": "--check of the driver, cuda, jupyter and dcgm_exporter stages on fresh hosts",
        "expect": "each succeeds and reports what it would do",
        "test": "molecule/nvidia_driver, molecule/cuda (check step), molecule/jupyter, molecule/dcgm_exporter (prepare.yml)",
    },
    {
        "id": "gpu-stages-skip-without-gpu",
        "input": "the driver and cuda stages with gpu_required: false on a host without a GPU, NVIDIA's repository pointed at a closed port",
        "expect": "both succeed, each saying it skipped itself and why; the repository is never contacted and the host snapshot is unchanged",
        "test": "tests/reliability/test_gpu_stages_skip.py",
    },
    {
        "id": "every-role-in-one-play",
        "input": "a user's own play with every role in site.yml's order (tests/reliability/every_role.yml), --check, on a host without a GPU and without /etc/modprobe.d",
        "expect": "each role runs, or says why it skips and ends itself (nouveau, the GPU stages, gpu_check; site_lock in check mode); jupyter and dcgm_exporter still run after nouveau's skip; the host snapshot is unchanged",
        "test": "tests/reliability/test_roles_compose.py",
    },
    {
        "id": "idempotence-every-scenario",
        "input": "a second converge of every Molecule scenario",
        "expect": "changed=0 (Molecule's idempotence step, present in every scenario's sequence)",
        "test": "molecule/* idempotence; tests/unit/test_molecule_scenarios.py",
    },
]

EXPOSURE: List[Dict[str, str]] = [
    {
        "id": "loopback-only",
        "input": "the whole of site.yml with default variables",
        "expect": "every listening TCP socket of the stack is on 127.0.0.1 or ::1",
        "test": "molecule/default/tests/test_site.py",
    },
    {
        "id": "jupyter-token-secret",
        "input": "the generated Jupyter token",
        "expect": "root-only file (0600); not in the journal; in no world-readable file",
        "test": "molecule/default/tests/test_site.py, molecule/jupyter",
    },
    {
        "id": "jupyter-token-not-in-ansible-output",
        "input": "the Jupyter converge and idempotence runs at verbosity 3 (-vvv, module arguments shown)",
        "expect": "the token appears nowhere in Ansible's output",
        "test": "molecule/jupyter/tests/test_jupyter.py",
    },
    {
        "id": "downloads-verified",
        "input": "every download: apt repositories, the cuDNN tarball, the Miniforge installer, wheels",
        "expect": "signed repositories trusted through signed-by keyrings with checked fingerprints; files by sha256 (a wrong one is refused: tampered-download, miniforge-sha256-malformed)",
        "test": "molecule/driver_cuda_bad_input, tests/reliability/test_bad_inputs.py",
    },
    {
        "id": "systemd-hardening",
        "input": "systemd-analyze security of the units Kindling writes",
        "expect": "each unit's exposure score is at or below its threshold and equals the one recorded in docs/SYSTEMD_HARDENING.md",
        "test": "molecule/jupyter/tests/test_jupyter.py, molecule/dcgm_exporter/tests/test_dcgm_exporter.py",
    },
]

SECTIONS = [
    ("Faults, each followed by a run that converges", FAULTS),
    ("Check mode and idempotence", CHECKS),
    ("Secrets and exposure", EXPOSURE),
]


def case_count() -> int:
    return len(CASES) + sum(len(rows) for _, rows in SECTIONS)


def also_through_site(case: Dict[str, object]) -> bool:
    """A stage-playbook case that is run a second time, through site.yml."""
    return case["playbook"] != "site.yml" and case.get("site", True) is not False


SITE_CASES = [case for case in CASES if also_through_site(case)]
SINGLE_CASES = [case for case in CASES if not case.get("batch")]


def through_site_count() -> int:
    """The cases refused by site.yml before its first change: their own playbook, or the second run."""
    return sum(1 for case in CASES if case["playbook"] == "site.yml" or also_through_site(case))


def count_by(field: str, order: List[str]) -> List[tuple]:
    return [(key, sum(1 for case in CASES if case[field] == key)) for key in order]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")


def render_markdown(results: Optional[Dict[str, str]] = None) -> str:
    """docs/RELIABILITY.md, from the lists above.

    results maps a case id to the outcome of a run (tests/reliability/conftest.py writes a
    copy with this run's outcomes to reports/reliability/); the committed doc shows "pass",
    which CI holds true: a failing row keeps a change from landing.
    """

    def result(case_id: str) -> str:
        return (results or {}).get(case_id, "pass")

    def site_column(case: Dict[str, object]) -> str:
        if case.get("batch"):
            return "its own playbook, one alias of one run"
        if case["playbook"] == "site.yml":
            return "its own playbook"
        if also_through_site(case):
            return "also, before stage 2"
        return f"no: {case['site_why']}"

    lines = [
        "# Reliability and security cases",
        "",
        "Generated from `tests/reliability/cases.py` (`python tests/reliability/cases.py`); a",
        "test fails when this file is out of step with it. Every row is proved by the test it",
        "names, which runs in `make test` (CI); a row whose test fails keeps the change from",
        "landing, so the result column of this committed copy is `pass`. Each run of",
        "`make reliability` also writes `reports/reliability/RELIABILITY.md` with that run's",
        "own outcomes of the tests/reliability rows.",
        "",
        f"{case_count()} cases in all.",
        "",
        f"## Bad inputs ({len(CASES)} cases)",
        "",
        "Each runs against a fresh Debian 12 test host; the test asserts the exact message and",
        "that a snapshot of the host (files under /etc/apt, /etc/modprobe.d, /usr/local, /opt,",
        "/var/lib/kindling and more, the package list, holds, users and unit files) is the same",
        "before and after.",
        "",
        f"{through_site_count()} of {len(CASES)} cases are refused before the first change through "
        f"site.yml: {sum(1 for c in CASES if c['playbook'] == 'site.yml')} run site.yml as their own "
        f"playbook, and {len(SITE_CASES)} that run a stage playbook are run through site.yml as well "
        "(`test_bad_input_is_refused_by_site_yml_before_stage_2`: the same message, stage 2 never "
        "starts, changed=0, the snapshot unchanged).",
        "",
        "| class | what is wrong | cases |",
        "|---|---|---|",
    ]
    for name, count in count_by("class", list(CLASSES)):
        lines.append(f"| {name} | {_cell(CLASSES[name])} | {count} |")
    lines += [
        "",
        "| role | cases |",
        "|---|---|",
    ]
    for name, count in count_by("role", ROLES):
        lines.append(f"| {name} | {count} |")
    lines += [
        "",
        "| case | class | role | input | the user sees | through site.yml | test | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        lines.append(
            f"| {case['id']} | {case['class']} | {case['role']} | {_cell(case['input'])} "
            f"| {_cell(case['expect'])} | {_cell(site_column(case))} "
            f"| tests/reliability/test_bad_inputs.py{'::batch' if case.get('batch') else ''}"
            f"[{case['id']}] | {result(str(case['id']))} |"
        )
    for title, rows in SECTIONS:
        lines += [
            "",
            f"## {title} ({len(rows)} cases)",
            "",
            "| case | input or fault | expected behaviour | test | result |",
            "|---|---|---|---|---|",
        ]
        for case in rows:
            lines.append(
                f"| {case['id']} | {case['input']} | {case['expect']} | {case['test']} "
                f"| {result(case['id'])} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import pathlib

    out = pathlib.Path(__file__).resolve().parents[2] / "docs" / "RELIABILITY.md"
    out.write_text(render_markdown())
    print(f"wrote {out} ({case_count()} cases)")
