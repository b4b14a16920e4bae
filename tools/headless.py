#!/usr/bin/env python3
"""Drive headless Chromium over the DevTools protocol, through a pipe: no port, no extra
package. Opens a page, evaluates JavaScript in it, clicks, and takes screenshots.

    python tools/headless.py reports/<stamp>/index.html docs/images/fleet-report.png
    python tools/headless.py --width 1920 --height 1080 --first-screen PAGE PNG

With ``--remote-debugging-pipe`` Chromium reads protocol commands from its fd 3 and writes
replies and events to its fd 4, each message JSON ending in a NUL byte. The fleet report's
browser test (tests/unit/test_fleet_html.py) and the docs' screenshot both use this.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
]


class BrowserError(RuntimeError):
    """Chromium is missing, died, timed out, or a protocol command failed."""


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.events: List[Dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""
        self._session: Optional[str] = None
        self._profile = tempfile.TemporaryDirectory(prefix="kindling-chromium-")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            raise BrowserError(
                "chromium is not installed on this machine (apt-get install chromium)"
            )
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads commands, fd 4 writes replies
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._proc = subprocess.Popen(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=wire,
            pass_fds=(3, 4),
        )
        os.close(to_child_r)
        os.close(from_child_w)

    # ------------------------------------------------------------------ protocol
    def _send(
        self, method: str, params: Optional[Dict[str, Any]] = None, session: bool = True
    ) -> int:
        self._next_id += 1
        message: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise BrowserError(f"chromium exited (rc {self._proc.poll()}): {err[-2000:]}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self, method: str, params: Optional[Dict[str, Any]] = None, session: bool = True
    ) -> Dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, seen: int = 0) -> Dict[str, Any]:
        """The first event ``method`` after the first ``seen`` kept events."""
        deadline = time.monotonic() + self.timeout
        index = seen
        while True:
            while index < len(self.events):
                if self.events[index].get("method") == method:
                    return self.events[index]
                index += 1
            message = self._read(deadline)
            if "method" in message:
                self.events.append(message)

    # ------------------------------------------------------------------ page
    def __enter__(self) -> Browser:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(BrowserError):
                self.call("Browser.close", session=False)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._proc.stderr:
            self._proc.stderr.close()
        self._profile.cleanup()

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        seen = len(self.events)
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", seen)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression!r}")
            time.sleep(0.1)

    def requests(self) -> List[str]:
        """Every URL the page asked for since it was opened."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page's height when ``full_page``)."""
        params: Dict[str, Any] = {"format": "png"}
        if full_page:
            height = int(self.evaluate("document.documentElement.scrollHeight") or self.height)
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Screenshot a local HTML file in headless Chromium"
    )
    parser.add_argument("page", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument(
        "--first-screen",
        action="store_true",
        help="only the first screen (width x height), not the whole page",
    )
    parser.add_argument(
        "--wait-for",
        default="document.readyState === 'complete'",
        help="JavaScript expression to wait for before the screenshot",
    )
    args = parser.parse_args(argv)
    with Browser(args.width, args.height) as browser:
        browser.open(args.page.resolve().as_uri())
        browser.wait_for(args.wait_for)
        browser.screenshot(args.png, full_page=not args.first_screen)
    print(f"screenshot: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
