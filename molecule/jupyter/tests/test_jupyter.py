"""Verify the jupyter role: service, bind address, auth, kernel, token hygiene, real browser."""

import json
import os
import shutil
import struct
import subprocess
import tempfile
import urllib.error
import urllib.request

import pytest

URL = "http://127.0.0.1:8888"
TOKEN_FILE = "/etc/jupyter/token"


@pytest.fixture(scope="module")
def token(host):
    with host.sudo():
        t = host.file(TOKEN_FILE).content_string.strip()
    assert len(t) >= 32
    return t


def _get(path, token=None):
    # The container shares the host's network, so the test reaches the service directly.
    req = urllib.request.Request(URL + path)
    if token:
        req.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_service_active_and_enabled(host):
    svc = host.service("jupyter")
    assert svc.is_running and svc.is_enabled
    props = host.check_output(
        "systemctl show jupyter -p User -p NoNewPrivileges -p ProtectSystem -p PrivateTmp "
        "-p CapabilityBoundingSet -p RestrictSUIDSGID -p LockPersonality -p ProtectHome"
    )
    values = dict(line.split("=", 1) for line in props.splitlines())
    assert values["User"] == "jupyter"
    assert values["NoNewPrivileges"] == "yes"
    assert values["ProtectSystem"] == "strict"
    assert values["PrivateTmp"] == "yes"
    assert values["ProtectHome"] == "yes"
    assert values["RestrictSUIDSGID"] == "yes"
    assert values["LockPersonality"] == "yes"
    assert values["CapabilityBoundingSet"] == ""
    user = host.check_output(
        "ps -o user= -C jupyter-lab || ps -eo user=,args= | grep [j]upyter-lab"
    )
    assert user.split()[0] == "jupyter"


def test_listens_on_loopback_only(host):
    lines = [
        ln for ln in host.check_output("ss -ltnH").splitlines() if ln.split()[3].endswith(":8888")
    ]
    assert lines, "nothing listens on :8888"
    assert {ln.split()[3] for ln in lines} == {"127.0.0.1:8888"}


def test_unauthenticated_api_is_refused_and_token_accepted(token):
    status, _ = _get("/api/kernelspecs")
    assert status == 403
    status, _ = _get("/api/kernelspecs", token="wrong" + token[5:])
    assert status == 403
    status, body = _get("/api/kernelspecs", token=token)
    assert status == 200
    specs = json.loads(body)["kernelspecs"]
    assert set(specs) == {"pytorch"}  # the Lab venv's own python3 kernel is not offered
    assert specs["pytorch"]["spec"]["argv"][0] == "/opt/venvs/pytorch/bin/python"


def test_kernel_spec_on_disk(host):
    spec = json.loads(
        host.file("/usr/local/share/jupyter/kernels/pytorch/kernel.json").content_string
    )
    assert spec["argv"][:3] == ["/opt/venvs/pytorch/bin/python", "-m", "ipykernel_launcher"]
    assert host.run("/opt/venvs/pytorch/bin/python -c 'import ipykernel'").rc == 0


def test_secrets_are_root_only(host):
    for path in (TOKEN_FILE, "/etc/jupyter/jupyter.env"):
        f = host.file(path)
        assert f.user == "root" and f.group == "root" and f.mode == 0o600, path


def test_token_never_in_the_journal_or_unit(host, token):
    with host.sudo():
        journal = host.check_output("journalctl -u jupyter --no-pager -o cat")
    assert "Jupyter Server" in journal or "jupyter" in journal.lower()  # the journal works
    assert token not in journal
    assert token not in host.file("/etc/systemd/system/jupyter.service").content_string
    assert token not in host.file("/etc/jupyter/jupyter_server_config.json").content_string


def _png_size(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_lab_loads_in_a_real_browser(token):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed on this machine (apt-get install chromium)")
    # /tmp, not the ephemeral directory, which Molecule prunes at destroy: keep it to look at.
    shot = os.path.join(tempfile.gettempdir(), "kindling-jupyterlab.png")
    with tempfile.TemporaryDirectory(prefix="kindling-chromium-") as profile:
        common = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=15000",
            "--window-size=1280,800",
        ]
        url = f"{URL}/lab?token={token}"
        dom = subprocess.run(
            [*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        subprocess.run(
            [*common, f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True
        )
    assert 'id="main"' in dom and "jp-LabShell" in dom, dom[:2000]
    assert "jp-Launcher" in dom  # the launcher opened
    assert "Python (PyTorch)" in dom  # with the registered kernel
    assert "Token authentication is enabled" not in dom  # not the login page
    assert _png_size(shot) == (1280, 800)
    assert os.path.getsize(shot) > 10_000  # a rendered page, not a blank one
