"""The classes of inputs of issue 34: counts, files read by another program, listeners and
the operating system's unit names (module_utils/input_types.py, role_inputs.py,
site_inputs.py, debian_units.py)."""

from __future__ import annotations

import pytest
from ansible.module_utils import debian_units
from ansible.module_utils import input_types as it
from ansible.module_utils import role_inputs as ri
from ansible.module_utils import site_inputs as si

# --- Counts

COUNT = it.Count()


@pytest.mark.parametrize("value", [1, 3, "2", "1%", "25%", "100%", [1, "25%", "100%"], ["50%"]])
def test_count_accepts_numbers_percentages_and_lists(value):
    assert COUNT.check(value) is None


@pytest.mark.parametrize(
    "value",
    [
        0,
        -1,
        "0",
        "two",
        "0%",
        "150%",
        "101%",
        "12.5%",
        " 25%",
        "25%\n",
        True,
        2.5,
        [],
        [1, "two"],
        {},
    ],
)
def test_count_refuses_words_zero_negatives_and_over_100_percent(value):
    problem = COUNT.check(value)
    assert problem and '"25%"' in problem


def test_count_messages_say_what_is_wrong():
    assert "1 or more (0 would leave no hosts per batch)" in COUNT.check(0)
    assert COUNT.check("150%").startswith("a percentage must be from 1% to 100%")
    assert COUNT.check([1, "two"]).startswith("element 1 ('two')")
    assert it.Count(list_ok=False).check([1]) is not None


def test_kindling_serial_is_a_count_in_the_site_check():
    assert si.check_site({"kindling_serial": "25%"}, {}) == []
    (message,) = si.check_site({"kindling_serial": "two"}, {})
    assert message.startswith("kindling_serial is 'two': give a whole number of hosts per batch")


# --- Files read by another program


@pytest.mark.parametrize(
    "consumer, good, bad",
    [
        (
            "apt_preferences",
            "/etc/apt/preferences.d/kindling.pref",
            "/etc/apt/preferences.d/k.conf",
        ),
        (
            "apt_preferences",
            "/etc/apt/preferences.d/kindling-nvidia",
            "/etc/apt/preferences.d/k.list",
        ),
        ("apt_sources", "/etc/apt/sources.list.d/k.sources", "/etc/apt/sources.list.d/k.list"),
        ("modprobe_d", "/etc/modprobe.d/nouveau.conf", "/etc/modprobe.d/nouveau"),
        ("ld_so_conf_d", "/etc/ld.so.conf.d/cuda.conf", "/etc/ld.so.conf.d/cuda.txt"),
        ("profile_d", "/etc/profile.d/cuda.sh", "/etc/profile.d/cuda.bash"),
        ("apt_keyring", "/usr/share/keyrings/cuda.gpg", "/usr/share/keyrings/cuda.key"),
        ("dockerd", "/etc/docker/daemon.json", "/etc/docker/kindling.json"),
    ],
)
def test_a_consumed_file_must_be_named_as_its_consumer_reads(consumer, good, bad):
    shape = it.ConsumedFile(consumer, example=good)
    assert shape.check(good) is None
    problem = shape.check(bad)
    rule = it.CONSUMERS[consumer]
    assert problem and rule.man in problem and rule.rule in problem and good in problem


def test_a_consumed_file_must_lie_in_its_consumers_directory():
    shape = it.ConsumedFile("apt_preferences", example="/etc/apt/preferences.d/kindling")
    assert "apt_preferences(5)" in shape.check("/etc/apt/kindling.pref")


def test_derived_names_are_held_to_the_same_rule():
    shape = ri.SHAPES["nvidia_driver"]["nvidia_driver_preferences_file"]
    assert shape.check("/etc/apt/preferences.d/kindling-nvidia-driver") is None
    problem = shape.check("/etc/apt/preferences.d/kindling.pref")
    assert problem.startswith(
        "the role derives the fabric manager's pin from it, named "
        "00-kindling.pref-fabricmanager, which apt preferences ignores"
    )


def test_every_file_input_of_a_known_consumer_declares_it():
    declared = {
        "nouveau_modprobe_file": "modprobe_d",
        "nvidia_driver_preferences_file": "apt_preferences",
        "cuda_cudnn_preferences_file": "apt_preferences",
        "nvidia_driver_distro_sources_file": "apt_sources",
        "cuda_distro_sources_file": "apt_sources",
        "cuda_profile_file": "profile_d",
        "nvidia_driver_repo_keyring": "apt_keyring",
        "cuda_repo_keyring": "apt_keyring",
        "dcgm_exporter_docker_daemon_json": "dockerd",
    }
    for name, consumer in declared.items():
        role = next(r for r, shapes in ri.SHAPES.items() if name in shapes)
        shape = ri.SHAPES[role][name]
        assert isinstance(shape, it.ConsumedFile), name
        assert shape.consumer is it.CONSUMERS[consumer], name


# --- Listeners


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "0:0:0:0:0:0:0:0"])
def test_wildcards(address):
    assert it.is_wildcard(address)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "::1", "localhost", "x"])
def test_not_wildcards(address):
    assert not it.is_wildcard(address)


def test_a_privileged_port_is_refused_for_a_service_not_run_as_root():
    port = ri.SHAPES["jupyter"]["jupyter_port"]
    assert port.check(8888) is None and port.check(1024) is None
    assert port.check(0) == "it must be from 1 to 65535 (a TCP port)"
    for value in (80, 443, "443"):
        assert "privileged" in port.check(value) and "jupyter_user" in port.check(value)
    assert "privileged" in ri.SHAPES["dcgm_exporter"]["dcgm_exporter_port"].check(80)


def _dcgm(**values):
    base = {"dcgm_exporter_bind_address": "127.0.0.1", "dcgm_exporter_port": 9400}
    return {**base, **values}


def test_a_wildcard_address_needs_the_opt_in():
    (finding,) = ri._listener_rules("dcgm_exporter", _dcgm(dcgm_exporter_bind_address="0.0.0.0"))
    assert finding[0] == "dcgm_exporter_bind_address"
    assert "dcgm_exporter_allow_insecure_bind: true" in finding[1]
    assert ri._listener_rules("dcgm_exporter", _dcgm(dcgm_exporter_bind_address="::"))
    allowed = _dcgm(dcgm_exporter_bind_address="::", dcgm_exporter_allow_insecure_bind=True)
    assert ri._listener_rules("dcgm_exporter", allowed) == []
    (warning,) = ri.listener_warnings("dcgm_exporter", allowed)
    assert "unauthenticated GPU metrics" in warning and "every interface" in warning


def test_a_specific_address_of_the_host_is_accepted_without_warning():
    values = _dcgm(dcgm_exporter_bind_address="10.0.0.5")
    assert ri._listener_rules("dcgm_exporter", values) == []
    assert ri.listener_warnings("dcgm_exporter", values) == []


def test_two_kindling_listeners_on_one_port_are_refused():
    effective = {"jupyter_port": 9400, "dcgm_exporter_port": 9400}
    (message,) = si.port_clashes(effective)
    assert message.startswith("dcgm_exporter_port is 9400: jupyter_port is 9400 too")
    assert si.port_clashes({"jupyter_port": 8888, "dcgm_exporter_port": 9400}) == []
    multinode = {"jupyter_port": 8888, "gpu_check_multinode_port": 8888}
    assert si.port_clashes(multinode) == []
    assert si.port_clashes({**multinode, "gpu_check_multinode": True})


# --- Unit names of the operating system


@pytest.mark.parametrize(
    "name", ["ssh", "sshd", "cron", "dbus", "docker", "containerd", "networking", "getty@tty1"]
)
def test_the_systems_unit_names_are_refused_everywhere(name):
    problem = it.UnitName("jupyter").check(name)
    assert problem and "module_utils/debian_units.py" in problem and f"kindling-{name}" in problem


@pytest.mark.parametrize("name", ["jupyter", "kindling-ssh", "lab"])
def test_other_unit_names_are_accepted(name):
    assert it.UnitName("jupyter").check(name) is None


def test_the_unit_list_names_its_source_and_date():
    assert debian_units.SOURCES and all(
        u.startswith("http://deb.debian.org/debian/dists/") for u in debian_units.SOURCES
    )
    assert debian_units.GENERATED and len(debian_units.UNITS) > 100
    assert debian_units.UNITS["ssh"] == "openssh-server"
    assert debian_units.UNITS["networking"] == "ifupdown"
    for own in ("jupyter", "dcgm-exporter", "nvidia-persistenced", "nvidia-fabricmanager"):
        assert own not in debian_units.UNITS


def test_the_generator_reads_debians_indexes():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "tools" / "debian_units.py"
    spec = importlib.util.spec_from_file_location("debian_units_tool", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    packages = "Package: cron\nPriority: important\n\nPackage: hello\nPriority: optional\n"
    assert tool.priority_packages(packages) == {"cron"}
    contents = [
        "lib/systemd/system/cron.service                          admin/cron\n",
        "usr/lib/systemd/system/getty@.service                    admin/systemd\n",
        "lib/systemd/system/ssh.socket                            net/openssh-server\n",
        "lib/systemd/system/hello.service                         devel/hello\n",
        "lib/systemd/system/cron.service.d/x.conf                 admin/cron\n",
        "usr/share/doc/cron/README                                admin/cron\n",
    ]
    units = tool.units_of(contents, {"cron", "systemd", "openssh-server"})
    assert units == {"cron": {"cron"}, "getty@": {"systemd"}, "ssh": {"openssh-server"}}
