"""Does CUDA initialise? cuInit(0) through libcuda, in a child process with a timeout.

nvidia-smi talks to the driver through NVML; a CUDA program goes through libcuda, and the
two can disagree: on an NVSwitch host whose fabric manager does not run, nvidia-smi lists
every GPU while cuInit fails with CUDA_ERROR_SYSTEM_NOT_READY (802). The probe loads
libcuda.so.1 with ctypes (no toolkit, no torch needed), calls cuInit(0), and on success
cuDriverGetVersion and cuDeviceGetCount. It runs in a child Python so that a hung driver
call is killed by the timeout and never hangs the Ansible module.

States: ``ok``, ``failed`` (cuInit returned an error: its code, libcuda's name and
description, and the host-side fix the catalogue knows for that name), ``no_library``
(libcuda.so.1 can't be loaded), ``timeout``, ``error`` (the child failed otherwise).
Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ansible.module_utils.vendor_catalogue import CATALOGUE

LIBRARY = "libcuda.so.1"

# The child's program: prints one JSON object. Kept as text so that it runs in a fresh
# interpreter (python -c), not in the module's process.
PROBE = r"""
import ctypes, json, sys
out = {"library": sys.argv[1]}
try:
    lib = ctypes.CDLL(sys.argv[1])
except OSError as exc:
    out.update(state="no_library", error=str(exc))
    print(json.dumps(out)); sys.exit(0)
def name_of(rc):
    text, desc = ctypes.c_char_p(), ctypes.c_char_p()
    try:
        lib.cuGetErrorName(rc, ctypes.byref(text))
        lib.cuGetErrorString(rc, ctypes.byref(desc))
    except AttributeError:
        pass
    dec = lambda v: (v or b"").decode(errors="replace")
    return dec(text.value), dec(desc.value)
rc = lib.cuInit(0)
if rc != 0:
    name, desc = name_of(rc)
    out.update(state="failed", code=rc, name=name, description=desc)
    print(json.dumps(out)); sys.exit(0)
version, count = ctypes.c_int(0), ctypes.c_int(0)
lib.cuDriverGetVersion(ctypes.byref(version))
rc = lib.cuDeviceGetCount(ctypes.byref(count))
out.update(state="ok", driver_api_version=version.value, device_count=count.value, count_rc=rc)
print(json.dumps(out))
"""


def probe_command(python: str, library: str = LIBRARY) -> List[str]:
    return [python, "-c", PROBE, library]


def api_version_text(value: Optional[int]) -> Optional[str]:
    """cuDriverGetVersion's 12080 -> "12.8"."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def known_error(
    name: Optional[str], catalogue: Optional[Dict[str, Any]] = None
) -> Optional[Dict[str, Any]]:
    for row in (catalogue or CATALOGUE)["cuda_init_errors"]:
        if row["name"] == name:
            return row
    return None


def interpret(
    rc: int, stdout: str, stderr: str, catalogue: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The child's exit status and output -> the ``cuda_init`` fact with a message.

    ``rc`` -1 means the child was killed by the timeout (``stderr`` says so).
    """
    if rc == -1:
        return {
            "state": "timeout",
            "message": f"cuInit did not return: {stderr.strip()}; the driver hangs "
            "(dmesg shows why: look for NVRM and Xid lines).",
        }
    try:
        result = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except ValueError:
        result = None
    if rc != 0 or not isinstance(result, dict):
        return {
            "state": "error",
            "message": f"the CUDA probe failed (rc {rc}): {(stderr or stdout).strip()[:300]}",
        }
    state = result.get("state")
    if state == "no_library":
        result["message"] = (
            f"{result.get('library')} can't be loaded ({result.get('error')}): the driver's "
            "CUDA library is missing, so no CUDA program can run."
        )
    elif state == "failed":
        row = known_error(result.get("name"), catalogue)
        result["meaning"] = row["meaning"] if row else None
        result["fix"] = row["fix"] if row else None
        what = result.get("description") or result.get("name") or "unknown error"
        result["message"] = (
            f"cuInit failed with {result.get('code')} {result.get('name') or ''} ({what})"
            + (f": {row['meaning']}; {row['fix']}." if row else ".")
        ).replace("  ", " ")
    elif state == "ok":
        result["driver_api"] = api_version_text(result.get("driver_api_version"))
        result["message"] = (
            f"CUDA initialises: {result.get('device_count')} device(s), driver API "
            f"{result['driver_api']}."
        )
    return result
