"""Stand-ins for NVIDIA's fabric manager, and the stand-in nvidia-smi's NVSwitch (HGX) host.

Fast checks without equivs or the full fixture build (tests/fixture_sources/build_fixtures.py):
the package specs the build makes for every fixture driver release (names from the vendor
catalogue, exact versions, relationships, files, the unit), the stand-in daemon run from a
temporary directory with its paths overridden (it refuses a driver of another version with
NVIDIA's message and exit status 1, and when the versions match forks, writes its PID and the
fabric state and removes them on SIGTERM), NVIDIA's start script stand-in, and the stand-in
nvidia-smi printing the HGX capture set built from tests/fixtures/nvidia_smi/h100-8gpu/, whose
fabric State/Status follow the daemon's state file, and answering `nvlink -s`. The built .debs,
the repositories and apt are checked in test_fixture_sources.py (slow).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ansible.module_utils import stack_plan
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "tests" / "fixture_sources" / "build_fixtures.py"
STANDINS = REPO_ROOT / "tests" / "fixture_sources" / "standins"
H200 = REPO_ROOT / "tests" / "fixtures" / "captures" / "h200"
_spec = importlib.util.spec_from_file_location("kindling_build_fixtures_fm", BUILD)
build_fixtures = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = build_fixtures  # dataclasses look their module up while it executes
_spec.loader.exec_module(build_fixtures)

DRIVER = "580.95.05"
CUDA = "13.0"
MISMATCH = (
    "fabric manager NVIDIA GPU driver interface version 550.54.15 don't match with driver "
    "version 580.95.05. Please update with matching NVIDIA driver package."
)
NO_NVSWITCH = (
    "request to query NVSwitch device information from NVSwitch driver failed with "
    "error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"
)


def _run(cmd, **kwargs):
    kwargs.setdefault("timeout", 30)
    return subprocess.run(
        [str(part) for part in cmd], capture_output=True, text=True, check=False, **kwargs
    )


def _releases():
    """(repo id, layout, branch, spec) of every driver release the fixture repositories serve,
    the later snapshot's point releases included."""
    found = []
    for repo_id, repo in build_fixtures.FIXTURE_REPOS.items():
        layout = stack_plan.REPOSITORIES[repo_id]["layout"]
        for branch, spec in repo["branches"].items():
            found.append((repo_id, layout, branch, spec))
            if branch in repo["later"]:
                found.append((repo_id, layout, branch, dict(spec, version=repo["later"][branch])))
    return found


RELEASES = _releases()


def _release_id(release):
    repo_id, _layout, branch, spec = release
    return f"{repo_id}-{branch}-{spec['version']}"


# ---------------------------------------------------------------------------- package specs


def test_every_fixture_driver_release_has_its_fabric_manager():
    """Every release that driver_packages() builds, the later point release included, gets the
    catalogue's fabric manager packages at its version."""
    assert ("debian12", "debian", "580", {"version": "580.105.08", "cuda": "13.0"}) in RELEASES
    for repo_id, _layout, branch, spec in RELEASES:
        releases = (
            None
            if spec == build_fixtures.FIXTURE_REPOS[repo_id]["branches"][branch]
            else {branch: spec["version"]}
        )
        built = {(p.name, p.version) for p in build_fixtures.driver_packages(repo_id, releases)}
        plan = stack_plan.fabric_manager_packages(branch, spec["version"])
        for name in plan["packages"]:
            ours = [v for n, v in built if n == name and v.startswith(spec["version"] + "-")]
            assert len(ours) == 1, (repo_id, name, spec["version"], sorted(built))


@pytest.mark.parametrize("release", RELEASES, ids=_release_id)
def test_fabric_manager_names_versions_and_relationships(release):
    _repo_id, layout, branch, spec = release
    upstream = spec["version"]
    plan = stack_plan.fabric_manager_packages(branch, upstream)
    manager, nscq = build_fixtures.fabric_manager_packages(layout, branch, spec)
    assert [manager.name, nscq.name] == plan["packages"]
    pinned = layout == "ubuntu" and build_fixtures.driver_names(layout, branch)["pinning"]
    revision = "1ubuntu1" if pinned else "1"
    assert manager.version == nscq.version == f"{upstream}-{revision}"
    assert re.fullmatch(plan["version"].replace(".", r"\.").replace("*", ".*"), manager.version)
    if int(branch) <= 575:
        assert manager.name == f"nvidia-fabricmanager-{branch}"
        assert nscq.name == f"libnvidia-nscq-{branch}"
        for package, virtual in ((manager, "nvidia-fabricmanager"), (nscq, "libnvidia-nscq")):
            assert package.provides == package.conflicts == package.replaces == [virtual]
    else:
        assert (manager.name, nscq.name) == ("nvidia-fabricmanager", "libnvidia-nscq")
        assert manager.provides == manager.conflicts == nscq.provides == []
    assert manager.depends == ["python3", "libc6 (>= 2.2.1)"]
    assert nscq.depends == []
    assert not any("nvidia-driver" in d or "cuda-drivers" in d for d in manager.depends)
    assert manager.description.startswith(
        f"Kindling test fixture: stand-in for NVIDIA's {manager.name}, not the real software"
    )
    files = {path: content for path, content, _mode in manager.files}
    assert files["/usr/share/kindling-fixture/fabric-manager-version"] == f"{upstream}\n".encode()
    daemon = files["/usr/bin/nv-fabricmanager"].decode()
    assert f'FM_VERSION = "{upstream}"' in daemon and "@" not in daemon.split('"""')[0]
    assert "Kindling test stand-in, NOT NVIDIA's fabric manager" in daemon.split("\n", 3)[1]
    assert b"DAEMONIZE=1" in files["/usr/share/nvidia/nvswitch/fabricmanager.cfg"]
    (library, _content, _mode) = nscq.files[0]
    assert library == f"/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.{upstream}"
    assert nscq.links == [(library, "/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2")]


def _unit(layout: str, branch: str, version: str) -> str:
    spec = {"version": version, "cuda": "13.0"}
    manager = build_fixtures.fabric_manager_packages(layout, branch, spec)[0]
    files = {path: content for path, content, _mode in manager.files}
    return files["/lib/systemd/system/nvidia-fabricmanager.service"].decode()


@pytest.mark.parametrize(
    ("branch", "version", "start_script"),
    [("550", "550.54.15", False), ("580", "580.95.05", True), ("590", "590.48.01", True)],
)
def test_unit_is_forking_and_starts_the_daemon_as_nvidia_does(branch, version, start_script):
    layout = "ubuntu" if branch == "590" else "debian"
    unit = _unit(layout, branch, version)
    directives = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and line[0] != "#"
    )
    assert directives["Type"] == "forking"
    assert directives["PIDFile"] == "/run/nvidia-fabricmanager/nv-fabricmanager.pid"
    assert directives["Description"].startswith("NVIDIA fabric manager service")
    assert directives["WantedBy"] == "multi-user.target"
    if start_script:
        assert (
            directives["ExecStartPre"] == "/usr/bin/nvidia-fabricmanager-start.sh --mode precheck"
        )
        assert directives["ExecStart"] == "/usr/bin/nvidia-fabricmanager-start.sh --mode start"
    else:
        assert "ExecStartPre" not in directives
        assert directives["ExecStart"] == (
            "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg"
        )
    manager = build_fixtures.fabric_manager_packages(
        layout, branch, {"version": version, "cuda": "13.0"}
    )[0]
    shipped = {path for path, _content, _mode in manager.files}
    assert ("/usr/bin/nvidia-fabricmanager-start.sh" in shipped) == start_script


def test_unit_has_no_line_systemd_rejects(tmp_path):
    # systemd-analyze comes with systemd, which the build machines (Debian 12) always have.
    assert shutil.which("systemd-analyze"), "systemd-analyze is needed to check the unit"
    for branch, version in (("550", "550.54.15"), ("580", "580.95.05")):
        unit = tmp_path / branch / "nvidia-fabricmanager.service"
        unit.parent.mkdir()
        unit.write_text(_unit("debian", branch, version))
        out = _run(["systemd-analyze", "verify", "--man=no", unit])
        lines = [
            line
            for line in (out.stdout + out.stderr).splitlines()
            if re.match(rf"{re.escape(str(unit))}:\d+: ", line)
        ]
        assert lines == [], lines


def test_nvlsm_once_per_repository_and_not_the_distributions_package():
    for repo_id in build_fixtures.FIXTURE_REPOS:
        names = [p.name for p in build_fixtures.driver_packages(repo_id)]
        expected = sorted(
            {
                name
                for branch in build_fixtures.FIXTURE_REPOS[repo_id]["branches"]
                for name in stack_plan.fabric_manager_packages(branch)["nvlink5_packages"]
            }
            - {"infiniband-diags"}
        )
        assert expected == ["nvlsm"], expected
        assert names.count("nvlsm") == 1
        assert "infiniband-diags" not in names
    (nvlsm,) = [p for p in build_fixtures.driver_packages("debian12") if p.name == "nvlsm"]
    assert nvlsm.version == "2025.10.11-1"
    assert nvlsm.depends == []
    later = {p.name for p in build_fixtures.later_packages()}
    assert "nvlsm" not in later  # the later snapshot keeps the repository's own


# ---------------------------------------------------------------------------- the daemon


class Daemon:
    """The stand-in nv-fabricmanager of one version in a temporary directory."""

    def __init__(self, tmp_path: Path, version: str, driver: str | None):
        self.root = tmp_path
        self.binary = tmp_path / "nv-fabricmanager"
        self.binary.write_bytes(build_fixtures.standin("nv_fabricmanager.py", FM_VERSION=version))
        self.binary.chmod(0o755)
        self.log = tmp_path / "fabricmanager.log"
        self.config = tmp_path / "fabricmanager.cfg"
        shipped = (STANDINS / "fabricmanager.cfg").read_text()
        self.config.write_text(
            re.sub(r"(?m)^LOG_FILE_NAME=.*$", f"LOG_FILE_NAME={self.log}", shipped)
        )
        self.driver_file = tmp_path / "driver-version"
        if driver is not None:
            self.driver_file.write_text(f"{driver}\n")
        self.run_dir = tmp_path / "run"
        self.state = self.run_dir / "fabric-state"
        self.pid_file = self.run_dir / "nv-fabricmanager.pid"
        self.fail_file = tmp_path / "fabric-manager-fail"
        self.env = {
            **os.environ,
            "KINDLING_FAKE_DRIVER_VERSION_FILE": str(self.driver_file),
            "KINDLING_FAKE_FM_RUN_DIR": str(self.run_dir),
            "KINDLING_FAKE_FM_FAIL_FILE": str(self.fail_file),
        }
        self.env.pop("KINDLING_FAKE_FM_FAIL", None)
        self.pids: list[int] = []

    def start(self, *args, timeout=20, **env):
        """Run it as systemd's ExecStart would; returns (rc, stderr)."""
        err = self.root / "stderr"
        with err.open("w") as handle:
            proc = subprocess.run(
                [self.binary, "-c", self.config, *args],
                stdout=subprocess.DEVNULL,
                stderr=handle,
                env={**self.env, **env},
                timeout=timeout,
                check=False,
            )
        if self.pid_file.exists():
            self.pids.append(int(self.pid_file.read_text()))
        return proc.returncode, err.read_text()

    def pid(self) -> int:
        return int(self.pid_file.read_text())

    def stop(self):
        pid = self.pid()
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not _alive(pid):
                return
            time.sleep(0.05)
        raise AssertionError(f"the stand-in daemon {pid} did not stop on SIGTERM")

    def cleanup(self):
        """Kill what this test started and left running (a daemon that should have refused)."""
        if self.pid_file.exists():
            with contextlib.suppress(ValueError):
                self.pids.append(int(self.pid_file.read_text()))
        for pid in self.pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (not reaped yet) counts as gone
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.fixture
def daemon_factory(tmp_path):
    made = []

    def make(version: str = DRIVER, driver: str | None = DRIVER, name: str = "fm") -> Daemon:
        folder = tmp_path / name
        folder.mkdir()
        daemon = Daemon(folder, version, driver)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.cleanup()


def test_daemon_refuses_a_driver_of_another_version(daemon_factory):
    daemon = daemon_factory(version="550.54.15", driver=DRIVER)
    rc, stderr = daemon.start()
    assert rc == 1
    assert stderr.strip() == MISMATCH
    assert not daemon.state.exists() and not daemon.pid_file.exists()
    assert MISMATCH in daemon.log.read_text()


def test_daemon_refuses_a_point_release_apart(daemon_factory):
    """580.95.05 against the later snapshot's 580.105.08: same branch, still refused."""
    daemon = daemon_factory(version="580.95.05", driver="580.105.08")
    rc, stderr = daemon.start()
    assert rc == 1
    assert "version 580.95.05 don't match with driver version 580.105.08" in stderr


def test_daemon_without_a_driver_fails(daemon_factory):
    daemon = daemon_factory(driver=None)
    rc, stderr = daemon.start()
    assert rc == 1
    assert "no NVIDIA driver version" in stderr and not daemon.state.exists()


def test_matching_daemon_forks_writes_the_state_and_removes_it_on_sigterm(daemon_factory):
    daemon = daemon_factory()
    started = time.monotonic()
    rc, stderr = daemon.start()
    assert rc == 0, stderr
    assert time.monotonic() - started < 10
    # when the starting process returns, the daemon is ready (Type=forking's contract)
    assert daemon.state.read_text() == "Completed\n"
    pid = daemon.pid()
    assert _alive(pid)
    assert "Connected to 1 node." in stderr
    assert "Successfully configured all the available NVSwitches" in stderr
    assert os.getsid(pid) != os.getsid(0), "detached into a session of its own"
    daemon.stop()
    assert not daemon.state.exists() and not daemon.pid_file.exists()
    assert "stopping (signal 15)" in daemon.log.read_text()


def test_daemonize_0_runs_in_the_foreground(daemon_factory):
    daemon = daemon_factory()
    daemon.config.write_text(daemon.config.read_text().replace("DAEMONIZE=1", "DAEMONIZE=0"))
    proc = subprocess.Popen(
        [daemon.binary, "-c", daemon.config],
        stderr=subprocess.DEVNULL,
        env=daemon.env,
        start_new_session=True,
    )
    daemon.pids.append(proc.pid)
    try:
        for _ in range(100):
            if daemon.state.exists():
                break
            time.sleep(0.05)
        assert daemon.state.read_text() == "Completed\n"
        assert daemon.pid() == proc.pid
        proc.terminate()
        assert proc.wait(timeout=5) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=5)
    assert not daemon.state.exists()


def test_fault_switches(daemon_factory):
    daemon = daemon_factory()
    daemon.fail_file.write_text("no-nvswitch\n")
    rc, stderr = daemon.start()
    assert (rc, stderr.strip()) == (1, NO_NVSWITCH)
    daemon.fail_file.unlink()
    rc, stderr = daemon.start(KINDLING_FAKE_FM_FAIL="in-progress")
    assert rc == 0, stderr
    assert daemon.state.read_text() == "In Progress\n"
    daemon.stop()


def test_version_flag(daemon_factory):
    daemon = daemon_factory()
    out = _run([daemon.binary, "--version"])
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == f"Fabric Manager version is : {DRIVER}"
    assert "Kindling test stand-in" in out.stdout
    assert _run([daemon.binary, "--frobnicate"], env=daemon.env).returncode == 1


def test_start_script_reports_the_daemons_failure(daemon_factory):
    good = daemon_factory(name="good")
    bad = daemon_factory(version="550.54.15", name="bad")
    start = good.root / "nvidia-fabricmanager-start.sh"
    start.write_bytes(build_fixtures.standin("nvidia-fabricmanager-start.sh", BRANCH="580"))
    start.chmod(0o755)

    def run(daemon: Daemon, *args):
        """The start script; output to files (a daemon it leaves running keeps them open)."""
        out, err = daemon.root / "out", daemon.root / "err"
        with out.open("w") as stdout, err.open("w") as stderr:
            proc = subprocess.run(
                [start, *args],
                stdout=stdout,
                stderr=stderr,
                env={**daemon.env, "KINDLING_FAKE_FM_BIN": str(daemon.binary)},
                timeout=30,
                check=False,
            )
        return subprocess.CompletedProcess(
            proc.args, proc.returncode, out.read_text(), err.read_text()
        )

    assert run(good, "--mode", "precheck").returncode == 0
    assert run(good, "--frob").returncode == 1
    failed = run(bad, "--mode", "start", "--fm-config-file", bad.config)
    assert failed.returncode == 1
    assert failed.stdout.splitlines() == [
        "Detected Pre-NVL5 system",
        f'"{bad.binary} -c {bad.config}" failed! Exit code: 1',
    ]
    assert MISMATCH in failed.stderr
    ok = run(good, "--mode", "start", "--fm-config-file", good.config)
    good.pids.append(good.pid())
    assert (ok.returncode, ok.stdout) == (0, "Detected Pre-NVL5 system\n")
    assert good.state.read_text() == "Completed\n"
    good.stop()


# ---------------------------------------------------------------------------- nvidia-smi


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    """The capture directory as a driver package installs it: the H200 set and hgx/."""
    root = tmp_path_factory.mktemp("nvidia-smi")
    for name, data in build_fixtures.substituted_captures(DRIVER, CUDA).items():
        (root / name).write_bytes(data)
    (root / "hgx").mkdir()
    for name, data in build_fixtures.hgx_captures(DRIVER, CUDA).items():
        (root / "hgx" / name).write_bytes(data)
    (root / "hgx" / "README").write_bytes(build_fixtures.hgx_readme(DRIVER, CUDA))
    return root


def _smi(captures: Path, tmp: Path, *args, case: str | None = "hgx", state: str | None = None):
    """The stand-in nvidia-smi, its case file saying `case` and the fabric state file `state`
    (None: absent)."""
    case_file = tmp / "nvidia-smi-case"
    state_file = tmp / "fabric-state"
    case_file.unlink(missing_ok=True)
    state_file.unlink(missing_ok=True)
    if case is not None:
        case_file.write_text(f"{case}\n")
    if state is not None:
        state_file.write_text(f"{state}\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("KINDLING_FAKE")}
    env.update(
        KINDLING_FAKE_SMI_DIR=str(captures),
        KINDLING_FAKE_SMI_CASE_FILE=str(case_file),
        KINDLING_FAKE_FABRIC_STATE_FILE=str(state_file),
        KINDLING_FAKE_SMI_FAIL_FILE=str(tmp / "no-fail"),
        KINDLING_FAKE_PERSISTENCE_FILE=str(tmp / "no-persistence"),
    )
    return _run([sys.executable, STANDINS / "nvidia_smi.py", *args], env=env)


def _fabric(captures: Path, tmp: Path, state: str | None) -> dict[str, list[tuple[str, str]]]:
    """Each GPU's (State, Status) as -q -x, -q and --query-gpu print them."""
    xml = ET.fromstring(_smi(captures, tmp, "-q", "-x", state=state).stdout.encode())
    text = _smi(captures, tmp, "-q", state=state).stdout
    query = _smi(
        captures,
        tmp,
        "--query-gpu=fabric.state,fabric.status",
        "--format=csv,noheader",
        state=state,
    ).stdout
    return {
        "xml": [(g.findtext("fabric/state"), g.findtext("fabric/status")) for g in xml.iter("gpu")],
        "text": re.findall(r"Fabric\n\s+State\s+: ([^\n]*)\n\s+Status\s+: ([^\n]*)", text),
        "csv": [tuple(line.split(", ")) for line in query.splitlines()],
    }


def test_hgx_fabric_state_follows_the_fabric_managers_state_file(captures, tmp_path):
    absent = _fabric(captures, tmp_path, None)
    completed = _fabric(captures, tmp_path, "Completed")
    stuck = _fabric(captures, tmp_path, "In Progress")
    for view in ("xml", "text", "csv"):
        assert absent[view] == [("In Progress", "N/A")] * 8, view
        assert stuck[view] == [("In Progress", "N/A")] * 8, view
        assert completed[view] == [("Completed", "Success")] * 8, view


def test_fabric_state_names_are_the_catalogues(captures):
    """The strings match what module_utils reads from the catalogue (where it has the rows)."""
    section = CATALOGUE["nvswitch_devices"]
    printed = {
        row["key"]: row["nvidia_smi"] for row in section["fabric_states"] if "nvidia_smi" in row
    }
    assert "Completed" in printed["completed"] and "In Progress" in printed["in_progress"]
    assert "Success" in section["fabric_status"]["ok"]


def test_the_daemon_and_nvidia_smi_together(captures, daemon_factory, tmp_path):
    daemon = daemon_factory()
    rc, stderr = daemon.start()
    assert rc == 0, stderr
    state = daemon.state.read_text().strip()
    assert _fabric(captures, tmp_path, state)["csv"] == [("Completed", "Success")] * 8
    daemon.stop()
    assert _fabric(captures, tmp_path, None)["csv"] == [("In Progress", "N/A")] * 8


def test_h200_case_is_not_an_nvswitch_host(captures, tmp_path):
    """The H200 capture (one GPU, no NVSwitch) keeps its N/A fabric whatever the state file."""
    for case in (None, "h200"):
        xml = _smi(captures, tmp_path, "-q", "-x", case=case, state="Completed").stdout
        log = ET.fromstring(xml.encode())
        assert log.findtext("gpu/fabric/state") == "N/A"
        assert log.findtext("gpu/product_name") == "NVIDIA A100-SXM4-40GB"
        assert len(log.findall("gpu")) == 1
        nvlink = _smi(captures, tmp_path, "nvlink", "-s", case=case)
        assert (nvlink.returncode, nvlink.stdout) == (0, "")  # no NVLink: nvidia-smi prints nothing


def test_hgx_nvlink_status(captures, tmp_path):
    out = _smi(captures, tmp_path, "nvlink", "-s")
    assert out.returncode == 0
    assert _smi(captures, tmp_path, "nvlink", "--status").stdout == out.stdout
    gpus = re.split(r"(?m)^(?=GPU \d+: )", out.stdout)[1:]
    assert len(gpus) == 8
    uuids = [
        line.split("UUID: ")[1].rstrip(")")
        for line in _smi(captures, tmp_path, "-L").stdout.splitlines()
    ]
    for index, block in enumerate(gpus):
        head, *links = block.strip("\n").split("\n")
        assert head == f"GPU {index}: NVIDIA H100 80GB HBM3 (UUID: {uuids[index]})"
        assert links == [f"\t Link {n}: 26.562 GB/s" for n in range(18)]  # NV18 in topo -m
    three = _smi(captures, tmp_path, "nvlink", "-s", "-i", "3").stdout
    assert three == gpus[3]
    assert _smi(captures, tmp_path, "nvlink", "-e").returncode == 2


def test_hgx_set_lists_eight_gpus_everywhere(captures, tmp_path):
    xml = ET.fromstring(_smi(captures, tmp_path, "-q", "-x").stdout.encode())
    assert xml.findtext("driver_version") == DRIVER and xml.findtext("cuda_version") == CUDA
    assert [g.findtext("product_name") for g in xml.iter("gpu")] == ["NVIDIA H100 80GB HBM3"] * 8
    uuids = [g.findtext("uuid") for g in xml.iter("gpu")]
    assert _smi(captures, tmp_path, "-L").stdout.splitlines() == [
        f"GPU {n}: NVIDIA H100 80GB HBM3 (UUID: {uuid})" for n, uuid in enumerate(uuids)
    ]
    query = _smi(captures, tmp_path, "--query-gpu=index,uuid,compute_cap,count", "--format=csv")
    assert query.stdout.splitlines()[1:] == [f"{n}, {u}, 9.0, 8" for n, u in enumerate(uuids)]
    text = _smi(captures, tmp_path, "-q").stdout
    assert re.findall(r"(?m)^    GPU UUID\s+: (\S+)$", text) == uuids
    assert f"Driver Version                                         : {DRIVER}" in text
    table = _smi(captures, tmp_path).stdout
    assert f"Driver Version: {DRIVER}" in table and f"CUDA Version: {CUDA}" in table
    rows = [line for line in table.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", line)]
    assert len(rows) == 8
    assert {len(line) for line in table.splitlines() if line.startswith(("|", "+"))} == {91}
    assert "Legend:" in _smi(captures, tmp_path, "topo", "-m").stdout
    assert not _smi(captures, tmp_path, "topo", "-m").stdout.startswith("#")


def test_hgx_one_gpu_with_id(captures, tmp_path):
    one = ET.fromstring(_smi(captures, tmp_path, "-q", "-x", "-i", "5").stdout.encode())
    assert [g.get("id") for g in one.iter("gpu")] == ["00000000:AB:00.0"]
    text = _smi(captures, tmp_path, "-q", "--id=5").stdout
    assert re.findall(r"(?m)^GPU (\S+)$", text) == ["00000000:AB:00.0"]
    assert "Driver Version" in text
    query = _smi(
        captures, tmp_path, "--query-gpu=index,pci.bus_id", "--format=csv,noheader", "-i", "5"
    )
    assert query.stdout == "5, 00000000:AB:00.0\n"
    table = _smi(captures, tmp_path, "-i", "5").stdout
    rows = [line for line in table.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", line)]
    assert len(rows) == 1 and rows[0].startswith("|   5  ")
    assert "No running processes found" in table
    assert _smi(captures, tmp_path, "-L", "-i", "2").stdout.startswith("GPU 2: ")
    missing = _smi(captures, tmp_path, "-L", "-i", "8")
    assert (missing.returncode, missing.stdout) == (6, "No devices were found\n")
    assert _smi(captures, tmp_path, "-L", "-i", "1", case="h200").returncode == 6


def test_hgx_persistence_mode_still_from_the_persistence_file(captures, tmp_path):
    xml = ET.fromstring(_smi(captures, tmp_path, "-q", "-x").stdout.encode())
    assert {g.findtext("persistence_mode") for g in xml.iter("gpu")} == {"Disabled"}


def test_unknown_case_is_refused(captures, tmp_path):
    out = _smi(captures, tmp_path, "-L", case="dgx")
    assert out.returncode == 1
    assert "unknown case 'dgx'" in out.stderr and "known: h200, hgx" in out.stderr


def test_hgx_readme_says_it_is_constructed(captures):
    readme = (captures / "hgx" / "README").read_text()
    assert "EVERYTHING HERE IS CONSTRUCTED" in readme
    assert "tests/fixtures/nvidia_smi/h100-8gpu/" in readme
    xml = (captures / "hgx" / "nvidia-smi-q.xml").read_text().splitlines()
    assert xml[1].startswith("<!-- Kindling test stand-in: CONSTRUCTED 8-GPU HGX document")


# ---------------------------------------------------------------------------- the build's HGX set


def test_table_rows_reproduce_the_h200_capture():
    """The row formatter lays out the H200 XML's GPU as the H200 capture's table does."""
    gpu = ET.parse(H200 / "nvidia-smi-q.xml").getroot().find("gpu")
    lines = (H200 / "smi.txt").read_text().split("\n")
    top = next(n for n, line in enumerate(lines) if line.startswith("|===="))
    captured = lines[top + 1 : top + 4]
    built = build_fixtures.smi_table_rows(0, gpu)
    assert built[0] == captured[0]
    assert built[2] == captured[2]
    # the second line's measured values differ between the two captures; its layout does not
    assert [m.start() for m in re.finditer(r"\|", built[1])] == [
        m.start() for m in re.finditer(r"\|", captured[1])
    ]

    def shape(line: str) -> str:
        return re.sub(r" +", " ", re.sub(r"\d+", "0", line))

    assert shape(built[1]) == shape(captured[1])


def test_query_csv_from_xml_agrees_with_the_h200_capture():
    """The XML -> CSV extractors, on the H200 XML, give the H200 CSV capture's values in the
    columns that were the same at both capture times."""
    root = ET.parse(H200 / "nvidia-smi-q.xml").getroot()
    header, row = (
        (H200 / "query-full.csv").read_text().splitlines()[i].split(", ") for i in (0, 1)
    )
    capture = dict(zip(header, row))
    built = build_fixtures.hgx_query_csv(root, {"00000000:00:06.0": "9.0"}, header)
    built_header, built_row = (line.split(", ") for line in built.splitlines())
    assert built_header == header
    derived = dict(zip(built_header, built_row))
    for column in (
        "index",
        "name",
        "pci.bus_id",
        "driver_version",
        "vbios_version",
        "compute_cap",
        "memory.total [MiB]",
        "power.limit [W]",
        "clocks.max.sm [MHz]",
        "pcie.link.gen.max",
        "pcie.link.width.current",
        "pcie.link.width.max",
        "persistence_mode",
        "mig.mode.current",
        "ecc.mode.current",
        "ecc.errors.uncorrected.volatile.total",
        "retired_pages.pending",
    ):
        assert derived[column] == capture[column], column


def test_build_copes_with_a_case_without_fabric_or_nvlink(tmp_path, monkeypatch):
    """The HGX case is another part's to change: without <fabric> elements or nvlink-s.txt the
    build makes them (fabric N/A placeholders; every link of topo's NV# at NVLink 4's speed)."""
    case = tmp_path / "h100-8gpu"
    shutil.copytree(build_fixtures.HGX_SOURCE, case)
    (case / "nvlink-s.txt").unlink(missing_ok=True)
    xml = (case / "nvidia-smi-q.xml").read_text()
    (case / "nvidia-smi-q.xml").write_text(re.sub(r"(?s)\t\t<fabric>.*?</fabric>\n", "", xml))
    assert "\t\t<fabric>" not in (case / "nvidia-smi-q.xml").read_text()
    monkeypatch.setattr(build_fixtures, "HGX_SOURCE", case)
    built = build_fixtures.hgx_captures(DRIVER, CUDA)
    root = ET.fromstring(built["nvidia-smi-q.xml"])
    assert [g.findtext("fabric/state") for g in root.iter("gpu")] == ["N/A"] * 8
    nvlink = built["nvlink-s.txt"].decode()
    assert nvlink.count("\t Link 17: 26.562 GB/s\n") == 8 and "Link 18" not in nvlink
    readme = " ".join(build_fixtures.hgx_readme(DRIVER, CUDA).decode().split())
    assert "the build gave each GPU a <fabric> element" in readme
    assert "nvlink-s.txt (every link at 26.562 GB/s" in readme


def test_build_refuses_a_case_without_its_xml(tmp_path, monkeypatch):
    monkeypatch.setattr(build_fixtures, "HGX_SOURCE", tmp_path)
    with pytest.raises(build_fixtures.BuildError, match=r"nvidia-smi-q\.xml"):
        build_fixtures.hgx_captures(DRIVER, CUDA)
