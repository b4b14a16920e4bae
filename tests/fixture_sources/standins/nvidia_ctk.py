#!/usr/bin/python3
"""nvidia-ctk -- KINDLING TEST STAND-IN, not NVIDIA's Container Toolkit CLI.

Installed as /usr/bin/nvidia-ctk by the Kindling test-fixture package nvidia-container-toolkit
(built by tests/fixture_sources/build_fixtures.py). Implements what the roles call:

  nvidia-ctk --version
  nvidia-ctk runtime configure --runtime=docker [--config=PATH] [--set-as-default] [--dry-run]

`runtime configure` merges {"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}
into the docker daemon config (default /etc/docker/daemon.json), keeping every other key, and
writes it with four-space indentation as the real tool does.
"""

import json
import os
import sys

VERSION = "@VERSION@"
DEFAULT_CONFIG = "/etc/docker/daemon.json"


def _log(level, message):
    sys.stderr.write("%s[0000] %s\n" % (level, message))


def _options(args):
    opts = {}
    it = iter(args)
    for arg in it:
        if not arg.startswith("--"):
            opts.setdefault("_positional", []).append(arg)
            continue
        key, sep, value = arg[2:].partition("=")
        if not sep:
            if key in ("set-as-default", "dry-run"):
                value = "true"
            else:
                value = next(it, "")
        opts[key] = value
    return opts


def runtime_configure(args):
    opts = _options(args)
    runtime = opts.get("runtime", "docker")
    if runtime != "docker":
        _log("ERRO", "Kindling test stand-in: only --runtime=docker is implemented, not %r" % runtime)
        return 1
    path = opts.get("config") or DEFAULT_CONFIG
    config = {}
    if os.path.exists(path):
        _log("INFO", "Loading config from %s" % path)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if text.strip():
            try:
                config = json.loads(text)
            except ValueError as exc:
                _log("ERRO", "unable to load config: could not parse %s: %s" % (path, exc))
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
    _log("INFO", "Wrote updated config to %s" % path)
    _log("INFO", "It is recommended that docker daemon be restarted.")
    return 0


def main(argv):
    if argv in (["--version"], ["-v"], ["version"]):
        sys.stdout.write(
            "NVIDIA Container Toolkit CLI version %s\ncommit: kindling-test-fixture\n" % VERSION
        )
        return 0
    if argv[:2] == ["runtime", "configure"]:
        return runtime_configure(argv[2:])
    _log("ERRO", "Kindling test stand-in nvidia-ctk: %r is not implemented" % " ".join(argv))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
