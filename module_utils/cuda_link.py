"""How the cuda role points cuda_home at the selected toolkit, and which ld.so.conf.d
entries it wrote for other versions: the cuda_link_plan module.

NVIDIA's toolkit packages register each toolkit as an alternative of the ``cuda`` link
group (``update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-X.Y <prio>``).
When they manage cuda_home and list the selected toolkit, the role selects it with
``update-alternatives --set``; otherwise it points cuda_home at the toolkit with a plain
link. ``link_action`` decides which, from ``update-alternatives --query`` (Debian's format,
``parse_query``) and where cuda_home resolves now:

- ``alternatives``: the group manages cuda_home and lists the toolkit, which is not its
  value (or cuda_home does not lead to it: ``--set`` puts the group's link back);
- ``link``: no group manages cuda_home (none named ``cuda``, or its link is elsewhere, or
  no update-alternatives), or the group does not list the toolkit;
- ``none``: the group's value is the toolkit and cuda_home leads there, or there is no
  toolkit of NVIDIA's to select (install method ``distro``).

``stale_ld_conf`` lists the ``cuda-*.conf`` files in ld.so.conf.d that this role wrote (their
comment says ``(role cuda)``) other than the selected toolkit's.

Read-only. Python 3.8, standard library only.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Dict, List, Optional

from ansible.module_utils.command import Runner

# The comment ld.so.conf.j2 writes ("# Ansible managed (role cuda): ...").
ROLE_MARK = "(role cuda)"
LD_CONF_PATTERN = "cuda-*.conf"
HEADER_FIELDS = {
    "Name": "name",
    "Link": "link",
    "Status": "status",
    "Best": "best",
    "Value": "value",
}


def parse_query(text: str) -> Dict[str, Any]:
    """``update-alternatives --query <name>`` (Debian's dpkg): the header stanza (``Name``,
    ``Link``, ``Status``, ``Best``, ``Value``; a ``Value`` of ``none`` is null) and one entry
    per ``Alternative``/``Priority`` stanza, with its ``Slaves`` (name -> path)."""
    result: Dict[str, Any] = {field: None for field in HEADER_FIELDS.values()}
    result["alternatives"] = []
    current: Optional[Dict[str, Any]] = None
    in_slaves = False
    for raw in (text or "").splitlines():
        if not raw.strip():
            in_slaves = False
            continue
        if raw[0] in " \t":
            if in_slaves:
                target = current if current is not None else result
                name, _, path = raw.strip().partition(" ")
                target.setdefault("slaves", {})[name] = path.strip()
            continue
        key, sep, value = raw.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        in_slaves = key == "Slaves"
        if key == "Alternative":
            current = {"path": value, "priority": None, "slaves": {}}
            result["alternatives"].append(current)
        elif key == "Priority" and current is not None:
            try:
                current["priority"] = int(value)
            except ValueError:
                current["priority"] = None
        elif key in HEADER_FIELDS and current is None:
            result[HEADER_FIELDS[key]] = value
    if result["value"] == "none":
        result["value"] = None
    return result


def query_alternatives(
    name: str,
    run: Runner,
    binary: Optional[str] = "update-alternatives",
    admindir: Optional[str] = None,
    altdir: Optional[str] = None,
) -> Dict[str, Any]:
    """``{exists, rc, error, name, link, status, best, value, alternatives}`` for the link
    group ``name``. ``exists`` is false when update-alternatives knows no such group (rc 2,
    "no alternatives for cuda") or is not there (``binary`` None); error then says why."""
    answer: Dict[str, Any] = {"exists": False, "rc": None, "error": None}
    answer.update(parse_query(""))
    if not binary:
        answer["error"] = "update-alternatives is not installed"
        return answer
    argv = [binary]
    if admindir:
        argv += ["--admindir", admindir]
    if altdir:
        argv += ["--altdir", altdir]
    argv += ["--query", name]
    try:
        rc, stdout, stderr = run(argv)
    except OSError as exc:
        why = getattr(exc, "reason", "") or exc  # CommandError: the OS's words alone
        answer["error"] = f"{binary} could not be run: {why}"
        return answer
    answer["rc"] = rc
    if rc != 0:
        answer["error"] = (stderr or stdout or "").strip() or f"{binary} --query {name}: rc={rc}"
        return answer
    answer.update(parse_query(stdout))
    answer["exists"] = True
    return answer


def _same(a: Optional[str], b: Optional[str]) -> bool:
    return a is not None and b is not None and os.path.normpath(a) == os.path.normpath(b)


def resolves_to(link: str, path: str) -> bool:
    """Whether ``link`` leads (through any links) to where ``path`` leads; false when either
    is not there."""
    if not (os.path.exists(link) and os.path.exists(path)):
        return False
    return os.path.realpath(link) == os.path.realpath(path)


def link_action(
    query: Dict[str, Any], link: str, path: Optional[str], reaches: bool
) -> Dict[str, Any]:
    """``{managed, listed, current, action}``: whether the group manages ``link`` (cuda_home),
    whether it lists ``path`` (the toolkit to select) as an alternative, whether ``path`` is
    its value, and what the role does (``alternatives``, ``link`` or ``none``; see the module
    docstring). ``reaches``: whether cuda_home leads to ``path`` now."""
    managed = bool(query.get("exists")) and _same(query.get("link"), link)
    listed = managed and any(_same(a.get("path"), path) for a in query.get("alternatives") or [])
    current = listed and _same(query.get("value"), path)
    if not path:
        action = "none"
    elif not listed:
        action = "link"
    elif current and reaches:
        action = "none"
    else:
        action = "alternatives"
    return {"managed": managed, "listed": listed, "current": current, "action": action}


def stale_ld_conf(directory: str, keep: Optional[str] = None) -> List[str]:
    """The ``cuda-*.conf`` regular files in ``directory`` (not below it) whose text says
    ``(role cuda)``, other than ``keep``, sorted. A missing directory or an unreadable file
    is no entry."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for name in names:
        if not fnmatch.fnmatchcase(name, LD_CONF_PATTERN):
            continue
        full = os.path.join(directory, name)
        if _same(full, keep) or not os.path.isfile(full) or os.path.islink(full):
            continue
        try:
            with open(full, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        if ROLE_MARK in text:
            found.append(full)
    return found


def state(
    link: str,
    path: Optional[str],
    run: Runner,
    binary: Optional[str] = "update-alternatives",
    name: str = "cuda",
    admindir: Optional[str] = None,
    altdir: Optional[str] = None,
    ld_conf_dir: str = "/etc/ld.so.conf.d",
    ld_conf_keep: Optional[str] = None,
) -> Dict[str, Any]:
    """The module's result: the decision (``link_action``), the group as update-alternatives
    reports it (``alternatives``; not asked without ``path``) and ``stale_ld_conf``."""
    query = query_alternatives(name, run, binary, admindir, altdir) if path else None
    reaches = bool(path) and resolves_to(link, str(path))
    result = link_action(query or {}, link, path, reaches)
    result["reaches"] = reaches
    result["alternatives"] = query
    result["stale_ld_conf"] = stale_ld_conf(ld_conf_dir, ld_conf_keep)
    return result
