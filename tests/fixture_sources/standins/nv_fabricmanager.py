#!/usr/bin/python3
"""nv-fabricmanager -- Kindling test stand-in, NOT NVIDIA's fabric manager.

Installed as /usr/bin/nv-fabricmanager by the Kindling test-fixture fabric manager packages
(built by tests/fixture_sources/build_fixtures.py, under the names the vendor catalogue gives:
nvidia-fabricmanager-<branch> up to 575, nvidia-fabricmanager from 580). It configures no
NVSwitch and talks to no driver. It models what the roles depend on:

- NVIDIA's fabric manager refuses to start unless its version is exactly the driver's. This one
  knows its own version (baked in at build time: @FM_VERSION@) and reads the driver's from the
  file the stand-in driver userspace package installs, /usr/share/kindling-fixture/driver-version.
  When they differ it logs NVIDIA's message ("fabric manager NVIDIA GPU driver interface version
  ... don't match with driver version ...") and exits 1, so `systemctl start` fails.
- When they match it starts: with DAEMONIZE=1 in its config (the shipped default, as NVIDIA's) it
  forks into the background and the starting process exits 0 only once the daemon has written
  its PID to /run/nvidia-fabricmanager/nv-fabricmanager.pid and the fabric state "Completed" to
  /run/nvidia-fabricmanager/fabric-state, so a unit of Type=forking is "active" exactly when the
  state is there. The stand-in nvidia-smi reports the GPUs' fabric State/Status from that file
  (Completed/Success; without it In Progress/N/A, as GPUs on an NVSwitch host show while no
  fabric manager has configured the fabric). SIGTERM or SIGINT removes both files and ends it.
  DAEMONIZE=0 runs it in the foreground.

Fault switches: KINDLING_FAKE_FM_FAIL=<word>, or that word in the file
/etc/kindling-fixture/fabric-manager-fail (for tests that cannot set the environment of what
systemd starts):
  no-nvswitch   NVIDIA's "request to query NVSwitch device information ... NV_WARN_NOTHING_TO_DO"
                message, exit 1 (a host without NVSwitches)
  in-progress   starts and stays running, but the fabric never completes: the state file says
                "In Progress" (a daemon that runs while CUDA would still fail with error 802)

Overrides for tests: KINDLING_FAKE_DRIVER_VERSION_FILE (the driver version file),
KINDLING_FAKE_FM_RUN_DIR (/run/nvidia-fabricmanager), KINDLING_FAKE_FM_FAIL_FILE.
"""

import contextlib
import datetime
import os
import signal
import sys

FM_VERSION = "@FM_VERSION@"
DEFAULT_CONFIG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
DRIVER_VERSION_FILE = os.environ.get(
    "KINDLING_FAKE_DRIVER_VERSION_FILE", "/usr/share/kindling-fixture/driver-version"
)
RUN_DIR = os.environ.get("KINDLING_FAKE_FM_RUN_DIR", "/run/nvidia-fabricmanager")
FAIL_FILE = os.environ.get(
    "KINDLING_FAKE_FM_FAIL_FILE", "/etc/kindling-fixture/fabric-manager-fail"
)
STATE_FILE = os.path.join(RUN_DIR, "fabric-state")
PID_FILE = os.path.join(RUN_DIR, "nv-fabricmanager.pid")

# NVIDIA's messages, as users quote them from the journal (see docs/FIXTURES.md for where).
MISMATCH = (
    "fabric manager NVIDIA GPU driver interface version {fm} don't match with driver version "
    "{driver}. Please update with matching NVIDIA driver package."
)
NO_NVSWITCH = (
    "request to query NVSwitch device information from NVSwitch driver failed with "
    "error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"
)
CONNECTED = "Connected to 1 node."
CONFIGURED = "Successfully configured all the available NVSwitches to route GPU NVLink traffic."
USAGE = (
    "usage: nv-fabricmanager [-c CONFIG_FILE] [-v|--version]\n"
    "Kindling test stand-in for NVIDIA's fabric manager (not NVIDIA software)."
)


def _log_file(config):
    return config.get("LOG_FILE_NAME", "")


def log(message, config=None, level="INFO", stream=True):
    """To stderr (the journal, under systemd) and to the config's LOG_FILE_NAME, if any."""
    if stream:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    path = _log_file(config or {})
    if path:
        stamp = datetime.datetime.now().strftime("%b %d %Y %H:%M:%S")
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"[{stamp}] [{level}] [Kindling test stand-in] {message}\n")
        except OSError:
            pass


def read_config(path):
    """KEY=VALUE lines, '#' comments, as NVIDIA's fabricmanager.cfg."""
    config = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config


def fault():
    word = os.environ.get("KINDLING_FAKE_FM_FAIL", "")
    if not word:
        try:
            with open(FAIL_FILE, encoding="utf-8") as handle:
                word = handle.read().strip()
        except OSError:
            pass
    return word


def driver_version():
    try:
        with open(DRIVER_VERSION_FILE, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _remove_state():
    for path in (STATE_FILE, PID_FILE):
        with contextlib.suppress(OSError):
            os.unlink(path)


def _write(path, text):
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)


def serve(config, state, ready_fd=None):
    """The daemon: publish the PID and the fabric state, then wait for SIGTERM/SIGINT."""

    def stop(signum, _frame):
        log(f"Kindling test stand-in nv-fabricmanager stopping (signal {signum})", config)
        _remove_state()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    os.makedirs(RUN_DIR, exist_ok=True)
    _write(PID_FILE, f"{os.getpid()}\n")
    _write(STATE_FILE, f"{state}\n")
    log(CONNECTED, config)
    if state == "Completed":
        log(CONFIGURED, config)
    else:
        log(f"Kindling test stand-in: fabric state held at {state!r} by the fault switch", config)
    if ready_fd is not None:
        os.write(ready_fd, b"0")
        os.close(ready_fd)
    while True:
        signal.pause()


def daemonize(config, state):
    """Fork twice; the caller returns 0 once the daemon is ready (Type=forking's contract)."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child:
        os.close(write_fd)
        os.waitpid(child, 0)
        answer = os.read(read_fd, 1)
        os.close(read_fd)
        return 0 if answer == b"0" else 1
    os.close(read_fd)
    os.setsid()
    if os.fork():
        os._exit(0)
    os.chdir("/")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        serve(config, state, write_fd)
    except Exception as exc:  # report any failure to the waiting parent
        log(f"Kindling test stand-in nv-fabricmanager failed: {exc}", config, "ERROR")
        _remove_state()
        os._exit(1)
    return 0


def main(argv):
    config_path = DEFAULT_CONFIG
    args = iter(argv)
    for arg in args:
        if arg in ("-v", "--version"):
            print(f"Fabric Manager version is : {FM_VERSION}")
            print("(Kindling test stand-in, not NVIDIA's fabric manager)")
            return 0
        if arg in ("-h", "--help"):
            print(USAGE)
            return 0
        if arg in ("-c", "--config"):
            config_path = next(args, "")
        elif arg.startswith("--config="):
            config_path = arg.split("=", 1)[1]
        else:
            print(f"Unknown option: {arg}\n{USAGE}", file=sys.stderr)
            return 1
    try:
        config = read_config(config_path)
    except OSError as exc:
        log(f"Kindling test stand-in nv-fabricmanager: cannot read config {config_path}: {exc}")
        return 1

    word = fault()
    if word == "no-nvswitch":
        log(NO_NVSWITCH, config, "ERROR")
        return 1
    driver = driver_version()
    if driver is None:
        log(
            "Kindling test stand-in nv-fabricmanager: no NVIDIA driver version at "
            f"{DRIVER_VERSION_FILE} (is the stand-in driver package installed?)",
            config,
            "ERROR",
        )
        return 1
    if driver != FM_VERSION:
        log(MISMATCH.format(fm=FM_VERSION, driver=driver), config, "ERROR")
        return 1
    state = "In Progress" if word == "in-progress" else "Completed"
    if config.get("DAEMONIZE", "1") == "0":
        serve(config, state)
    return daemonize(config, state)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
