"""module_utils/role_inputs.py: every role variable has a shape, and each check's messages.

The roles' own meta/argument_specs.yml and defaults/main.yml are read here, so a new
variable without a shape, or a default its shape refuses, fails this file. The host
checks run against directories in tmp_path (the ``root`` and ``unit_dirs`` arguments).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import re
import sys

import pytest
import yaml
from ansible.module_utils import input_types as it
from ansible.module_utils import role_inputs as ri
from conftest import REPO_ROOT

ROLES = sorted(p.name for p in (REPO_ROOT / "roles").iterdir() if (p / "tasks").is_dir())
CONTEXT = {"machine": "x86_64", "conda_pytorch_channel_last_series": "2.5"}
PROGRAM = REPO_ROOT / "roles" / "gpu_check" / "files" / "kindling_bench"  # a package


@functools.lru_cache(maxsize=None)
def _yaml(role, relative):
    return yaml.safe_load((REPO_ROOT / "roles" / role / relative).read_text())


def options(role):
    specs = copy.deepcopy(_yaml(role, "meta/argument_specs.yml"))
    return specs["argument_specs"]["main"]["options"]


def spec(role):
    """The entry point's options as the action plugin passes them: without defaults."""
    return {
        name: {k: v for k, v in o.items() if k != "default"} for name, o in options(role).items()
    }


def defaults(role):
    """The role's defaults that are plain values (a templated one needs Ansible to resolve)."""
    values = copy.deepcopy(_yaml(role, "defaults/main.yml"))
    return {k: v for k, v in (values or {}).items() if "{{" not in str(v)}


def secret(role):
    return sorted(name for name, o in options(role).items() if o.get("no_log"))


def check(role, host=False, **changes):
    values = dict(defaults(role), **changes)
    return ri.check_role(role, spec(role), values, secret=secret(role), context=CONTEXT, host=host)


def test_every_role_has_shapes_and_only_roles_do():
    assert len(ROLES) == 10
    assert set(ri.SHAPES) == set(ROLES)
    assert set(ri.RULES) <= set(ROLES)


# --- coverage: each argument_specs option has exactly one shape


@pytest.mark.parametrize("role", ROLES)
def test_every_option_has_a_shape(role):
    names = list(options(role))
    assert names, role
    assert ri.unshaped(role, names) == []


@pytest.mark.parametrize("role", ROLES)
def test_shapes_name_only_options_of_the_spec(role):
    assert sorted(set(ri.SHAPES[role]) - set(options(role))) == []


def test_unshaped_lists_what_has_no_shape():
    assert ri.unshaped("jupyter", ["jupyter_port", "jupyter_new_option"]) == ["jupyter_new_option"]
    assert ri.unshaped("no_such_role", ["x"]) == ["x"]


@pytest.mark.parametrize("role", ROLES)
def test_spec_shape_exactly_on_bools_and_choices(role):
    """Spec() leaves a value to argument_specs: right for bools and choices, a hole elsewhere."""
    wrong = []
    for name, option in options(role).items():
        fixed = option.get("type") == "bool" or "choices" in option
        is_spec = type(ri.SHAPES[role][name]) is it.Spec
        if fixed != is_spec:
            wrong.append((name, option.get("type"), type(ri.SHAPES[role][name]).__name__))
    assert wrong == []


@pytest.mark.parametrize("role", ROLES)
def test_free_shapes_give_their_reason(role):
    for name, shape in ri.SHAPES[role].items():
        if isinstance(shape, it.Free):
            assert len(shape.why) > 20, name


def load_program():
    loaded = sys.modules.get("kindling_bench")
    if loaded is not None and os.path.dirname(loaded.__file__) == str(PROGRAM):
        return loaded
    module_spec = importlib.util.spec_from_file_location("kindling_bench", PROGRAM / "__init__.py")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["kindling_bench"] = module  # its modules import each other relative to it
    module_spec.loader.exec_module(module)  # torch is imported only when it measures
    return module


def test_gpu_check_list_choices_are_the_programs_modes_and_probes():
    program = load_program()
    opts = options("gpu_check")
    for name in ("gpu_check_modes", "gpu_check_probes"):
        assert opts[name]["type"] == "list" and opts[name]["elements"] == "str"
    # MODES holds modes only; the profiles (quick, full) are PROFILES.
    assert not {"quick", "full"} & set(program.MODES)
    # Besides the modes and probes: their aliases, and "none" (run no mode, or no probe).
    assert opts["gpu_check_modes"]["choices"] == [*program.MODES, *program.MODE_ALIASES, "none"]
    assert opts["gpu_check_probes"]["choices"] == [*program.PROBES, "none"]
    assert opts["gpu_check_profile"]["choices"] == list(program.PROFILES)


def test_gpu_check_bad_mode_is_refused_by_its_choices():
    assert check("gpu_check", gpu_check_modes=["fp32", "fp8"]) == [
        "value of gpu_check_modes must be one or more of: fp32, tf32, amp_fp16, amp_bf16, "
        "amp_fp16_cl, amp_bf16_cl, compile, ddp, seed_recipe, none. Got no match for: fp8"
    ]
    assert check("gpu_check", gpu_check_probes=["h2d", "matmul", "input_pipeline"]) == []


# --- the defaults fit


@pytest.mark.parametrize("role", ROLES)
def test_defaults_pass_every_check(role):
    values = defaults(role)
    assert values, role
    assert ri.check_role(role, spec(role), values, host=False, context=dict(CONTEXT)) == []


@pytest.mark.parametrize("role", ROLES)
def test_defaults_fit_each_shape(role):
    values = defaults(role)
    assert it.check_all(ri.SHAPES[role], values) == []


# --- one message per wrong variable, naming it first

BAD = [
    ("site_lock", "site_lock_dir", "/tmp/kindling.lock"),
    ("site_lock", "site_lock_dir", "/var/lib/"),
    ("site_lock", "site_lock_dir", "/var/lib/kindling/../site.lock"),
    ("site_lock", "site_lock_wait_seconds", -1),
    ("site_lock", "site_lock_stale_after", 30),
    ("gpu_preflight", "gpu_preflight_ram_per_gpu_memory", 17),
    ("gpu_preflight", "gpu_preflight_min_free_disk_gb", -5),
    ("gpu_preflight", "gpu_preflight_disk_paths", []),
    ("gpu_preflight", "gpu_preflight_disk_paths", ["/opt", "usr/local"]),
    ("gpu_preflight", "gpu_preflight_supported_os", {"Fedora": ["40"]}),
    ("gpu_preflight", "gpu_preflight_supported_arch", {"x86_64": ["Arch"]}),
    ("nouveau", "nouveau_modprobe_file", "/etc/nouveau.txt"),
    ("nouveau", "nouveau_modprobe_file", "/etc/modprobe.d/blacklist-nouveau.txt"),
    ("nouveau", "nouveau_module_sysfs_path", "/sys/module/nouveau\n"),
    ("nvidia_driver", "nvidia_driver_branch", "58"),
    ("nvidia_driver", "nvidia_driver_version", "580.105.08\n"),
    ("nvidia_driver", "nvidia_driver_repo_base_url", "ftp://developer.download.nvidia.com/"),
    ("nvidia_driver", "nvidia_driver_repo_key_fingerprint", "3BF863CC"),
    ("nvidia_driver", "nvidia_driver_repo_keyring", "/etc/apt/trusted.gpg.d/cuda.gpg"),
    ("nvidia_driver", "nvidia_driver_repo_arch", "amd64"),
    ("nvidia_driver", "nvidia_driver_preferences_file", "/etc/apt/preferences.d/kindling driver"),
    ("nvidia_driver", "nvidia_driver_repo_timeout", 0),
    ("nvidia_driver", "nvidia_driver_distro_sources_file", "/etc/apt/sources.list.d/kindling.list"),
    ("nvidia_driver", "nvidia_driver_distro_sources_file", "/etc/apt/kindling.sources"),
    (
        "nvidia_driver",
        "nvidia_driver_distro_sources_file",
        "/etc/apt/sources.list.d/../kindling.sources",
    ),
    ("cuda", "cuda_version", "13"),
    ("cuda", "cuda_versions_extra", ["12.4", "12.4"]),
    ("cuda", "cuda_versions_extra", "12.4"),
    ("cuda", "cuda_cudnn_tarball_sha256", "abc"),
    ("cuda", "cuda_profile_file", "/etc/profile.d/cuda"),
    ("cuda", "cuda_cudnn_redist_base_url", "ftp://developer.download.nvidia.com/"),
    ("cuda", "cuda_distro_sources_file", "/etc/apt/sources.list.d/kindling-cuda.list"),
    ("cuda", "cuda_distro_sources_file", "/etc/kindling-cuda.sources"),
    ("cuda", "cuda_distro_sources_file", "/etc/apt/sources.list.d/../../kindling.sources"),
    ("conda_pytorch", "conda_pytorch_version", "2.11.0+cu130"),
    ("conda_pytorch", "conda_pytorch_cuda_variant", "cuda13"),
    ("conda_pytorch", "conda_pytorch_python_version", "2.7"),
    ("conda_pytorch", "conda_pytorch_env_name", "my env"),
    ("conda_pytorch", "conda_pytorch_miniforge_sha256", {"x86-64": "0" * 64}),
    ("conda_pytorch", "conda_pytorch_group_members", ["Alice"]),
    ("conda_pytorch", "conda_pytorch_index_url", "http://download.pytorch.org/whl/cu130"),
    ("conda_pytorch", "conda_pytorch_conda_prefix", "/"),
    ("jupyter", "jupyter_port", 0),
    ("jupyter", "jupyter_port", 65536),
    ("jupyter", "jupyter_ip", "example.com"),
    ("jupyter", "jupyter_user", "Jupyter"),
    ("jupyter", "jupyter_kernel_display_name", "Python\nPyTorch"),
    ("jupyter", "jupyter_service_name", "jupyter.service"),
    ("jupyter", "jupyter_service_name", "../jupyter"),
    ("jupyter", "jupyter_token_file", "/tmp/token"),
    ("jupyter", "jupyter_venv", "venvs/jupyter"),
    ("jupyter", "jupyter_lab_version", "==4.5.0"),
    ("jupyter", "jupyter_pip_index_url", "http://pypi.org/simple"),
    ("dcgm_exporter", "dcgm_exporter_image", "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3"),
    ("dcgm_exporter", "dcgm_exporter_image_digest", "sha256:abc"),
    ("dcgm_exporter", "dcgm_exporter_counters", [{"field": "GPU_UTIL", "type": "gauge"}]),
    (
        "dcgm_exporter",
        "dcgm_exporter_counters",
        [{"field": "DCGM_FI_X", "type": "gauge", "help": "a, b"}],
    ),
    ("dcgm_exporter", "dcgm_exporter_counters_file", "/etc/counters.csv"),
    ("dcgm_exporter", "dcgm_exporter_docker_repo_key_fingerprint", "0EBFCD88"),
    ("dcgm_exporter", "dcgm_exporter_collect_interval_ms", 50),
    ("dcgm_exporter", "dcgm_exporter_dcgm_packages", []),
    ("dcgm_exporter", "dcgm_exporter_bind_address", "all"),
    ("gpu_check", "gpu_check_tolerance", 0),
    ("gpu_check", "gpu_check_tolerance", 1.5),
    ("gpu_check", "gpu_check_extra_args", ["--steps=30; rm -rf /"]),
    ("gpu_check", "gpu_check_multinode_sizes", "1M,,2M"),
    ("gpu_check", "gpu_check_nccl_socket_ifname", "eth0 eth1"),
    ("gpu_check", "gpu_check_multinode_port", 80),
    ("gpu_check", "gpu_check_python", "python3"),
    ("reboot_coordinator", "reboot_coordinator_timeout", 30),
    ("reboot_coordinator", "reboot_coordinator_state_dir", "/"),
    ("reboot_coordinator", "reboot_coordinator_container_types", ["docker", "docker"]),
    ("reboot_coordinator", "reboot_coordinator_container_types", ["Docker!"]),
]


def variables_named(role, message):
    words = set(re.findall(r"[a-z][a-z0-9_]*", message))
    return words & set(options(role))


def test_bad_values_cover_every_role():
    counts = {role: sum(1 for r, _, _ in BAD if r == role) for role in ROLES}
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize(("role", "name", "value"), BAD)
def test_a_bad_value_gets_one_message_that_names_it_first(role, name, value):
    messages = check(role, **{name: value})
    assert len(messages) == 1, messages
    message = messages[0]
    assert message.startswith(f"{name} is {it._quoted(value)}: "), message
    assert variables_named(role, message.split(":", 1)[1]) <= {name}, message


def test_several_bad_values_get_one_message_each_in_shape_order():
    messages = check("jupyter", jupyter_port=0, jupyter_user="Bad User", jupyter_ip="example")
    assert [m.split(" ", 1)[0] for m in messages] == ["jupyter_user", "jupyter_ip", "jupyter_port"]


@pytest.mark.parametrize("tag", ["latest", "LATEST"])
def test_the_image_tag_latest_is_refused(tag):
    assert check("dcgm_exporter", dcgm_exporter_image_tag=tag) == [
        f"dcgm_exporter_image_tag is '{tag}': '{tag}' is not allowed here; give an exact value "
        "like 4.5.3-4.8.2-ubuntu22.04"
    ]


def test_a_secret_value_is_never_shown():
    messages = check("jupyter", jupyter_password_hash="hunter2-plaintext")
    assert len(messages) == 1
    assert messages[0].startswith("jupyter_password_hash is (a value hidden by no_log): ")
    assert "never a plain password" in messages[0]
    assert "hunter2" not in messages[0]
    assert check("jupyter", jupyter_password_hash="argon2:$argon2id$v=19$m=10240,t=10,p=8$x") == []


def test_a_type_error_is_ansibles_message_alone():
    messages = check("jupyter", jupyter_port="eighty")
    assert len(messages) == 1, messages
    assert messages[0].startswith(
        "argument 'jupyter_port' is of type str and we were unable to convert to int"
    )
    assert not any(m.startswith("jupyter_port is") for m in messages)


def test_a_list_element_type_error_is_ansibles_message_alone():
    messages = check("dcgm_exporter", dcgm_exporter_counters=[1])
    assert len(messages) == 1, messages
    assert messages[0].startswith(
        "Elements value for option 'dcgm_exporter_counters' is of type int"
    )


@pytest.mark.parametrize(
    ("role", "changes", "expect"),
    [
        (
            "nouveau",
            {"nouveau_reboot_policy": "sometimes"},
            "value of nouveau_reboot_policy must be one of: never, auto, always, got: sometimes",
        ),
        (
            "nouveau",
            {"nouveau_blacklist_enabled": "maybe"},
            "argument 'nouveau_blacklist_enabled' is of type str and we were unable to convert "
            "to bool",
        ),
        (
            "site_lock",
            {"site_lock_wait_seconds": "soon"},
            "argument 'site_lock_wait_seconds' is of type str and we were unable to convert to int",
        ),
        (
            "gpu_check",
            {"gpu_check_nccl_debug": "LOUD"},
            "value of gpu_check_nccl_debug must be one of: VERSION, WARN, INFO, TRACE, got: LOUD",
        ),
    ],
)
def test_argument_specs_messages_come_first_and_alone(role, changes, expect):
    messages = check(role, **changes)
    assert len(messages) == 1, messages
    assert messages[0].startswith(expect)


def test_argument_spec_errors_is_ansibles_validation():
    assert ri.argument_spec_errors({"p": {"type": "int"}}, {"p": 5}) == []
    errors = ri.argument_spec_errors({"p": {"type": "int"}}, {"p": "five"})
    assert len(errors) == 1 and errors[0].startswith("argument 'p' is of type str")


# --- rules that relate variables


def test_rule_driver_version_of_another_branch():
    messages = check("nvidia_driver", nvidia_driver_version="570.195.03")
    assert messages == [
        "nvidia_driver_version is '570.195.03': it is not a release of nvidia_driver_branch "
        "'580'; set nvidia_driver_branch to '570' or pick a 580.x version"
    ]
    assert check("nvidia_driver", nvidia_driver_version="580.105.08-1") == []
    assert (
        check("nvidia_driver", nvidia_driver_version="570.195.03", nvidia_driver_branch="570") == []
    )


def test_rule_extra_cuda_versions_without_the_main_one():
    messages = check("cuda", cuda_versions_extra=["12.4", "13.0"])
    assert messages == [
        "cuda_versions_extra is ['12.4', '13.0']: it lists cuda_version '13.0', which is "
        "installed anyway; list only the other toolkits"
    ]
    assert check("cuda", cuda_versions_extra=["12.4"]) == []


def test_rule_tarball_url_and_sha256_come_together():
    url = "https://mirror.example.com/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz"
    digest = "a" * 64
    tarball = {"cuda_cudnn_install_method": "tarball"}
    no_sha = check("cuda", cuda_cudnn_tarball_url=url, **tarball)
    assert len(no_sha) == 1
    assert no_sha[0].startswith("cuda_cudnn_tarball_sha256 is '': cuda_cudnn_tarball_url is set")
    no_url = check("cuda", cuda_cudnn_tarball_sha256=digest, **tarball)
    assert len(no_url) == 1
    assert no_url[0].startswith("cuda_cudnn_tarball_url is '': cuda_cudnn_tarball_sha256 is set")
    assert (
        check("cuda", cuda_cudnn_tarball_url=url, cuda_cudnn_tarball_sha256=digest, **tarball) == []
    )
    # Only the tarball method uses them.
    assert check("cuda", cuda_cudnn_tarball_url=url) == []


def test_rule_conda_channel_stopped_after_2_5():
    messages = check(
        "conda_pytorch", conda_pytorch_install_method="conda", conda_pytorch_version="2.11.0"
    )
    assert len(messages) == 1
    assert messages[0].startswith("conda_pytorch_install_method is 'conda': ")
    assert "pytorch/pytorch#138506" in messages[0]
    assert (
        "torch 2.11.0 comes only as wheels - set conda_pytorch_install_method to pip."
        in (messages[0])
    )
    assert (
        check(
            "conda_pytorch",
            conda_pytorch_install_method="conda",
            conda_pytorch_version="2.5.1",
            conda_pytorch_torchvision_version="0.20.1",
        )
        == []
    )


def test_rule_conda_install_method_needs_the_conda_backend():
    messages = check(
        "conda_pytorch",
        conda_pytorch_install_method="conda",
        conda_pytorch_version="2.5.1",
        conda_pytorch_backend="venv",
    )
    assert len(messages) == 1
    assert messages[0].startswith("conda_pytorch_install_method is 'conda': installing torch with")
    assert messages[0].endswith("set it to pip")


def test_rule_miniforge_sha256_for_this_machine():
    only_arm = {"aarch64": "83280e4ee71a5bd547d6b318f96e9ababe1054911ff6cc2b8801ce5493fe67e5"}
    messages = check("conda_pytorch", conda_pytorch_miniforge_sha256=only_arm)
    assert len(messages) == 1
    assert messages[0].startswith(
        "conda_pytorch_miniforge_sha256 has no sha256 for x86_64 (Miniforge 26.1.1-3)"
    )
    assert "Miniforge3-26.1.1-3-Linux-x86_64.sh.sha256" in messages[0]
    malformed = check("conda_pytorch", conda_pytorch_miniforge_sha256={"x86_64": "not-a-checksum"})
    assert len(malformed) == 1 and "no sha256 for x86_64" in malformed[0]
    # aarch64 hosts need only theirs; adopt mode and the venv backend download nothing.
    values = dict(defaults("conda_pytorch"), conda_pytorch_miniforge_sha256=only_arm)
    arm = ri.check_role(
        "conda_pytorch",
        spec("conda_pytorch"),
        values,
        host=False,
        context=dict(CONTEXT, machine="aarch64"),
    )
    assert arm == []
    assert (
        check(
            "conda_pytorch",
            conda_pytorch_miniforge_sha256=only_arm,
            conda_pytorch_python="/opt/conda/envs/pytorch/bin/python",
        )
        == []
    )
    assert (
        check(
            "conda_pytorch", conda_pytorch_miniforge_sha256=only_arm, conda_pytorch_backend="venv"
        )
        == []
    )


def test_rule_open_bind_without_tls():
    messages = check("jupyter", jupyter_ip="0.0.0.0")
    assert len(messages) == 1
    assert messages[0].startswith("jupyter_ip 0.0.0.0 is not a loopback address")
    assert "ssh -N -L 8888:localhost:8888 user@host" in messages[0]
    other_port = check("jupyter", jupyter_ip="0.0.0.0", jupyter_port=9999)
    assert "ssh -N -L 9999:localhost:9999 user@host" in other_port[0]


def test_rule_open_bind_with_a_certificate_but_no_key():
    messages = check("jupyter", jupyter_ip="0.0.0.0", jupyter_tls_cert="/etc/ssl/certs/j.pem")
    assert [m.split(" ", 1)[0] for m in messages] == ["jupyter_ip", "jupyter_tls_key"]
    assert messages[1] == (
        "jupyter_tls_key is '': jupyter_tls_cert is set, so set jupyter_tls_key too (a certificate "
        "needs its key), or neither"
    )


def test_rule_open_bind_is_fine_with_tls_or_an_acknowledgement():
    assert (
        check(
            "jupyter",
            jupyter_ip="0.0.0.0",
            jupyter_tls_cert="/etc/ssl/certs/j.pem",
            jupyter_tls_key="/etc/ssl/private/j.key",
        )
        == []
    )
    assert check("jupyter", jupyter_ip="0.0.0.0", jupyter_allow_insecure_bind=True) == []
    for loopback in ("127.0.0.1", "::1", "localhost"):
        assert check("jupyter", jupyter_ip=loopback) == [], loopback


def test_rule_key_without_certificate_on_loopback():
    messages = check("jupyter", jupyter_tls_key="/etc/ssl/private/j.key")
    assert len(messages) == 1
    assert messages[0].startswith("jupyter_tls_cert is '': jupyter_tls_key is set")


def test_rule_notebook_dir_above_home():
    messages = check(
        "jupyter", jupyter_notebook_dir="/var/lib/jup", jupyter_home="/var/lib/jup/home"
    )
    assert len(messages) == 1
    assert messages[0].startswith(
        "jupyter_notebook_dir is '/var/lib/jup': it is above jupyter_home"
    )


@pytest.mark.parametrize(
    "path", ["/etc", "/var/lib", "/home", "/usr/local", "/var/lib/dpkg", "/tmp/"]
)
def test_a_system_directory_is_never_a_role_s_own(path):
    messages = check("jupyter", jupyter_home=path, jupyter_notebook_dir=path.rstrip("/") + "/nb")
    assert messages and messages[0].startswith(
        f"jupyter_home is {path!r}: {path.rstrip('/')} is a system"
    )


@pytest.mark.parametrize("group", ["docker", "sudo", "disk"])
def test_root_equivalent_groups_are_refused_for_the_notebook_user(group):
    messages = check("jupyter", jupyter_user_groups=["video", group])
    assert len(messages) == 1
    assert messages[0].startswith("jupyter_user_groups is ['video', '" + group + "']: " + group)
    assert check("jupyter", jupyter_user_groups=["video", "render"]) == []
    assert check("jupyter", jupyter_notebook_dir="/srv/notebooks") == []


def test_rule_native_dcgm_needs_the_binary_and_its_sha256():
    messages = check("dcgm_exporter", dcgm_exporter_mode="native")
    assert [m.split(" ", 1)[0] for m in messages] == [
        "dcgm_exporter_binary_url",
        "dcgm_exporter_binary_sha256",
    ]
    assert messages[0].startswith("dcgm_exporter_binary_url is '': dcgm_exporter_mode native needs")
    assert "64 hex digits" in messages[1]
    assert (
        check(
            "dcgm_exporter",
            dcgm_exporter_mode="native",
            dcgm_exporter_binary_url="https://example.com/dcgm-exporter",
            dcgm_exporter_binary_sha256="b" * 64,
        )
        == []
    )


def test_rule_dcgm_and_node_exporter_ports_differ():
    messages = check("dcgm_exporter", dcgm_exporter_node_exporter_port=9400)
    assert messages == [
        "dcgm_exporter_node_exporter_port is 9400: it is dcgm_exporter_port too; give each "
        "exporter a port of its own"
    ]


@pytest.mark.parametrize(
    ("role", "name"),
    [
        ("nvidia_driver", "nvidia_driver_distro_sources_file"),
        ("cuda", "cuda_distro_sources_file"),
    ],
)
def test_distro_sources_file_is_a_deb822_file_apt_reads(role, name):
    assert check(role, **{name: "/etc/apt/sources.list.d/x.sources"}) == []
    assert check(role, **{name: "/etc/apt/sources.list.d/kindling_distro-1.2.sources"}) == []
    for bad in (
        "/etc/apt/sources.list.d/x.list",
        "/etc/apt/sources.list.d/x.sources.disabled",
        "/etc/apt/x.sources",
        "/tmp/x.sources",
        "/etc/apt/sources.list.d/../x.sources",
        "/etc/apt/sources.list.d/./x.sources",
        "etc/apt/sources.list.d/x.sources",
    ):
        messages = check(role, **{name: bad})
        assert len(messages) == 1, (bad, messages)
        assert messages[0].startswith(f"{name} is '{bad}': "), messages
    outside = check(role, **{name: "/etc/apt/x.sources"})[0]
    assert "/etc/apt/sources.list.d" in outside and ".sources" in outside
    dots = check(role, **{name: "/etc/apt/sources.list.d/../x.sources"})[0]
    assert "'..'" in dots


def test_rule_distro_toolkit_and_cudnns_apt_packages():
    # The defaults install cuDNN from NVIDIA's apt repository.
    assert defaults("cuda")["cuda_cudnn_install"] is True
    assert defaults("cuda")["cuda_cudnn_install_method"] == "apt"
    messages = check("cuda", cuda_install_method="distro")
    assert len(messages) == 1, messages
    assert messages[0].startswith(
        "cuda_cudnn_install_method is 'apt': cuda_install_method is distro"
    )
    assert "cuda_cudnn_install_method: tarball" in messages[0]
    assert check("cuda", cuda_install_method="distro", cuda_cudnn_install_method="tarball") == []
    assert check("cuda", cuda_install_method="distro", cuda_cudnn_install=False) == []
    # NVIDIA's repository has both: no finding.
    assert check("cuda", cuda_install_method="cuda_repo") == []


def test_rule_distro_toolkit_is_one_toolkit():
    messages = check(
        "cuda",
        cuda_install_method="distro",
        cuda_cudnn_install_method="tarball",
        cuda_versions_extra=["12.4"],
    )
    assert len(messages) == 1, messages
    assert messages[0].startswith("cuda_versions_extra is ['12.4']: cuda_install_method is distro")
    assert "cuda_install_method: cuda_repo" in messages[0]
    # Both wrong: one message each.
    both = check("cuda", cuda_install_method="distro", cuda_versions_extra=["12.4"])
    assert [m.split(" ", 1)[0] for m in both] == [
        "cuda_cudnn_install_method",
        "cuda_versions_extra",
    ]
    assert check("cuda", cuda_install_method="cuda_repo", cuda_versions_extra=["12.4"]) == []


def test_install_method_choices_come_from_argument_specs():
    messages = check("cuda", cuda_install_method="conda")
    assert len(messages) == 1
    assert messages[0].startswith("value of cuda_install_method must be one of: cuda_repo, distro")


def test_rules_wait_for_the_shapes():
    # A wrong shape is reported alone; the rules would only add noise about a broken value.
    messages = check("jupyter", jupyter_ip="0.0.0.0", jupyter_port=0)
    assert messages == ["jupyter_port is 0: it must be from 1 to 65535 (a TCP port)"]


# --- host checks


def write_unit(directory, name, text):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.service"
    path.write_text(text)
    return path


MARKED = "# Managed by Kindling (role jupyter); changes are overwritten.\n[Unit]\nDescription=x\n"


def test_unit_owner_missing_unit(tmp_path):
    assert (
        ri.unit_owner("jupyter", "jupyter", [str(tmp_path / "etc"), str(tmp_path / "lib")]) is None
    )


def test_unit_owner_kindlings_own_unit(tmp_path):
    write_unit(tmp_path / "etc", "jupyter", MARKED)
    assert ri.unit_owner("jupyter", "jupyter", [str(tmp_path / "etc")]) is None


def test_unit_owner_a_unit_someone_else_wrote(tmp_path):
    path = write_unit(tmp_path / "lib", "jupyter", "[Unit]\nDescription=Jupyter from a package\n")
    dirs = [str(tmp_path / "etc"), str(tmp_path / "lib")]
    assert ri.unit_owner("jupyter", "jupyter", dirs) == str(path)


def test_unit_owner_another_roles_mark_is_not_this_roles(tmp_path):
    path = write_unit(tmp_path, "jupyter", MARKED.replace("(role jupyter)", "(role dcgm_exporter)"))
    assert ri.unit_owner("jupyter", "jupyter", [str(tmp_path)]) == str(path)


def test_unit_owner_reads_only_the_head(tmp_path):
    path = write_unit(tmp_path, "jupyter", "#" * 500 + "\n" + MARKED)
    assert ri.unit_owner("jupyter", "jupyter", [str(tmp_path)]) == str(path)


def test_unit_owner_a_symlinked_unit_is_never_kindlings(tmp_path):
    real = write_unit(tmp_path / "real", "jupyter", MARKED)
    (tmp_path / "etc").mkdir()
    link = tmp_path / "etc" / "jupyter.service"
    link.symlink_to(real)
    assert ri.unit_owner("jupyter", "jupyter", [str(tmp_path / "etc")]) == str(link)
    dangling = tmp_path / "etc" / "other.service"
    dangling.symlink_to(tmp_path / "nowhere")
    assert ri.unit_owner("other", "jupyter", [str(tmp_path / "etc")]) == str(dangling)


def make_dirs(root, *parts, mode=0o755):
    path = root
    for part in parts:
        path = path / part
        path.mkdir(exist_ok=True)
        path.chmod(mode)
    return path


def test_unsafe_secret_path_safe_chain(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path)) is None
    (tmp_path / "etc" / "jupyter" / "token").write_text("x\n")
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path)) is None


def test_unsafe_secret_path_missing_directories(tmp_path):
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path)) is None
    make_dirs(tmp_path, "etc")
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path)) is None


def test_unsafe_secret_path_walk_starts_below_root(tmp_path):
    # root's own ancestors (/tmp is 1777) and root itself are the caller's; the walk
    # checks only the directories of the path, under root.
    root = make_dirs(tmp_path, "root", mode=0o1777)
    make_dirs(root, "etc", "jupyter")
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(root)) is None
    assert ri.unsafe_secret_path("/etc/jupyter/token", str(root) + "/") is None


def test_unsafe_secret_path_default_root_walks_from_slash(tmp_path):
    assert os.stat("/tmp").st_mode & 0o002, "this test needs a world-writable /tmp"
    why = ri.unsafe_secret_path(str(tmp_path / "token"))
    assert why is not None
    assert why.startswith("/tmp is writable by users other than root (mode 1777)")


def test_unsafe_secret_path_symlinked_directory(tmp_path):
    make_dirs(tmp_path, "etc")
    make_dirs(tmp_path, "elsewhere")
    (tmp_path / "etc" / "jupyter").symlink_to(tmp_path / "elsewhere")
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == f"{tmp_path}/etc/jupyter is a symbolic link, which someone could point anywhere"


def test_unsafe_secret_path_directory_of_another_user(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    os.chown(jupyter, 65534, 0)
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == f"{tmp_path}/etc/jupyter is owned by uid 65534, not root"


def test_unsafe_secret_path_checks_every_directory_on_the_way(tmp_path):
    etc = make_dirs(tmp_path, "etc")
    make_dirs(etc, "jupyter")
    os.chown(etc, 65534, 65534)
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == f"{tmp_path}/etc is owned by uid 65534, not root"


@pytest.mark.parametrize("mode", [0o1777, 0o777, 0o775, 0o757])
def test_unsafe_secret_path_directory_others_can_write(tmp_path, mode):
    make_dirs(tmp_path, "etc")
    make_dirs(tmp_path / "etc", "jupyter", mode=mode)
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == (f"{tmp_path}/etc/jupyter is writable by users other than root (mode {mode:04o})")


def test_unsafe_secret_path_file_in_place_of_a_directory(tmp_path):
    make_dirs(tmp_path, "etc")
    (tmp_path / "etc" / "jupyter").write_text("")
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == f"{tmp_path}/etc/jupyter is not a directory"


def test_unsafe_secret_path_the_file_is_a_link(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    (jupyter / "token").symlink_to(tmp_path / "shadow")
    why = ri.unsafe_secret_path("/etc/jupyter/token", str(tmp_path))
    assert why == (
        f"{tmp_path}/etc/jupyter/token is a symbolic link; remove it so the secret is written to "
        "a file of its own"
    )


def test_host_checked():
    assert ri.host_checked("jupyter") == (
        "jupyter_service_name",
        "jupyter_token_file",
        "jupyter_home",
        "jupyter_user",
        "jupyter_notebook_dir",
        "jupyter_tls_cert",
        "jupyter_tls_key",
    )
    assert ri.host_checked("cuda") == ()


def jupyter_values(**changes):
    return dict(defaults("jupyter"), **changes)


def test_host_findings_jupyter_end_to_end(tmp_path):
    unit = write_unit(tmp_path / "lib" / "systemd" / "system", "jupyter", "[Unit]\n")
    make_dirs(tmp_path, "etc")
    make_dirs(tmp_path, "srv", mode=0o777)
    (tmp_path / "etc" / "jupyter").symlink_to(tmp_path / "srv")
    found = ri.host_findings("jupyter", jupyter_values(), root=str(tmp_path))
    assert [name for name, _ in found] == ["jupyter_service_name", "jupyter_token_file"]
    assert found[0][1] == (
        f"jupyter_service_name is 'jupyter': {unit} is already installed and was not written by "
        "Kindling's jupyter role; a unit of that name would shadow or replace it. Choose another "
        "name, e.g. kindling-jupyter"
    )
    assert found[1][1] == (
        f"jupyter_token_file is '/etc/jupyter/token': {tmp_path}/etc/jupyter is a symbolic link, "
        "which someone could point anywhere; keep secrets in a root-owned directory that only "
        "root can write, such as the default"
    )
    # Another name and another directory clear both.
    make_dirs(tmp_path, "etc", "kindling")
    clear = jupyter_values(
        jupyter_service_name="kindling-jupyter", jupyter_token_file="/etc/kindling/token"
    )
    assert ri.host_findings("jupyter", clear, root=str(tmp_path)) == []
    # Kindling's own unit is no collision.
    unit.write_text(MARKED)
    assert (
        ri.host_findings(
            "jupyter", jupyter_values(jupyter_token_file="/etc/kindling/token"), root=str(tmp_path)
        )
        == []
    )


def test_host_findings_only_for_roles_with_host_checks(tmp_path):
    write_unit(tmp_path / "etc" / "systemd" / "system", "jupyter", "[Unit]\n")
    assert (
        ri.host_findings("dcgm_exporter", {"jupyter_service_name": "jupyter"}, root=str(tmp_path))
        == []
    )


def test_check_role_runs_the_host_checks_last_and_only_when_asked(tmp_path):
    write_unit(tmp_path / "etc" / "systemd" / "system", "jupyter", "[Unit]\n")
    values = jupyter_values()
    with_host = ri.check_role(
        "jupyter", spec("jupyter"), values, context=CONTEXT, root=str(tmp_path)
    )
    assert len(with_host) == 1
    assert with_host[0].startswith("jupyter_service_name is 'jupyter': ")
    assert (
        ri.check_role(
            "jupyter", spec("jupyter"), values, context=CONTEXT, host=False, root=str(tmp_path)
        )
        == []
    )
    # A value that is wrong in itself is reported without looking at the host.
    bad = ri.check_role(
        "jupyter",
        spec("jupyter"),
        dict(values, jupyter_port=0),
        context=CONTEXT,
        root=str(tmp_path),
    )
    assert bad == ["jupyter_port is 0: it must be from 1 to 65535 (a TCP port)"]


# --- accounts, their directories and the files a service reads, on a fake root


def test_a_service_directory_owned_by_someone_else_is_refused(tmp_path):
    home = tmp_path / "srv" / "alice"
    home.mkdir(parents=True)
    os.chown(home, 65534, 65534)
    values = jupyter_values(jupyter_home="/srv/alice", jupyter_notebook_dir="/srv/alice/nb")
    found = dict(ri.host_findings("jupyter", values, root=str(tmp_path)))
    assert found["jupyter_home"].startswith(
        "jupyter_home is '/srv/alice': it already exists, owned by"
    )
    assert "the role would hand it to jupyter" in found["jupyter_home"]
    assert "jupyter_notebook_dir" not in found  # it does not exist yet: the role creates it


def test_an_existing_account_with_another_home_is_refused():
    values = jupyter_values(jupyter_user="daemon")  # /usr/sbin on Debian, not /var/lib/jupyter
    found = dict(ri.host_findings("jupyter", values, root="/nonexistent-root"))
    assert found["jupyter_user"].startswith("jupyter_user is 'daemon': that account already exists")


def test_a_missing_tls_file_is_refused_before_the_service_needs_it(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "cert.pem").write_text("x")
    values = jupyter_values(jupyter_tls_cert="/etc/cert.pem", jupyter_tls_key="/etc/key.pem")
    found = dict(ri.host_findings("jupyter", values, root=str(tmp_path)))
    assert "jupyter_tls_cert" not in found
    assert found["jupyter_tls_key"] == (
        "jupyter_tls_key is '/etc/key.pem': there is no such file on this host; put it there first"
    )
