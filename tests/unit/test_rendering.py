"""Every role template, fed hostile values: each value is refused or stays in its place.

For each template in roles/*/templates that writes a file on the host, and for each role
variable that reaches it, each hostile value (a newline with a systemd key after it, quotes,
``$(...)``, backticks, ``;``, ``%`` specifiers, spaces, a trailing backslash, NUL, ...) is
set alone, the way a user would set it, on top of the role's defaults. Then either

- ``check_role`` (module_utils/role_inputs.py, the role's first step) refuses it, with a
  problem that names that variable, or
- the template, rendered with Ansible's own templating (the ``template`` action's settings),
  gives a file that still parses as its format with the structure of the same file rendered
  with a harmless value in the same place (the "twin"), and the value changed only the keys,
  fields or lines that the variable belongs to (``reach`` in the TEMPLATES table).

A value that is accepted and gets out of its place fails the test, naming template,
variable and value. Derived variables are derived as the roles derive them: the set_fact
expressions are read from roles/*/tasks and templated, vars/main.yml's templates are
templated lazily, and the package plans come from module_utils (stack_plan, gpu_compat,
persistenced), so a hostile user value flows into them as it would on a host.

Shell snippets are also checked with bash -n and by sourcing them (sh, empty environment,
a PATH whose first directory catches commands; bash with `[`, `.`, conda and unknown
commands recorded). Units also go through `systemd-analyze verify` where it runs offline:
an accepted value must add no line-level warning to the defaults' unit.
"""

from __future__ import annotations

import base64
import copy
import csv
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import types
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import jinja2
import jinja2.nodes
import pytest
import yaml
from ansible.module_utils.gpu_compat import cudnn_packages
from ansible.module_utils.input_types import AbsPath, Free, Int, IPAddress, ListOf, Record, Url
from ansible.module_utils.persistenced import dropin, exec_start_argv, persistence_on
from ansible.module_utils.role_inputs import SHAPES, check_role
from ansible.module_utils.stack_plan import distro_toolkit, plan_packages, repository_id
from ansible.module_utils.vendor_catalogue import CATALOGUE
from conftest import CAPTURES, REPO_ROOT

CONTEXT = {"machine": "x86_64", "conda_pytorch_channel_last_series": "2.5"}
# What the controller knows of the host and play, for the templates that read it.
COMMON: Dict[str, Any] = {
    "ansible_managed": "Ansible managed",
    "inventory_hostname": "gpu1.example.com",
    "ansible_facts": {
        "architecture": "x86_64",
        "distribution": "Debian",
        "distribution_major_version": "12",
        "distribution_version": "12.8",
        "os_family": "Debian",
        "kernel": "6.1.0-28-cloud-amd64",
        "default_ipv4": {"address": "10.0.0.5"},
    },
}
# The template action's own settings (plugins/action/template.py in ansible-core).
TEMPLATE_OVERRIDES = {"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"}

# Strings fed wherever a string is expected. MARKER becomes a file under tmp_path that a
# command run by the rendered file would create.
HOSTILE = [
    "x\nExecStartPre=+/bin/sh -c id",
    "x\nExecStartPre=+id",  # no '/': also fits an IPv6 scope id
    "x\r\nExecStartPre=+id",
    "x\ntouch MARKER",
    'a"b',
    "a'b",
    "$(touch MARKER)",
    "`id`",
    "`touch MARKER`",
    "a;id",
    "a;touch MARKER",
    "+/bin/true",
    "%n",
    "a b",
    "/opt/x\\",
    "a\\",
    "a\x00b",
    "a\tb",
    "#x",
    "a]b",
]
# Strings an int variable takes that int() reads as a number.
INT_TRICKS = [" 9400", "9400\n", "9400 ", "9_400", "\uff19\uff14\uff10\uff10"]
# How a hostile string is placed in a value of each shape, with the harmless twin.
FORMS: Dict[type, List[Tuple[str, str]]] = {
    AbsPath: [("{}", "benign"), ("/opt/{}", "/opt/benign")],
    Url: [("{}", "benign"), ("https://example.com/{}", "https://example.com/benign")],
    IPAddress: [("{}", "benign"), ("fe80::1%{}", "fe80::1%eth0")],
}
# Settings a user makes together with the varied one, so that the role's rules (not the
# shape) would not be what refuses it.
COMPANIONS: Dict[str, Dict[str, Any]] = {
    "jupyter_ip": {"jupyter_allow_insecure_bind": True},
    "jupyter_tls_cert": {"jupyter_tls_key": "/etc/ssl/private/jupyter.key"},
    "jupyter_tls_key": {"jupyter_tls_cert": "/etc/ssl/certs/jupyter.pem"},
}
# The unit nvidia-persistenced ships with on Ubuntu (systemctl show -p ExecStart).
PERSISTENCED_EXEC_START = (
    "ExecStart={ path=/usr/bin/nvidia-persistenced ; argv[]=/usr/bin/nvidia-persistenced "
    "--user nvidia-persistenced --no-persistence-mode --verbose ; ignore_errors=no ; "
    "start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }"
)
TOKEN = "ab" * 24

Target = Any  # a variable name, or (name, index, key) for a field of a list of records


# --- Ansible's templating, which is controller code


@functools.lru_cache(maxsize=None)
def ansible() -> types.SimpleNamespace:
    """ansible-core's templating (imported on first use, inside this file's tests only)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, is_trusted_as_template, trust_as_template

    return types.SimpleNamespace(
        loader=DataLoader(),
        Templar=Templar,
        trust_as_template=trust_as_template,
        is_trusted_as_template=is_trusted_as_template,
    )


# Renders the roles' templates: controller mode, put back afterwards (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("controller_mode")


# --- the roles: defaults, vars, argument_specs, set_fact expressions


@functools.lru_cache(maxsize=None)
def role_file(role: str, name: str) -> Dict[str, Any]:
    path = REPO_ROOT / "roles" / role / name
    if not path.exists():
        return {}
    return ansible().loader.load_from_file(str(path), trusted_as_template=True) or {}


@functools.lru_cache(maxsize=None)
def options(role: str) -> Dict[str, Any]:
    specs = role_file(role, "meta/argument_specs.yml")
    return specs["argument_specs"]["main"]["options"]


@functools.lru_cache(maxsize=None)
def spec(role: str) -> Dict[str, Any]:
    return {
        name: {k: v for k, v in o.items() if k != "default"} for name, o in options(role).items()
    }


@functools.lru_cache(maxsize=None)
def set_facts(role: str) -> Dict[str, Any]:
    """Each variable a set_fact in roles/<role>/tasks sets: its (first) expression."""
    found: Dict[str, Any] = {}

    def walk(tasks: Any) -> None:
        for task in tasks or []:
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always"):
                walk(task.get(key))
            facts = task.get("ansible.builtin.set_fact", task.get("set_fact"))
            if isinstance(facts, dict):
                for name, expression in facts.items():
                    found.setdefault(name, expression)

    for path in sorted((REPO_ROOT / "roles" / role / "tasks").glob("*.yml")):
        walk(ansible().loader.load_from_file(str(path), trusted_as_template=True))
    return found


# --- values derived by modules on the host, from the same user values


def cuda_computed(v: Dict[str, Any]) -> Dict[str, Any]:
    return {"cuda__cudnn_pkgs": cudnn_packages(v["cuda_cudnn_version"], v["cuda_version"])}


def nvidia_driver_computed(v: Dict[str, Any]) -> Dict[str, Any]:
    planned, _ = plan_packages(
        repository_id(
            v["ansible_facts"]["distribution"], v["ansible_facts"]["distribution_version"]
        ),
        v["nvidia_driver_branch"],
        v["nvidia_driver_version"] or None,
        v["nvidia_driver_install_method"],
        v["nvidia_driver_kernel_modules"],
        v["nvidia_driver_package_flavor"],
        [],
        [str(v.get("cuda_version", "13.0"))],
        v["ansible_facts"]["distribution_version"],
    )
    facts = CATALOGUE["persistenced"]
    argv = persistence_on(
        exec_start_argv(PERSISTENCED_EXEC_START),
        facts["disables_persistence"],
        facts["enables_persistence"],
    )
    return {
        "nvidia_driver__packages": planned["driver"]["packages"],
        "nvidia_driver__version_glob": planned["driver"]["version"],
        "nvidia_driver__persistenced_plan": {"dropin": dropin(argv)},
    }


def jupyter_computed(v: Dict[str, Any]) -> Dict[str, Any]:
    # What slurp returns for the token file secret_token_create writes.
    return {"jupyter__token_raw": {"content": base64.b64encode(f"{TOKEN}\n".encode()).decode()}}


# --- the templates


@dataclass
class Template:
    id: str
    role: str
    src: str
    fmt: str
    # Where each variable may show in the file: (section, key) for units, a key path for
    # JSON and YAML ('*' matches any list index; a prefix allows what is below it), a key
    # for env files and apt preferences, a field index for apt lists, (row, column) for
    # CSV, a line index for plain line files. Shell snippets are checked by what sourcing
    # them does (expect), so their reach only lists the variables.
    reach: Dict[Target, Sequence[Any]]
    # The variables it uses that are no role option: vars/main.yml's, set_facts (derive),
    # module results (computed) and the play's.
    internal: Sequence[str] = ()
    base: Dict[str, Any] = field(default_factory=dict)
    derive: Sequence[str] = ()
    vars_files: Sequence[str] = ()
    computed: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None
    expect: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None


def cuda_sh_expect(v: Dict[str, Any]) -> Dict[str, Any]:
    if v["cuda_install_method"] == "distro":
        # nvcc is in /usr/bin already and the libraries in the multiarch directory.
        return {"env": {"CUDA_HOME": distro_toolkit("debian", "12")["cuda_home"]}, "trace": []}
    home = v["cuda_home"]
    return {
        "env": {
            "CUDA_HOME": home,
            "PATH": f"{home}/bin:{{PATH}}",
            "LD_LIBRARY_PATH": f"{home}/lib64",
        },
        "trace": [],
    }


def cuda_sh_computed(v: Dict[str, Any]) -> Dict[str, Any]:
    """The cuda role's gpu_stack_plan results (one per toolkit), as cuda.sh.j2 reads them."""
    toolkit = distro_toolkit("debian", "12") if v["cuda_install_method"] == "distro" else None
    return {"cuda__checks": [{"packages": {"distro_toolkit": toolkit}}]}


CUDA_SH: Dict[Target, Sequence[Any]] = {
    "cuda_version": [],
    "cuda_home": [],
    "cuda_toolkit_prefix": [],
    "cuda_install_method": [],
}
# Debian 12's own toolkit (the catalogue's distro_toolkit_packages); cuDNN then by tarball.
CUDA_DISTRO = {
    "cuda_install_method": "distro",
    "cuda_version": CATALOGUE["distro_toolkit_packages"]["debian"]["12"]["cuda"],
    "cuda_cudnn_install_method": "tarball",
}


def conda_environment(v: Dict[str, Any]) -> Dict[str, Any]:
    """The mode and paths the conda_pytorch stage takes from its part of the host's plan
    (module_utils/host_plan.py environment), from the role's inputs."""
    from ansible.module_utils import host_plan

    env = host_plan.environment(v)
    return {
        "conda_pytorch_mode": env["mode"],
        "conda_pytorch_env_dir": env["env_dir"],
        "conda_pytorch_env_python": env["env_python"],
    }


def pytorch_sh_expect(v: Dict[str, Any]) -> Dict[str, Any]:
    env_dir = v["conda_pytorch_env_dir"]
    trace = [["[", "-z", "", "]"]]
    if v["conda_pytorch_mode"] == "conda":
        script = v["conda_pytorch_conda_prefix"] + "/etc/profile.d/conda.sh"
        trace += [["[", "-r", script, "]"], [".", script], ["conda", "activate", env_dir]]
    else:
        trace += [["[", "-r", env_dir + "/bin/activate", "]"], [".", env_dir + "/bin/activate"]]
    return {"env": {}, "trace": trace}


J = "roles/jupyter/templates/"
D = "roles/dcgm_exporter/templates/"
N = "roles/nvidia_driver/templates/"
UNIT_DESC, EXEC = ("Unit", "Description"), ("Service", "ExecStart")
NATIVE = {
    "dcgm_exporter_mode": "native",
    "dcgm_exporter_binary_url": "https://example.com/dcgm-exporter",
    "dcgm_exporter_binary_sha256": "c" * 64,
}
COUNTERS_NOWHERE: Dict[Target, Sequence[Any]] = {
    ("dcgm_exporter_counters", 0, "field"): [],
    ("dcgm_exporter_counters", 0, "help"): [],
}
CONDA_PYTORCH_SH: Dict[Target, Sequence[Any]] = {
    "conda_pytorch_backend": [],
    "conda_pytorch_python": [],
    "conda_pytorch_conda_prefix": [],
    "conda_pytorch_env_name": [],
    "conda_pytorch_venv_path": [],
}
DCGM_TARGETS = ("scrape_configs", "*", "static_configs", "*", "targets")

TEMPLATES = [
    Template(
        "jupyter.service.j2",
        "jupyter",
        J + "jupyter.service.j2",
        "systemd",
        reach={
            "jupyter_ip": [UNIT_DESC],
            "jupyter_port": [UNIT_DESC],
            "jupyter_user": [("Service", "User")],
            "jupyter_group": [("Service", "Group")],
            "jupyter_home": [("Service", "ReadWritePaths")],
            "jupyter_notebook_dir": [
                ("Service", "WorkingDirectory"),
                ("Service", "ReadWritePaths"),
            ],
            "jupyter_venv": [EXEC],
            "jupyter_kernel_python": [EXEC],
            "jupyter_service_name": [("Service", "RuntimeDirectory")],
        },
        internal=("jupyter_config_dir", "jupyter_env_file", "jupyter__lab_prefix"),
        derive=("jupyter__lab_prefix",),
    ),
    Template(
        "jupyter.env.j2",
        "jupyter",
        J + "jupyter.env.j2",
        "env",
        reach={
            "jupyter_service_name": ["JUPYTER_RUNTIME_DIR"],
            "jupyter_home": ["JUPYTER_CONFIG_DIR"],
            "jupyter_password_hash": ["JUPYTER_TOKEN"],
        },
        internal=("jupyter__token_raw",),
        computed=jupyter_computed,
    ),
    Template(
        "jupyter_server_config.json.j2",
        "jupyter",
        J + "jupyter_server_config.json.j2",
        "json",
        reach={
            "jupyter_ip": [("ServerApp", "ip"), ("ServerApp", "allow_remote_access")],
            "jupyter_port": [("ServerApp", "port")],
            "jupyter_notebook_dir": [("ServerApp", "root_dir")],
            "jupyter_tls_cert": [("ServerApp", "certfile"), ("ServerApp", "keyfile")],
            "jupyter_tls_key": [("ServerApp", "certfile"), ("ServerApp", "keyfile")],
            "jupyter_password_hash": [("PasswordIdentityProvider",), ("IdentityProvider",)],
            "jupyter_venv": [("KernelSpecManager",)],
            "jupyter_kernel_name": [("KernelSpecManager", "allowed_kernelspecs")],
        },
        internal=("jupyter_loopback_addresses",),
        base={"jupyter_venv": "/opt/venvs/jupyter"},
    ),
    Template(
        "kernel.json.j2",
        "jupyter",
        J + "kernel.json.j2",
        "json",
        reach={
            "jupyter_kernel_python": [("argv", 0)],
            "jupyter_kernel_display_name": [("display_name",)],
        },
    ),
    Template(
        "dcgm-exporter-container.service.j2",
        "dcgm_exporter",
        D + "dcgm-exporter-container.service.j2",
        "systemd",
        reach={
            "dcgm_exporter_image": [UNIT_DESC, EXEC],
            "dcgm_exporter_image_tag": [UNIT_DESC, EXEC],
            "dcgm_exporter_image_digest": [UNIT_DESC, EXEC],
            "dcgm_exporter_bind_address": [UNIT_DESC, EXEC],
            "dcgm_exporter_port": [UNIT_DESC, EXEC],
            "dcgm_exporter_counters_file": [EXEC],
            "dcgm_exporter_collect_interval_ms": [EXEC],
            **COUNTERS_NOWHERE,
        },
        internal=(
            "dcgm_exporter_counters_in_container",
            "dcgm_exporter_image_ref",
            "dcgm_exporter_publish",
        ),
    ),
    Template(
        "dcgm-exporter-native.service.j2",
        "dcgm_exporter",
        D + "dcgm-exporter-native.service.j2",
        "systemd",
        reach={
            "dcgm_exporter_user": [("Service", "User"), ("Service", "Group")],
            "dcgm_exporter_bind_address": [UNIT_DESC, EXEC],
            "dcgm_exporter_port": [UNIT_DESC, EXEC],
            "dcgm_exporter_counters_file": [EXEC],
            "dcgm_exporter_collect_interval_ms": [EXEC],
            **COUNTERS_NOWHERE,
        },
        internal=("dcgm_exporter_publish",),
        base=NATIVE,
    ),
    Template(
        "counters.csv.j2",
        "dcgm_exporter",
        D + "counters.csv.j2",
        "csv",
        reach={
            ("dcgm_exporter_counters", 0, "field"): [(0, 0)],
            ("dcgm_exporter_counters", 0, "type"): [(0, 1)],
            ("dcgm_exporter_counters", 0, "help"): [(0, 2)],
        },
    ),
    Template(
        "prometheus-scrape.yml.j2",
        "dcgm_exporter",
        D + "prometheus-scrape.yml.j2",
        "yaml",
        reach={
            "dcgm_exporter_bind_address": [DCGM_TARGETS],
            "dcgm_exporter_prometheus_target": [DCGM_TARGETS],
            "dcgm_exporter_port": [("scrape_configs", 1, "static_configs", "*", "targets")],
            "dcgm_exporter_node_exporter_port": [
                ("scrape_configs", 0, "static_configs", "*", "targets")
            ],
            "dcgm_exporter_collect_interval_ms": [("scrape_configs", 1, "scrape_interval")],
        },
        internal=("dcgm_exporter_publish", "dcgm_exporter_scrape_address", "inventory_hostname"),
    ),
    *(
        Template(
            f"cuda.sh.j2{suffix}",
            "cuda",
            "roles/cuda/templates/cuda.sh.j2",
            "shell",
            reach=CUDA_SH,
            internal=("cuda__checks",),
            base=base,
            computed=cuda_sh_computed,
            expect=cuda_sh_expect,
        )
        for suffix, base in (("", {}), ("[distro]", CUDA_DISTRO))
    ),
    Template(
        "cudnn-preferences.j2",
        "cuda",
        "roles/cuda/templates/cudnn-preferences.j2",
        "apt_prefs",
        reach={
            "cuda_version": ["Package", "Pin"],
            "cuda_cudnn_version": ["Explanation", "Pin"],
        },
        internal=("cuda__cudnn_pkgs",),
        computed=cuda_computed,
    ),
    Template(
        "ld.so.conf.j2",
        "cuda",
        "roles/cuda/templates/ld.so.conf.j2",
        "lines",
        reach={"cuda_version": [1], "cuda_toolkit_prefix": [1]},
    ),
    *(
        Template(
            f"pytorch.sh.j2[{mode}]",
            "conda_pytorch",
            "roles/conda_pytorch/templates/pytorch.sh.j2",
            "shell",
            reach=CONDA_PYTORCH_SH,
            internal=("conda_pytorch_env_dir", "conda_pytorch_mode"),
            base=base,
            computed=conda_environment,
            expect=pytorch_sh_expect,
        )
        for mode, base in (
            ("conda", {}),
            ("venv", {"conda_pytorch_backend": "venv"}),
            ("adopt", {"conda_pytorch_python": "/opt/conda/envs/pytorch/bin/python"}),
        )
    ),
    Template(
        "preferences.j2",
        "nvidia_driver",
        N + "preferences.j2",
        "apt_prefs",
        reach={
            "nvidia_driver_branch": ["Explanation", "Package", "Pin"],
            "nvidia_driver_version": ["Explanation", "Pin"],
            "nvidia_driver_package_flavor": ["Package"],
            "nvidia_driver_kernel_modules": ["Package"],
            "nvidia_driver_install_method": ["Package"],
        },
        internal=("nvidia_driver__packages", "nvidia_driver__version_glob"),
        vars_files=("vars/Debian-12.yml",),
        computed=nvidia_driver_computed,
    ),
    # No user variable reaches these two; they are still parsed as their format.
    Template(
        "persistenced-dropin.conf.j2",
        "nvidia_driver",
        N + "persistenced-dropin.conf.j2",
        "systemd",
        reach={},
        internal=("nvidia_driver__persistenced_plan",),
        vars_files=("vars/Debian-12.yml",),
        computed=nvidia_driver_computed,
    ),
    Template(
        "blacklist-nouveau.conf.j2",
        "nouveau",
        "roles/nouveau/templates/blacklist-nouveau.conf.j2",
        "lines",
        reach={},
    ),
]


# --- rendering


def target_name(target: Target) -> str:
    return target if isinstance(target, str) else target[0]


def target_shape(role: str, target: Target) -> Any:
    shape = SHAPES[role][target_name(target)]
    if not isinstance(target, str):
        element = shape.element if isinstance(shape, ListOf) else shape
        shape = element.fields[target[2]] if isinstance(element, Record) else element
    return shape


def user_values(tpl: Template, target: Target, value: Any) -> Dict[str, Any]:
    """The user's settings with ``value`` at ``target`` (and the settings that go with it)."""
    name = target_name(target)
    values = dict(tpl.base, **COMPANIONS.get(name, {}))
    if isinstance(target, str):
        values[name] = value
    else:
        items = copy.deepcopy(values.get(name, role_file(tpl.role, "defaults/main.yml")[name]))
        items[target[1]][target[2]] = value
        values[name] = items
    return values


def is_template(value: Any) -> bool:
    if isinstance(value, str):
        return ansible().is_trusted_as_template(value) and "{{" in value
    if isinstance(value, dict):
        return any(is_template(v) for v in value.values())
    if isinstance(value, list):
        return any(is_template(v) for v in value)
    return False


@functools.lru_cache(maxsize=None)
def names_in(source: str) -> FrozenSet[str]:
    """The variables a Jinja source reads (not those it sets itself)."""
    names = list(jinja2.Environment().parse(source).find_all(jinja2.nodes.Name))
    stored = {n.name for n in names if n.ctx in ("store", "param")}
    return frozenset({n.name for n in names if n.ctx == "load"} - stored - {"true", "false"})


def depends_on(source: str, variables: Dict[str, Any], seen: Optional[set] = None) -> set:
    """The variables a template reads, and those their templates read, and so on."""
    seen = set() if seen is None else seen
    for name in names_in(source) - seen:
        seen.add(name)
        if isinstance(variables.get(name), str) and is_template(variables[name]):
            depends_on(variables[name], variables, seen)
    return seen


TEMPLATED: Dict[Tuple[str, str, str], Any] = {}


def effective(tpl: Template, user: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """All variables the template sees, and the role's options as role_inputs templates them.

    An option whose value is a template is templated once per value of what it reads.
    """
    variables: Dict[str, Any] = copy.deepcopy(COMMON)
    variables.update(role_file(tpl.role, "defaults/main.yml"))
    variables.update(user)
    variables.update(role_file(tpl.role, "vars/main.yml"))  # role vars win over inventory
    for name in tpl.vars_files:
        variables.update(role_file(tpl.role, name))
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    values = {}
    for name in options(tpl.role):
        value = variables.get(name, KeyError)
        if value is KeyError or not is_template(value):
            if value is not KeyError:
                values[name] = value
            continue
        if not isinstance(value, str):
            values[name] = templar.template(value)
            continue
        inputs = {n: variables.get(n) for n in sorted(depends_on(value, variables))}
        key = (name, str(value), json.dumps(inputs, sort_keys=True, default=str))
        if key not in TEMPLATED:
            TEMPLATED[key] = templar.template(value)
        values[name] = TEMPLATED[key]
    variables.update(values)
    return variables, values


def derive(tpl: Template, variables: Dict[str, Any]) -> Dict[str, Any]:
    for name in tpl.derive:
        expression = set_facts(tpl.role)[name]
        templar = ansible().Templar(loader=ansible().loader, variables=variables)
        variables[name] = templar.template(expression)
    if tpl.computed:
        variables.update(tpl.computed(variables))
    return variables


def render(tpl: Template, variables: Dict[str, Any]) -> str:
    source = ansible().trust_as_template((REPO_ROOT / tpl.src).read_text(encoding="utf-8"))
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    return templar.template(source, escape_backslashes=False, overrides=TEMPLATE_OVERRIDES)


@functools.lru_cache(maxsize=None)
def _problems(role: str, frozen: str) -> Tuple[str, ...]:
    return tuple(check_role(role, spec(role), json.loads(frozen), host=False, context=CONTEXT))


def problems_of(role: str, values: Dict[str, Any]) -> Tuple[str, ...]:
    return _problems(role, json.dumps(values, sort_keys=True, default=str))


def names_variable(problem: str, name: str) -> bool:
    """Whether a problem is about ``name``: role_inputs' messages begin "<name> is ...",
    Ansible's own argument_spec ones "argument '<name>' ..." (a type) or "value of <name>
    must be one of: ..." (choices)."""
    name = re.escape(name)
    return re.match(rf"({name}\b|argument '{name}'|value of {name} must)", problem) is not None


def hostile_values(shape: Any, marker: str) -> List[Tuple[Any, Optional[Any]]]:
    """(hostile value, harmless twin) for a variable of this shape; twin None: the default."""
    forms = next((f for kind, f in FORMS.items() if isinstance(shape, kind)), [("{}", "benign")])
    values: List[Tuple[Any, Optional[Any]]] = []
    for raw in HOSTILE:
        hostile = raw.replace("MARKER", marker)
        values += [(form.replace("{}", hostile), twin) for form, twin in forms]
    if isinstance(shape, Int):
        values += [(trick, None) for trick in INT_TRICKS]
    return values


# --- the formats: a parser each, and the check that a value stayed in its place

LINE_BREAK = re.compile(r"\r\n|\r|\n|\x00")  # systemd's read_line() ends a line at each
SYSTEMD_SPLIT_KEYS = re.compile(r"Exec[A-Za-z]*|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths")


def parse_systemd(text: str) -> Tuple[List[Tuple[str, str, str]], List[str]]:
    """(section, key, value) entries and the lines systemd would refuse, as systemd reads.

    systemd.syntax(7): lines starting with # or ; are comments (also inside a
    continuation); a line ending in an unescaped backslash continues on the next, the
    backslash becoming a space; [Section] headers; Key=Value with whitespace around both
    stripped. A line without '=' is ignored with a warning: here it is reported.
    """
    entries: List[Tuple[str, str, str]] = []
    bad: List[str] = []
    section = ""
    continuation = ""
    for line in LINE_BREAK.split(text):
        if line.strip()[:1] in ("#", ";"):
            continue
        line = continuation + line
        escaped = False
        for char in line:
            escaped = not escaped and char == "\\"
        if escaped:
            continuation = line[:-1] + " "
            continue
        continuation = ""
        line = line.strip()
        if not line:
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                bad.append(line)
            section = line[1:-1]
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            bad.append(line)
            continue
        entries.append((section, key.strip(), value.strip()))
    if continuation:
        bad.append(continuation)
    return entries, bad


def systemd_words(value: str) -> Optional[List[str]]:
    try:
        return shlex.split(value, posix=True)
    except ValueError:  # an unbalanced quote
        return None


def confined_systemd(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    entries, bad = parse_systemd(text)
    twin_entries, twin_bad = parse_systemd(twin)
    why = [f"systemd would refuse the line {line!r}" for line in bad if line not in twin_bad]
    keys = [(s, k) for s, k, _ in entries]
    twin_keys = [(s, k) for s, k, _ in twin_entries]
    if keys != twin_keys:
        added = sorted(set(keys) - set(twin_keys)) or sorted(Counter(keys) - Counter(twin_keys))
        why.append(f"the (section, key) list changed: {added or 'keys lost'}")
        return why
    for (section, key, value), (_, _, twin_value) in zip(entries, twin_entries):
        if value == twin_value:
            continue
        where = f"[{section}] {key}={value!r}"
        if (section, key) not in allowed:
            why.append(f"the value reached {where}")
        if "%" in value.replace("%%", ""):
            why.append(f"{where} holds a % specifier, which systemd expands")
        if SYSTEMD_SPLIT_KEYS.fullmatch(key):
            words, twin_words = systemd_words(value), systemd_words(twin_value)
            if words is None or twin_words is None or len(words) != len(twin_words):
                why.append(f"{where} splits into other words than {twin_value!r}")
            elif words[0][:1] != twin_words[0][:1]:
                why.append(f"{where} starts with another prefix than {twin_value!r}")
            if value.count("\\") != twin_value.count("\\"):
                why.append(f"{where} holds a backslash, which systemd reads as an escape")
    return why


def parse_env(text: str) -> Tuple[List[Tuple[str, str]], List[str]]:
    pairs, bad = [], []
    for line in LINE_BREAK.split(text):
        if not line.strip() or line.lstrip()[:1] in ("#", ";"):
            continue
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if match:
            pairs.append((match.group(1), match.group(2)))
        else:
            bad.append(line)
    return pairs, bad


def confined_env(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    pairs, bad = parse_env(text)
    twin_pairs, _ = parse_env(twin)
    why = [f"the line {line!r} is not KEY=VALUE" for line in bad]
    if [k for k, _ in pairs] != [k for k, _ in twin_pairs]:
        return [*why, f"the keys changed: {[k for k, _ in pairs]} != {[k for k, _ in twin_pairs]}"]
    for (key, value), (_, twin_value) in zip(pairs, twin_pairs):
        if value == twin_value:
            continue
        if key not in allowed:
            why.append(f"the value reached {key}={value!r}")
        # systemd's EnvironmentFile reader unquotes, unescapes and strips these.
        if re.search(r"[\"'\\]", value) or value != value.strip():
            why.append(f"{key}={value!r} holds quotes, backslashes or outer whitespace")
    return why


def leaves(data: Any, path: Tuple[Any, ...] = ()) -> Dict[Tuple[Any, ...], Any]:
    """Every scalar by its key path; a list's length too, under the key "[]"."""
    out: Dict[Tuple[Any, ...], Any] = {}
    if isinstance(data, dict):
        for key, item in data.items():
            out.update(leaves(item, (*path, key)))
    elif isinstance(data, list):
        out[(*path, "[]")] = len(data)
        for index, item in enumerate(data):
            out.update(leaves(item, (*path, index)))
    else:
        out[path] = data
    return out


def path_allowed(path: Tuple[Any, ...], allowed: Sequence[Any]) -> bool:
    for prefix in allowed:
        prefix = tuple(prefix)
        if len(path) >= len(prefix) and all(
            (p == "*" and isinstance(q, int)) or p == q for p, q in zip(prefix, path)
        ):
            return True
    return False


def confined_tree(data: Any, twin: Any, allowed: Sequence[Any], same_shape: bool) -> List[str]:
    ours, theirs = leaves(data), leaves(twin)
    why = []
    if same_shape and set(ours) != set(theirs):
        why.append(f"the structure changed: {sorted(map(str, set(ours) ^ set(theirs)))}")
    for path in sorted(set(ours) | set(theirs), key=str):
        if ours.get(path, KeyError) != theirs.get(path, KeyError) and not path_allowed(
            path, allowed
        ):
            why.append(f"the value reached {'.'.join(map(str, path))} = {ours.get(path)!r}")
    return why


def confined_json(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    try:
        data = json.loads(text)
    except ValueError as err:
        return [f"not JSON any more: {err}"]
    return confined_tree(data, json.loads(twin), allowed, same_shape=False)


def confined_yaml(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        return [f"not YAML any more: {err}"]
    return confined_tree(data, yaml.safe_load(twin), allowed, same_shape=True)


def content_lines(text: str) -> List[str]:
    return [line for line in LINE_BREAK.split(text) if line.strip() and not line.startswith("#")]


def parse_prefs(text: str) -> Tuple[List[List[Tuple[str, str]]], List[str]]:
    stanzas: List[List[Tuple[str, str]]] = [[]]
    bad = []
    for line in LINE_BREAK.split(text):
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanzas[-1]:
                stanzas.append([])
            continue
        match = re.fullmatch(r"([A-Za-z-]+):[ \t]*(\S.*)", line)
        if match:
            stanzas[-1].append((match.group(1), match.group(2)))
        else:
            bad.append(line)
    return [s for s in stanzas if s], bad


def confined_apt_prefs(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    stanzas, bad = parse_prefs(text)
    (twin_stanza,), _ = parse_prefs(twin)
    why = [f"the line {line!r} is not 'Key: value'" for line in bad]
    keys = [[k for k, _ in s] for s in stanzas]
    if keys != [["Explanation", "Package", "Pin", "Pin-Priority"]]:
        return [*why, f"the stanzas' keys are {keys}"]
    stanza = dict(stanzas[0])
    if stanza["Pin-Priority"] != "1001" or len(stanza["Pin"].split()) != 2:
        why.append(f"Pin {stanza['Pin']!r} / Pin-Priority {stanza['Pin-Priority']!r} changed form")
    for key, value in dict(twin_stanza).items():
        if stanza[key] != value and key not in allowed:
            why.append(f"the value reached {key}: {stanza[key]!r}")
    return why


def csv_rows(text: str) -> List[List[str]]:
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith("#")]
    return list(csv.reader(lines, skipinitialspace=True))


def confined_csv(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    if "\r" in text or "\x00" in text:
        return ["a carriage return or NUL is in the file"]
    rows, twin_rows = csv_rows(text), csv_rows(twin)
    why = [f"row {i} has {len(r)} fields: {r!r}" for i, r in enumerate(rows) if len(r) != 3]
    if len(rows) != len(twin_rows):
        return [*why, f"{len(rows)} rows instead of {len(twin_rows)}"]
    for i, (row, twin_row) in enumerate(zip(rows, twin_rows)):
        for j, (cell, twin_cell) in enumerate(zip(row, twin_row)):
            if cell != twin_cell and (i, j) not in allowed:
                why.append(f"the value reached row {i} field {j}: {cell!r}")
    return why


def line_shape(line: str) -> str:
    if line.startswith("#"):
        return "comment"
    if re.fullmatch(r"/[A-Za-z0-9_.+@/-]*", line):
        return "path"
    return re.sub(r"\S+", "w", line)


def confined_lines(text: str, twin: str, allowed: Sequence[Any], **_: Any) -> List[str]:
    lines, twin_lines = LINE_BREAK.split(text), LINE_BREAK.split(twin)
    if len(lines) != len(twin_lines):
        return [f"{len(lines)} lines instead of {len(twin_lines)}"]
    why = []
    for index, (line, twin_line) in enumerate(zip(lines, twin_lines)):
        if line_shape(line) != line_shape(twin_line):
            why.append(f"line {index} {line!r} is no longer shaped like {twin_line!r}")
        elif line != twin_line and index not in allowed and line_shape(line) != "comment":
            why.append(f"the value reached line {index}: {line!r}")
    return why


TRAPPED = ("id", "touch", "true", "sh", "bash", "rm", "curl", "wget")


def shell_run(path: Path, work: Path) -> Dict[str, Any]:
    """Source the snippet as a login shell would (sh, empty environment) and with bash tracing.

    sh: PATH starts with a directory whose id, touch, sh, ... leave a mark when run, so any
    command the snippet runs shows. bash: `[`, `.` and conda are functions that record their
    arguments and every other command is "not found" (PATH leads nowhere) and recorded, so
    the words each command got show.
    """
    trap = work / "trap"
    if not trap.exists():
        trap.mkdir()
        for name in TRAPPED:
            script = trap / name
            script.write_text(f'#!/bin/sh\necho "{name} $*" >> {work}/ran\n')
            script.chmod(0o755)
    env0 = f"{trap}:/usr/bin:/bin"
    sourced = subprocess.run(
        ["env", "-i", f"PATH={env0}", "/bin/sh", "-c", '. "$1"; /usr/bin/env -0', "sh", str(path)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=10,
    )
    plain = subprocess.run(
        ["env", "-i", f"PATH={env0}", "/bin/sh", "-c", "/usr/bin/env -0"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=10,
    )
    record = work / "trace"
    record.unlink(missing_ok=True)
    log = shlex.quote(str(record))
    prelude = (
        f'_rec() {{ printf "%s\\037" "$@" >> {log}; printf "\\n" >> {log}; }}; '
        '[() { _rec "[" "$@"; return 0; }; '
        '.() { _rec "." "$@"; }; '
        'conda() { _rec conda "$@"; }; '
        'command_not_found_handle() { _rec "!" "$@"; return 127; }; '
    )
    subprocess.run(
        [
            "env",
            "-i",
            "PATH=/nonexistent",
            "/bin/bash",
            "--norc",
            "--noprofile",
            "-c",
            prelude + 'source "$1"',
            "bash",
            str(path),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=10,
    )
    trace_text = record.read_text() if record.exists() else ""
    trace = [line.split("\x1f")[:-1] for line in trace_text.split("\n") if line]

    def env_of(out: str) -> Dict[str, str]:
        return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)

    return {
        "rc": sourced.returncode,
        "stderr": sourced.stderr,
        "env": env_of(sourced.stdout),
        "plain": env_of(plain.stdout),
        "path0": env0,
        "trace": trace,
    }


def confined_shell(
    text: str,
    twin: str,
    allowed: Sequence[Any],
    work: Path,
    marker: str,
    expected: Dict[str, Any],
    **_: Any,
) -> List[str]:
    why = []
    lines, twin_lines = text.split("\n"), twin.split("\n")
    kinds = [line.lstrip().startswith("#") for line in lines]
    if len(lines) != len(twin_lines) or kinds != [x.lstrip().startswith("#") for x in twin_lines]:
        why.append("the lines changed: a value left its comment or its line")
    path = work / "snippet.sh"
    path.write_text(text)
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=10)
    if syntax.returncode != 0:
        return [*why, f"bash -n: {syntax.stderr.strip()}"]
    ran = work / "ran"
    ran.unlink(missing_ok=True)
    result = shell_run(path, work)
    if result["rc"] != 0:
        why.append(f"sourcing failed: {result['stderr'].strip()}")
    if os.path.exists(marker):
        why.append(f"sourcing created {marker}")
    if ran.exists():
        why.append(f"sourcing ran: {ran.read_text().strip()!r}")
    plain, env = result["plain"], result["env"]
    want = {k: v.replace("{PATH}", result["path0"]) for k, v in expected["env"].items()}
    changed = {k: v for k, v in env.items() if plain.get(k) != v and k != "_"}
    if changed != {k: v for k, v in want.items() if plain.get(k) != v}:
        why.append(f"the environment after sourcing is {changed}, not {want}")
    if result["trace"] != expected["trace"]:
        why.append(f"the commands run were {result['trace']}, not {expected['trace']}")
    return why


CHECKS: Dict[str, Callable[..., List[str]]] = {
    "systemd": confined_systemd,
    "env": confined_env,
    "json": confined_json,
    "yaml": confined_yaml,
    "apt_prefs": confined_apt_prefs,
    "csv": confined_csv,
    "lines": confined_lines,
    "shell": confined_shell,
}


# --- systemd-analyze verify, where it works offline


@functools.lru_cache(maxsize=None)
def systemd_analyze_works() -> bool:
    """Whether `systemd-analyze verify` runs here on a unit file and reports a bad line."""
    tool = shutil.which("systemd-analyze")
    if not tool:
        return False
    with tempfile.TemporaryDirectory() as probe:
        unit = Path(probe) / "kindling-probe.service"
        unit.write_text("[Unit]\nDescription=probe\n[Service]\nExecStart=/bin/true\nNoEquals\n")
        try:
            out = subprocess.run(
                [tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return "Missing '='" in out.stdout + out.stderr


def verify_diagnostics(units: Dict[str, str], work: Path) -> Dict[str, set]:
    """Per unit, the messages systemd-analyze verify gives about its lines (path:line: ...)."""
    folder = work / "verify"
    folder.mkdir()
    for name, text in units.items():
        (folder / name).write_text(text)
    out = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *[str(folder / n) for n in units]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found: Dict[str, set] = {name: set() for name in units}
    for line in (out.stdout + out.stderr).splitlines():
        match = re.match(r"(/\S+?):(\d+): (.*)", line)
        if match and os.path.basename(match.group(1)) in found:
            found[os.path.basename(match.group(1))].add(match.group(3))
    return found


# --- the test

SUMMARY: Dict[str, Counter] = {}


class Judge:
    """Renders one template with one user setting changed, and says what became of it."""

    def __init__(self, tpl: Template, tmp_path: Path):
        self.tpl = tpl
        self.marker = str(tmp_path / "PWNED")
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.check = CHECKS[tpl.fmt]
        self.twins: Dict[Tuple[Target, Any], str] = {}
        values = effective(tpl, dict(tpl.base))[1]
        assert problems_of(tpl.role, values) == (), f"{tpl.id}: the baseline must be valid"
        self.baseline, variables = self.rendered(dict(tpl.base))
        assert self.confined(self.baseline, self.baseline, [], variables) == [], tpl.id

    def rendered(self, user: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        variables = derive(self.tpl, effective(self.tpl, user)[0])
        return render(self.tpl, variables), variables

    def confined(self, text: str, twin: str, allowed: Sequence[Any], variables: Dict[str, Any]):
        expected = self.tpl.expect(variables) if self.tpl.expect else {}
        return self.check(
            text, twin, allowed, work=self.work, marker=self.marker, expected=expected
        )

    def twin(self, target: Target, twin_value: Optional[Any]) -> str:
        """The file with a harmless value where the hostile one goes (else the baseline)."""
        if (target, twin_value) not in self.twins:
            self.twins[target, twin_value] = self.baseline
            user = user_values(self.tpl, target, twin_value)
            if twin_value is not None and not problems_of(
                self.tpl.role, effective(self.tpl, user)[1]
            ):
                self.twins[target, twin_value] = self.rendered(user)[0]
        return self.twins[target, twin_value]

    def __call__(self, target: Target, value: Any, twin_value: Optional[Any]) -> Tuple[str, Any]:
        """("rejected", problems), ("unnamed", problems), ("confined", text) or ("escaped", why)."""
        name = target_name(target)
        user = user_values(self.tpl, target, value)
        problems = problems_of(self.tpl.role, effective(self.tpl, user)[1])
        if problems:
            named = any(names_variable(p, name) for p in problems)
            return ("rejected" if named else "unnamed"), list(problems)
        text, variables = self.rendered(user)
        why = self.confined(text, self.twin(target, twin_value), self.tpl.reach[target], variables)
        return ("escaped", why) if why else ("confined", text)


@pytest.mark.parametrize("tpl", TEMPLATES, ids=lambda t: t.id)
def test_hostile_values_are_refused_or_confined(tpl: Template, tmp_path: Path):
    judge = Judge(tpl, tmp_path)
    counts: Counter = Counter()
    failures: List[str] = []
    units: Dict[str, str] = {}
    for target in tpl.reach:
        name = target_name(target)
        where = f"{tpl.id}: {name}" + ("" if isinstance(target, str) else str(list(target[1:])))
        for value, twin_value in hostile_values(target_shape(tpl.role, target), judge.marker):
            verdict, detail = judge(target, value, twin_value)
            counts[verdict] += 1
            if verdict == "unnamed":
                failures.append(
                    f"{where} = {value!r} was refused, but no problem names {name}: {detail}"
                )
            elif verdict == "escaped":
                failures.append(
                    f"{where} = {value!r} was accepted and ESCAPED: " + "; ".join(detail)
                )
            elif verdict == "confined" and tpl.fmt == "systemd":
                units[f"hostile-{len(units):04d}.service"] = detail
    if tpl.fmt == "systemd" and systemd_analyze_works():
        found = verify_diagnostics({"baseline.service": judge.baseline, **units}, judge.work)
        for unit, messages in sorted(found.items()):
            extra = messages - found["baseline.service"]
            if extra:
                failures.append(f"{tpl.id}: systemd-analyze verify on {unit}: {sorted(extra)}")
        assert found["baseline.service"] == set(), f"{tpl.id}: the baseline unit has warnings"
    SUMMARY[tpl.id] = counts
    print(f"{tpl.id}: {counts['rejected']} rejected, {counts['confined']} confined")
    assert not failures, "\n".join(failures)
    assert set(counts) <= {"rejected", "confined"}


# A value a loosened shape would let through, and what the check of each format says then:
# the checks have teeth (the shape is replaced by Free for the case).
LOOSENED = [
    ("jupyter.service.j2", "jupyter_user", "x\nExecStartPre=+/bin/sh -c id", "section, key"),
    ("jupyter.service.j2", "jupyter_user", "%n", "% specifier"),
    ("jupyter.service.j2", "jupyter_notebook_dir", "/opt/a b", "splits into other words"),
    ("jupyter.service.j2", "jupyter_venv", "/opt/x\\", "backslash"),
    ("jupyter.service.j2", "jupyter_notebook_dir", "/var/lib/jupyter/x\\", "section, key"),
    ("dcgm-exporter-container.service.j2", "dcgm_exporter_image", "a\nb", "refuse the line"),
    ("jupyter.env.j2", "jupyter_home", "/opt/x\nPATH=/tmp", "keys changed"),
    ("jupyter.env.j2", "jupyter_service_name", "a'b", "quotes"),
    ("counters.csv.j2", ("dcgm_exporter_counters", 0, "help"), "a, b", "fields"),
    ("prometheus-scrape.yml.j2", "dcgm_exporter_prometheus_target", 'a"b', "not YAML"),
    ("cuda.sh.j2", "cuda_home", "/opt/$(touch MARKER)", "ran"),
    ("cuda.sh.j2", "cuda_home", "/opt/`/usr/bin/touch MARKER`", "created"),
    ("cuda.sh.j2", "cuda_home", "/opt/a;id", "ran"),
    ("cuda.sh.j2", "cuda_home", "/opt/a b", "environment"),
    ("cuda.sh.j2", "cuda_version", "1\nid", "lines changed"),
    ("pytorch.sh.j2[venv]", "conda_pytorch_venv_path", "/opt/a b", "commands run"),
    ("ld.so.conf.j2", "cuda_toolkit_prefix", "/opt/a\n/tmp", "lines instead"),
    ("cudnn-preferences.j2", "cuda_cudnn_version", "9.14.0\nPin: x", "stanzas"),
    ("prometheus-scrape.yml.j2", "dcgm_exporter_prometheus_target", 'a", "b', "structure"),
]


@pytest.mark.parametrize(
    ("tpl_id", "target", "value", "says"), LOOSENED, ids=[f"{c[0]}-{c[2]!r}" for c in LOOSENED]
)
def test_the_checks_catch_what_a_loose_shape_lets_through(
    tpl_id, target, value, says, tmp_path, monkeypatch
):
    tpl = next(t for t in TEMPLATES if t.id == tpl_id)
    monkeypatch.setitem(SHAPES[tpl.role], target_name(target), Free("loosened for the test"))
    monkeypatch.setattr(sys.modules[__name__], "_problems", _problems.__wrapped__)  # no cache
    judge = Judge(tpl, tmp_path)
    verdict, why = judge(target, value.replace("MARKER", judge.marker), None)
    assert verdict == "escaped", why
    assert says in "; ".join(why)


@pytest.mark.parametrize(
    ("check", "text", "twin", "allowed", "says"),
    [
        (confined_json, '{"a": "x", "b": 1}', '{"a": "y", "b": 1}', [("a",)], ""),
        (confined_json, '{"a": "x", "b": 2}', '{"a": "y", "b": 1}', [("a",)], "reached b"),
        (confined_json, '{"a": "x"', '{"a": "y"}', [("a",)], "not JSON"),
        (confined_yaml, "a: [x, y]", "a: [x]", [("a",)], "structure"),
        (confined_env, "A=1\nB=2", "A=1\nB=3", ["A"], "reached B"),
        (
            confined_apt_prefs,
            "Explanation: x\nPackage: p\nPin: version 1 2\nPin-Priority: 1001",
            "Explanation: x\nPackage: p\nPin: version 1\nPin-Priority: 1001",
            ["Pin"],
            "form",
        ),
        (confined_csv, "A, b, c\r", "A, b, c", [(0, 2)], "carriage return"),
        (confined_lines, "# x\n/a b", "# x\n/a", [1], "shaped"),
        (
            confined_systemd,
            "[S]\nExecStart=/a '/b",
            "[S]\nExecStart=/a /c",
            [("S", "ExecStart")],
            "splits",
        ),
        (
            confined_systemd,
            "[S]\nExecStart=+/a",
            "[S]\nExecStart=/a",
            [("S", "ExecStart")],
            "prefix",
        ),
        (confined_systemd, "[S]\nA=1\\\\\nB=2", "[S]\nA=1\nB=2", [("S", "A")], ""),
        (confined_systemd, "[S]\nA=1\\\nB=2", "[S]\nA=1\nB=2", [("S", "A")], "section, key"),
        (confined_systemd, "[S]\nA=1\x00B=2", "[S]\nA=1\nB=2", [("S", "A")], ""),
        (confined_systemd, "[S\nA=1", "[S]\nA=1", [], "refuse the line"),
    ],
)
def test_format_checks(check, text, twin, allowed, says):
    why = "; ".join(check(text, twin, allowed))
    assert (says in why and why) if says else not why, why


def test_summary():
    """Every (template, variable, value) triple of the run was refused or confined."""
    if set(SUMMARY) != {t.id for t in TEMPLATES}:
        pytest.skip("only part of the templates ran")
    total = sum(SUMMARY.values(), Counter())
    for tpl_id, counts in SUMMARY.items():
        print(f"{tpl_id:40} {counts['rejected']:4} rejected {counts['confined']:4} confined")
    print(f"{'all':40} {total['rejected']:4} rejected {total['confined']:4} confined")
    assert set(total) <= {"rejected", "confined"} and total["confined"] > 0


def referenced(tpl: Template) -> FrozenSet[str]:
    """The variables a template's source reads."""
    return names_in((REPO_ROOT / tpl.src).read_text(encoding="utf-8")) - {"namespace"}


@pytest.mark.parametrize("tpl", TEMPLATES, ids=lambda t: t.id)
def test_the_table_names_every_variable_of_the_template(tpl: Template):
    """reach lists every non-bool option the template reads, internal every other variable."""
    names, opts = referenced(tpl), options(tpl.role)
    assert names - set(opts) - {"ansible_managed"} == set(tpl.internal)
    read = {n for n in names & set(opts) if opts[n].get("type") != "bool"}
    assert read <= {target_name(t) for t in tpl.reach}
    assert {target_name(t) for t in tpl.reach} <= set(opts)


def test_every_host_template_is_covered():
    """A template added to a role needs a row in TEMPLATES (gpu-check.md is a controller report)."""
    covered = {tpl.src for tpl in TEMPLATES}
    present = {
        str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "roles").glob("*/templates/*.j2")
    }
    assert present - covered == {"roles/gpu_check/templates/gpu-check.md.j2"}


# --- The controller's throughput report (gpu-check.md, gpu-check.json) shows the health codes

XID_LOG = (  # CONSTRUCTED kernel-log lines for the real H200 capture's GPU 0
    "[  700.500] h200 kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=99, name=python, "
    "Graphics SM Warp Exception\n"
    "[  812.001] h200 kernel: NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python, "
    "GPU has fallen off the bus.\n"
)


def gpu_check_vars(verdict: str) -> Dict[str, Any]:
    """What report.yml and gpu-check.md.j2 see after the gpu_throughput_measure task, as it
    returns."""
    from ansible.module_utils import gpu_health, nvidia_smi

    facts = nvidia_smi.build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(),
        (CAPTURES / "query-full.csv").read_text(),
        kernel_log={"text": XID_LOG, "source": "journalctl", "error": None},
    )
    codes = gpu_health.report_codes(facts["health"], facts["health_notes"])
    judgement = {
        "amp_fp16_cl": {"img_s": 6150.0, "reference": 6180.0, "ratio": 0.995, "status": "pass",
                        "reason": None, "source": "Kindling H200 measurements 2026-11-29",
                        "reference_basis": "measured", "reference_derivation": None},
    }  # fmt: skip
    result = {
        "verdict": verdict,
        "summary": "NVIDIA H200 (h200); PASS: 1 pass, 0 fail, 0 unknown, 0 skipped",
        "tolerance": 0.8,
        "gpu_key": "h200",
        "gpu_name": "NVIDIA H200",
        "failed_modes": [],
        "diagnosis": [],
        "judgement": judgement,
        "throughput": {"environment": {"gpu_count": 1},
                       "modes": {"amp_fp16_cl": {"batch_size": 256}}},
        "health_codes": codes,
        "health_line": gpu_health.health_line(codes),
    }  # fmt: skip
    variables = copy.deepcopy(COMMON)
    variables["ansible_facts"].update(nvidia_smi=facts, torch_cuda={"torch_version": "2.11.0"})
    variables.update(
        gpu_check__result=result,
        gpu_check_profile="quick",
        gpu_check_report_dir="/reports",
        gpu_check_gpu_margin=0.1,
        gpu_check_require_all=False,
    )
    return variables


def report_task(name: str) -> Dict[str, Any]:
    tasks = role_file("gpu_check", "tasks/report.yml")
    for task in tasks[0]["block"] + tasks[1:]:
        if task["name"] == name:
            return task
    raise KeyError(name)


def test_the_markdown_report_shows_the_health_codes_beside_the_verdict():
    variables = gpu_check_vars("pass")
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    lines = text.splitlines()
    verdict = lines.index(
        "- Verdict: **PASS** (NVIDIA H200 (h200); PASS: 1 pass, 0 fail, 0 unknown, 0 skipped)"
    )
    # The verdict line, then the codes: the failing one first, each with its GPU and remedy.
    assert lines[verdict + 1] == (
        "- GPU health: FAILING xid-79 (GPU 0); notes: xid-13 (GPU 0) "
        "(explained in docs/HEALTH_CODES.md)"
    )
    assert lines[verdict + 2].startswith(
        "  - **failing** `xid-79` (GPU 0): The GPU no longer answers on PCIe: reboot the host"
    )
    assert lines[verdict + 3].startswith("  - note `xid-13` (GPU 0): An application error")
    assert lines[verdict + 4].startswith("- GPU: 1 x NVIDIA H200, driver 580.159.04")
    assert "| amp_fp16_cl | 256 | 6150 | - | 6180 | 0.99 | pass |" in text


def test_the_markdown_report_marks_a_derived_reference_and_its_tolerance():
    variables = gpu_check_vars("pass")
    variables["gpu_check__result"]["judgement"]["amp_fp16"] = {
        "img_s": 480.0, "reference": 506.0, "ratio": 0.9486, "status": "pass", "reason": None,
        "source": "derived from the datasheet (Lambda deeplearning-benchmark calibration)",
        "reference_basis": "derived", "tolerance": 0.616,
        "reference_derivation": "fp16 121 TFLOP/s and 300 GB/s through the fit",
    }  # fmt: skip
    variables["gpu_check__result"]["throughput"]["modes"]["amp_fp16"] = {"batch_size": 256}
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    assert (
        "| amp_fp16 | 256 | 480 | - | 506 | 0.95 | pass | derived (fp16 121 TFLOP/s and 300 GB/s "
        "through the fit; judged at 62%) | derived from the datasheet (Lambda "
        "deeplearning-benchmark calibration) |" in text
    )
    # Every mode says its kind; a measured reference carries no derivation.
    assert "| amp_fp16_cl | 256 | 6150 | - | 6180 | 0.99 | pass | measured | Kindling H200" in text
    assert text.count("; judged at") == 1


def test_the_markdown_report_lists_every_gpu_and_the_one_behind():
    from ansible.module_utils.gpu_throughput_ref import judge_report

    doc = json.loads(
        (REPO_ROOT / "tests/fixtures/throughput/h200x8_one_gpu_behind.json").read_text()
    )
    judged = judge_report(doc, "h200")
    variables = gpu_check_vars("fail")
    variables["gpu_check__result"].update(
        gpus=judged["gpus"], gpu_outliers=judged["gpu_outliers"], not_run=["input_pipeline"]
    )
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    assert "a GPU more than 10% below it fails:" in text
    assert "| 5 | - | amp_fp16_cl | 5200 | 0.84 | 0.84 | fail (behind the host) |" in text
    assert "| 0 | - | amp_fp16_cl | 6150 | 1.00 | 1.00 | pass |" in text
    assert text.count("| amp_fp16_cl |") == 8 + 1  # eight GPUs and the host table
    assert "Not run: input_pipeline." in text


def test_the_markdown_report_of_a_healthy_host_says_so():
    variables = gpu_check_vars("pass")
    variables["gpu_check__result"].update(health_codes=[], health_line="GPU health: no findings")
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    lines = text.splitlines()
    assert lines[lines.index("- GPU health: no findings") - 1].startswith("- Verdict: **PASS**")
    assert "**failing**" not in text and "HEALTH_CODES" not in text


def test_the_json_report_and_the_slow_host_message_carry_the_codes():
    variables = gpu_check_vars("fail")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    report = templar.template(report_task("Write the JSON report")["vars"]["gpu_check__report"])
    assert [(h["code"], h["gpu"], h["severity"]) for h in report["health"]] == [
        ("xid-79", 0, "failing")
    ]
    assert [(h["code"], h["severity"]) for h in report["health_notes"]] == [
        ("xid-13", "informational")
    ]
    assert set(report["health"][0]) >= {"code", "gpu", "severity", "message", "remediation"}
    assert report["health_summary"] == "GPU health: FAILING xid-79 (GPU 0); notes: xid-13 (GPU 0)"
    assert report["nvidia_smi"]["health"][0]["code"] == "xid-79"  # the whole fact, as before
    summary = templar.template(
        report_task("Summarise the throughput check")["ansible.builtin.debug"]["msg"]
    )
    assert summary[1] == "GPU health: FAILING xid-79 (GPU 0); notes: xid-13 (GPU 0)"
    from ansible.module_utils.gpu_throughput_ref import headline, headline_line

    # The module words the headline (module_utils): the task prints it as it comes.
    result = variables["gpu_check__result"]
    # verdict fail without a slow mode or GPU: a required check did not run, say, so the
    # message does not call the host slow.
    judged = {"modes": result["judgement"], "failed_modes": [], "gpu_outliers": []}
    result["headline_line"] = headline_line(headline(judged, "fail"), "gpu1.example.com", [])
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    message = templar.template(
        report_task("Fail a host that trains slower than its GPUs should")["ansible.builtin.fail"][
            "msg"
        ]
    )
    assert message.startswith("gpu1.example.com failed the check: NVIDIA H200 (h200); PASS")
    result["failed_modes"] = ["amp_fp16_cl"]
    judged["modes"] = {"amp_fp16_cl": {"ratio": 0.5, "status": "fail"}}
    judged["failed_modes"] = ["amp_fp16_cl"]
    result["headline_line"] = headline_line(headline(judged, "fail"), "gpu1.example.com", [])
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    slow = templar.template(
        report_task("Fail a host that trains slower than its GPUs should")["ansible.builtin.fail"][
            "msg"
        ]
    )
    assert slow.startswith("gpu1.example.com is slow: NVIDIA H200 (h200); PASS")
    assert (
        "GPU health: FAILING xid-79 (GPU 0); notes: xid-13 (GPU 0). Likely causes: none" in message
    )


# The floors table of gpu-check.md (module_utils/gpu_floors.py's judgement). It lives here,
# not in test_gpu_floors.py: importing Ansible's templating in the test process changes how
# modules report warnings for every later test, and this file runs after the module tests.
def test_the_markdown_report_shows_the_floors() -> None:
    from test_gpu_floors import H100, judge_floors, link, report

    judged = judge_floors(
        report(h2d=20.0, link_under_load=link(width=8)), H100, waivers=["matmul_fp32"]
    )
    variables = gpu_check_vars("fail")
    variables["gpu_check__result"].update(floors=judged["floors"], floors_line=judged["line"])
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    assert (
        "Floors for what GPU 0 can show (Floors: 5 pass, 0 warn, 2 fail, 0 not_run, 1 waived;"
        in (text)
    )
    assert "| 0 | pinned host-to-device copies (`h2d`) | 20.0 GB/s | 24.81 | 23.63 | fail (" in text
    assert "| 0 | PCIe link under load (`pcie_link`) | Gen5 x8 | Gen5 | Gen5 x16 | fail (" in text
    assert "| 0 | dense fp32 matmul (`matmul_fp32`) | 50.0 TFLOP/s | 33.5 | - | waived (" in text
    assert "| NHC check_gpu_bw fails below 48 |" in text
    assert (
        "| 75% of the datasheet's 3,350 GB/s | DCGM diag memory_bandwidth fails below 1905.0 |"
        in (text)
    )
    assert "50% of the datasheet's dense 989.5 TFLOP/s" in text
    assert text.count("(`matmul_") == 4
    assert "| GPU | floor | measured | warn below | fail below | status | basis | beside it |" in (
        text
    )


def test_the_markdown_report_shows_every_gpus_floors() -> None:
    # A CONSTRUCTED 8-GPU report: GPU 5 on an x8 link, GPU 3's memory slow.
    from test_gpu_floors import H100, eight_gpu_report, judge_floors

    judged = judge_floors(eight_gpu_report(), H100)
    variables = gpu_check_vars("fail")
    variables["gpu_check__result"].update(floors=judged["floors"], floors_line=judged["line"])
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    assert "Floors for what each of 8 GPUs can show (Floors on 8 GPUs: 62 pass" in text
    assert "FAIL GPU 5 pcie_link Gen5 x8 (floor Gen5 x16)" in text
    assert "| 5 | PCIe link under load (`pcie_link`) | Gen5 x8 | Gen5 | Gen5 x16 | fail (" in text
    assert "| 3 | device memory bandwidth (copy, read + write) (`membw`) | 2100.0 GB/s |" in text
    assert text.count("(`membw`) |") == 8


def test_the_markdown_report_of_a_busy_gpu_says_not_measured_and_names_the_process():
    """The real memheld reading (tests/fixtures/captures/h100-contention, another process
    holding 74 GiB) through the busy-GPU decision and its causes, as the module returns them."""
    from ansible.module_utils import gpu_busy, nvidia_smi
    from ansible.module_utils.gpu_throughput_ref import busy_causes, not_measured_line

    xml = (REPO_ROOT / "tests/fixtures/captures/h100-contention/memheld-q.xml").read_text()
    clock = iter(range(0, 1000, 5))
    busy = gpu_busy.decide(
        "wait", 10, lambda: nvidia_smi.parse_xml(xml), lambda: float(next(clock)), lambda s: None,
        pid_visible=lambda pid: True,
    )  # fmt: skip
    rows = busy_causes(busy)
    variables = gpu_check_vars("fail")
    variables["gpu_check__result"].update(
        verdict="not_measured", judgement={}, busy=busy, not_measured=busy["skipped"],
        causes=rows, diagnosis=[r["message"] for r in rows],
        summary="NVIDIA H100 80GB HBM3; NOT MEASURED: busy: " + not_measured_line(busy),
    )  # fmt: skip
    source = (REPO_ROOT / "roles/gpu_check/templates/gpu-check.md.j2").read_text(encoding="utf-8")
    templar = ansible().Templar(loader=ansible().loader, variables=variables)
    text = templar.template(
        ansible().trust_as_template(source), escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
    )
    assert "- Verdict: **NOT_MEASURED** (NVIDIA H100 80GB HBM3; NOT MEASURED: busy: GPU 0" in text
    assert "Not measured, busy with another process (gpu_check_busy_gpu wait): GPU 0." in text
    cause = next(line for line in text.splitlines() if line.startswith("- `gpu-busy` (GPU 0): "))
    assert "pid 559" in cause and "python3" in cause and "76294 MiB" in cause
    assert "power" not in cause and "cooling" not in cause.lower()
