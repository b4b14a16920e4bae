"""The test bed's podman connection pipelines modules: one `podman exec -i` per task.

A stand-in `podman` on PATH logs its arguments, runs the command of `exec` on this machine
and "mounts" this machine's root, so the plugin's calls can be counted without a container
(molecule/_shared/plugins/connection/kindling_podman.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGINS = REPO_ROOT / "molecule" / "_shared" / "plugins" / "connection"
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

FAKE_PODMAN = """#!/bin/sh
printf '%s\\n' "$*" >>"$FAKE_PODMAN_LOG"
case "$1" in
  exec) shift
        while [ $# -gt 0 ]; do
          case "$1" in -i) shift ;; --user) shift 2 ;; *) break ;; esac
        done
        shift
        exec "$@" ;;
  mount) echo / ;;
esac
"""


def _play(tmp_path: Path, tasks: str, pipelining: str = "true") -> list:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "podman").write_text(FAKE_PODMAN)
    (bin_dir / "podman").chmod(0o755)
    log = tmp_path / "podman.log"
    log.write_text("")
    (tmp_path / "inventory").write_text(
        f"testhost ansible_connection=kindling_podman ansible_python_interpreter={sys.executable}\n"
    )
    (tmp_path / "play.yml").write_text(
        f"- hosts: testhost\n  gather_facts: false\n  tasks:\n{tasks}"
    )
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        FAKE_PODMAN_LOG=str(log),
        ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS),
        ANSIBLE_PIPELINING=pipelining,
        ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"),
    )
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "inventory"), str(tmp_path / "play.yml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return log.read_text().splitlines()


TWO_MODULES = """    - ansible.builtin.command: "true"
      changed_when: false
    - ansible.builtin.stat:
        path: /
"""


def test_each_module_is_one_pipelined_exec(tmp_path):
    calls = _play(tmp_path, TWO_MODULES)
    assert len(calls) == 2, calls
    assert all(call.startswith("exec -i testhost ") for call in calls), calls
    assert not any(call.startswith("mount") for call in calls)


def test_without_pipelining_modules_are_copied_through_the_mount(tmp_path):
    calls = _play(tmp_path, TWO_MODULES, pipelining="false")
    # mkdir of the remote temporary directory, the module run, its removal; the mount once
    # per task, made only because a file is copied.
    assert sum(call.startswith("mount") for call in calls) == 2, calls
    assert len(calls) > 4, calls


def test_a_copied_file_goes_through_the_mount(tmp_path):
    dest = tmp_path / "copied.txt"
    calls = _play(
        tmp_path,
        f"""    - ansible.builtin.copy:
        content: "hello\\n"
        dest: {dest}
""",
    )
    assert [c for c in calls if c.startswith("mount")] == ["mount testhost"], calls
    assert dest.read_text() == "hello\n"
