"""module_utils/signed_repository.py and library/apt_repository_trust.py: one signed apt
repository, from key to source.

The module runs against a real flat apt repository built here (apt-ftparchive, signed by
gpg), served over HTTP on loopback, and a scratch etc_apt; the trial is real apt-get. The
cases: a fresh host, a re-run that fetches nothing, check mode, a wrong key, a proxy's HTML
page, a repository signed by another key (NO_PUBKEY), an unreachable repository, the files
an earlier release wrote, and an unsigned entry for the same URL.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading

import apt_repository_trust
import pytest
from ansible.module_utils.apt_sources import parse_deb822
from ansible.module_utils.openpgp import keyring, primary_keys
from ansible.module_utils.signed_repository import (
    conflicting_files,
    mismatch_message,
    render_source,
    trial_argv,
    trial_message,
    trial_problems,
)
from ansible.module_utils.testing import patch_module_args
from gpg_helpers import gpg

FTPARCHIVE = shutil.which("apt-ftparchive")


# ---------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------


def test_a_flat_source_has_no_components_and_parses_back():
    text = render_source(
        "https://r.example/debian12/x86_64/", ["/"], [], "/k.gpg", header="one\ntwo"
    )
    assert text.startswith("# one\n# two\nTypes: deb\n")
    (entry,) = parse_deb822(text)
    assert entry["uris"] == ["https://r.example/debian12/x86_64/"]
    assert entry["suites"] == ["/"] and entry["components"] == []
    assert entry["signed_by"] == "/k.gpg"


def test_a_suite_source_has_components_and_architectures():
    text = render_source(
        "https://d.example/linux/debian", ["bookworm"], ["stable"], "/d.gpg", ["amd64"]
    )
    assert "Suites: bookworm\nComponents: stable\nArchitectures: amd64\nSigned-By: /d.gpg\n" in text


@pytest.mark.parametrize(
    "suites, components, message",
    [
        ([], [], "at least one suite"),
        (["/"], ["main"], "flat repository"),
        (["bookworm"], [], "need components"),
    ],
)
def test_a_source_apt_would_refuse_is_refused(suites, components, message):
    with pytest.raises(ValueError, match=message):
        render_source("https://r.example/", suites, components, "/k.gpg")


@pytest.mark.parametrize(
    "field, args",
    [
        ("Signed-By", ("https://r/", ["/"], [], "/k.gpg\nTrusted: yes")),
        ("Signed-By", ("https://r/", ["/"], [], "/k a.gpg")),
        ("URIs", ("https://r/ https://evil/", ["/"], [], "/k.gpg")),
        ("Components", ("https://r/", ["bookworm"], ["main contrib"], "/k.gpg")),
    ],
)
def test_a_value_cannot_add_a_field_or_a_word(field, args):
    with pytest.raises(ValueError, match=f"{field} value .* must be one word"):
        render_source(*args)


def test_the_trial_reads_only_the_scratch_directory():
    argv = trial_argv("/tmp/s")
    assert argv[:2] == ["apt-get", "update"]
    assert "Dir::Etc::SourceList=/tmp/s/empty.list" in argv
    assert "Dir::Etc::SourceParts=/tmp/s/parts" in argv
    assert "Dir::State::Lists=/tmp/s/lists" in argv


def test_apts_warnings_are_the_verdict_not_its_exit_status():
    output = (
        "Get:1 http://r InRelease\n"
        "W: GPG error: http://r InRelease: NO_PUBKEY A4B469963BF863CC\n"
        "E: The repository 'http://r InRelease' is not signed.\n"
    )
    assert trial_problems(0, output) == [
        "W: GPG error: http://r InRelease: NO_PUBKEY A4B469963BF863CC",
        "E: The repository 'http://r InRelease' is not signed.",
    ]
    assert trial_problems(0, "Hit:1 http://r InRelease\nReading package lists...\n") == []
    assert trial_problems(100, "") == ["apt-get update exited 100"]


def test_the_message_tells_a_key_problem_from_a_network_problem():
    key = trial_message("the CUDA repository", "http://r/", "AB", ["W: GPG error: NO_PUBKEY AB"])
    assert key.startswith("apt could not use the CUDA repository http://r/ with the key AB")
    assert "NVIDIA rotated its key once (April 2022" in key
    net = trial_message("the CUDA repository", "http://r/", "AB", ["E: Failed to fetch http://r/"])
    assert net.startswith("The CUDA repository http://r/ could not be reached")
    assert "Nothing on the host was changed; apt's sources are as they were" in net


def test_the_mismatch_message_names_both_variables():
    msg = mismatch_message(
        "the X repository", "https://k/", ["AA"], "BB", None, "x_key_url", "x_fpr"
    )
    assert "https://k/ (x_key_url) has fingerprint(s) AA, expected BB (x_fpr)." in msg
    assert "It was not installed and apt was not told to trust it" in msg


def test_only_unsigned_entries_for_the_same_url_conflict():
    url = "https://r.example/debian12/x86_64/"
    entries = [
        {"path": "/a.list", "uris": [url.rstrip("/")], "signed_by": "", "enabled": True},
        {"path": "/b.list", "uris": [url], "signed_by": "", "enabled": True},
        {"path": "/b.list", "uris": ["https://other/"], "signed_by": "", "enabled": True},
        {"path": "/c.sources", "uris": [url], "signed_by": "/other.gpg", "enabled": True},
        {"path": "/d.list", "uris": [url], "signed_by": "", "enabled": False},
        {"path": "/ours.sources", "uris": [url], "signed_by": "", "enabled": True},
    ]
    assert conflicting_files(entries, url, "/ours.sources") == (["/a.list"], ["/b.list"])


# ---------------------------------------------------------------------------
# The module, against a real signed repository
# ---------------------------------------------------------------------------


def _gpg(home, *args):
    if FTPARCHIVE is None:
        pytest.fail("apt-ftparchive is needed (apt-get install apt-utils): make apt-deps")
    return gpg(home, *args)


def _signed_flat_repo(root, home, fpr):
    """A flat repository (Packages, Release, InRelease) signed by ``fpr``."""
    root.mkdir(parents=True)
    (root / "Packages").write_text("")
    release = subprocess.run(
        [FTPARCHIVE, "release", "."], cwd=root, capture_output=True, check=True, text=True
    ).stdout
    (root / "Release").write_text(release)
    _gpg(
        home,
        "--local-user",
        fpr,
        "--clearsign",
        "--output",
        str(root / "InRelease"),
        str(root / "Release"),
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Keys A (pinned) and B, repositories signed by A and by B, an HTML page, on HTTP."""
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(home, 0o700)
    for uid in ("Kindling Repo A <a@kindling.invalid>", "Kindling Repo B <b@kindling.invalid>"):
        _gpg(home, "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
    listing = _gpg(home, "--with-colons", "--list-keys").decode()
    a, b = [ln.split(":")[9] for ln in listing.splitlines() if ln.startswith("fpr:")][:2]
    served = tmp_path_factory.mktemp("served")
    (served / "a.asc").write_bytes(_gpg(home, "--armor", "--export", a))
    (served / "proxy.html").write_text("<html><body>Access denied by proxy</body></html>")
    _signed_flat_repo(served / "good", home, a)
    _signed_flat_repo(served / "rotated", home, b)
    handler = functools.partial(_Quiet, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield {"a": a, "b": b, "base": base, "served": served, "server": server}
    server.shutdown()


@pytest.fixture()
def etc_apt(tmp_path):
    root = tmp_path / "etc-apt"
    (root / "sources.list.d").mkdir(parents=True)
    (root / "sources.list").write_text("")
    return root


def _args(world, etc_apt, tmp_path, **over):
    args = {
        "name": "the test repository",
        "uris": f"{world['base']}/good/",
        "key_url": f"{world['base']}/a.asc",
        "fingerprint": world["a"],
        "keyring": str(tmp_path / "keyrings" / "test.gpg"),
        "dest": str(etc_apt / "sources.list.d" / "test.sources"),
        "etc_apt": str(etc_apt),
        "key_url_variable": "test_key_url",
        "fingerprint_variable": "test_fingerprint",
        "update_cache": False,
    }
    args.update(over)
    return args


def run(args, capsys, check_mode=False):
    if check_mode:
        args = {**args, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        apt_repository_trust.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_fresh_host_gets_the_pinned_key_alone_and_a_tried_source(
    world, etc_apt, tmp_path, capsys
):
    args = _args(world, etc_apt, tmp_path)
    failed, result = run(args, capsys)
    assert not failed, result
    assert result["changed"] and result["key_fetched"] and result["trial"]["ran"]
    assert result["trial"]["problems"] == []
    written = (tmp_path / "keyrings" / "test.gpg").read_bytes()
    assert written == keyring((world["served"] / "a.asc").read_bytes(), world["a"])
    assert [k["fingerprint"] for k in primary_keys(written)] == [world["a"]]
    assert oct((tmp_path / "keyrings" / "test.gpg").stat().st_mode & 0o777) == "0o644"
    (entry,) = parse_deb822((etc_apt / "sources.list.d" / "test.sources").read_text())
    assert entry["signed_by"] == args["keyring"] and entry["uris"] == [args["uris"]]

    # The second run reads the files only: the key server is not asked (it is told to fail).
    failed, again = run({**args, "key_url": f"{world['base']}/missing.asc"}, capsys)
    assert not failed, again
    assert not again["changed"] and not again["key_fetched"] and not again["trial"]["ran"]


def test_check_mode_tries_and_reports_but_writes_nothing(world, etc_apt, tmp_path, capsys):
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path), capsys, check_mode=True)
    assert not failed, result
    assert result["changed"] and result["trial"]["ran"]
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(
    "over, expect",
    [
        (
            {"fingerprint": "0" * 40},
            "expected 0000000000000000000000000000000000000000 (test_fingerprint)",
        ),
        ({"key_url": "{base}/proxy.html"}, "has fingerprint(s) none (not an OpenPGP packet"),
        ({"key_url": "{base}/nothing-here.asc"}, "could not be fetched (HTTP 404"),
    ],
)
def test_a_wrong_key_changes_nothing(world, etc_apt, tmp_path, capsys, over, expect):
    over = {k: v.format(base=world["base"]) for k, v in over.items()}
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path, **over), capsys)
    assert failed
    assert expect in result["msg"], result["msg"]
    assert "nothing on the host was changed" in result["msg"].lower()
    assert _tree(tmp_path) == before


def test_a_repository_signed_by_another_key_stops_before_apt_sees_it(
    world, etc_apt, tmp_path, capsys
):
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path, uris=f"{world['base']}/rotated/"), capsys)
    assert failed
    assert result["msg"].startswith(
        f"apt could not use the test repository {world['base']}/rotated/"
    )
    assert "NO_PUBKEY" in result["msg"], result["msg"]
    assert _tree(tmp_path) == before


def test_an_unreachable_repository_stops_before_apt_sees_it(world, etc_apt, tmp_path, capsys):
    dead = "http://127.0.0.1:9/compute/cuda/repos/debian12/x86_64/"  # discard port: refused
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path, uris=dead), capsys)
    assert failed
    assert result["msg"].startswith(f"The test repository {dead} could not be reached"), result[
        "msg"
    ]
    assert _tree(tmp_path) == before


def test_earlier_files_and_unsigned_entries_for_the_url_are_removed(
    world, etc_apt, tmp_path, capsys
):
    parts = etc_apt / "sources.list.d"
    url = f"{world['base']}/good/"
    (parts / "test.list").write_text(f"deb [signed-by=/old.gpg] {url} /\n")
    (parts / "apt-key-era.list").write_text(f"deb {url} /\n")
    (parts / "someone-else.sources").write_text(
        f"Types: deb\nURIs: {world['base']}/other/\nSuites: /\nSigned-By: /their.gpg\n"
    )
    args = _args(world, etc_apt, tmp_path, replaces=[str(parts / "test.list")])
    failed, result = run(args, capsys)
    assert not failed, result
    assert sorted(result["removed"]) == [str(parts / "apt-key-era.list"), str(parts / "test.list")]
    assert sorted(p.name for p in parts.iterdir()) == ["someone-else.sources", "test.sources"]


def test_the_same_url_with_another_keyring_is_refused_before_apt_breaks(
    world, etc_apt, tmp_path, capsys
):
    other = etc_apt / "sources.list.d" / "other.sources"
    url = f"{world['base']}/good/"
    other.write_text(f"Types: deb\nURIs: {url}\nSuites: /\nSigned-By: /usr/share/keyrings/x.gpg\n")
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path), capsys)
    assert failed
    assert f"{other} (Signed-By: /usr/share/keyrings/x.gpg) already lists" in result["msg"]
    assert "apt refuses one URL with two Signed-By values" in result["msg"]
    assert _tree(tmp_path) == before
    # Another URL on the same server, the way the Container Toolkit's differs: no conflict.
    other.write_text(f"Types: deb\nURIs: {world['base']}/else/\nSuites: /\nSigned-By: /x.gpg\n")
    failed, result = run(_args(world, etc_apt, tmp_path), capsys)
    assert not failed, result


def test_an_unsigned_entry_beside_other_repositories_is_refused_not_edited(
    world, etc_apt, tmp_path, capsys
):
    mixed = etc_apt / "sources.list.d" / "mixed.list"
    mixed.write_text(
        f"deb {world['base']}/good/ /\ndeb https://deb.debian.org/debian bookworm main\n"
    )
    failed, result = run(_args(world, etc_apt, tmp_path), capsys)
    assert failed
    assert str(mixed) in result["msg"] and "without Signed-By" in result["msg"]
    assert mixed.exists() and not (etc_apt / "sources.list.d" / "test.sources").exists()


@pytest.mark.parametrize(
    "over, expect",
    [
        ({"dest": "/etc/apt/sources.list.d/x.list"}, "must be a .sources file in"),
        (
            {"fingerprint": ""},
            "fingerprint is empty; the catalogue knows no value for this repository, "
            "so set it (test_fingerprint)",
        ),
        (
            {"suites": ["/"], "components": ["main"]},
            "a flat repository (suite '/') has no components",
        ),
    ],
)
def test_bad_arguments_are_refused_first(world, etc_apt, tmp_path, capsys, over, expect):
    before = _tree(tmp_path)
    failed, result = run(_args(world, etc_apt, tmp_path, **over), capsys)
    assert failed and expect in result["msg"], result["msg"]
    assert _tree(tmp_path) == before
