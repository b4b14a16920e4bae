#!/usr/bin/python
"""Ansible module: one signed apt repository, from key to source, tried before apt sees it."""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible.module_utils.apt_sources import read_sources
from ansible.module_utils.atomic_file import write_atomic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.openpgp import (
    OpenPGPError,
    keyring,
    normalize_fingerprint,
    primary_keys,
)
from ansible.module_utils.signed_repository import (
    conflict_message,
    conflicting_files,
    fetch_message,
    mismatch_message,
    render_source,
    signed_by_conflicts,
    signed_by_message,
    summary,
    trial_argv,
    trial_message,
    trial_problems,
)
from ansible.module_utils.urls import fetch_url

DOCUMENTATION = r"""
---
module: apt_repository_trust
short_description: Trust one apt repository with its pinned key only, tried in a scratch apt first
description:
  - The one way Kindling's roles add a vendor's apt repository (nvidia_driver and cuda for
    NVIDIA's CUDA repository, dcgm_exporter for Docker's and the NVIDIA Container Toolkit's).
  - When the keyring already holds exactly the pinned key and the source is as wanted,
    nothing is fetched and nothing changes. Otherwise the key is fetched from O(key_url), its
    fingerprint checked in Python (module_utils/openpgp.py; no gpg on the host), and the
    pinned key alone kept, in the binary form C(signed-by) reads.
  - When the keyring or the source would change, C(apt-get update) is first run in a scratch
    directory with the candidate source and keyring only. A wrong or rotated key
    (C(NO_PUBKEY)), an unreachable repository or a URL that is not a repository stops the
    run there, before apt's own sources, keyrings or package lists are touched.
  - Another file listing the same URL and suite with another C(Signed-By) stops the run
    before any change too, because apt refuses one URL with two Signed-By values and would then read
    no source at all.
  - Then the keyring and the deb822 source (O(dest)) are written, the files in O(replaces)
    removed, and apt's package index updated.
  - Decisions and messages are in module_utils/signed_repository.py, with pytest cases.
  - C(ansible.builtin.deb822_repository) is not used, as it cannot check a key's fingerprint,
    nor try a source before writing it, and it needs python3-debian on the host.
version_added: "0.7.0"
author:
  - Kindling maintainers
options:
  name:
    description: The repository's name in messages, lower case (C(the CUDA repository)).
    type: str
    required: true
  uris:
    description: The repository's URL.
    type: str
    required: true
  suites:
    description: Its suites; C(/) alone for a flat repository.
    type: list
    elements: str
    default: ["/"]
  components:
    description: Its components; none for a flat repository.
    type: list
    elements: str
    default: []
  architectures:
    description: Restrict the source to these Debian architectures; none for all of apt's.
    type: list
    elements: str
    default: []
  key_url:
    description: Where the repository's signing key is published (armored or binary).
    type: str
    required: true
  fingerprint:
    description: The key's pinned fingerprint (spaces and case are ignored).
    type: str
    required: true
  keyring:
    description: The keyring file the source's C(Signed-By) names (written 0644).
    type: path
    required: true
  dest:
    description: The deb822 source file, in C(<etc_apt>/sources.list.d), ending in C(.sources).
    type: path
    required: true
  replaces:
    description:
      - Files an earlier release wrote for the same repository (a one-line C(.list), an
        armored keyring). Removed once the new source is in place, so apt never sees two
        entries with different C(Signed-By) values for one URL (which it refuses).
    type: list
    elements: path
    default: []
  remove_conflicting:
    description:
      - Remove other files in C(/etc/apt/sources.list.d) whose every entry is for O(uris)
        without C(Signed-By) (trusted through apt-key, the pre-2022 way, which apt refuses
        beside a signed-by entry). A file that lists other repositories too is never edited;
        the module fails, naming it. Entries with another C(Signed-By) are left alone.
    type: bool
    default: true
  header:
    description: Comment lines at the top of the source file.
    type: str
    default: ""
  key_url_variable:
    description: The variable that set O(key_url), named in failure messages.
    type: str
    default: ""
  fingerprint_variable:
    description: The variable that set O(fingerprint), named in failure messages.
    type: str
    default: ""
  trial:
    description: Try a changed source in a scratch apt before writing it.
    type: bool
    default: true
  update_cache:
    description: Run C(apt-get update) after a change (not in check mode).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the key's server.
    type: int
    default: 30
  validate_certs:
    description: Check the key server's TLS certificate.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: >-
      Fetches and checks the key, and tries a changed source in the scratch apt (read-only
      for the host), then reports what would change without writing.
  diff_mode:
    support: partial
    description: The source file's text; the keyring is binary.
"""

EXAMPLES = r"""
- name: Trust NVIDIA's CUDA repository with its pinned key only
  apt_repository_trust:
    name: NVIDIA's CUDA repository
    uris: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    key_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    keyring: /usr/share/keyrings/cuda-archive-keyring.gpg
    dest: /etc/apt/sources.list.d/cuda-debian12-x86_64.sources
    replaces: [/etc/apt/sources.list.d/cuda-debian12-x86_64.list]
    fingerprint_variable: nvidia_driver_repo_key_fingerprint
"""

RETURN = r"""
changed_files:
  description: What changed (or would, in check mode), in words.
  returned: always
  type: list
  elements: str
keyring_changed:
  description: Whether the keyring was (or would be) written.
  returned: always
  type: bool
source_changed:
  description: Whether the source file was (or would be) written.
  returned: always
  type: bool
removed:
  description: The O(replaces) files that were (or would be) removed.
  returned: always
  type: list
  elements: str
key_fetched:
  description: Whether the key was fetched (false when the keyring already held it alone).
  returned: always
  type: bool
fingerprints:
  description: The fingerprints of the fetched key file's primary keys; empty when not fetched.
  returned: always
  type: list
  elements: str
trial:
  description: The scratch apt's run; C(ran) false when nothing would change.
  returned: always
  type: dict
source:
  description: The deb822 source's text.
  returned: always
  type: str
"""


def read_bytes(path: str):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def holds_only(data, wanted: str) -> bool:
    """The keyring file holds the pinned key and no other."""
    if not data:
        return False
    try:
        return [k["fingerprint"] for k in primary_keys(data)] == [wanted]
    except OpenPGPError:
        return False


#: Seconds an apt-get update (the scratch trial, or the real one) may take.
APT_UPDATE_TIMEOUT = 900


def write_file(module: AnsibleModule, path: str, data: bytes) -> None:
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, mode=0o755)
    # 0644 always: apt reads keyrings and sources as its sandbox user _apt.
    write_atomic(path, data, mode=0o644)


def run_trial(module: AnsibleModule, key: bytes, source_for) -> dict:
    scratch = tempfile.mkdtemp(prefix="kindling-apt-")
    try:
        os.makedirs(os.path.join(scratch, "lists", "partial"))
        os.makedirs(os.path.join(scratch, "parts"))
        # apt downloads as its sandbox user _apt, which must read the keyring and write lists.
        for path in (scratch, os.path.join(scratch, "lists"), os.path.join(scratch, "parts")):
            os.chmod(path, 0o755)
        try:
            import pwd

            os.chown(os.path.join(scratch, "lists", "partial"), pwd.getpwnam("_apt").pw_uid, -1)
        except (KeyError, ImportError, PermissionError):
            pass
        staged = os.path.join(scratch, "keyring.gpg")
        with open(staged, "wb") as handle:
            handle.write(key)
        os.chmod(staged, 0o644)
        open(os.path.join(scratch, "empty.list"), "w").close()
        with open(os.path.join(scratch, "parts", "candidate.sources"), "w") as handle:
            handle.write(source_for(staged))
        try:
            rc, out, err = run(trial_argv(scratch), APT_UPDATE_TIMEOUT, env_update={"LC_ALL": "C"})
        except CommandError as exc:  # E: so that trial_problems counts it
            rc, out, err = -1, "", f"E: {exc}"
        output = out + err
        return {
            "ran": True,
            "rc": rc,
            "problems": trial_problems(rc, output),
            "output": output.splitlines()[-20:],
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fetch_key(module: AnsibleModule, p: dict, name: str) -> bytes:
    """The key file's bytes, from https:, http: or file: (a key shipped with the inventory)."""
    if p["key_url"].startswith("file://"):
        path = p["key_url"][len("file://") :]
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except OSError as exc:
            module.fail_json(
                msg=fetch_message(name, p["key_url"], "-", str(exc), p["key_url_variable"])
            )
    response, info = fetch_url(module, p["key_url"], timeout=p["timeout"], force=True)
    if info.get("status") != 200 or response is None:
        module.fail_json(
            msg=fetch_message(
                name,
                p["key_url"],
                info.get("status"),
                str(info.get("msg", "")),
                p["key_url_variable"],
            )
        )
    return response.read()


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "uris": {"type": "str", "required": True},
            "suites": {"type": "list", "elements": "str", "default": ["/"]},
            "components": {"type": "list", "elements": "str", "default": []},
            "architectures": {"type": "list", "elements": "str", "default": []},
            "key_url": {"type": "str", "required": True},
            "fingerprint": {"type": "str", "required": True},
            "keyring": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "replaces": {"type": "list", "elements": "path", "default": []},
            "remove_conflicting": {"type": "bool", "default": True},
            "header": {"type": "str", "default": ""},
            "key_url_variable": {"type": "str", "default": ""},
            "fingerprint_variable": {"type": "str", "default": ""},
            "trial": {"type": "bool", "default": True},
            "update_cache": {"type": "bool", "default": True},
            "etc_apt": {"type": "path", "default": "/etc/apt"},
            "timeout": {"type": "int", "default": 30},
            "validate_certs": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    name = p["name"]
    wanted = normalize_fingerprint(p["fingerprint"])
    parts = os.path.join(p["etc_apt"], "sources.list.d")
    for option in ("uris", "key_url", "fingerprint"):  # each names its variable
        if not p[option].strip():
            named = p[f"{option}_variable"] if option != "uris" else ""
            module.fail_json(
                msg=f"{name}: {option} is empty; the catalogue knows no value for this "
                f"repository, so set it{f' ({named})' if named else ''}"
            )
    if not p["dest"].endswith(".sources") or os.path.dirname(p["dest"]) != parts:
        module.fail_json(
            msg=f"{name}: dest {p['dest']} must be a .sources file in {parts} "
            "(apt reads deb822 sources only there, and only with that suffix)"
        )
    if p["dest"] in p["replaces"] or p["keyring"] in p["replaces"]:
        module.fail_json(msg=f"{name}: replaces names the source or keyring being written")

    def source_for(keyring_path: str) -> str:
        try:
            return render_source(
                p["uris"],
                p["suites"],
                p["components"],
                keyring_path,
                p["architectures"],
                p["header"],
            )
        except ValueError as exc:
            module.fail_json(msg=f"{name}: {exc}")

    source = source_for(p["keyring"])
    current_keyring = read_bytes(p["keyring"])
    source_changed = read_bytes(p["dest"]) != source.encode()
    removed = [path for path in p["replaces"] if os.path.lexists(path)]
    if p["remove_conflicting"]:
        removable, kept = conflicting_files(
            read_sources(p["etc_apt"], exclude=[p["dest"]]), p["uris"], p["dest"]
        )
        if kept:
            module.fail_json(msg=conflict_message(name, p["uris"], kept), conflicting=kept)
        removed += [path for path in removable if path not in removed]
    result = {
        "changed": False,
        "changed_files": [],
        "keyring_changed": False,
        "source_changed": source_changed,
        "removed": removed,
        "key_fetched": False,
        "fingerprints": [],
        "trial": {"ran": False},
        "source": source,
    }
    if module._diff and source_changed:
        before = read_bytes(p["dest"])
        result["diff"] = {
            "before": before.decode(errors="replace") if before else "",
            "after": source,
            "before_header": p["dest"],
            "after_header": p["dest"],
        }

    key = current_keyring
    if not holds_only(current_keyring, wanted):
        data = fetch_key(module, p, name)
        result["key_fetched"] = True
        error = None
        try:
            result["fingerprints"] = [str(k["fingerprint"]) for k in primary_keys(data)]
        except OpenPGPError as exc:
            error = str(exc)
        if wanted not in result["fingerprints"]:
            module.fail_json(
                msg=mismatch_message(
                    name,
                    p["key_url"],
                    result["fingerprints"],
                    wanted,
                    error,
                    p["key_url_variable"],
                    p["fingerprint_variable"],
                ),
                **result,
            )
        key = keyring(data, wanted)
        result["keyring_changed"] = key != current_keyring

    others = signed_by_conflicts(
        read_sources(p["etc_apt"]),
        p["uris"],
        p["suites"],
        p["keyring"],
        skip=[p["dest"], *p["replaces"]],
    )
    if others:
        module.fail_json(msg=signed_by_message(name, p["uris"], p["keyring"], others), **result)

    if (result["keyring_changed"] or source_changed) and p["trial"]:
        result["trial"] = run_trial(module, key, source_for)
        if result["trial"]["problems"]:
            module.fail_json(
                msg=trial_message(name, p["uris"], wanted, result["trial"]["problems"]), **result
            )

    result["changed_files"] = summary(
        {
            f"keyring {p['keyring']}": result["keyring_changed"],
            f"source {p['dest']}": source_changed,
        },
        removed,
    )
    result["changed"] = bool(result["changed_files"])
    if result["changed"] and not module.check_mode:
        if result["keyring_changed"]:
            write_file(module, p["keyring"], key)
        if source_changed:
            write_file(module, p["dest"], source.encode())
        for path in removed:
            os.remove(path)
        if p["update_cache"]:
            try:
                rc, out, err = run(
                    ["apt-get", "update", "-q"], APT_UPDATE_TIMEOUT, env_update={"LC_ALL": "C"}
                )
            except CommandError as exc:
                rc, out, err = -1, "", str(exc)
            if rc != 0:
                module.fail_json(
                    msg=f"{name}: written, but apt-get update failed: {err or out}", **result
                )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
