"""Secrets on the host: a random token in a root-only file that no planted link can redirect.

``ensure_token`` creates the file with O_CREAT | O_EXCL | O_NOFOLLOW in a directory that
``role_inputs.unsafe_secret_path`` has found safe (every existing directory on the way a
real directory, owned by root and writable by nobody else), so neither the file nor a
directory above it can be a link someone else put there. An existing token is kept; its
owner and mode are set through the open descriptor (fchown, fchmod), never by path.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import Dict

from ansible.module_utils.role_inputs import unsafe_secret_path


class SecretPathError(Exception):
    pass


def ensure_token(
    path: str, check_mode: bool = False, nbytes: int = 24, root: str = "/"
) -> Dict[str, object]:
    """Make sure path holds a token readable by root only; return changed and what was done."""
    why = unsafe_secret_path(path, root)
    if why:
        raise SecretPathError(f"{path}: {why}")
    full = os.path.join(root, path.lstrip("/"))
    directory = os.path.dirname(full)
    done = []
    if not os.path.isdir(directory):
        done.append(f"create {os.path.dirname(path)} (root, 0700)")
        if check_mode:
            return {"changed": True, "done": [*done, f"write a new token to {path}"]}
        os.makedirs(directory, mode=0o700, exist_ok=True)
    flags = os.O_RDONLY | os.O_NOFOLLOW
    try:
        fd = os.open(full, flags)
    except FileNotFoundError:
        done.append(f"write a new token to {path}")
        if check_mode:
            return {"changed": True, "done": done}
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, (secrets.token_hex(nbytes) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return {"changed": True, "done": done}
    except OSError as err:  # ELOOP: the file is a link
        raise SecretPathError(f"{path} can't be opened without following a link ({err})") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SecretPathError(f"{path} is not a regular file")
        if info.st_size == 0:
            raise SecretPathError(f"{path} is empty; remove it and a new token is written")
        if info.st_uid != 0 or info.st_gid != 0:
            done.append("owner root:root")
            if not check_mode:
                os.fchown(fd, 0, 0)
        if stat.S_IMODE(info.st_mode) != 0o600:
            done.append(f"mode 0600 (was {stat.S_IMODE(info.st_mode):04o})")
            if not check_mode:
                os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return {"changed": bool(done), "done": done}
