"""moto's EC2 emulator on loopback, shared by the cloud tests.

MOTO STANDS IN FOR AWS: these tests never reach Amazon. moto (`moto[server]`, pinned in
requirements-dev.txt) serves the EC2 and STS APIs on 127.0.0.1 at a free port; the
amazon.aws modules and the aws_ec2 inventory plugin reach it through their endpoint
setting (kindling_cloud_aws_endpoint_url, which the playbooks pass as endpoint_url).
What moto can't show: real capacity, real spot prices and interruptions (a test
terminates an instance itself), real AMIs (MOTO_AMIS_PATH loads the few below, named as
Canonical and AWS name theirs, plus decoys with the right name and the wrong owner).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# Fake credentials: the secret is distinctive so a test can look for it in the output.
FAKE_SECRET = "kindlingFAKEsecret0123456789abcdefSECRET"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIAKINDLINGTESTKEY0",
    "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}

AMIS = [
    # Canonical's Ubuntu 22.04 and 24.04, two builds each (the newest must win).
    (
        "ami-0a1b2c3d4e5f60001",
        "099720109477",
        "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250101",
        "2025-01-01T00:00:00.000Z",
    ),
    (
        "ami-0a1b2c3d4e5f60002",
        "099720109477",
        "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20260101",
        "2026-01-01T00:00:00.000Z",
    ),
    (
        "ami-0a1b2c3d4e5f60003",
        "099720109477",
        "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20260101",
        "2026-01-01T00:00:00.000Z",
    ),
    # A decoy: Canonical's name, someone else's account, newer: never chosen.
    (
        "ami-0a1b2c3d4e5f60004",
        "123456789012",
        "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20261201",
        "2026-12-01T00:00:00.000Z",
    ),
    # AWS's Deep Learning AMI (the preinstalled path).
    (
        "ami-0a1b2c3d4e5f60005",
        "898082745236",
        "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.9 (Ubuntu 22.04) 20260103",
        "2026-01-03T00:00:00.000Z",
    ),
]


def _ami(ami_id: str, owner: str, name: str, created: str) -> Dict[str, object]:
    return {
        "ami_id": ami_id,
        "name": name,
        "description": name,
        "owner_id": owner,
        "public": True,
        "virtualization_type": "hvm",
        "architecture": "x86_64",
        "state": "available",
        "platform": None,
        "image_type": "machine",
        "hypervisor": "xen",
        "root_device_name": "/dev/sda1",
        "root_device_type": "ebs",
        "sriov": "simple",
        "creation_date": created,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Moto:
    """One moto_server process: its URL, a boto3 EC2 client and the environment to use."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        amis = workdir / "amis.json"
        amis.write_text(json.dumps([_ami(*row) for row in AMIS]))
        env = dict(os.environ, MOTO_AMIS_PATH=str(amis), **CREDENTIALS)
        self.log = open(workdir / "moto.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=2)
                break
            except OSError as err:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(
                        f"moto_server did not start: {(workdir / 'moto.log').read_text()}"
                    ) from err
                time.sleep(0.3)

    def client(self, service: str = "ec2"):
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_SECRET,
        )

    def reset(self) -> None:
        urllib.request.urlopen(
            urllib.request.Request(self.url + "/moto-api/reset", method="POST"), timeout=10
        )

    def env(self) -> Dict[str, str]:
        env = dict(os.environ, ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="1", **CREDENTIALS)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_URL", "AWS_ENDPOINT_URL"):
            env.pop(name, None)
        return env

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def moto_server(workdir: Path) -> Iterator[Moto]:
    server = Moto(workdir)
    try:
        yield server
    finally:
        server.stop()


def base_vars(moto: Moto, report_dir: Path, **extra: object) -> Dict[str, object]:
    """The kindling_cloud_* variables of a test run against the emulator."""
    values: Dict[str, object] = {
        "kindling_cloud_aws_endpoint_url": moto.url,
        "kindling_cloud_owner": "kindling-tests",
        "kindling_cloud_aws_key_name": "kindling-test-key",
        "kindling_cloud_controller_ip": "203.0.113.7",
        "kindling_cloud_report_dir": str(report_dir),
        "kindling_cloud_ssh_timeout": 5,
    }
    values.update(extra)
    return values


def run_playbook(moto: Moto, playbook: str, extra: Dict[str, object], *args: str, env=None):
    return subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            str(REPO_ROOT / "playbooks" / playbook),
            "-e",
            json.dumps(extra),
            *args,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=env or moto.env(),
    )


def one_line(text: str) -> str:
    return " ".join(text.replace("\\n", " ").split())
