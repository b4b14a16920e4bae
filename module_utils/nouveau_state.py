"""Where nouveau stands on a host, in one read: the nouveau role's nouveau_info module.

The nouveau stage needs four facts of the host, and reads them in one module run:

- whether the host loads its own kernel modules: ``/etc/modprobe.d`` is there. A container,
  or a VM whose GPU driver the hypervisor provides, has none, and the role ends itself;
- which initramfs tool regenerates the initramfs the blacklist must reach
  (``update-initramfs`` on Debian and Ubuntu, ``dracut`` elsewhere), or none, and the
  command line that regenerates every installed kernel's initramfs with it;
- whether nouveau is loaded now (``/sys/module/nouveau``);
- the blacklist file as module_utils/managed_files.py describes it, so that writing it
  again runs nothing on the host when it is already as rendered (managed_files' ``current``).

Python 3.8, standard library only.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Sequence, Tuple

MODPROBE_DIR = "/etc/modprobe.d"
# (name, path): the first one there is the host's. Debian's and Ubuntu's initramfs-tools,
# then dracut (Fedora, RHEL and others; Debian packages it too).
INITRAMFS_TOOLS: Sequence[Tuple[str, str]] = (
    ("update-initramfs", "/usr/sbin/update-initramfs"),
    ("dracut", "/usr/bin/dracut"),
)
# Each tool's command line that regenerates the initramfs of every installed kernel, so the
# blacklist reaches the kernel the host boots next, not only the running one:
# update-initramfs(8) -u (update) -k all; dracut(8) --force (replace) --regenerate-all.
INITRAMFS_COMMANDS: Dict[str, Sequence[str]] = {
    "update-initramfs": ("update-initramfs", "-u", "-k", "all"),
    "dracut": ("dracut", "--force", "--regenerate-all"),
}

ARGUMENT_SPEC: Dict[str, Any] = {
    "blacklist": {"type": "path", "required": True},
    "module_sysfs_path": {"type": "path", "default": "/sys/module/nouveau"},
    "modprobe_dir": {"type": "path", "default": MODPROBE_DIR},
}


def initramfs_tool(tools: Sequence[Tuple[str, str]] = INITRAMFS_TOOLS) -> str:
    """The name of the first initramfs tool whose executable is there, else ""."""
    for name, path in tools:
        if os.path.exists(path):
            return name
    return ""


def read(
    blacklist: str,
    module_sysfs_path: str,
    describe: Callable[[str], Dict[str, Any]],
    modprobe_dir: str = MODPROBE_DIR,
    tools: Sequence[Tuple[str, str]] = INITRAMFS_TOOLS,
) -> Dict[str, Any]:
    """The four facts (the module's result): ``manages_modules`` (``modprobe_dir`` is a
    directory), ``initramfs_tool`` with its ``initramfs_command`` (an argv list, empty
    without a tool), ``loaded`` and ``blacklist`` (``describe(blacklist)``)."""
    tool = initramfs_tool(tools)
    return {
        "modprobe_dir": modprobe_dir,
        "manages_modules": os.path.isdir(modprobe_dir),
        "initramfs_tool": tool,
        "initramfs_command": list(INITRAMFS_COMMANDS.get(tool, ())),
        "loaded": os.path.exists(module_sysfs_path),
        "blacklist": describe(blacklist),
    }
