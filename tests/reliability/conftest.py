"""A Debian 12 test host (podman, systemd as PID 1) shared by the reliability tests.

Each test runs real ansible-playbook commands against it through the test bed's
pipelined podman connection (molecule/_shared/plugins/connection), and compares
snapshots of the host's state taken before and after.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("KINDLING_TEST_IMAGE", "localhost/kindling-debian12-systemd") + ":latest"
CONTAINER = "kindling-reliability"
CONNECTION_PLUGINS = REPO_ROOT / "molecule" / "_shared" / "plugins" / "connection"
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


def start_host(name: str) -> None:
    """A fresh test host: the image's Debian 12 with systemd as PID 1, on the host network."""
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        pytest.fail(
            f"test image {IMAGE} is missing: run `make molecule` or "
            "molecule/_shared/image/build-image.sh first"
        )
    podman("rm", "-f", name, check=False)
    podman(
        "run",
        "-d",
        "--name",
        name,
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
        state = podman("exec", name, "systemctl", "is-system-running", check=False)
        if state.stdout.strip() in ("running", "degraded"):
            break
        time.sleep(1)


def write_inventory(path: Path, name: str, group_vars: Dict[str, object]) -> str:
    path.write_text(
        json.dumps(
            {
                "all": {
                    "children": {
                        "gpu_hosts": {
                            "hosts": {
                                name: {
                                    "ansible_connection": "kindling_podman",
                                    "ansible_python_interpreter": "/usr/bin/python3",
                                }
                            },
                            "vars": group_vars,
                        }
                    }
                }
            }
        )
    )
    return str(path)


def scenario_group_vars(scenario: str) -> Dict[str, object]:
    """The gpu_hosts variables of a Molecule scenario: one copy of the fixture settings."""
    config = yaml.safe_load((REPO_ROOT / "molecule" / scenario / "molecule.yml").read_text())
    return dict(config["provisioner"]["inventory"]["group_vars"]["gpu_hosts"])


@pytest.fixture(scope="session")
def test_host(tmp_path_factory) -> Iterator[Dict[str, str]]:
    """The bad-input and check-mode host: nothing may ever change it."""
    start_host(CONTAINER)
    inventory = write_inventory(tmp_path_factory.mktemp("inventory") / "hosts.yml", CONTAINER, {})
    yield {"name": CONTAINER, "inventory": inventory}
    podman("rm", "-f", CONTAINER, check=False)


def snapshot(name: str = CONTAINER) -> str:
    return podman("exec", name, "sh", "-c", SNAPSHOT_SCRIPT).stdout


def snapshot_diff(before: str, after: str) -> str:
    """The lines of a host snapshot that changed, for an assertion message."""
    return "\n".join(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), "before", "after", lineterm=""
        )
    )


def run_playbook(
    host: Dict[str, str], playbook: str, extra: Dict[str, object], *args: str, inventory: str = ""
) -> subprocess.CompletedProcess:
    cmd: List[str] = playbook_command(host, playbook, extra, *args, inventory=inventory)
    return subprocess.run(
        cmd,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=playbook_env(),
    )


def playbook_env() -> Dict[str, str]:
    return dict(
        os.environ,
        ANSIBLE_FORCE_COLOR="false",
        ANSIBLE_NOCOLOR="1",
        # Modules pipelined over `podman exec -i`, as Molecule's scenarios run them.
        ANSIBLE_CONNECTION_PLUGINS=str(CONNECTION_PLUGINS),
        ANSIBLE_PIPELINING="true",
    )


def playbook_command(
    host: Dict[str, str], playbook: str, extra: Dict[str, object], *args: str, inventory: str = ""
) -> List[str]:
    return [
        ANSIBLE_PLAYBOOK,
        "-i",
        inventory or host["inventory"],
        str(REPO_ROOT / "playbooks" / playbook),
        "-e",
        json.dumps(extra),
        *args,
    ]


def one_line(text: str) -> str:
    """Ansible folds long messages over several lines; compare them as one line."""
    return " ".join(text.replace("\\n", " ").split())


# --- this run's outcome of each catalogued case: reports/reliability/RELIABILITY.md

_OUTCOMES: Dict[str, str] = {}
_WORDS = {"passed": "pass", "failed": "FAIL", "skipped": "skipped"}


def pytest_runtest_logreport(report) -> None:
    if report.when == "call" or report.outcome != "passed":
        _OUTCOMES[report.nodeid] = _WORDS.get(report.outcome, report.outcome)


def _outcome(test: str) -> str:
    if not test.startswith("tests/reliability/"):
        return "not in this suite"
    found = [
        word
        for nodeid, word in _OUTCOMES.items()
        if nodeid == test or nodeid.startswith(test + "::")
    ]
    if not found:
        return "not run"
    return "FAIL" if "FAIL" in found else found[0]


def pytest_sessionfinish(session, exitstatus) -> None:
    if not _OUTCOMES:
        return
    from cases import CASES, SECTIONS, also_through_site, render_markdown

    results = {}
    for case in CASES:
        tests = ["test_bad_input_is_refused_before_any_change"]
        if case.get("batch"):
            tests = ["test_batch_case_is_refused_in_one_site_check"]
        elif also_through_site(case):
            tests.append("test_bad_input_is_refused_by_site_yml_before_stage_2")
        found = [
            _outcome(f"tests/reliability/test_bad_inputs.py::{test}[{case['id']}]")
            for test in tests
        ]
        results[str(case["id"])] = next((w for w in found if w != "pass"), "pass")
    for _, rows in SECTIONS:
        for case in rows:
            results[case["id"]] = _outcome(case["test"])
    out = REPO_ROOT / "reports" / "reliability"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (out / "RELIABILITY.md").write_text(
        render_markdown(results) + f"\nOutcomes of the run that ended {stamp}.\n"
    )
