"""Faults on a real Debian 12 host, each followed by a run that converges with nothing lost.

One test host (podman, systemd as PID 1) goes through the faults in order, the way a
rented server does: first on a fresh host, then once the driver stage has converged.
The package sources are the local fixture server's stand-ins for NVIDIA's repository
(tests/fixture_sources, docs/FIXTURES.md); apt, dpkg, gpg and unattended-upgrades are the
real Debian programs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from typing import Dict

import pytest
from conftest import (
    REPO_ROOT,
    one_line,
    playbook_command,
    playbook_env,
    podman,
    run_playbook,
    scenario_group_vars,
    snapshot,
    snapshot_diff,
    start_host,
    write_inventory,
)

HOST = "kindling-faults"
FIXTURE_URL = os.environ.get("KINDLING_FIXTURE_URL", "http://127.0.0.1:8765")
BRANCH = "580"
INSTALLED = "580.95.05-1"  # the fixture repository's 580 release
LATER = "580.105.08-1"  # only in the fixture's "later" snapshot of the repository
# NVIDIA's debian12 names for the branch (the role asks for these on Debian 12): the branch
# metapackage, the driver and its proprietary kernel modules, whose postinst is the DKMS build.
DRIVER_PACKAGES = (f"cuda-drivers-{BRANCH}", "nvidia-driver", "nvidia-kernel-dkms")
KERNEL_MODULES = "nvidia-kernel-dkms"
CANARY = "kindling-fixture-canary"
# Nothing listens on the discard port: a repository that does not answer.
DEAD_BASE_URL = "http://127.0.0.1:9/compute/cuda/repos"
DEAD_REPO_URL = DEAD_BASE_URL + "/debian12/x86_64/"
DKMS_DELAY_FILE = "/etc/kindling-fixture/dkms-build-seconds"
LOCK_HOLDER = "/tmp/hold-dpkg-lock.py"
LOCK_HOLDER_CODE = """
import fcntl, os, sys, time
fds = []
for path in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"):
    fd = os.open(path, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    fds.append(fd)
time.sleep(float(sys.argv[1]))
"""


def sh(command: str, check: bool = True) -> subprocess.CompletedProcess:
    return podman("exec", HOST, "bash", "-c", command, check=check)


def recap(output: str) -> Dict[str, int]:
    match = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output)
    assert match, output[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


def package_state(name: str) -> str:
    result = sh(f"dpkg-query -W -f '${{db:Status-Abbrev}}${{Version}}' {name}", check=False)
    return result.stdout.strip()


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    start_host(HOST)
    group_vars = dict(scenario_group_vars("nvidia_driver"), nvidia_driver_branch=BRANCH)
    inventory = write_inventory(tmp_path_factory.mktemp("faults") / "hosts.yml", HOST, group_vars)
    yield {"name": HOST, "inventory": inventory}
    podman("rm", "-f", HOST, check=False)


def driver_run(host, extra=None, *args):
    return run_playbook(host, "nvidia_driver.yml", dict(extra or {}), *args)


def hold_dpkg_lock(seconds: int) -> None:
    """A process that holds dpkg's locks, named like unattended-upgrades (a stand-in: the
    real one holds them only while it has something to do)."""
    sh(f"cat > {LOCK_HOLDER} <<'EOF'\n{LOCK_HOLDER_CODE}\nEOF")
    podman(
        "exec",
        "-d",
        HOST,
        "bash",
        "-c",
        f"exec -a /usr/bin/unattended-upgrade python3 {LOCK_HOLDER} {seconds}",
    )
    for _ in range(50):
        if "WRITE" in sh("cat /proc/locks").stdout and sh(f"pgrep -f {LOCK_HOLDER}", False).stdout:
            return
        time.sleep(0.2)
    pytest.fail("the lock holder did not start")


def assert_unreachable_repository_changes_nothing(host) -> None:
    before = snapshot(HOST)
    result = driver_run(host, {"nvidia_driver_repo_base_url": DEAD_BASE_URL})
    output = one_line(result.stdout + result.stderr)
    assert result.returncode != 0
    assert f"The CUDA repository {DEAD_REPO_URL} could not be reached" in output, output[-3000:]
    assert "Nothing on the host was changed; apt's sources are as they were" in output
    after = snapshot(HOST)
    assert after == before, snapshot_diff(before, after)


def test_unreachable_repository_on_a_fresh_host_changes_nothing(host):
    assert_unreachable_repository_changes_nothing(host)


def test_held_dpkg_lock_waits_for_the_timeout_then_fails_naming_the_holder(host):
    hold_dpkg_lock(600)
    before = snapshot(HOST)
    started = time.monotonic()
    result = driver_run(host, {"nvidia_driver_apt_lock_timeout": 10})
    elapsed = time.monotonic() - started
    sh(f"pkill -f {LOCK_HOLDER}", check=False)
    output = one_line(result.stdout + result.stderr)
    assert result.returncode != 0
    assert "dpkg is busy: /var/lib/dpkg/lock-frontend, held by pid" in output, output[-3000:]
    assert "(/usr/bin/unattended-upgrade /tmp/hold-dpkg-lock.py 600)" in output
    assert "still locked after 10 s" in output
    assert "raise nvidia_driver_apt_lock_timeout" in output
    assert elapsed >= 10
    after = snapshot(HOST)
    assert after == before, snapshot_diff(before, after)


def test_install_killed_mid_dpkg_is_repaired_by_the_next_run(host):
    sh(f"mkdir -p /etc/kindling-fixture && echo 600 > {DKMS_DELAY_FILE}")
    cmd = playbook_command(host, "nvidia_driver.yml", {})
    run = subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=playbook_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline:
            if sh("pgrep -x -f 'sleep 600'", check=False).returncode == 0:
                break
            assert run.poll() is None, "the run ended before dpkg reached the driver's postinst"
            time.sleep(1)
        else:
            pytest.fail("dpkg never reached the driver's postinst")
    finally:
        # The controller dies (a dropped SSH session), and with it apt, dpkg and the
        # maintainer script on the host.
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    podman(
        "exec",
        HOST,
        "pkill",
        "-KILL",
        "-f",
        "AnsiballZ|apt-get|/usr/bin/dpkg|postinst",
        check=False,
    )
    podman("exec", HOST, "pkill", "-KILL", "-x", "sleep", check=False)
    sh(f"rm -f {DKMS_DELAY_FILE}")

    audit = sh("dpkg --audit", check=False).stdout
    assert KERNEL_MODULES in audit, f"dpkg was not left half-way:\n{audit}"
    assert not package_state(KERNEL_MODULES).startswith("ii")

    repaired = driver_run(host)
    output = one_line(repaired.stdout + repaired.stderr)
    assert repaired.returncode == 0, repaired.stdout[-4000:]
    repair_task = output[output.find("Wait for other package managers") :][:2000]
    assert "finished it with dpkg --configure -a" in output, repair_task
    assert sh("dpkg --audit").stdout.strip() == ""
    assert sh("ls /var/lib/dpkg/updates").stdout.strip() == ""
    for pkg in DRIVER_PACKAGES:
        assert package_state(pkg) == f"hi {INSTALLED}", pkg

    again = driver_run(host)
    assert again.returncode == 0, again.stdout[-4000:]
    assert recap(again.stdout)["changed"] == 0, again.stdout[-4000:]


def test_dpkg_lock_released_within_the_timeout_is_waited_for(host):
    hold_dpkg_lock(45)
    result = driver_run(host, {"nvidia_driver_apt_lock_timeout": 120}, "-v")
    assert result.returncode == 0, result.stdout[-4000:]
    waited = re.findall(r'waited"?: ([0-9.]+)', result.stdout)
    assert waited and max(map(float, waited)) >= 5, result.stdout[-4000:]
    assert recap(result.stdout)["changed"] == 0


def test_rotated_repository_key_no_pubkey_changes_nothing(host):
    before = snapshot(HOST)
    result = driver_run(
        host, {"nvidia_driver_repo_base_url": f"{FIXTURE_URL}/rotated/compute/cuda/repos"}
    )
    output = one_line(result.stdout + result.stderr)
    assert result.returncode != 0
    assert "apt could not use the CUDA repository" in output, output[-3000:]
    assert "NO_PUBKEY" in output
    assert "NVIDIA rotated its key once (April 2022" in output
    assert "Nothing was changed: apt's sources and keyrings are as they were" in output
    after = snapshot(HOST)
    assert after == before, snapshot_diff(before, after)
    update = sh("LC_ALL=C apt-get update 2>&1")
    assert not re.search(r"^(W|E):", update.stdout, re.M), update.stdout


def test_unreachable_repository_on_a_converged_host_keeps_the_working_sources(host):
    assert_unreachable_repository_changes_nothing(host)
    install = sh(f"LC_ALL=C apt-get update 2>&1 && apt-get install -y {CANARY}=1.0-1 2>&1")
    assert package_state(CANARY) == "ii 1.0-1", install.stdout


def test_held_driver_survives_apt_get_upgrade_and_unattended_upgrade(host):
    # NVIDIA publishes a newer 580 point release: point a second source at the fixture's
    # later snapshot of the repository (the role's own pin allows 580.*, so only the hold
    # stands between the host and an unplanned driver change).
    keyring = "/usr/share/keyrings/cuda-archive-keyring.gpg"
    later = f"{FIXTURE_URL}/later/compute/cuda/repos/debian12/x86_64/"
    sh(
        f"echo 'deb [signed-by={keyring}] {later} /' > /etc/apt/sources.list.d/later.list"
        " && apt-get update -q"
    )
    for pkg in DRIVER_PACKAGES:
        policy = sh(f"LC_ALL=C apt-cache policy {pkg}").stdout
        assert f"Candidate: {LATER}" in policy, policy

    upgrade = sh("DEBIAN_FRONTEND=noninteractive apt-get -y upgrade 2>&1").stdout
    for pkg in DRIVER_PACKAGES:
        assert package_state(pkg) == f"hi {INSTALLED}", upgrade
    assert package_state(CANARY) == "ii 2.0-1", f"apt-get upgrade did nothing:\n{upgrade}"

    sh(f"apt-get install -y --allow-downgrades {CANARY}=1.0-1")
    sh(
        "echo 'Unattended-Upgrade::Origins-Pattern { \"origin=NVIDIA\"; };' "
        "> /etc/apt/apt.conf.d/52kindling-test-unattended"
    )
    unattended = sh("unattended-upgrade -v 2>&1", check=False)
    assert package_state(CANARY) == "ii 2.0-1", (
        f"unattended-upgrade did nothing:\n{unattended.stdout}"
    )
    for pkg in DRIVER_PACKAGES:
        assert package_state(pkg) == f"hi {INSTALLED}", unattended.stdout
    sh("rm /etc/apt/sources.list.d/later.list /etc/apt/apt.conf.d/52kindling-test-unattended")
