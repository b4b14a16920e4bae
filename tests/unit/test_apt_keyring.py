"""module_utils/apt_keyring.py and library/apt_key_remove.py: a key out of apt's legacy
keyring without apt-key.

The keyrings are real: keys gpg makes, imported into a legacy keyring the way apt-key add
did (gpg --no-default-keyring --keyring <existing file> --import, which keeps gpg's trust
packets). Where apt-key is still installed (Debian 12) its own `del` is run on a copy, and the
module's result must be the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import apt_key_remove
import pytest
import yaml
from ansible.module_utils.apt_keyring import keys, normalize_id, without
from ansible.module_utils.openpgp import OpenPGPError, packets
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT
from gpg_helpers import gpg, primary_fingerprints

APT_KEY = shutil.which("apt-key")
TRUST = 12


def _listed(home, keyring) -> list:
    """Primary fingerprints gpg itself lists from a keyring file."""
    return primary_fingerprints(
        gpg(home, "--no-default-keyring", "--keyring", str(keyring), "--with-colons", "--list-keys")
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Three keys (RSA with a subkey, two ed25519), and a legacy keyring holding all three."""
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(home, 0o700)
    for uid, algo in (
        ("Kindling Old Vendor <old@kindling.invalid>", "rsa2048"),
        ("Kindling Other Vendor <other@kindling.invalid>", "ed25519"),
        ("Kindling Third Vendor <third@kindling.invalid>", "ed25519"),
    ):
        gpg(home, "--passphrase", "", "--quick-gen-key", uid, algo, "sign", "never")
    listing = gpg(home, "--with-colons", "--list-keys").decode()
    fprs = [ln.split(":")[9] for ln in listing.splitlines() if ln.startswith("fpr:")]
    old, other, third = fprs[0], fprs[1], fprs[2]
    gpg(home, "--passphrase", "", "--quick-add-key", old, "rsa2048", "encr", "never")
    out = tmp_path_factory.mktemp("keyrings")
    # apt-key imports with a scratch home of its own, which trusts no key ultimately.
    scratch = tmp_path_factory.mktemp("apt-key-home")
    os.chmod(scratch, 0o700)
    ring = out / "trusted.gpg"
    ring.write_bytes(b"")  # apt-key made the file first: gpg then keeps the keyring format
    for fpr in (other, old, third):
        (out / "key.gpg").write_bytes(gpg(home, "--export", fpr))
        gpg(
            scratch,
            "--no-default-keyring",
            "--keyring",
            str(ring),
            "--import",
            str(out / "key.gpg"),
        )
    single = out / "single.gpg"
    single.write_bytes(b"")
    gpg(scratch, "--no-default-keyring", "--keyring", str(single), "--import", str(out / "key.gpg"))
    yield {
        "home": scratch,
        "maker": home,
        "ring": ring.read_bytes(),
        "single": single.read_bytes(),
        "old": old,
        "other": other,
        "third": third,
        "key_file": str(out / "key.gpg"),
    }
    for gnupg_home in (home, scratch):
        subprocess.run(["gpgconf", "--homedir", str(gnupg_home), "--kill", "all"], check=False)


# ---------------------------------------------------------------------------
# module_utils/apt_keyring.py
# ---------------------------------------------------------------------------


def test_the_keyring_is_the_legacy_format_with_trust_packets(made):
    tags = [tag for tag, *_ in packets(made["ring"])]
    assert TRUST in tags  # what apt-key add's keyring holds, and gpg --export leaves out
    assert [k["fingerprint"] for k in keys(made["ring"])] == [
        made["other"],
        made["old"],
        made["third"],
    ]


def test_ids_are_normalized_and_checked():
    assert normalize_id("0x7fa2af80") == "7FA2AF80"
    assert normalize_id("F60F 4B3D 7FA2 AF80") == "F60F4B3D7FA2AF80"
    assert normalize_id("ae09fe4bbd223a84b2ccfce3f60f4b3d7fa2af80") == (
        "AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"
    )
    for bad in ("7FA2AF8", "7FA2AF80X", "", "nvidia", "7FA2AF807FA2AF80AB"):
        with pytest.raises(ValueError, match="is no key id"):
            normalize_id(bad)


@pytest.mark.parametrize("form", ["fingerprint", "long", "short", "spaced-lower"])
def test_a_key_matches_by_the_end_of_its_primary_fingerprint(made, form):
    old = made["old"]
    key_id = {
        "fingerprint": old,
        "long": old[-16:],
        "short": old[-8:],
        "spaced-lower": " ".join(old[i : i + 4] for i in range(0, 40, 4)).lower(),
    }[form]
    assert without(made["ring"], key_id)[1] == [old]


def test_neither_the_start_nor_a_subkey_matches(made):
    assert without(made["ring"], made["old"][:8])[1] == []
    sub = [
        ln.split(":")[9]
        for ln in gpg(
            made["maker"], "--with-colons", "--with-subkey-fingerprint", "--list-keys", made["old"]
        )
        .decode()
        .splitlines()
        if ln.startswith("fpr:")
    ][1]
    assert sub != made["old"] and without(made["ring"], sub)[1] == []


def test_without_keeps_the_other_keys_byte_for_byte_and_gpg_reads_them(made, tmp_path):
    rest, removed, left = without(made["ring"], made["old"][-8:])
    assert removed == [made["old"]] and left == 2
    spans = {k["fingerprint"]: (k["start"], k["end"]) for k in keys(made["ring"])}
    (a, b), (c, d) = spans[made["other"]], spans[made["third"]]
    assert rest == made["ring"][a:b] + made["ring"][c:d]
    (tmp_path / "rest.gpg").write_bytes(rest)
    assert _listed(made["home"], tmp_path / "rest.gpg") == [made["other"], made["third"]]


def test_without_an_absent_key_changes_nothing(made):
    assert without(made["ring"], "0123456789ABCDEF") == (made["ring"], [], 3)


def test_an_empty_keyring_holds_no_key_and_a_keybox_is_refused(made, tmp_path):
    assert keys(b"") == [] and without(b"", "7FA2AF80")[1] == []
    # gpg --keyring with a file that is not there yet makes a GnuPG keybox, not a keyring.
    box = tmp_path / "new.gpg"
    gpg(made["home"], "--no-default-keyring", "--keyring", str(box), "--import", made["key_file"])
    data = box.read_bytes()
    assert data[8:12] == b"KBXf"
    with pytest.raises(OpenPGPError):
        keys(data)
    with pytest.raises(OpenPGPError):
        keys(b"not a keyring at all\n")


# ---------------------------------------------------------------------------
# library/apt_key_remove.py
# ---------------------------------------------------------------------------


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        apt_key_remove.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_removes_the_key_and_keeps_a_backup(made, tmp_path, capsys):
    ring = tmp_path / "trusted.gpg"
    ring.write_bytes(made["ring"])
    os.chmod(ring, 0o640)
    failed, result = run_module({"keyring": str(ring), "id": made["old"]}, capsys)
    assert not failed, result
    assert result["changed"] is True
    assert result["found"] == [made["old"]] and result["keys_left"] == 2
    assert result["backup"] == str(ring) + "~" and result["keyring_removed"] is False
    assert (tmp_path / "trusted.gpg~").read_bytes() == made["ring"]
    assert _listed(made["home"], ring) == [made["other"], made["third"]]
    assert oct(ring.stat().st_mode & 0o777) == "0o640"  # the keyring's mode is kept
    # Again: nothing left to remove.
    failed, again = run_module({"keyring": str(ring), "id": made["old"]}, capsys)
    assert not failed and again["changed"] is False and again["found"] == []
    assert again["keys_left"] == 2 and again["backup"] == ""


def test_module_check_mode_reports_and_writes_nothing(made, tmp_path, capsys):
    ring = tmp_path / "trusted.gpg"
    ring.write_bytes(made["ring"])
    args = {"keyring": str(ring), "id": made["old"][-16:], "_ansible_check_mode": True}
    failed, result = run_module(args, capsys)
    assert not failed and result["changed"] is True and result["found"] == [made["old"]]
    assert ring.read_bytes() == made["ring"]
    assert not (tmp_path / "trusted.gpg~").exists()


def test_module_moves_a_keyring_whose_only_key_it_removes(made, tmp_path, capsys):
    ring = tmp_path / "trusted.gpg"
    ring.write_bytes(made["single"])
    only = keys(made["single"])[0]["fingerprint"]
    failed, result = run_module({"keyring": str(ring), "id": only}, capsys)
    assert not failed and result["changed"] is True
    assert result["keyring_removed"] is True and result["keys_left"] == 0
    assert not ring.exists()
    assert (tmp_path / "trusted.gpg~").read_bytes() == made["single"]


def test_module_without_a_keyring_or_with_a_foreign_file(tmp_path, capsys):
    failed, result = run_module(
        {"keyring": str(tmp_path / "missing.gpg"), "id": "7FA2AF80"}, capsys
    )
    assert not failed and result["changed"] is False and result["found"] == []
    odd = tmp_path / "odd.gpg"
    odd.write_bytes(b"\x00\x00\x00\x20\x01\x02\x00\x00KBXf")
    failed, result = run_module({"keyring": str(odd), "id": "7FA2AF80"}, capsys)
    assert not failed and result["changed"] is False and result["readable"] is False
    assert "is no OpenPGP keyring" in json.dumps(result["warnings"])
    assert odd.read_bytes() == b"\x00\x00\x00\x20\x01\x02\x00\x00KBXf"


def test_module_refuses_an_id_that_is_no_key_id(tmp_path, capsys):
    failed, result = run_module({"keyring": str(tmp_path / "x.gpg"), "id": "nvidia"}, capsys)
    assert failed and "is no key id" in result["msg"]


@pytest.mark.skipif(APT_KEY is None, reason="apt-key is gone from this distribution")
@pytest.mark.parametrize("which", ["ring", "single"])
def test_the_result_is_apt_key_dels(made, tmp_path, capsys, which):
    """apt-key del (still in Debian 12) on one copy, the module on another: the same files."""
    theirs, ours = tmp_path / "theirs.gpg", tmp_path / "ours.gpg"
    theirs.write_bytes(made[which])
    ours.write_bytes(made[which])
    key = made["old"] if which == "ring" else keys(made["single"])[0]["fingerprint"]
    subprocess.run(
        [APT_KEY, "--keyring", str(theirs), "del", key[-8:]],
        capture_output=True,
        check=True,
        env={**os.environ, "APT_KEY_DONT_WARN_ON_DANGEROUS_USAGE": "1"},
    )
    failed, _result = run_module({"keyring": str(ours), "id": key[-8:]}, capsys)
    assert not failed
    assert ours.exists() == theirs.exists()
    if theirs.exists():
        assert ours.read_bytes() == theirs.read_bytes()
    assert (tmp_path / "ours.gpg~").read_bytes() == (tmp_path / "theirs.gpg~").read_bytes()


# ---------------------------------------------------------------------------
# the role's task (roles/nvidia_driver/tasks/repository.yml)
# ---------------------------------------------------------------------------


def _task():
    tasks = yaml.safe_load((REPO_ROOT / "roles/nvidia_driver/tasks/repository.yml").read_text())
    (task,) = [t for t in tasks if "apt_key_remove" in t]
    return task


def _retired() -> list:
    """The fingerprints the role's task loops over: the catalogue's, through stack_plan."""
    from ansible.module_utils.stack_plan import cuda_repository_location

    return cuda_repository_location("debian12", "x86_64")["retired_key_fingerprints"]


def test_the_role_removes_nvidias_retired_key_by_its_fingerprint():
    task = _task()
    args = task["apt_key_remove"]
    assert args["keyring"] == "/etc/apt/trusted.gpg" and args["state"] == "absent"
    assert args["id"] == "{{ item }}"
    assert task["loop"] == "{{ nvidia_driver__plan.repository.cuda.retired_key_fingerprints }}"
    # 7fa2af80, by the whole fingerprint NVIDIA's CUDA images pinned (NVIDIA_GPGKEY_FPR).
    assert _retired() == ["AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"]
    assert normalize_id(_retired()[0]).endswith("7FA2AF80")


def test_the_roles_task_leaves_other_keys_alone(made, tmp_path, capsys):
    ring = tmp_path / "trusted.gpg"
    ring.write_bytes(made["ring"])
    args = {**_task()["apt_key_remove"], "keyring": str(ring), "id": _retired()[0]}
    failed, result = run_module(args, capsys)
    assert not failed and result["changed"] is False and result["keys_left"] == 3
    assert ring.read_bytes() == made["ring"]


def _run_role_tasks(tmp_path, ring, key_id, check):
    """The role's key task (this keyring, this key) and the fact it feeds, in a real run."""
    tasks = yaml.safe_load((REPO_ROOT / "roles/nvidia_driver/tasks/repository.yml").read_text())
    (remove,) = [t for t in tasks if "apt_key_remove" in t]
    (record,) = [t for t in tasks if t.get("name") == "Record whether the repository changed"]
    remove["apt_key_remove"] = {**remove["apt_key_remove"], "keyring": str(ring)}
    remove["loop"] = [key_id]
    keep = {
        "name": "Keep the fact",
        "ansible.builtin.copy": {
            "content": "{{ nvidia_driver_repo_changed | to_json }}",
            "dest": str(tmp_path / "changed.json"),
            "mode": "0644",
        },
        "check_mode": False,
    }
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "nvidia_driver_repo_remove_legacy": True,
                "nvidia_driver__repo": {"changed": False},
                "nvidia_driver__legacy_removed": {"changed": False},
            },
            "tasks": [remove, record, keep],
        }
    ]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    run = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "ansible-playbook"),
            "-i",
            "localhost,",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(path),
            *(["--check"] if check else []),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((tmp_path / "changed.json").read_text())


@pytest.mark.slow
def test_the_roles_tasks_count_a_removal_outside_check_mode_only(made, tmp_path):
    ring = tmp_path / "trusted.gpg"
    ring.write_bytes(made["ring"])
    # Check mode: the removal is reported, nothing is written, the install steps go on.
    assert _run_role_tasks(tmp_path, ring, made["old"], check=True) is False
    assert ring.read_bytes() == made["ring"]
    # A real run removes the key, and the package index is to be updated.
    assert _run_role_tasks(tmp_path, ring, made["old"], check=False) is True
    assert [k["fingerprint"] for k in keys(ring.read_bytes())] == [made["other"], made["third"]]
    # Run again: nothing to remove, nothing changed.
    assert _run_role_tasks(tmp_path, ring, made["old"], check=False) is False
