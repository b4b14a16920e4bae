"""Small files whose content the controller rendered, written in one module run.

``ansible.builtin.template`` costs two module runs on a host even when nothing changes (a
``stat`` for the checksum, then ``file`` for owner and mode), and a no-op re-run is mostly
module runs. The roles render their few small files (profile.d snippets, an ld.so.conf.d
entry) with ``lookup('ansible.builtin.template', ...)`` and hand the contents here: one run
compares each file's bytes, replaces a differing one atomically (a temporary file in the
same directory, then AnsibleModule.atomic_move) and sets owner, group and mode with
AnsibleModule's own file-attribute code. Check mode reports, writes nothing.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional

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


def _current(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _replace(module: Any, path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"managed_files: {directory} does not exist (writing {path})")
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".managed_files.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        module.atomic_move(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


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
