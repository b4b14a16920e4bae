"""A podman connection for the test bed that pipelines modules, as Kindling's SSH hosts do.

containers.podman.podman sends every module as a file: per task it runs `podman mount`,
then `podman exec` to make a temporary directory, copies the module in, and runs
`podman exec` again for the module and once more to remove the directory. On the 2-core
build machine each `podman exec` costs about half a second of CPU, and `make test` runs
some thousands of tasks. Real hosts are reached over SSH with `pipelining = true`
(ansible.cfg), which sends the module on the interpreter's standard input in one command.

This plugin does the same over `podman exec -i`: one podman command per module, the way
production hosts receive them. Everything else (file transfer, the mount for it, options)
is containers.podman.podman's; the mount is made only when a file is copied (templates,
copies, fetches, async tasks), not for every task.

Used by every Molecule scenario (.config/molecule/config.yml: provisioner
connection_options) and the reliability suite (tests/reliability/conftest.py), through
ANSIBLE_CONNECTION_PLUGINS. Measured in docs/DEVELOPMENT.md ("Test-bed speed").
"""

from __future__ import annotations

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase, ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import (
    Connection as PodmanConnection,
)

DOCUMENTATION = """
    name: kindling_podman
    short_description: Run tasks in a local podman container, modules pipelined on stdin
    description:
      - containers.podman.podman with pipelining. Test bed only (molecule/, tests/).
    extends_documentation_fragment:
      - connection_pipelining
    options:
      remote_addr:
        description: The container's name or ID.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: The user that runs commands in the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to the podman command line.
        default: ''
        ini:
          - section: defaults
            key: podman_extra_args
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: The podman executable.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
"""


class Connection(PodmanConnection):
    """containers.podman.podman, pipelined; the container is mounted only to copy files."""

    transport = "kindling_podman"
    has_pipelining = True

    def _connect(self):
        # No `podman mount` here: most tasks copy no file once modules are pipelined.
        ConnectionBase._connect(self)
        self._connected = True
        self._mounted = False
        return self

    def _mount_for_files(self):
        if not self._mounted:
            PodmanConnection._connect(self)
            self._mounted = True

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        args = ["exec"]
        if in_data is not None:
            args.append("-i")  # the pipelined module arrives on stdin
        if self.user:
            args.extend(("--user", self.user))
        return self._podman(
            args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data
        )

    def put_file(self, in_path, out_path):
        self._mount_for_files()
        super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._mount_for_files()
        super().fetch_file(in_path, out_path)
