"""Which archive components a host's apt sources lack, and the deb822 file that adds them.

A distribution's own NVIDIA packages live outside ``main``: Debian's in ``non-free``,
``contrib`` and ``non-free-firmware``, Ubuntu's in ``restricted`` (the vendor catalogue's
``distro_driver_packages``). A fresh cloud image enables ``main`` only, or ``main`` plus
some of them, in one-line ``.list`` files or deb822 ``.sources`` files.

The rule: for every enabled ``deb`` entry of one of the release's suites (the release, its
``-updates`` and its ``-security`` suite) that carries ``main``, each wanted component not
already enabled for the same URI and suite is added, in one stanza per URI, with the same
``Signed-By`` as the entry it extends (no new trust). The file the role writes is left out
of the scan (``exclude``), so the answer is the same on every run and the file is stable.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

Entry = Dict[str, Any]


def _options(text: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for word in text.split():
        if "=" in word:
            key, value = word.split("=", 1)
            out[key.strip().lower()] = value.strip()
    return out


def parse_one_line(text: str, path: str = "") -> List[Entry]:
    """``deb [opts] URI SUITE COMPONENT...`` lines -> entries (comments, deb-src kept apart)."""
    entries: List[Entry] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words_opts = re.match(r"^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(.*)$", line)
        if not words_opts:
            continue
        kind, opts, rest = words_opts.groups()
        words = rest.split()
        if len(words) < 2:
            continue
        options = _options(opts or "")
        entries.append(
            {
                "path": path,
                "types": [kind],
                "uris": [words[0]],
                "suites": [words[1]],
                "components": words[2:],
                "signed_by": options.get("signed-by", ""),
                "enabled": True,
            }
        )
    return entries


def _stanzas(text: str) -> Iterable[Dict[str, str]]:
    fields: Dict[str, str] = {}
    key = None
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if fields:
                yield fields
            fields, key = {}, None
            continue
        if raw[0] in " \t" and key:
            fields[key] += "\n" + raw.strip()
            continue
        if ":" in raw:
            key, value = raw.split(":", 1)
            key = key.strip().lower()
            fields[key] = value.strip()


def parse_deb822(text: str, path: str = "") -> List[Entry]:
    """deb822 ``.sources`` stanzas -> entries."""
    entries: List[Entry] = []
    for fields in _stanzas(text):
        enabled = fields.get("enabled", "yes").strip().lower() not in ("no", "false", "0")
        signed_by = fields.get("signed-by", "")
        # An inline key block (a multi-line Signed-By) is kept as the stanza's own trust.
        entries.append(
            {
                "path": path,
                "types": fields.get("types", "").split(),
                "uris": fields.get("uris", "").split(),
                "suites": fields.get("suites", "").split(),
                "components": fields.get("components", "").split(),
                "signed_by": signed_by,
                "enabled": enabled,
            }
        )
    return entries


def read_sources(etc_apt: str = "/etc/apt", exclude: Iterable[str] = ()) -> List[Entry]:
    """Every entry of sources.list and sources.list.d/*.list|*.sources, minus ``exclude``."""
    skip = {os.path.normpath(p) for p in exclude}
    paths: List[str] = [os.path.join(etc_apt, "sources.list")]
    parts = os.path.join(etc_apt, "sources.list.d")
    if os.path.isdir(parts):
        paths += [os.path.join(parts, n) for n in sorted(os.listdir(parts))]
    entries: List[Entry] = []
    for path in paths:
        if os.path.normpath(path) in skip or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        if path.endswith(".sources"):
            entries += parse_deb822(text, path)
        elif path.endswith(".list") or path == os.path.join(etc_apt, "sources.list"):
            entries += parse_one_line(text, path)
    return entries


def normalize_uri(uri: str) -> str:
    """A URI as apt compares them: a trailing slash makes no other source."""
    return uri.rstrip("/")


def stanza(
    uris: str,
    suites: Iterable[str],
    components: Iterable[str],
    signed_by: str,
    architectures: Iterable[str] = (),
) -> str:
    """One deb822 stanza. A multi-line Signed-By (an inline key) is written as continuation
    lines; a flat repository (suite ``/``) has no Components field."""
    suites, components, architectures = list(suites), list(components), list(architectures)
    lines = ["Types: deb", f"URIs: {uris}", f"Suites: {' '.join(suites)}"]
    if components:
        lines.append(f"Components: {' '.join(components)}")
    if architectures:
        lines.append(f"Architectures: {' '.join(architectures)}")
    if signed_by and "\n" in signed_by:
        lines.append("Signed-By:" + "".join(f"\n {ln}" for ln in signed_by.split("\n") if ln))
    elif signed_by:
        lines.append(f"Signed-By: {signed_by}")
    return "\n".join(lines)


def missing_components(
    entries: List[Entry], suites: List[str], components: List[str]
) -> List[Dict[str, Any]]:
    """Per (URI, suite) of the release that has ``main``: the wanted components it lacks."""
    have: Dict[Tuple[str, str], set] = {}
    bases: List[Tuple[str, str, str]] = []
    for entry in entries:
        if not entry["enabled"] or "deb" not in entry["types"]:
            continue
        for uri in entry["uris"]:
            for suite in entry["suites"]:
                key = (normalize_uri(uri), suite)
                have.setdefault(key, set()).update(entry["components"])
                if suite in suites and "main" in entry["components"]:
                    bases.append((normalize_uri(uri), suite, entry["signed_by"]))
    out: List[Dict[str, Any]] = []
    seen = set()
    for uri, suite, signed_by in bases:
        if (uri, suite) in seen:
            continue
        seen.add((uri, suite))
        missing = [c for c in components if c not in have[(uri, suite)]]
        if missing:
            out.append({"uri": uri, "suite": suite, "missing": missing, "signed_by": signed_by})
    order = {s: i for i, s in enumerate(suites)}
    out.sort(key=lambda m: (m["uri"], order.get(m["suite"], len(order))))
    return out


def render_deb822(missing: List[Dict[str, Any]], header: str = "") -> str:
    """One stanza per URI, Signed-By and component set; empty when nothing is missing."""
    if not missing:
        return ""
    groups: Dict[Tuple[str, str, Tuple[str, ...]], List[str]] = {}
    for m in missing:
        groups.setdefault((m["uri"], m["signed_by"], tuple(m["missing"])), []).append(m["suite"])
    # The stanza reuses the entry's Signed-By, an inline key too, so that apt sees one value.
    blocks = [
        stanza(uri, suites, comps, signed_by) for (uri, signed_by, comps), suites in groups.items()
    ]
    text = "\n\n".join(blocks) + "\n"
    return (header.rstrip("\n") + "\n" if header else "") + text


def plan(
    etc_apt: str,
    suites: List[str],
    components: List[str],
    exclude: Iterable[str] = (),
    header: str = "",
) -> Dict[str, Any]:
    """Everything the role needs: the missing components, the file's content, a summary."""
    entries = read_sources(etc_apt, exclude)
    missing = missing_components(entries, suites, components)
    bases = [
        e
        for e in entries
        if e["enabled"] and "deb" in e["types"] and set(e["suites"]) & set(suites)
    ]
    return {
        "missing": missing,
        "content": render_deb822(missing, header),
        "release_entries": len(bases),
        "summary": describe(missing, suites, components, bases),
    }


def describe(
    missing: List[Dict[str, Any]],
    suites: List[str],
    components: List[str],
    bases: Optional[list] = None,
) -> str:
    if bases is not None and not bases:
        return (
            f"no apt source of the suites {', '.join(suites)} is enabled on this host; add the "
            f"distribution's archive with the components {', '.join(components)}"
        )
    if not missing:
        return f"{', '.join(components)} already enabled for {', '.join(suites)}"
    return "; ".join(f"{m['uri']} {m['suite']}: adds {' '.join(m['missing'])}" for m in missing)


def refusal(
    result: Dict[str, Any],
    components: List[str],
    enable: bool,
    enable_variable: str,
    dest: str,
) -> Optional[str]:
    """Why the components can't be enabled here, before any change; None when they can."""
    if not result["release_entries"]:
        return (
            f"{result['summary']}. The distribution's NVIDIA packages come from its archive: add "
            "it to the apt sources, or use NVIDIA's repository (nvidia_driver_install_method: "
            "cuda_repo, cuda_install_method: cuda_repo)."
        )
    if result["missing"] and not enable:
        named = f"set {enable_variable}: true" if enable_variable else "allow it"
        return (
            f"The distribution's NVIDIA packages need the archive components "
            f"{', '.join(components)}, and the apt sources lack them ({result['summary']}). "
            f"Enable them in the apt sources, or {named} to let the role add them in {dest}."
        )
    return None
