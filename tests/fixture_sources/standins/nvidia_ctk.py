#!/usr/bin/python3
"""nvidia-ctk -- Kindling test stand-in, NOT NVIDIA's Container Toolkit CLI.

Installed as /usr/bin/nvidia-ctk by the Kindling test-fixture package nvidia-container-toolkit
(built by tests/fixture_sources/build_fixtures.py). Implements what the roles call:

  nvidia-ctk --version
  nvidia-ctk runtime configure --runtime=docker [--config=PATH] [--set-as-default] [--dry-run]

`runtime configure` merges
{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}} into the docker daemon
config (default /etc/docker/daemon.json), keeping every other key, and
writes it with four-space indentation as the real tool does.
"""

import json
import os
import sys

VERSION = "@VERSION@"
DEFAULT_CONFIG = "/etc/docker/daemon.json"


def _log(level, message):
    sys.stderr.write(f"{level}[0000] {message}\n")


def _options(args):
    opts = {}
    it = iter(args)
    for arg in it:
        if not arg.startswith("--"):
            opts.setdefault("_positional", []).append(arg)
            continue
        key, sep, value = arg[2:].partition("=")
        if not sep:
            value = "true" if key in ("set-as-default", "dry-run") else next(it, "")
        opts[key] = value
    return opts


def runtime_configure(args):
    opts = _options(args)
    runtime = opts.get("runtime", "docker")
    if runtime != "docker":
        _log(
            "ERRO", f"Kindling test stand-in: only --runtime=docker is implemented, not {runtime!r}"
        )
        return 1
    path = opts.get("config") or DEFAULT_CONFIG
    config = {}
    if os.path.exists(path):
        _log("INFO", f"Loading config from {path}")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if text.strip():
            try:
                config = json.loads(text)
            except ValueError as exc:
                _log("ERRO", f"unable to load config: could not parse {path}: {exc}")
                return 1
    runtimes = config.setdefault("runtimes", {})
    runtimes["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
    if opts.get("set-as-default") == "true":
        config["default-runtime"] = "nvidia"
    output = json.dumps(config, indent=4, sort_keys=True) + "\n"
    if opts.get("dry-run") == "true":
        sys.stdout.write(output)
        return 0
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tmp = path + ".kindling-tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(output)
    os.replace(tmp, path)
    _log("INFO", f"Wrote updated config to {path}")
    _log("INFO", "It is recommended that docker daemon be restarted.")
    return 0


def main(argv):
    if argv in (["--version"], ["-v"], ["version"]):
        sys.stdout.write(
            f"NVIDIA Container Toolkit CLI version {VERSION}\ncommit: kindling-test-fixture\n"
        )
        return 0
    if argv[:2] == ["runtime", "configure"]:
        return runtime_configure(argv[2:])
    command = " ".join(argv)
    _log("ERRO", f"Kindling test stand-in nvidia-ctk: {command!r} is not implemented")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
