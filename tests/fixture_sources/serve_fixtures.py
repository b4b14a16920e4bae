#!/usr/bin/env python3
"""Serve Kindling's TEST FIXTURE package sources on loopback (127.0.0.1 only).

    python3 tests/fixture_sources/serve_fixtures.py start --out OUT [--port N] [--root DIR]
    python3 tests/fixture_sources/serve_fixtures.py status --out OUT
    python3 tests/fixture_sources/serve_fixtures.py stop --out OUT
    python3 tests/fixture_sources/serve_fixtures.py serve --out OUT ...   (foreground)

OUT defaults to .cache/fixtures.

The document root defaults to <out>/srv as written by build_fixtures.py; the port defaults to
$KINDLING_FIXTURE_PORT or 8765. `start` daemonises (new session), waits until the server answers
and is idempotent: if this <out>'s server already serves the same root on the same port it does
nothing. The server process writes its own PID (os.getpid(), not a shell's or pyenv shim's) with
its root and port to <out>/server-<port>.pid; requests are logged to <out>/server.log. `stop`
ends that PID. Exit codes: 0 ok, 1 error, 3 (status) not running.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_PORT = 8765
HOST = "127.0.0.1"
MARKER_HEADER = "X-Kindling-Fixture-Server"


class FixtureHandler(http.server.SimpleHTTPRequestHandler):
    server_version = "KindlingFixtureServer/1.0"
    protocol_version = "HTTP/1.1"

    def end_headers(self):
        self.send_header(MARKER_HEADER, "test fixture; see docs/FIXTURES.md")
        super().end_headers()

    def log_message(self, format, *args):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        sys.stderr.write(f"{stamp} {self.address_string()} - {format % args}\n")
        sys.stderr.flush()


def pid_file(out: Path, port: int) -> Path:
    """One per port, so two test beds (KINDLING_FIXTURE_PORT) can serve side by side."""
    return out / f"server-{port}.pid"


def log_file(out: Path) -> Path:
    return out / "server.log"


def read_state(out: Path, port: int) -> dict | None:
    """The state the server wrote, if that process is still alive and is this script."""
    try:
        state = json.loads(pid_file(out, port).read_text())
        pid = int(state["pid"])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if Path(__file__).name.encode() not in cmdline:
        return None  # stale pid file; the PID now belongs to something else
    return state


def answers(port: int, timeout: float = 1.0) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    try:
        with opener.open(f"http://{HOST}:{port}/", timeout=timeout) as response:
            return response.headers.get(MARKER_HEADER) is not None
    except (urllib.error.URLError, OSError):
        return False


def port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def serve(out: Path, root: Path, port: int) -> int:
    handler = functools.partial(FixtureHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer((HOST, port), handler)
    server.daemon_threads = True
    state = {"pid": os.getpid(), "root": str(root), "port": port, "started": time.time()}
    tmp = pid_file(out, port).with_suffix(".tmp")
    tmp.write_text(json.dumps(state) + "\n")
    tmp.replace(pid_file(out, port))

    def terminate(signum, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminate)
    sys.stderr.write(
        f"Kindling test fixture server: serving {root} on http://{HOST}:{port}/ "
        f"(pid {os.getpid()})\n"
    )
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        with contextlib.suppress(OSError, ValueError):
            if json.loads(pid_file(out, port).read_text()).get("pid") == os.getpid():
                pid_file(out, port).unlink()
        sys.stderr.write("Kindling test fixture server: stopped\n")
    return 0


def stop(out: Path, port: int, quiet: bool = False) -> int:
    state = read_state(out, port)
    if state is None:
        pid_file(out, port).unlink(missing_ok=True)
        if not quiet:
            print(f"kindling fixture server: not running ({out})")
        return 0
    pid = int(state["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    if Path(f"/proc/{pid}").exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    pid_file(out, port).unlink(missing_ok=True)
    if not quiet:
        print(f"kindling fixture server: stopped pid {pid} (port {state['port']})")
    return 0


def start(out: Path, root: Path, port: int) -> int:
    if not root.is_dir():
        print(
            f"kindling fixture server: {root} does not exist; build it first with "
            f"python3 tests/fixture_sources/build_fixtures.py --out {out}",
            file=sys.stderr,
        )
        return 1
    state = read_state(out, port)
    if state is not None:
        if state["root"] == str(root) and int(state["port"]) == port and answers(port):
            print(
                f"kindling fixture server: already serving {root} on http://{HOST}:{port}/ "
                f"(pid {state['pid']})"
            )
            return 0
        stop(out, port, quiet=True)
    if port_busy(port):
        print(
            f"kindling fixture server: port {HOST}:{port} is already in use by another "
            "process; choose another with --port or KINDLING_FIXTURE_PORT",
            file=sys.stderr,
        )
        return 1
    pid_file(out, port).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    with log_file(out).open("ab") as log:
        child = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "serve",
                "--out",
                str(out),
                "--root",
                str(root),
                "--port",
                str(port),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        state = read_state(out, port)
        if state is not None and answers(port):
            print(
                f"kindling fixture server: serving {root} on http://{HOST}:{port}/ "
                f"(pid {state['pid']}, log {log_file(out)})"
            )
            return 0
        if child.poll() is not None:
            break
        time.sleep(0.1)
    tail = log_file(out).read_text(errors="replace")[-1500:]
    print(
        f"kindling fixture server: did not come up on port {port}; log tail:\n{tail}",
        file=sys.stderr,
    )
    stop(out, port, quiet=True)
    return 1


def status(out: Path, port: int) -> int:
    state = read_state(out, port)
    if state is None:
        print(f"kindling fixture server: not running ({out})")
        return 3
    health = "answering" if answers(port) else "NOT answering"
    print(
        f"kindling fixture server: pid {state['pid']} serving {state['root']} on "
        f"http://{HOST}:{port}/ ({health})"
    )
    return 0 if health == "answering" else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Serve Kindling's test-fixture package sources on 127.0.0.1."
    )
    parser.add_argument("action", choices=("start", "stop", "status", "serve"))
    parser.add_argument(
        "--out",
        default=".cache/fixtures",
        help="build output dir (pid file, log); default .cache/fixtures",
    )
    parser.add_argument("--root", help="document root (default <out>/srv)")
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("KINDLING_FIXTURE_PORT", DEFAULT_PORT)),
        help=f"TCP port on 127.0.0.1 (default $KINDLING_FIXTURE_PORT or {DEFAULT_PORT})",
    )
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    root = Path(args.root).resolve() if args.root else out / "srv"
    if args.action == "start":
        return start(out, root, args.port)
    if args.action == "stop":
        return stop(out, args.port)
    if args.action == "status":
        return status(out, args.port)
    return serve(out, root, args.port)


if __name__ == "__main__":
    sys.exit(main())
