"""Small files whose content the controller rendered, written in one module run.

``ansible.builtin.template`` costs two module runs on a host even when nothing changes (a
``stat`` for the checksum, then ``file`` for owner and mode), and a no-op re-run is mostly
module runs. The roles render their few small files (profile.d snippets, an ld.so.conf.d
entry) with ``lookup('ansible.builtin.template', ...)`` and hand the contents here: one run
compares each file's bytes, replaces a differing one atomically (a temporary file in the
same directory, then a rename: module_utils/atomic_file.py) and sets owner, group and mode with
AnsibleModule's own file-attribute code. Check mode reports, writes nothing.

A role that has already read the files in an earlier module run of the same stage (its
state module describes them with ``describe``) passes that read as ``current``; the
controller side (action_plugins/managed_files_write.py) then compares with ``pending`` and runs
nothing on the host when every file already has its bytes, owner, group and mode.
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat
from typing import Any, Dict, List, Optional

from ansible.module_utils.atomic_file import write_atomic

FILE_SPEC: Dict[str, Any] = {
    "path": {"type": "path", "required": True},
    "content": {"type": "str", "required": True},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "mode": {"type": "raw"},
}

ARGUMENT_SPEC: Dict[str, Any] = {
    "files": {"type": "list", "elements": "dict", "required": True, "options": FILE_SPEC},
}

# What ``describe`` returns for one path; the action plugin's ``current``.
DESCRIPTION_SPEC: Dict[str, Any] = {
    "path": {"type": "path", "required": True},
    "regular": {"type": "bool", "required": True},
    "sha256": {"type": "str"},
    "owner": {"type": "str"},
    "owner_id": {"type": "int"},
    "group": {"type": "str"},
    "group_id": {"type": "int"},
    "mode": {"type": "str"},
}

# The controller side's arguments: the module's, and an earlier read of the files.
ACTION_SPEC: Dict[str, Any] = dict(
    ARGUMENT_SPEC,
    current={"type": "list", "elements": "dict", "options": DESCRIPTION_SPEC},
)


def describe(path: str) -> Dict[str, Any]:
    """What ``pending`` compares, read on the host: whether ``path`` is a regular file (not
    a link: writing replaces a link with a file), its sha256, owner and group (names, and
    ids for owners without one) and permission bits ("0644")."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # not there, or under a file
        return {"path": path, "regular": False}
    if not stat.S_ISREG(info.st_mode):
        return {"path": path, "regular": False}
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return {
        "path": path,
        "regular": True,
        "sha256": digest.hexdigest(),
        "owner": owner,
        "owner_id": info.st_uid,
        "group": group,
        "group_id": info.st_gid,
        "mode": f"{stat.S_IMODE(info.st_mode):04o}",
    }


def _octal_mode(mode: Any) -> Optional[int]:
    """A mode as AnsibleModule reads it, when it is numeric: an int as it is (YAML's 0644
    is already 420), a string of octal digits in base 8. None for a symbolic mode
    ("u=rw,g=r"), which only the module can apply and compare."""
    if isinstance(mode, bool):
        return None
    if isinstance(mode, int):
        return mode
    text = str(mode).strip()
    if text and all(c in "01234567" for c in text):
        return int(text, 8)
    return None


def up_to_date(item: Dict[str, Any], found: Optional[Dict[str, Any]]) -> bool:
    """Whether the file ``found`` describes already is what ``item`` (one of the module's
    ``files``) asks for: the same bytes, and the owner, group and mode it names."""
    if not found or not found.get("regular"):
        return False
    wanted = hashlib.sha256(str(item["content"]).encode("utf-8")).hexdigest()
    if found.get("sha256") != wanted:
        return False
    for key in ("owner", "group"):
        asked = item.get(key)
        if asked is None:
            continue
        if str(asked) not in (str(found.get(key)), str(found.get(key + "_id"))):
            return False
    if item.get("mode") is not None:
        asked_mode = _octal_mode(item["mode"])
        if asked_mode is None or found.get("mode") is None:
            return False
        if asked_mode != int(str(found["mode"]), 8):
            return False
    return True


def pending(files: List[Dict[str, Any]], current: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The files of ``files`` that ``current`` (``describe`` of each, read earlier) does not
    show as already written; a file ``current`` does not describe is pending."""
    by_path = {os.path.normpath(d["path"]): d for d in current}
    return [f for f in files if not up_to_date(f, by_path.get(os.path.normpath(f["path"])))]


def _current(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _replace(module: Any, path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"managed_files_write: {directory} does not exist (writing {path})")
    # The file's mode, owner and group are kept (a new one gets the umask's); write()
    # then sets the asked ones with AnsibleModule's attribute code.
    write_atomic(path, data, prefix=".managed_files.")


def write(module: Any) -> Dict[str, Any]:
    """The module's result: each file's path, whether it changed and whether it was created;
    ``diff`` (before and after) for each changed content."""
    results: List[Dict[str, Any]] = []
    diffs: List[Dict[str, str]] = []
    for item in module.params["files"]:
        path, data = item["path"], item["content"].encode("utf-8")
        current = _current(path)
        content_changed = current != data
        if content_changed:
            diffs.append(
                {
                    "before_header": path if current is not None else "(absent)",
                    "after_header": path,
                    "before": (current or b"").decode("utf-8", "replace"),
                    "after": item["content"],
                }
            )
            if not module.check_mode:
                _replace(module, path, data)
        changed = content_changed
        if not (module.check_mode and current is None):
            # A file check mode did not create has no attributes to compare yet.
            attributes = module.load_file_common_arguments(
                {"owner": item["owner"], "group": item["group"], "mode": item["mode"]}, path=path
            )
            changed = module.set_fs_attributes_if_different(attributes, changed)
        results.append({"path": path, "changed": changed, "created": current is None})
    return {
        "changed": any(r["changed"] for r in results),
        "files": results,
        "diff": diffs,
    }
