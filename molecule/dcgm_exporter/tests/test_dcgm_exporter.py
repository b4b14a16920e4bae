"""Verify the dcgm_exporter role's container mode without a GPU (nothing is started)."""

import json

import pytest
import systemd_hardening  # tools/, put on sys.path by conftest.py
import yaml

UNIT = "/etc/systemd/system/dcgm-exporter.service"
# prepare.yml renders the native-mode unit here; systemd never loads it.
NATIVE_UNIT = "/var/lib/kindling-test/dcgm-exporter-native.service"
TEMPLATES = "roles/dcgm_exporter/templates/"
IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04@sha256:" + "0" * 64


def _exec_start(host):
    text = host.file(UNIT).content_string
    lines, cont = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if cont:
            cont += " " + line.rstrip("\\").strip()
            if not line.endswith("\\"):
                lines.append(cont)
                cont = ""
        elif line.startswith("ExecStart="):
            cont = line.rstrip("\\").strip()
            if not line.endswith("\\"):
                lines.append(cont)
                cont = ""
    assert len(lines) == 1
    return lines[0].split()


def test_unit_runs_the_pinned_image_with_gpus_on_loopback(host):
    argv = _exec_start(host)
    assert argv[:4] == ["ExecStart=/usr/bin/docker", "run", "--rm", "--name"]
    assert IMAGE in argv
    assert not any(a.endswith(":latest") for a in argv)
    assert argv[argv.index("--gpus") + 1] == "all"
    assert argv[argv.index("--cap-add") + 1] == "SYS_ADMIN"
    assert argv[argv.index("-p") + 1] == "127.0.0.1:9400:9400"
    mount = argv[argv.index("-v") + 1]
    assert (
        mount
        == "/etc/dcgm-exporter/kindling-counters.csv:/etc/dcgm-exporter/kindling-counters.csv:ro"
    )
    after_image = argv[argv.index(IMAGE) + 1 :]
    assert after_image == [
        "-f",
        "/etc/dcgm-exporter/kindling-counters.csv",
        "-a",
        ":9400",
        "-c",
        "30000",
    ]


def test_unit_restart_policy_and_hardening(host):
    text = host.file(UNIT).content_string
    for line in (
        "Restart=always",
        "Requires=docker.service",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
        "WantedBy=multi-user.target",
    ):
        assert line in text.splitlines(), line


def test_unit_enabled_but_not_started(host):
    svc = host.service("dcgm-exporter")
    assert svc.is_enabled
    assert not svc.is_running  # dcgm_exporter_start: false, see README.md
    assert host.service("docker").is_enabled


def test_docker_and_toolkit_installed(host):
    assert host.package("docker.io").is_installed
    ctk = host.package("nvidia-container-toolkit")
    assert ctk.is_installed and ctk.version == "1.17.8-1"
    src = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources").content_string
    assert "\nSigned-By: /etc/apt/keyrings/nvidia-container-toolkit.gpg\n" in src
    assert "\nSuites: /\n" in src
    assert not host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists
    # The pinned key alone, binary (apt reads armor only from .asc files).
    keyring = host.file("/etc/apt/keyrings/nvidia-container-toolkit.gpg")
    assert keyring.mode == 0o644
    assert keyring.content and not keyring.content.startswith(b"-----BEGIN")


def test_docker_daemon_has_the_nvidia_runtime(host):
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"


def test_counters_csv(host):
    f = host.file("/etc/dcgm-exporter/kindling-counters.csv")
    assert f.mode == 0o644
    rows = [
        [c.strip() for c in ln.split(",")]
        for ln in f.content_string.splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert [r[:2] for r in rows] == [
        ["DCGM_FI_DEV_GPU_TEMP", "gauge"],
        ["DCGM_FI_DEV_POWER_USAGE", "gauge"],
        ["DCGM_FI_DEV_FB_USED", "gauge"],
    ]


def test_prometheus_snippet(host):
    snippet = yaml.safe_load(host.file("/etc/dcgm-exporter/prometheus-scrape.yml").content_string)
    jobs = {j["job_name"]: j for j in snippet["scrape_configs"]}
    assert jobs["dcgm-exporter"]["static_configs"][0]["targets"] == ["127.0.0.1:9400"]
    assert jobs["node-exporter"]["static_configs"][0]["targets"] == ["127.0.0.1:9100"]
    assert jobs["dcgm-exporter"]["scrape_interval"] == "30s"


def _analyze(host, target, offline=False):
    """systemd-analyze security, text and --json=short, of a unit name or a unit file."""
    cmd = "systemd-analyze security " + ("--offline=true " if offline else "")
    text = host.check_output(cmd + "%s --no-pager", target)
    checks = host.check_output(cmd + "--json=short %s --no-pager", target)
    return text, checks


@pytest.mark.parametrize(
    ("template", "target", "offline"),
    [
        # Installed and enabled, never started (no dockerd, GPU or registry): systemd still
        # loads it on request, so it is analysed online like a running unit.
        ("dcgm-exporter-container.service.j2", "dcgm-exporter.service", False),
        # Not installed in this scenario: the file rendered by prepare.yml, analysed offline.
        ("dcgm-exporter-native.service.j2", NATIVE_UNIT, True),
    ],
)
def test_unit_hardening_score(host, template, target, offline):
    """systemd-analyze security: within the threshold and as docs/SYSTEMD_HARDENING.md says."""
    text, checks = _analyze(host, target, offline)
    version = host.check_output("systemd-analyze --version")
    problems = systemd_hardening.problems(TEMPLATES + template, text, checks, version)
    assert not problems, "\n".join(problems)


def test_offline_score_equals_the_loaded_units(host):
    """The native unit's offline score stands for a loaded one: for the installed unit the
    two agree (the units set PrivateMounts=yes, which offline analysis doesn't infer)."""
    online = systemd_hardening.overall(_analyze(host, "dcgm-exporter.service")[0])
    offline = systemd_hardening.overall(_analyze(host, UNIT, offline=True)[0])
    assert online[1:] == offline[1:], (online, offline)
