"""A Debian 12 test host (podman, systemd as PID 1) shared by the reliability tests.

Each test runs real ansible-playbook commands against it through the
containers.podman.podman connection, and compares snapshots of the host's state taken
before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("KINDLING_TEST_IMAGE", "localhost/kindling-debian12-systemd") + ":latest"
CONTAINER = "kindling-reliability"
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

# What a failed or check-mode run must leave exactly as it was.
SNAPSHOT_PATHS = [
    "/etc/apt",
    "/etc/modprobe.d",
    "/etc/profile.d",
    "/etc/ld.so.conf.d",
    "/etc/systemd/system",
    "/etc/jupyter",
    "/etc/dcgm-exporter",
    "/etc/docker",
    "/usr/local",
    "/opt",
    "/var/lib/kindling",
    "/usr/share/keyrings",
    "/boot",
]
SNAPSHOT_SCRIPT = (
    "for p in " + " ".join(SNAPSHOT_PATHS) + "; do "
    '[ -e "$p" ] && find "$p" -xdev -printf \'%p %y %s %m %T@\\n\'; done | sort; '
    "echo '--- packages'; dpkg-query -W -f '${Package} ${Version} ${Status}\\n' | sort; "
    "echo '--- holds'; apt-mark showhold | sort; "
    "echo '--- users'; getent passwd | cut -d: -f1 | sort; "
    "echo '--- units'; systemctl list-unit-files --no-legend --no-pager | sort"
)


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="session")
def test_host(tmp_path_factory) -> Dict[str, str]:
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        pytest.fail(
            f"test image {IMAGE} is missing: run `make molecule` or "
            "molecule/_shared/image/build-image.sh first"
        )
    podman("rm", "-f", CONTAINER, check=False)
    podman(
        "run",
        "-d",
        "--name",
        CONTAINER,
        "--systemd",
        "always",
        "--network",
        "host",
        "--ulimit",
        "nofile=20000:20000",
        "--ulimit",
        "nproc=32768:32768",
        IMAGE,
        "/sbin/init",
    )
    for _ in range(60):
        state = podman("exec", CONTAINER, "systemctl", "is-system-running", check=False)
        if state.stdout.strip() in ("running", "degraded"):
            break
        time.sleep(1)
    inventory = tmp_path_factory.mktemp("inventory") / "hosts.yml"
    inventory.write_text(
        json.dumps(
            {
                "all": {
                    "children": {
                        "gpu_hosts": {
                            "hosts": {
                                CONTAINER: {
                                    "ansible_connection": "containers.podman.podman",
                                    "ansible_python_interpreter": "/usr/bin/python3",
                                }
                            }
                        }
                    }
                }
            }
        )
    )
    yield {"name": CONTAINER, "inventory": str(inventory)}
    podman("rm", "-f", CONTAINER, check=False)


def snapshot() -> str:
    return podman("exec", CONTAINER, "sh", "-c", SNAPSHOT_SCRIPT).stdout


def run_playbook(
    host: Dict[str, str], playbook: str, extra: Dict[str, object], *args: str, inventory: str = ""
) -> subprocess.CompletedProcess:
    cmd: List[str] = [
        ANSIBLE_PLAYBOOK,
        "-i",
        inventory or host["inventory"],
        str(REPO_ROOT / "playbooks" / playbook),
        "-e",
        json.dumps(extra),
        *args,
    ]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=600, env=env
    )


def one_line(text: str) -> str:
    """Ansible folds long messages over several lines; compare them as one line."""
    return " ".join(text.replace("\\n", " ").split())
