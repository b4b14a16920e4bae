"""module_utils/cuda_link.py and the cuda_link_plan module: how the cuda role points
cuda_home at its toolkit (update-alternatives --set, a plain link, or nothing) and which
ld.so.conf.d entries it wrote for other versions.

update-alternatives is the real one (Debian's dpkg), run on a link group in a temporary
--admindir/--altdir, so the parser reads what the program really prints, and the decision
is checked again after a real ``--set``. The ld.so.conf.d entries are rendered from the
role's own template."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import cuda_link_plan
import jinja2
import pytest
from ansible.module_utils.cuda_link import (
    link_action,
    parse_query,
    query_alternatives,
    resolves_to,
    stale_ld_conf,
    state,
)
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

UPDATE_ALTERNATIVES = shutil.which("update-alternatives")
needs_update_alternatives = pytest.mark.skipif(
    UPDATE_ALTERNATIVES is None, reason="needs Debian's update-alternatives"
)
LD_CONF_TEMPLATE = REPO_ROOT / "roles" / "cuda" / "templates" / "ld.so.conf.j2"

# update-alternatives --query of a group with slave links (the format's full shape).
QUERY_WITH_SLAVES = """\
Name: editor
Link: /usr/bin/editor
Slaves:
 editor.1.gz /usr/share/man/man1/editor.1.gz
Status: manual
Best: /usr/bin/vim.basic
Value: /bin/nano

Alternative: /bin/nano
Priority: 40
Slaves:
 editor.1.gz /usr/share/man/man1/nano.1.gz

Alternative: /usr/bin/vim.basic
Priority: 50
Slaves:
 editor.1.gz /usr/share/man/man1/vim.1.gz
"""


def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


class Alternatives:
    """A real update-alternatives link group in a temporary directory."""

    def __init__(self, root: Path):
        self.root = root
        self.admin = root / "admin"
        self.alt = root / "alt"
        self.admin.mkdir()
        self.alt.mkdir()
        self.link = root / "cuda"

    def toolkit(self, version: str) -> str:
        path = self.root / f"cuda-{version}"
        (path / "bin").mkdir(parents=True, exist_ok=True)
        return str(path)

    def ua(self, *args: str) -> subprocess.CompletedProcess:
        argv = [UPDATE_ALTERNATIVES, "--admindir", str(self.admin), "--altdir", str(self.alt)]
        argv += ["--log", str(self.root / "alternatives.log"), *args]
        return subprocess.run(argv, capture_output=True, text=True, check=True)

    def install(self, version: str, priority: int) -> str:
        path = self.toolkit(version)
        self.ua("--install", str(self.link), "cuda", path, str(priority))
        return path

    def query(self, name: str = "cuda"):
        return query_alternatives(name, run, UPDATE_ALTERNATIVES, str(self.admin), str(self.alt))

    def state(self, path, link=None, **kw):
        return state(
            str(link or self.link),
            path,
            run,
            UPDATE_ALTERNATIVES,
            admindir=str(self.admin),
            altdir=str(self.alt),
            ld_conf_dir=str(self.root / "ld.so.conf.d"),
            **kw,
        )


@pytest.fixture
def group(tmp_path):
    alts = Alternatives(tmp_path)
    alts.install("12.4", 124)
    alts.install("13.0", 130)
    return alts


def test_parse_the_query_format_with_slaves():
    parsed = parse_query(QUERY_WITH_SLAVES)
    assert (parsed["name"], parsed["link"], parsed["status"]) == (
        "editor",
        "/usr/bin/editor",
        "manual",
    )
    assert (parsed["best"], parsed["value"]) == ("/usr/bin/vim.basic", "/bin/nano")
    assert parsed["slaves"] == {"editor.1.gz": "/usr/share/man/man1/editor.1.gz"}
    assert parsed["alternatives"] == [
        {
            "path": "/bin/nano",
            "priority": 40,
            "slaves": {"editor.1.gz": "/usr/share/man/man1/nano.1.gz"},
        },
        {
            "path": "/usr/bin/vim.basic",
            "priority": 50,
            "slaves": {"editor.1.gz": "/usr/share/man/man1/vim.1.gz"},
        },
    ]
    # A group whose link is broken reports "Value: none".
    assert (
        parse_query(QUERY_WITH_SLAVES.replace("Value: /bin/nano", "Value: none"))["value"] is None
    )
    assert parse_query("")["alternatives"] == [] and parse_query("")["link"] is None


@needs_update_alternatives
def test_query_a_real_link_group(group):
    answer = group.query()
    assert answer["exists"] is True and answer["rc"] == 0 and answer["error"] is None
    assert answer["name"] == "cuda" and answer["link"] == str(group.link)
    assert answer["status"] == "auto"
    assert answer["best"] == answer["value"] == group.toolkit("13.0")
    assert [(a["path"], a["priority"]) for a in answer["alternatives"]] == [
        (group.toolkit("12.4"), 124),
        (group.toolkit("13.0"), 130),
    ]
    group.ua("--set", "cuda", group.toolkit("12.4"))
    answer = group.query()
    assert answer["status"] == "manual" and answer["value"] == group.toolkit("12.4")


@needs_update_alternatives
def test_no_link_group_named_cuda(tmp_path):
    alts = Alternatives(tmp_path)
    answer = alts.query()
    assert answer["exists"] is False and answer["rc"] == 2
    assert "no alternatives for cuda" in answer["error"]
    assert answer["alternatives"] == [] and answer["value"] is None


def test_no_update_alternatives(tmp_path):
    assert query_alternatives("cuda", run, None)["error"] == "update-alternatives is not installed"
    gone = str(tmp_path / "update-alternatives")
    answer = query_alternatives("cuda", run, gone)
    assert answer["exists"] is False and answer["error"].startswith(f"{gone} could not be run: ")


def _query(link="/usr/local/cuda", value="/usr/local/cuda-13.0", paths=("12.4", "13.0")):
    return {
        "exists": True,
        "link": link,
        "value": value,
        "alternatives": [{"path": f"/usr/local/cuda-{p}"} for p in paths],
    }


@pytest.mark.parametrize(
    "query, path, reaches, expect",
    [
        # The group selects the toolkit and cuda_home leads there: nothing to do.
        (_query(), "/usr/local/cuda-13.0", True, (True, True, True, "none")),
        (_query(), "/usr/local/cuda-13.0/", True, (True, True, True, "none")),
        # Listed, another one selected: update-alternatives --set.
        (_query(), "/usr/local/cuda-12.4", False, (True, True, False, "alternatives")),
        # Selected, but cuda_home leads elsewhere (a plain link over the group's): --set.
        (_query(), "/usr/local/cuda-13.0", False, (True, True, True, "alternatives")),
        # Not among the group's alternatives: a plain link.
        (_query(), "/usr/local/cuda-11.8", False, (True, False, False, "link")),
        # The group's link is not cuda_home: --set would not point cuda_home anywhere.
        (_query(link="/opt/cuda"), "/usr/local/cuda-13.0", False, (False, False, False, "link")),
        # No group (rc 2), or no update-alternatives.
        (
            {"exists": False, "alternatives": []},
            "/usr/local/cuda-13.0",
            False,
            (False, False, False, "link"),
        ),
        ({}, "/usr/local/cuda-13.0", True, (False, False, False, "link")),
        # No toolkit of NVIDIA's to select (install method distro).
        (_query(), None, False, (True, False, False, "none")),
    ],
)
def test_the_action(query, path, reaches, expect):
    got = link_action(query, "/usr/local/cuda", path, reaches)
    assert (got["managed"], got["listed"], got["current"], got["action"]) == expect


def test_resolves_to(tmp_path):
    target = tmp_path / "cuda-13.0"
    target.mkdir()
    link = tmp_path / "cuda"
    assert resolves_to(str(link), str(target)) is False  # not there
    link.symlink_to(target)
    assert resolves_to(str(link), str(target)) is True
    link.unlink()
    link.symlink_to(tmp_path / "cuda-12.4")  # dangling
    assert resolves_to(str(link), str(target)) is False


@needs_update_alternatives
def test_state_selects_through_update_alternatives_until_it_is_selected(group):
    wanted = group.toolkit("12.4")
    first = group.state(wanted)
    assert (first["managed"], first["listed"], first["current"]) == (True, True, False)
    assert first["action"] == "alternatives" and first["reaches"] is False
    group.ua("--set", "cuda", wanted)  # what the role's next task runs
    again = group.state(wanted)
    assert again["action"] == "none" and again["current"] is True and again["reaches"] is True
    assert again["alternatives"]["status"] == "manual"


@needs_update_alternatives
def test_state_repairs_a_plain_link_over_the_groups(group):
    wanted = group.toolkit("13.0")
    assert group.state(wanted)["action"] == "none"  # auto mode picked 13.0 already
    group.link.unlink()
    group.link.symlink_to(group.toolkit("12.4"))  # an earlier plain link to another toolkit
    broken = group.state(wanted)
    assert broken["current"] is True and broken["reaches"] is False
    assert broken["action"] == "alternatives"
    group.ua("--set", "cuda", wanted)  # update-alternatives puts its link back
    assert group.state(wanted)["action"] == "none"


@needs_update_alternatives
def test_state_links_what_the_group_does_not_manage(group, tmp_path):
    # A toolkit the packages did not register (a runfile install, say).
    assert group.state(group.toolkit("11.8"))["action"] == "link"
    # cuda_home is not the group's link.
    other = group.state(group.toolkit("13.0"), link=tmp_path / "opt-cuda")
    assert other["managed"] is False and other["action"] == "link"
    assert other["alternatives"]["link"] == str(group.link)


@needs_update_alternatives
def test_state_without_a_group_or_a_toolkit(tmp_path):
    alts = Alternatives(tmp_path)
    none = alts.state(alts.toolkit("13.0"))
    assert none["action"] == "link" and none["managed"] is False
    assert none["alternatives"]["rc"] == 2
    distro = alts.state(None)
    assert distro["action"] == "none" and distro["alternatives"] is None


def ld_conf(directory: Path, version: str, prefix: str = "/usr/local") -> Path:
    """An entry as the role's template writes it."""
    text = jinja2.Template(LD_CONF_TEMPLATE.read_text()).render(
        ansible_managed="Ansible managed", cuda_version=version, cuda_toolkit_prefix=prefix
    )
    path = directory / f"cuda-{version.replace('.', '-')}.conf"
    path.write_text(text)
    return path


def test_stale_ld_conf_lists_only_this_roles_other_entries(tmp_path):
    conf = tmp_path / "ld.so.conf.d"
    conf.mkdir()
    old = ld_conf(conf, "12.4")
    older = ld_conf(conf, "11.8")
    keep = ld_conf(conf, "13.0")
    assert "(role cuda)" in keep.read_text()
    # NVIDIA's packages' own entry, without the role's comment.
    (conf / "cuda-13-0-nvidia.conf").write_text("/usr/local/cuda-13.0/targets/x86_64-linux/lib\n")
    # The role's comment, but not a cuda-*.conf name.
    (conf / "kindling.conf").write_text(old.read_text())
    # A link and a directory with the name are not the role's files.
    (conf / "cuda-10-2.conf").symlink_to(old)
    (conf / "cuda-9-0.conf").mkdir()
    assert stale_ld_conf(str(conf), str(keep)) == [str(older), str(old)]
    assert stale_ld_conf(str(conf)) == [str(older), str(old), str(keep)]
    assert stale_ld_conf(str(tmp_path / "missing")) == []


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_link_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


@needs_update_alternatives
def test_the_module_reads_both_in_check_mode(group, capsys):
    conf = group.root / "ld.so.conf.d"
    conf.mkdir()
    stale = ld_conf(conf, "12.4")
    keep = ld_conf(conf, "13.0")
    failed, result = run_module(
        {
            "link": str(group.link),
            "path": group.toolkit("13.0"),
            "admindir": str(group.admin),
            "altdir": str(group.alt),
            "ld_conf_dir": str(conf),
            "ld_conf_keep": str(keep),
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert not failed, result
    assert result["changed"] is False
    assert result["action"] == "none" and result["managed"] and result["current"]
    assert result["alternatives"]["value"] == group.toolkit("13.0")
    assert result["stale_ld_conf"] == [str(stale)]


@needs_update_alternatives
def test_the_module_on_a_fresh_host(tmp_path, capsys):
    # Check mode before install: no link group, no ld.so.conf.d directory, no toolkit.
    alts = Alternatives(tmp_path)
    failed, result = run_module(
        {
            "link": str(alts.link),
            "path": str(tmp_path / "cuda-13.0"),
            "admindir": str(alts.admin),
            "altdir": str(alts.alt),
            "ld_conf_dir": str(tmp_path / "ld.so.conf.d"),
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert not failed, result
    assert result["action"] == "link" and result["stale_ld_conf"] == []
    assert "no alternatives for cuda" in result["alternatives"]["error"]
