"""Every role variable's shape and each role's input rules, checked before any change.

The ``role_inputs_plan`` module (library/role_inputs_plan.py, with its controller-side action in
action_plugins/) runs ``check_role`` once per role in stage 1 of site.yml, for every
host, with the effective values (the user's, or the role's defaults), and again as the
first step of the role itself, so a stage playbook run alone is checked too (where the
values are the ones stage 1 checked, its check stands: the action plugin's ``reuse``).

``check_role`` does, in order and without touching the host:
1. argument_specs' own validation (Ansible's types and choices, its messages);
2. the shapes below (module_utils/input_types.py), one per variable;
3. the role's rules, which relate several variables (each names the one that is wrong);
4. the host checks: a unit name that an installed unit not written by Kindling already
   has, and a secret's directory that someone other than root could plant a link in.

Every message names one variable, shows its value (hidden for no_log ones) and the fix.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ansible.module_utils.input_types import (
    AbsPath,
    Choice,
    ConsumedFile,
    DictOf,
    Fingerprint,
    Float,
    Free,
    Int,
    IPAddress,
    ListenPort,
    ListOf,
    Name,
    Pattern,
    Port,
    Record,
    Sha256,
    Shape,
    Spec,
    Text,
    UnitName,
    Url,
    UserName,
    check_all,
    is_wildcard,
    problem_message,
)

Finding = Tuple[str, str]  # (variable, message)

# The role_inputs_plan module's arguments (library/role_inputs_plan.py documents them); its action
# plugin validates a task's against the same spec.
ARGUMENT_SPEC: Dict[str, Any] = {
    "role": {"type": "str"},
    "role_path": {"type": "path"},
    "context_vars": {"type": "list", "elements": "str", "default": []},
    "entry_point": {"type": "str", "default": "main"},
    "spec": {"type": "dict"},
    "values": {"type": "dict", "default": {}},
    "secret_values": {"type": "dict", "default": {}, "no_log": True},
    "context": {"type": "dict", "default": {}},
    "checks": {"type": "str", "choices": ["all", "host"], "default": "all"},
    "reuse": {"type": "dict"},
}

SIGNED = (
    "apt checks the repository's signature with the pinned key, so a mirror over http is as safe"
)
CHECKSUMMED = "the file is checked against its pinned sha256 before use"
FINGERPRINTED = "the key is trusted only when its fingerprint is the pinned one"
APT_LOCK = Int(0, 3600, "seconds", "how long to wait for dpkg's lock")
CACHE_TIME = Int(0, 604800, "seconds", "at most a week")
STATE_DIR = AbsPath(example="/var/lib/kindling", own_dir=True)


def driver_branch(empty_ok: bool = False) -> Pattern:
    return Pattern(
        r"[0-9]{3}", '"580"', "a driver branch is three digits, quoted", empty_ok=empty_ok
    )


def release(example: str) -> Pattern:
    return Pattern(r"[0-9]+\.[0-9]+\.[0-9]+", example, "a release is X.Y.Z")


def apt_preferences_file(name: str, derived=()) -> AbsPath:
    # The consumer's rule (input_types.CONSUMERS): apt_preferences(5).
    return ConsumedFile(
        "apt_preferences", example=f"/etc/apt/preferences.d/{name}", derived=derived
    )


def apt_sources_file(name: str) -> AbsPath:
    return ConsumedFile("apt_sources", example=f"/etc/apt/sources.list.d/{name}")


# roles/nvidia_driver/tasks/fabric-manager.yml pins the fabric manager in
# <dir>/00-<name>-fabricmanager, next to the driver's pin.
FABRIC_MANAGER_PIN = ("the fabric manager's pin", lambda base: f"00-{base}-fabricmanager")


def cuda_repository_shapes(prefix: str) -> Dict[str, Shape]:
    """NVIDIA's CUDA repository overrides: nvidia_driver_repo_* and the cuda role's
    cuda_repo_* (which default to them). Each empty means the catalogue's value."""
    return {
        f"{prefix}base_url": Url(
            ("https", "file"),
            http_anywhere=SIGNED,
            empty_ok=True,
            example="https://developer.download.nvidia.com/compute/cuda/repos",
        ),
        f"{prefix}distro": Pattern(
            r"(ubuntu|debian)[0-9]{2,4}",
            '"ubuntu2404" or "debian12"',
            "NVIDIA's repository names are like ubuntu2404 or debian12",
            empty_ok=True,
        ),
        f"{prefix}key_url": Url(
            ("https", "file"),
            http_anywhere=FINGERPRINTED,
            empty_ok=True,
            example="https://developer.download.nvidia.com/.../3bf863cc.pub",
        ),
        f"{prefix}key_fingerprint": Fingerprint(empty_ok=True),
        f"{prefix}keyring": ConsumedFile(
            "apt_keyring",
            empty_ok=True,
            example="/usr/share/keyrings/cuda-archive-keyring.gpg",
        ),
    }


DRIVER_BRANCH = driver_branch()
DRIVER_VERSION = Pattern(
    r"[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?(-[0-9A-Za-z.+~]+)?",
    '"580.105.08" or "580.105.08-1"',
    "a driver version is branch.minor[.patch][-debian revision]",
    empty_ok=True,
)
CUDA_VERSION = Pattern(r"[0-9]{1,2}\.[0-9]{1,2}", '"13.0"', "a CUDA version is major.minor, quoted")
TORCH_VERSION = Pattern(
    r"[0-9]+\.[0-9]+\.[0-9]+", '"2.11.0"', "a torch release is X.Y.Z without a local tag"
)
PYTHON_VERSION = Pattern(r"3\.[0-9]{1,2}", '"3.12"', "a Python version is 3.N")
PIP_VERSION = Pattern(
    r"[0-9]+(\.[0-9]+){0,3}((a|b|rc)[0-9]+)?(\.post[0-9]+)?",
    '"4.5.0"',
    "a release number as PyPI writes it (no ==, no range)",
    empty_ok=True,
)
INDEX_URL = Url(example="https://download.pytorch.org/whl/cu130")
IMAGE_REPO = Pattern(
    r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)+",
    "nvcr.io/nvidia/k8s/dcgm-exporter",
    "an image repository is registry/path in lower case, without a tag or digest",
)
CONTAINER_TAG = Pattern(
    r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}",
    "4.5.3-4.8.2-ubuntu22.04",
    "an image tag is letters, digits, _ . - (at most 128)",
    forbid=("latest",),
)

# Unit file directories, in systemd's order; a unit found in one of them is installed.
UNIT_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
KINDLING_MARK = "(role {role})"

# Groups whose members are root in all but name, and where that is written down.
ROOT_EQUIVALENT_GROUPS = {
    "root": "gid 0",
    "sudo": "members may run any command as root: Debian's SystemGroups and /etc/sudoers",
    "wheel": "members may become root with su or sudo where it is configured",
    "docker": "Docker's post-install guide: the group grants privileges equivalent to root",
    "disk": "write access to every raw disk device: Debian's base-passwd users-and-groups",
    "shadow": "read access to /etc/shadow, every account's password hash",
}

SHAPES: Dict[str, Dict[str, Shape]] = {
    "site_lock": {
        "site_lock_dir": AbsPath(
            under=("/var/lib", "/var/run", "/run"), example="/var/lib/kindling/site.lock"
        ),
        "site_lock_wait_seconds": Int(0, 86400, "seconds"),
        "site_lock_stale_after": Int(
            60, 7 * 86400, "seconds", "a lock younger than a minute is never stale"
        ),
        "site_lock_break": Spec(),
    },
    "gpu_preflight": {
        "gpu_preflight_gpu_required": Spec(),
        "gpu_preflight_fail_on_incompatible": Spec(),
        "gpu_preflight_report_dir": Free("a controller path, made when missing"),
        "gpu_preflight_check_stages": Spec(),
        "gpu_preflight_ram_per_gpu_memory": Float(0, 16, why="a multiple of the GPU memory"),
        "gpu_preflight_min_free_disk_gb": Int(0, 100000, "GB"),
        "gpu_preflight_disk_paths": ListOf(AbsPath(example="/opt"), min_len=1),
        "gpu_preflight_min_nic_mbps": Int(0, 10000000, "Mb/s"),
        "gpu_preflight_supported_os": DictOf(
            Choice(["Ubuntu", "Debian"]),
            ListOf(Pattern(r"[0-9]{2}(\.[0-9]{2})?", '"22.04" or "12"')),
        ),
        "gpu_preflight_supported_arch": DictOf(
            Choice(["x86_64", "aarch64"]), ListOf(Choice(["Ubuntu", "Debian"]))
        ),
    },
    "nouveau": {
        "nouveau_blacklist_enabled": Spec(),
        "nouveau_modprobe_file": ConsumedFile(
            "modprobe_d", example="/etc/modprobe.d/blacklist-nouveau.conf"
        ),
        "nouveau_update_initramfs": Spec(),
        "nouveau_unload": Spec(),
        "nouveau_reboot_policy": Spec(),
        # Only read (does nouveau's module directory exist?); tests point it at a stand-in.
        "nouveau_module_sysfs_path": AbsPath(example="/sys/module/nouveau"),
    },
    "nvidia_driver": {
        "nvidia_driver_repo_timeout": Int(1, 600, "seconds"),
        "nvidia_driver_apt_lock_timeout": APT_LOCK,
        "nvidia_driver_install_method": Spec(),
        "nvidia_driver_branch": DRIVER_BRANCH,
        "nvidia_driver_version": DRIVER_VERSION,
        "nvidia_driver_package_flavor": Spec(),
        "nvidia_driver_kernel_modules": Spec(),
        # argument_specs' choices: the vendor catalogue's kernel_module_options
        # (tests/unit/test_nvidia_driver_module_options.py keeps the two in step).
        "nvidia_driver_module_options_skip": Spec(),
        "nvidia_driver_module_options_file": ConsumedFile(
            "modprobe_d", example="/etc/modprobe.d/kindling-nvidia-options.conf"
        ),
        "nvidia_driver_adopt_newer": Spec(),
        "nvidia_driver_minimum_version": Pattern(
            r"[0-9]{3}(\.[0-9]{1,3}){0,2}",
            '"580.82"',
            "a driver version is branch[.minor[.patch]]",
            empty_ok=True,
        ),
        "nvidia_driver_adopt_torch_python": AbsPath(
            empty_ok=True, example="/opt/conda/envs/pytorch/bin/python"
        ),
        "nvidia_driver_skip_without_gpu": Spec(),
        "nvidia_driver_gpu_required": Spec(),
        "nvidia_driver_hold": Spec(),
        "nvidia_driver_pin": Spec(),
        "nvidia_driver_preferences_file": apt_preferences_file(
            "kindling-nvidia-driver", derived=(FABRIC_MANAGER_PIN,)
        ),
        "nvidia_driver_distro_components": Spec(),
        "nvidia_driver_distro_sources_file": apt_sources_file("kindling-nvidia-distro.sources"),
        **cuda_repository_shapes("nvidia_driver_repo_"),
        "nvidia_driver_repo_arch": Choice(["x86_64", "sbsa"]),
        "nvidia_driver_repo_remove_legacy": Spec(),
        "nvidia_driver_apt_cache_valid_time": CACHE_TIME,
        "nvidia_driver_kernel_headers": Spec(),
        "nvidia_driver_secure_boot_action": Spec(),
        # Only read (the SecureBoot variable); tests point it at a stand-in.
        "nvidia_driver_efivars_path": AbsPath(example="/sys/firmware/efi/efivars"),
        "nvidia_driver_persistenced": Spec(),
        "nvidia_driver_fabric_manager": Spec(),
        "nvidia_driver_fabric_wait_timeout": Int(0, 3600, "seconds"),
        "nvidia_driver_reboot_policy": Spec(),
        "nvidia_driver_state_dir": STATE_DIR,
        "nvidia_driver_verify_action": Spec(),
    },
    "cuda": {
        # The distro is nvidia_driver_repo_distro's alone (cuda reads it from the plan).
        **{
            k: v for k, v in cuda_repository_shapes("cuda_repo_").items() if k != "cuda_repo_distro"
        },
        "cuda_repo_timeout": Int(1, 600, "seconds", "how long to wait for the key server"),
        "cuda_apt_lock_timeout": APT_LOCK,
        "cuda_version": CUDA_VERSION,
        "cuda_install_method": Spec(),
        "cuda_distro_components": Spec(),
        "cuda_distro_sources_file": apt_sources_file("kindling-cuda-distro.sources"),
        "cuda_versions_extra": ListOf(CUDA_VERSION, unique=True),
        "cuda_toolkit_prefix": AbsPath(example="/usr/local"),
        "cuda_home": AbsPath(example="/usr/local/cuda", own_dir=True),
        "cuda_cudnn_install": Spec(),
        "cuda_cudnn_version": Pattern(
            r"[0-9]+\.[0-9]+\.[0-9]+(\.[0-9]+)?", '"9.14.0"', "a cuDNN version is X.Y.Z or X.Y.Z.B"
        ),
        "cuda_cudnn_install_method": Spec(),
        "cuda_cudnn_hold": Spec(),
        "cuda_cudnn_preferences_file": apt_preferences_file("kindling-cudnn"),
        "cuda_cudnn_redist_base_url": Url(
            ("https", "file"),
            http_anywhere=CHECKSUMMED,
            example="https://developer.download.nvidia.com/compute/cudnn/redist/",
        ),
        "cuda_cudnn_tarball_url": Url(
            ("https", "file"),
            http_anywhere=CHECKSUMMED,
            empty_ok=True,
            example="https://example.com/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz",
        ),
        "cuda_cudnn_tarball_sha256": Sha256(empty_ok=True),
        "cuda_profile_file": ConsumedFile("profile_d", example="/etc/profile.d/cuda.sh"),
        "cuda_apt_cache_valid_time": CACHE_TIME,
        "cuda_state_dir": STATE_DIR,
        "cuda_verify": Spec(),
        "cuda_adopt_existing": Spec(),
        "cuda_skip_without_gpu": Spec(),
        "cuda_gpu_required": Spec(),
    },
    "conda_pytorch": {
        "conda_pytorch_apt_lock_timeout": APT_LOCK,
        "conda_pytorch_backend": Spec(),
        "conda_pytorch_python": AbsPath(
            empty_ok=True, example="/opt/conda/envs/pytorch/bin/python"
        ),
        "conda_pytorch_conda_prefix": AbsPath(example="/opt/conda", own_dir=True),
        "conda_pytorch_miniforge_version": Pattern(
            r"[0-9]+\.[0-9]+\.[0-9]+-[0-9]+", '"26.1.1-3"', "a Miniforge release is X.Y.Z-N"
        ),
        "conda_pytorch_miniforge_sha256": DictOf(
            Choice(["x86_64", "aarch64"]),
            Free(
                "this host's architecture's entry is checked by a rule, which names the "
                "release's .sha256 file"
            ),
        ),
        "conda_pytorch_miniforge_url": Url(
            http_anywhere=CHECKSUMMED,
            example="https://github.com/conda-forge/miniforge/releases/download/...",
        ),
        "conda_pytorch_env_name": Name("pytorch"),
        "conda_pytorch_venv_path": AbsPath(example="/opt/venvs/pytorch", own_dir=True),
        "conda_pytorch_venv_python": AbsPath(example="/usr/bin/python3"),
        "conda_pytorch_python_version": PYTHON_VERSION,
        "conda_pytorch_version": TORCH_VERSION,
        "conda_pytorch_cuda_variant": Pattern(
            r"cu[0-9]{3}|cpu", '"cu130" or "cpu"', "a wheel variant is cuXYZ or cpu"
        ),
        "conda_pytorch_install_torchvision": Spec(),
        "conda_pytorch_torchvision_version": release('"0.26.0"'),
        "conda_pytorch_install_torchaudio": Spec(),
        "conda_pytorch_torchaudio_version": release('"2.11.0"'),
        "conda_pytorch_install_method": Spec(),
        "conda_pytorch_index_url": INDEX_URL,
        "conda_pytorch_extra_index_url": Url(empty_ok=True, example="https://pypi.org/simple"),
        "conda_pytorch_group": UserName("pytorch"),
        "conda_pytorch_group_members": ListOf(UserName("alice"), unique=True),
        "conda_pytorch_profile_snippet": Spec(),
        "conda_pytorch_download_dir": AbsPath(example="/var/cache/kindling", own_dir=True),
        "conda_pytorch_verify": Spec(),
    },
    "jupyter": {
        "jupyter_apt_lock_timeout": APT_LOCK,
        "jupyter_venv": AbsPath(empty_ok=True, example="/opt/venvs/jupyter", own_dir=True),
        "jupyter_venv_python": AbsPath(example="/usr/bin/python3"),
        "jupyter_kernel_python": AbsPath(example="/opt/conda/envs/pytorch/bin/python"),
        "jupyter_register_kernel": Spec(),
        "jupyter_kernel_name": Name("pytorch"),
        "jupyter_kernel_display_name": Text(max_len=100, empty_ok=False),
        "jupyter_lab_version": PIP_VERSION,
        "jupyter_ipykernel_version": PIP_VERSION,
        "jupyter_pip_index_url": Url(empty_ok=True, example="https://pypi.org/simple"),
        "jupyter_user": UserName("jupyter"),
        "jupyter_group": UserName("jupyter"),
        "jupyter_user_groups": ListOf(UserName("video"), unique=True),
        "jupyter_home": AbsPath(example="/var/lib/jupyter", own_dir=True),
        "jupyter_notebook_dir": AbsPath(example="/var/lib/jupyter/notebooks", own_dir=True),
        "jupyter_ip": IPAddress(),
        "jupyter_port": ListenPort("jupyter_user", 8888),
        "jupyter_tls_cert": AbsPath(empty_ok=True, example="/etc/ssl/certs/jupyter.pem"),
        "jupyter_tls_key": AbsPath(empty_ok=True, example="/etc/ssl/private/jupyter.key"),
        "jupyter_allow_insecure_bind": Spec(),
        "jupyter_password_hash": Pattern(
            r"(argon2|sha1):[A-Za-z0-9$=+/,.:_-]+",
            "the output of jupyter_server.auth.passwd() (argon2:...)",
            "a password hash is argon2:... or sha1:..., never a plain password",
            empty_ok=True,
        ),
        "jupyter_token_file": AbsPath(
            under=("/etc/jupyter",), name=r"[A-Za-z0-9_.-]+", example="/etc/jupyter/token"
        ),
        "jupyter_show_token": Spec(),
        "jupyter_service_name": UnitName("jupyter"),
        "jupyter_start": Spec(),
    },
    "dcgm_exporter": {
        "dcgm_exporter_apt_lock_timeout": APT_LOCK,
        "dcgm_exporter_mode": Spec(),
        "dcgm_exporter_image": IMAGE_REPO,
        "dcgm_exporter_image_tag": CONTAINER_TAG,
        "dcgm_exporter_image_digest": Pattern(
            r"sha256:[0-9a-f]{64}",
            "sha256:<64 hex digits>",
            "an image digest is sha256: and 64 lower-case hex digits",
            empty_ok=True,
        ),
        "dcgm_exporter_bind_address": IPAddress(),
        "dcgm_exporter_port": ListenPort("dcgm_exporter_user", 9400),
        "dcgm_exporter_allow_insecure_bind": Spec(),
        "dcgm_exporter_collect_interval_ms": Int(100, 3600000, "ms"),
        "dcgm_exporter_counters": ListOf(
            Record(
                {
                    "field": Pattern(
                        r"DCGM_FI_[A-Z0-9_]+", "DCGM_FI_DEV_GPU_UTIL", "a DCGM field is DCGM_FI_..."
                    ),
                    "type": Choice(["gauge", "counter", "label"]),
                    "help": Text(forbid=',"', why="the counters file is comma-separated"),
                },
                required=("field", "type"),
            )
        ),
        "dcgm_exporter_counters_file": AbsPath(
            under=("/etc/dcgm-exporter",),
            name=r"[A-Za-z0-9_.-]+\.csv",
            why="the counters file lives in /etc/dcgm-exporter and ends in .csv",
            example="/etc/dcgm-exporter/kindling-counters.csv",
        ),
        "dcgm_exporter_cap_sys_admin": Spec(),
        "dcgm_exporter_docker_source": Spec(),
        "dcgm_exporter_docker_repo_url": Url(
            http_anywhere=SIGNED, example="https://download.docker.com/linux/ubuntu"
        ),
        "dcgm_exporter_docker_repo_key_url": Url(
            http_anywhere=FINGERPRINTED, example="https://download.docker.com/linux/ubuntu/gpg"
        ),
        "dcgm_exporter_docker_repo_key_fingerprint": Fingerprint(),
        "dcgm_exporter_nvidia_repo_url": Url(
            http_anywhere=SIGNED,
            example="https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
        ),
        "dcgm_exporter_nvidia_repo_key_url": Url(
            http_anywhere=FINGERPRINTED,
            example="https://nvidia.github.io/libnvidia-container/gpgkey",
        ),
        "dcgm_exporter_nvidia_repo_key_fingerprint": Fingerprint(),
        "dcgm_exporter_nvidia_ctk_version": Pattern(
            r"[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.+~]+)?",
            '"1.18.0-1"',
            "a package version like 1.18.0-1",
            empty_ok=True,
        ),
        "dcgm_exporter_docker_daemon_json": ConsumedFile(
            "dockerd", example="/etc/docker/daemon.json"
        ),
        "dcgm_exporter_dcgm_packages": ListOf(
            Pattern(
                r"[a-z0-9][a-z0-9+.-]+", "datacenter-gpu-manager-4-cuda12", "a Debian package name"
            ),
            unique=True,
            min_len=1,
        ),
        "dcgm_exporter_binary_url": Url(
            http_anywhere=CHECKSUMMED, empty_ok=True, example="https://example.com/dcgm-exporter"
        ),
        "dcgm_exporter_binary_sha256": Sha256(empty_ok=True),
        "dcgm_exporter_user": UserName("dcgm-exporter"),
        "dcgm_exporter_start": Spec(),
        "dcgm_exporter_verify_metrics": Spec(),
        "dcgm_exporter_prometheus_snippet": Spec(),
        "dcgm_exporter_prometheus_snippet_path": AbsPath(
            under=("/etc/dcgm-exporter", "/etc/prometheus"),
            name=r"[A-Za-z0-9_.-]+\.ya?ml",
            why="a scrape snippet lives in /etc/dcgm-exporter or /etc/prometheus and ends in .yml",
            example="/etc/dcgm-exporter/prometheus-scrape.yml",
        ),
        "dcgm_exporter_prometheus_target": Pattern(
            r"[A-Za-z0-9.:\[\]-]+",
            '"10.0.0.5" or "gpu1.example.com"',
            "an address or host name",
            empty_ok=True,
        ),
        "dcgm_exporter_node_exporter_port": Port(),
    },
    "gpu_check": {
        "gpu_check_profile": Spec(),
        "gpu_check_python": AbsPath(example="/opt/conda/envs/pytorch/bin/python"),
        "gpu_check_device": Spec(),
        "gpu_check_modes": Spec(),
        "gpu_check_probes": Spec(),
        "gpu_check_batch_size": Int(0, 4096, why="images per GPU; 0 keeps the program's default"),
        "gpu_check_image_size": Int(0, 1024, "pixels", "0 keeps the program's default"),
        "gpu_check_extra_args": ListOf(
            Pattern(
                r"--[a-z0-9][a-z0-9-]*(=[A-Za-z0-9_.,:/+-]*)?|[A-Za-z0-9_.,:/+-]+",
                '"--steps=30"',
                "an option or a plain value",
            )
        ),
        "gpu_check_tolerance": Float(
            0,
            1,
            low_open=True,
            why="the fraction of the reference img/s a mode must reach (default 0.8)",
        ),
        "gpu_check_fail_on_slow": Spec(),
        "gpu_check_require_all": Spec(),
        "gpu_check_gpu_margin": Float(
            0,
            1,
            low_open=True,
            high_open=True,
            why="the fraction below the host's other GPUs' median that fails a GPU (default 0.1)",
        ),
        "gpu_check_floor_waivers": Spec(),
        "gpu_check_timeout": Int(30, 86400, "seconds"),
        "gpu_check_busy_gpu": Spec(),
        "gpu_check_busy_wait": Int(0, 86400, "seconds"),
        "gpu_check_poll_interval": Int(1, 600, "seconds"),
        "gpu_check_install_dir": AbsPath(example="/opt/kindling/bin"),
        "gpu_check_host_report_dir": AbsPath(example="/var/lib/kindling/gpu-check", own_dir=True),
        "gpu_check_report_dir": Free(
            "a directory on the controller (default: the repository's reports/), written "
            "by the controller's own user and never rendered into a file on the host"
        ),
        "gpu_check_multinode": Spec(),
        "gpu_check_multinode_port": Int(1024, 65535, why="an unprivileged TCP port"),
        "gpu_check_multinode_sizes": Pattern(
            r"[0-9]+[KMG]?(,[0-9]+[KMG]?)*",
            '"1M,64M,1G"',
            "sizes are comma-separated numbers with K, M or G",
        ),
        "gpu_check_multinode_timeout": Int(10, 86400, "seconds"),
        "gpu_check_multinode_master_addr": Pattern(
            r"[A-Za-z0-9.:-]+", '"10.0.0.5"', "an address or host name", empty_ok=True
        ),
        "gpu_check_nccl_socket_ifname": Pattern(
            r"\^?=?[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*",
            '"eth0" or "^docker,lo"',
            "an NCCL interface list",
            empty_ok=True,
        ),
        "gpu_check_nccl_debug": Spec(),
        "gpu_check_skip_without_gpu": Spec(),
    },
    "reboot_coordinator": {
        "reboot_coordinator_state_dir": STATE_DIR,
        "reboot_coordinator_allowed": Spec(),
        "reboot_coordinator_timeout": Int(60, 7200, "seconds"),
        "reboot_coordinator_container_types": ListOf(Name("docker"), unique=True),
    },
}

# A rule gets the effective values and a context from the controller: the host's
# architecture (``machine``) and role constants from vars/main.yml.
Rule = Callable[[Dict[str, Any], Dict[str, Any]], List[Finding]]


def _msg(name: str, values: Dict[str, Any], problem: str, secret: bool = False) -> Finding:
    return name, problem_message(name, values.get(name), problem, secret)


# --- the rules of each role: relations between variables, each naming the one that is wrong


def _nvidia_driver_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    found = []
    version, branch = (
        str(v.get("nvidia_driver_version", "")),
        str(v.get("nvidia_driver_branch", "")),
    )
    if version and version.split(".")[0] != branch:
        found.append(
            _msg(
                "nvidia_driver_version",
                v,
                f"it is not a release of nvidia_driver_branch {branch!r}; "
                f"set nvidia_driver_branch to {version.split('.')[0]!r} or pick a {branch}.x "
                "version",
            )
        )
    return found


def _cuda_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    found = []
    if v.get("cuda_version") in (v.get("cuda_versions_extra") or []):
        found.append(
            _msg(
                "cuda_versions_extra",
                v,
                f"it lists cuda_version {v['cuda_version']!r}, which is "
                "installed anyway; list only the other toolkits",
            )
        )
    if v.get("cuda_cudnn_install") and v.get("cuda_cudnn_install_method") == "tarball":
        url, digest = (
            v.get("cuda_cudnn_tarball_url") or "",
            v.get("cuda_cudnn_tarball_sha256") or "",
        )
        if url and not digest:
            found.append(
                _msg(
                    "cuda_cudnn_tarball_sha256",
                    v,
                    "cuda_cudnn_tarball_url is set, so give the "
                    "archive's sha256 too (or leave both empty to take them from NVIDIA's "
                    "manifest)",
                )
            )
        if digest and not url:
            found.append(
                _msg(
                    "cuda_cudnn_tarball_url",
                    v,
                    "cuda_cudnn_tarball_sha256 is set, so give the archive's "
                    "URL too (or leave both empty to take them from NVIDIA's manifest)",
                )
            )
    if v.get("cuda_install_method") == "distro":
        if v.get("cuda_cudnn_install") and v.get("cuda_cudnn_install_method") == "apt":
            found.append(
                _msg(
                    "cuda_cudnn_install_method",
                    v,
                    "cuda_install_method is distro, and cuDNN's apt packages come from NVIDIA's "
                    "repository, built for its toolkits; use cuda_cudnn_install_method: tarball "
                    "(NVIDIA's archive for the distribution's CUDA) or cuda_cudnn_install: false",
                )
            )
        if v.get("cuda_versions_extra"):
            found.append(
                _msg(
                    "cuda_versions_extra",
                    v,
                    "cuda_install_method is distro, which installs the one toolkit the "
                    "distribution ships; leave it empty, or use cuda_install_method: cuda_repo",
                )
            )
    return found


def _conda_pytorch_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    found = []
    # The last torch series on the pytorch conda channel: roles/conda_pytorch/vars/main.yml,
    # passed in by tasks/inputs.yml (context_vars).
    last = str(ctx.get("conda_pytorch_channel_last_series") or "")
    adopt = bool(v.get("conda_pytorch_python"))
    if v.get("conda_pytorch_install_method") == "conda":
        if adopt or v.get("conda_pytorch_backend") != "conda":
            found.append(
                _msg(
                    "conda_pytorch_install_method",
                    v,
                    "installing torch with conda needs "
                    "conda_pytorch_backend conda (and no conda_pytorch_python to adopt); set it "
                    "to pip",
                )
            )
        series = tuple(
            int(p)
            for p in str(v.get("conda_pytorch_version", "0.0.0")).split(".")[:2]
            if p.isdigit()
        )
        if last and series and series > tuple(int(p) for p in last.split(".")):
            found.append(
                (
                    "conda_pytorch_install_method",
                    (
                        "conda_pytorch_install_method is 'conda': the pytorch conda channel "
                        "stopped receiving releases "
                        f"after {last} (pytorch/pytorch#138506), so torch "
                        f"{v.get('conda_pytorch_version')} comes only as "
                        "wheels - set conda_pytorch_install_method to pip."
                    ),
                )
            )
    machine = ctx.get("machine")
    if not adopt and v.get("conda_pytorch_backend") == "conda" and machine:
        digests = v.get("conda_pytorch_miniforge_sha256") or {}
        digest = str(digests.get(machine, "")) if isinstance(digests, dict) else ""
        if Sha256().check(digest):
            release = v.get("conda_pytorch_miniforge_version")
            found.append(
                (
                    "conda_pytorch_miniforge_sha256",
                    (
                        f"conda_pytorch_miniforge_sha256 has no sha256 for {machine} (Miniforge "
                        f"{release}): its "
                        f"{machine} entry is {digest!r}. Add the hex digest from the release's "
                        f"Miniforge3-{release}-Linux-{machine}.sh.sha256 file."
                    ),
                )
            )
    return found


def _jupyter_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    found = []
    loopback = v.get("jupyter_ip") in ("127.0.0.1", "::1", "localhost")
    cert, key = v.get("jupyter_tls_cert") or "", v.get("jupyter_tls_key") or ""
    port = v.get("jupyter_port")
    if not loopback and not (cert and key) and not v.get("jupyter_allow_insecure_bind"):
        found.append(
            (
                "jupyter_ip",
                (
                    f"jupyter_ip {v.get('jupyter_ip')} is not a loopback address: anyone who "
                    "reaches "
                    f"{v.get('jupyter_ip')}:{port} would talk to a server that runs code. Keep "
                    "the default 127.0.0.1 and "
                    f"use `ssh -N -L {port}:localhost:{port} user@host`, or set jupyter_tls_cert "
                    "and jupyter_tls_key "
                    "(both), or jupyter_allow_insecure_bind: true."
                ),
            )
        )
    if bool(cert) != bool(key):
        missing = "jupyter_tls_key" if cert else "jupyter_tls_cert"
        other = "jupyter_tls_cert" if cert else "jupyter_tls_key"
        found.append(
            _msg(
                missing,
                v,
                f"{other} is set, so set {missing} too (a certificate needs its key), or neither",
            )
        )
    if v.get("jupyter_user") == "root":
        found.append(
            _msg(
                "jupyter_user",
                v,
                "the server runs whatever code its users send, so it must not run as root, and the "
                "role would set root's home to jupyter_home and its shell to /usr/sbin/nologin; "
                "keep the default jupyter, a system user of its own",
            )
        )
    given = [g for g in (v.get("jupyter_user_groups") or []) if g in ROOT_EQUIVALENT_GROUPS]
    if given:
        found.append(
            _msg(
                "jupyter_user_groups",
                v,
                f"{', '.join(given)} would give everyone who can open a notebook root on the host "
                f"({ROOT_EQUIVALENT_GROUPS[given[0]]}); leave it out (the GPUs need no group: "
                "/dev/nvidia* are world-usable, or add video/render)",
            )
        )
    home, notebooks = str(v.get("jupyter_home", "")), str(v.get("jupyter_notebook_dir", ""))
    if (
        notebooks != home
        and not notebooks.startswith(home.rstrip("/") + "/")
        and home.startswith(notebooks.rstrip("/") + "/")
    ):
        found.append(
            _msg(
                "jupyter_notebook_dir",
                v,
                "it is above jupyter_home, so the service could write "
                "outside its home; put it inside jupyter_home",
            )
        )
    return found


def _dcgm_exporter_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    found = []
    if v.get("dcgm_exporter_mode") == "native":
        if not v.get("dcgm_exporter_binary_url"):
            found.append(
                _msg(
                    "dcgm_exporter_binary_url",
                    v,
                    "dcgm_exporter_mode native needs the URL of a "
                    "dcgm-exporter binary (NVIDIA publishes source and container images, not a "
                    "binary "
                    "download: build it, or use container mode)",
                )
            )
        if not v.get("dcgm_exporter_binary_sha256"):
            found.append(
                _msg(
                    "dcgm_exporter_binary_sha256",
                    v,
                    "dcgm_exporter_mode native needs the binary's sha256 (64 hex digits)",
                )
            )
    if v.get("dcgm_exporter_user") == "root":
        found.append(
            _msg(
                "dcgm_exporter_user",
                v,
                "the role would set root's shell to /usr/sbin/nologin and its home to "
                "/nonexistent; keep the default dcgm-exporter, a system user of its own",
            )
        )
    if v.get("dcgm_exporter_port") == v.get("dcgm_exporter_node_exporter_port"):
        found.append(
            _msg(
                "dcgm_exporter_node_exporter_port",
                v,
                "it is dcgm_exporter_port too; give each exporter a port of its own",
            )
        )
    return found


def _gpu_check_rules(v: Dict[str, Any], ctx: Dict[str, Any]) -> List[Finding]:
    return []


# --- listeners: (address variable, port variable, opt-in variable or "" where the role's own
# rule guards the address, what anyone who reaches it gets). A wildcard address needs the
# opt-in; it is always warned about, naming what is exposed.
LISTENERS: Dict[str, Sequence[Tuple[str, str, str, str]]] = {
    "jupyter": (
        (
            "jupyter_ip",
            "jupyter_port",
            "",  # _jupyter_rules: a non-loopback address needs TLS or jupyter_allow_insecure_bind
            "JupyterLab, which runs code for whoever holds the token",
        ),
    ),
    "dcgm_exporter": (
        (
            "dcgm_exporter_bind_address",
            "dcgm_exporter_port",
            "dcgm_exporter_allow_insecure_bind",
            "dcgm-exporter's unauthenticated GPU metrics (a Docker-published port also bypasses "
            "the host's INPUT firewall rules)",
        ),
    ),
}


def _listener_rules(role: str, v: Dict[str, Any]) -> List[Finding]:
    found = []
    for address, port, opt_in, what in LISTENERS.get(role, ()):
        if opt_in and is_wildcard(v.get(address)) and not v.get(opt_in):
            found.append(
                _msg(
                    address,
                    v,
                    f"a wildcard address listens on every interface of the host, publishing {what} "
                    f"on port {v.get(port)} to every network it is on. Give the host's own address "
                    f"on the network your Prometheus scrapes from (e.g. 10.0.0.5) and firewall the "
                    f"port, keep the default 127.0.0.1, or set {opt_in}: true",
                )
            )
    return found


def listener_warnings(role: str, v: Dict[str, Any]) -> List[str]:
    """A warning for each of the role's listeners on a wildcard address, naming what is exposed."""
    return [
        f"{address} is {v.get(address)!r}: port {v.get(port)} on every interface of this host "
        f"serves {what}; anyone who can reach the host on any network can use it"
        for address, port, _, what in LISTENERS.get(role, ())
        if is_wildcard(v.get(address))
    ]


RULES: Dict[str, Rule] = {
    "nvidia_driver": _nvidia_driver_rules,
    "cuda": _cuda_rules,
    "conda_pytorch": _conda_pytorch_rules,
    "jupyter": _jupyter_rules,
    "dcgm_exporter": _dcgm_exporter_rules,
    "gpu_check": _gpu_check_rules,
}

# --- the host checks (read-only): what the values would collide with on this host

SECRET_FILES: Dict[str, Sequence[str]] = {"jupyter": ("jupyter_token_file",)}
# Directories a role hands to its service user (owner, mode): one that exists must be that
# user's already, never someone else's (/home/alice, /var/lib/dpkg).
OWNED_DIRS: Dict[str, Sequence[Tuple[str, str]]] = {
    "jupyter": (("jupyter_home", "jupyter_user"), ("jupyter_notebook_dir", "jupyter_user")),
}
# Service accounts a role creates: one that exists must be the account the role made
# (its home is the role's), not another account the role would rewrite (daemon, www-data).
SERVICE_USERS: Dict[str, Sequence[Tuple[str, str]]] = {
    "jupyter": (("jupyter_user", "jupyter_home"),)
}
# Files the user brings that a service reads at start: checked now, not when it starts.
EXISTING_FILES: Dict[str, Sequence[str]] = {"jupyter": ("jupyter_tls_cert", "jupyter_tls_key")}
UNIT_NAMES: Dict[str, Sequence[str]] = {"jupyter": ("jupyter_service_name",)}


def host_checked(role: str) -> Sequence[str]:
    """The variables of a role whose check needs the host."""
    names = list(UNIT_NAMES.get(role, ())) + list(SECRET_FILES.get(role, ()))
    for pairs in (OWNED_DIRS.get(role, ()), SERVICE_USERS.get(role, ())):
        for first, second in pairs:
            names += [n for n in (first, second) if n not in names]
    return tuple(names) + tuple(n for n in EXISTING_FILES.get(role, ()) if n not in names)


def unit_owner(name: str, role: str, unit_dirs: Sequence[str] = UNIT_DIRS) -> Optional[str]:
    """The path of an installed <name>.service not written by this role, or None."""
    for directory in unit_dirs:
        path = os.path.join(directory, name + ".service")
        if not os.path.lexists(path):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as unit:
                head = unit.read(400)
        except OSError:
            return path
        if os.path.islink(path) or KINDLING_MARK.format(role=role) not in head:
            return path
    return None


def unsafe_secret_path(path: str, root: str = "/") -> Optional[str]:
    """Why a secret may not be written at path, or None.

    Every directory on the way that exists must be a real directory (not a link) owned by
    root and writable by nobody else; the file itself, if there, must not be a link. Then
    no one but root can plant a link that the write would follow.
    """
    parts = path.strip("/").split("/")
    current = root.rstrip("/")
    for part in parts[:-1]:
        current = current + "/" + part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return None  # Kindling creates the rest, root-owned
        if stat.S_ISLNK(info.st_mode):
            return f"{current} is a symbolic link, which someone could point anywhere"
        if not stat.S_ISDIR(info.st_mode):
            return f"{current} is not a directory"
        if info.st_uid != 0:
            return f"{current} is owned by uid {info.st_uid}, not root"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            mode = stat.S_IMODE(info.st_mode)
            return f"{current} is writable by users other than root (mode {mode:04o})"
    target = root.rstrip("/") + "/" + "/".join(parts)
    if os.path.islink(target):
        return (
            f"{target} is a symbolic link; remove it so the secret is written to a file of its own"
        )
    return None


def host_findings(
    role: str, values: Dict[str, Any], unit_dirs: Sequence[str] = UNIT_DIRS, root: str = "/"
) -> List[Finding]:
    found = []
    for name in UNIT_NAMES.get(role, ()):
        unit = values.get(name)
        if not isinstance(unit, str):
            continue
        owner = unit_owner(unit, role, [root.rstrip("/") + d for d in unit_dirs])
        if owner:
            found.append(
                _msg(
                    name,
                    values,
                    f"{owner} is already installed and was not written by Kindling's "
                    f"{role} role; a unit of that name would shadow or replace it. Choose another "
                    f"name, e.g. kindling-{unit}",
                )
            )
    for name in SECRET_FILES.get(role, ()):
        path = values.get(name)
        if isinstance(path, str) and path.startswith("/"):
            why = unsafe_secret_path(path, root)
            if why:
                found.append(
                    _msg(
                        name,
                        values,
                        f"{why}; keep secrets in a root-owned directory that only root "
                        "can write, such as the default",
                    )
                )
    found += _account_findings(role, values, root)
    return found


def _account_findings(role: str, values: Dict[str, Any], root: str) -> List[Finding]:
    """Service users and their directories that already belong to someone else."""
    import pwd

    found = []
    for user_var, home_var in SERVICE_USERS.get(role, ()):
        user, home = values.get(user_var), values.get(home_var)
        try:
            account = pwd.getpwnam(str(user))
        except KeyError:
            continue
        if account.pw_dir.rstrip("/") != str(home).rstrip("/"):
            found.append(
                _msg(
                    user_var,
                    values,
                    f"that account already exists with home {account.pw_dir} (uid "
                    f"{account.pw_uid}), not {home_var} {home}: the role would rewrite another "
                    "account. Choose a name of its own, such as the default",
                )
            )
    for dir_var, user_var in OWNED_DIRS.get(role, ()):
        path = values.get(dir_var)
        if not isinstance(path, str) or not path.startswith("/"):
            continue
        try:
            info = os.lstat(root.rstrip("/") + path)
        except FileNotFoundError:
            continue
        try:
            expected = pwd.getpwnam(str(values.get(user_var))).pw_uid
        except KeyError:
            expected = None
        if stat.S_ISLNK(info.st_mode) or info.st_uid != expected:
            owner = _user_name(info.st_uid)
            found.append(
                _msg(
                    dir_var,
                    values,
                    "it already exists, "
                    f"{'as a link' if stat.S_ISLNK(info.st_mode) else 'owned by '}"
                    f"{'' if stat.S_ISLNK(info.st_mode) else owner}, and the role would hand it to "
                    f"{values.get(user_var)}; give a directory of its own, such as the default",
                )
            )
    for name in EXISTING_FILES.get(role, ()):
        path = values.get(name)
        if isinstance(path, str) and path and not os.path.isfile(root.rstrip("/") + path):
            found.append(
                _msg(name, values, "there is no such file on this host; put it there first")
            )
    return found


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def argument_spec_errors(spec: Dict[str, Any], values: Dict[str, Any]) -> List[str]:
    """Ansible's own validation of argument_specs (types, choices), with its messages."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    result = ArgumentSpecValidator(spec).validate(dict(values), validate_role_argument_spec=True)
    return list(result.error_messages)


def check_role(
    role: str,
    spec: Dict[str, Any],
    values: Dict[str, Any],
    secret: Sequence[str] = (),
    context: Optional[Dict[str, Any]] = None,
    host: bool = True,
    unit_dirs: Sequence[str] = UNIT_DIRS,
    root: str = "/",
) -> List[str]:
    """Every problem with one role's effective values, one message per variable."""
    context = context or {}
    messages = argument_spec_errors(spec, values)
    # Ansible's messages name the variable as 'name' (types, list elements) or bare (choices).
    shapes = SHAPES.get(role, {})
    checkable = {
        k: v for k, v in values.items() if not any(f"'{k}'" in m or f" {k} " in m for m in messages)
    }
    failed = set()
    for name, message in check_all(shapes, checkable, secret):
        messages.append(message)
        failed.add(name)
    if not messages:
        rule = RULES.get(role)
        if rule:
            messages += [m for _, m in rule(values, context)]
        messages += [m for _, m in _listener_rules(role, values)]
        if host and not messages:
            messages += [m for _, m in host_findings(role, values, unit_dirs, root)]
    return messages


def unshaped(role: str, options: Sequence[str]) -> List[str]:
    """Options of a role's argument_specs without a shape here (a test keeps this empty)."""
    shapes = SHAPES.get(role, {})
    return [name for name in options if name not in shapes]
