"""One signed apt repository: the decisions of library/apt_repository_trust.py.

Every role that trusts a vendor's apt repository (nvidia_driver and cuda: NVIDIA's CUDA
repository; dcgm_exporter: Docker's and the NVIDIA Container Toolkit's) does the same five
steps through that one module:

1. fetch the key, unless the keyring already holds exactly the pinned key;
2. check its fingerprint in Python (module_utils/openpgp.py) and keep the pinned key alone;
3. write the deb822 source it would install (:func:`render_source`);
4. when the keyring or the source would change, try them with ``apt-get update`` in a
   scratch directory (:func:`trial_argv`), and read apt's verdict
   (:func:`trial_problems`), before apt's own sources change;
5. write the keyring and the source, and remove the files the source replaces.

This file holds what can be decided without the host: the source's text, the scratch
apt's command line, what apt's output means, and the messages. Python 3.8, standard
library only.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from ansible.module_utils.apt_sources import normalize_uri, stanza

FLAT_SUITE = "/"

# apt's own words for a key it does not have, and for a signature by the wrong key.
_KEY_WORDS = ("NO_PUBKEY", "EXPKEYSIG", "BADSIG", "not signed", "is not signed")


def render_source(
    uris: str,
    suites: Sequence[str],
    components: Sequence[str],
    signed_by: str,
    architectures: Sequence[str] = (),
    header: str = "",
) -> str:
    """The deb822 stanza of one repository, trusted with ``signed_by`` only.

    A flat repository (suite ``/``) has no components; apt refuses a stanza that has both.
    """
    suites = [str(s) for s in suites]
    components = [str(c) for c in components]
    # One word per value: a space would add a URI, suite or component, and a line break a
    # field of its own (a second Signed-By, Trusted: yes).
    for field, values in (
        ("URIs", [uris]),
        ("Suites", suites),
        ("Components", components),
        ("Architectures", list(architectures)),
        ("Signed-By", [signed_by]),
    ):
        for value in values:
            if not value or re.search(r"\s", value):
                raise ValueError(
                    f"{field} value {value!r} must be one word, without spaces or line breaks"
                )
    if not suites:
        raise ValueError("a repository needs at least one suite ('/' for a flat one)")
    if FLAT_SUITE in suites and components:
        raise ValueError("a flat repository (suite '/') has no components")
    if FLAT_SUITE not in suites and not components:
        raise ValueError(f"suites {suites} need components (main, stable, ...)")
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comments + stanza(uris, suites, components, signed_by, architectures) + "\n"


def trial_argv(scratch: str) -> List[str]:
    """apt-get update reading only the scratch directory's sources, lists and caches.

    The candidate source is ``<scratch>/parts/candidate.sources``; ``<scratch>/empty.list``
    stands for sources.list. Nothing of apt's own state is read or written.
    """
    return [
        "apt-get",
        "update",
        "-q",
        "-o",
        f"Dir::Etc::SourceList={scratch}/empty.list",
        "-o",
        f"Dir::Etc::SourceParts={scratch}/parts",
        "-o",
        f"Dir::State::Lists={scratch}/lists",
        "-o",
        "Dir::Cache::pkgcache=",
        "-o",
        "Dir::Cache::srcpkgcache=",
        "-o",
        "APT::Get::List-Cleanup=false",
    ]


def trial_problems(rc: int, output: str) -> List[str]:
    """apt's warnings and errors from the scratch update; empty when it worked.

    apt-get update exits 0 even when a source could not be fetched or verified (it only
    warns), so its ``W:`` and ``E:`` lines are the verdict, not the exit status alone.
    """
    problems = [line.strip() for line in output.splitlines() if re.match(r"^[WE]: ", line)]
    if rc != 0 and not problems:
        problems.append(f"apt-get update exited {rc}")
    return problems


def key_problem(problems: Sequence[str]) -> bool:
    """apt's words say the signature, not the way to the repository, is what failed."""
    text = " ".join(problems)
    return any(word in text for word in _KEY_WORDS)


def named(value: str, variable: str) -> str:
    """``value (variable)`` when the caller named the variable that set it."""
    return f"{value} ({variable})" if variable else value


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def mismatch_message(
    name: str,
    key_url: str,
    found: Sequence[str],
    wanted: str,
    error: Optional[str],
    key_url_variable: str = "",
    fingerprint_variable: str = "",
) -> str:
    got = ", ".join(found) or "none"
    why = f" ({error})" if error else ""
    return (
        f"The key for {name} from {named(key_url, key_url_variable)} has fingerprint(s) "
        f"{got}{why}, expected {named(wanted, fingerprint_variable)}. It was not installed and "
        "apt was not told to trust it; nothing on the host was changed. Check the key URL and "
        "the fingerprint the vendor publishes."
    )


def fetch_message(
    name: str, key_url: str, status: object, msg: str, key_url_variable: str = ""
) -> str:
    return (
        f"The key for {name}, {named(key_url, key_url_variable)}, could not be fetched "
        f"(HTTP {status}: {msg.strip() or 'no answer'}). Nothing on the host was changed; apt's "
        "sources are as they were. Check the host's outbound HTTPS (proxy, firewall, DNS), or "
        "the URL if you use a mirror."
    )


def trial_message(name: str, uris: str, fingerprint: str, problems: Sequence[str]) -> str:
    """Why the scratch apt refused the candidate: the key, or the way to the repository."""
    said = " ".join(problems)
    if key_problem(problems):
        return (
            f"apt could not use {name} {uris} with the key {fingerprint}: {said}. Nothing was "
            "changed: apt's sources and keyrings are as they were and its package index still "
            "works. NO_PUBKEY or a bad signature means the repository is signed by a key other "
            "than the one trusted. NVIDIA rotated its key once (April 2022, 7fa2af80 to "
            "3bf863cc) and every host holding the old key saw exactly this. Check the key the "
            "vendor now publishes, then the key URL and fingerprint."
        )
    return (
        f"{_capital(name)} {uris} could not be reached: {said}. Nothing on the host was "
        "changed; apt's sources are as they were and its package index still works. Check "
        "that the host can reach the repository (proxy, firewall, DNS), and the URL if you "
        "use a mirror (it must serve the same layout)."
    )


def summary(changes: Dict[str, bool], removed: Sequence[str]) -> List[str]:
    """The changes made (or, in check mode, that would be made), in words."""
    words = [what for what, changed in changes.items() if changed]
    words += [f"removed {path}" for path in removed]
    return words


def conflicting_files(entries: Sequence[Dict], uris: str, dest: str):
    """Other files that trust this URL the pre-2022 way: an entry with no ``Signed-By``.

    Such an entry is trusted through apt-key's global keyring, which is what the 2022 key
    rotation broke, and apt refuses it beside a signed-by entry for the same URL
    ("Conflicting values set for option Signed-By"). Returns (removable, kept): files whose
    every entry is for this URL (this repository, configured the old way), and files that
    also hold other repositories (the caller refuses rather than edit them). Entries with
    another ``Signed-By`` are another owner's deliberate trust and are left alone.
    """
    by_file: Dict[str, List[Dict]] = {}
    for entry in entries:
        by_file.setdefault(entry["path"], []).append(entry)
    removable, kept = [], []
    for path, file_entries in sorted(by_file.items()):
        if path == dest:
            continue
        unsigned = [
            e
            for e in file_entries
            if e.get("enabled", True)
            and not e["signed_by"]
            and any(normalize_uri(u) == normalize_uri(uris) for u in e["uris"])
        ]
        if not unsigned:
            continue
        if len(unsigned) == len(file_entries) and path.rsplit("/", 1)[-1] != "sources.list":
            removable.append(path)
        else:
            kept.append(path)
    return removable, kept


def conflict_message(name: str, uris: str, kept: Sequence[str]) -> str:
    return (
        f"{', '.join(kept)} lists {name} {uris} without Signed-By (trusted through apt-key, the "
        "pre-2022 way), beside other repositories; apt refuses that entry beside a signed-by "
        "one for the same URL. "
        "Nothing was changed. Remove that line from the file, then run again."
    )


def signed_by_conflicts(
    entries: Sequence[Dict],
    uris: str,
    suites: Sequence[str],
    keyring_path: str,
    skip: Sequence[str] = (),
) -> List[str]:
    """Files with an enabled entry for the same URL and suite trusted with another keyring.

    apt refuses to read its sources at all then ("Conflicting values set for option
    Signed-By"), so the module stops before writing instead of leaving apt broken. ``skip``:
    the source itself and the files it replaces.
    """
    found = []
    for entry in entries:
        if entry["path"] in skip or not entry.get("enabled", True):
            continue
        if not any(normalize_uri(u) == normalize_uri(uris) for u in entry["uris"]):
            continue
        if not set(entry.get("suites") or []) & set(suites):
            continue
        if entry["signed_by"] and entry["signed_by"] != keyring_path:
            found.append(f"{entry['path']} (Signed-By: {entry['signed_by']})")
    return sorted(set(found))


def signed_by_message(name: str, uris: str, keyring_path: str, found: Sequence[str]) -> str:
    return (
        f"{', '.join(found)} already lists {name} {uris} trusted with another keyring than "
        f"{keyring_path}; apt refuses one URL with two Signed-By values and would then read no "
        "source at all. Nothing was changed. Use one keyring for that URL, or give this "
        "repository its own URL."
    )
