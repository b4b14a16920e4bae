"""The controller's install: requirements.txt, requirements.yml and tools/install_collections.py.

- requirements.yml lists exactly the collections that playbooks/, roles/, inventories/,
  the plugins and ansible.cfg reference, at the versions of the `ansible` bundle that
  requirements-dev.txt pins (read from that bundle, installed in the test virtualenv).
- tools/install_collections.py copies exactly those out of the bundle's wheel, once.
- requirements.txt holds the controller's pins, requirements-dev.txt includes it and adds the
  test tool chain, and no package is pinned in both.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO_ROOT = Path(__file__).resolve().parents[2]


def _load():
    path = REPO_ROOT / "tools" / "install_collections.py"
    spec = importlib.util.spec_from_file_location("kindling_install_collections", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ic = _load()

# Where the controller's plays, plugins and settings live (molecule/ is the test bed's).
CONTROLLER_PATHS = [
    "playbooks",
    "roles",
    "inventories",
    "library",
    "action_plugins",
    "callback_plugins",
    "module_utils",
    "ansible.cfg",
]
FQCN = re.compile(r"\b([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z_][a-z0-9_]*\b")
SUFFIXES = {".yml", ".yaml", ".j2", ".py", ".cfg"}


def bundle():
    """The installed `ansible` bundle: (version, {"ns.name": (version, collection dir)})."""
    try:
        dist = metadata.distribution("ansible")
    except metadata.PackageNotFoundError:
        pytest.fail("the `ansible` bundle is not installed: make venv (requirements-dev.txt)")
    root = Path(dist.locate_file("ansible_collections"))
    collections = {}
    for manifest in root.glob("*/*/MANIFEST.json"):
        info = json.loads(manifest.read_text())["collection_info"]
        collections[f"{info['namespace']}.{info['name']}"] = (info["version"], manifest.parent)
    return dist.version, collections


def referenced(paths, known):
    """{"ns.name": [files]} for each collection in `known` that a file references.

    In Python files, `ansible.<x>` where x is a package of ansible-core itself
    (ansible.utils, ansible.plugins, ...) is an import of core, not a collection.
    """
    found: dict[str, list[str]] = {}
    files = []
    for entry in paths:
        path = entry if entry.is_absolute() else REPO_ROOT / entry
        files += [path] if path.is_file() else sorted(path.rglob("*"))
    for path in files:
        if not path.is_file() or (path.suffix not in SUFFIXES and path.name != "ansible.cfg"):
            continue
        for match in FQCN.finditer(path.read_text(errors="replace")):
            name = f"{match[1]}.{match[2]}"
            if name not in known:
                continue
            core = match[1] == "ansible" and importlib.util.find_spec(f"ansible.{match[2]}")
            if path.suffix == ".py" and core:
                continue
            shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
            found.setdefault(name, []).append(str(shown))
    return found


def mismatches(listed, used):
    """What keeps requirements.yml (`listed`) from matching the references (`used`)."""
    problems = [f"{name} is used ({used[name][0]}) but not listed" for name in used]
    problems = [p for p, name in zip(problems, used) if name not in listed]
    problems += [f"{name} is listed but nothing uses it" for name in listed if name not in used]
    return problems


def pins(path):
    """{name: version} of a pip requirements file's `name==version` lines."""
    result = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{path.name}: {line} is not pinned exactly"
        result[req.name.lower()] = spec.version
    return result


# ---------------------------------------------------------------------------
# requirements.yml against what the plays use and what the bundle carries
# ---------------------------------------------------------------------------


def test_requirements_yml_lists_exactly_the_collections_used():
    _, carried = bundle()
    used = referenced([Path(p) for p in CONTROLLER_PATHS], carried)
    listed = ic.wanted()
    assert mismatches(listed, used) == []
    # The ones this project is known to need, so that a scanner finding nothing fails too.
    assert {"amazon.aws", "community.general", "ansible.posix"} <= set(used)
    assert "ansible.cfg" in used["ansible.posix"]  # callbacks_enabled = ansible.posix.profile_tasks


def test_the_install_script_reads_requirements_yml_and_nothing_else():
    data = yaml.safe_load((REPO_ROOT / "requirements.yml").read_text())
    assert ic.wanted() == {c["name"]: str(c["version"]) for c in data["collections"]}
    assert set(data) == {"collections"}  # ansible-galaxy refuses other top-level keys


def test_the_check_fails_on_a_collection_used_but_not_listed_and_one_listed_but_unused(tmp_path):
    (tmp_path / "play.yml").write_text(
        "- hosts: all\n  tasks:\n    - community.general.modprobe: {name: x}\n"
        "    - ansible.builtin.debug: {msg: ok}\n"
    )
    (tmp_path / "plugin.py").write_text("from ansible.utils.display import Display\n")
    known = {"community.general": "11.4.2", "amazon.aws": "10.1.2", "ansible.utils": "6.0.0"}
    used = referenced([tmp_path], known)
    assert set(used) == {"community.general"}  # ansible.builtin is core, ansible.utils an import
    assert mismatches({"amazon.aws": "10.1.2"}, used) == [
        f"community.general is used ({tmp_path / 'play.yml'}) but not listed",
        "amazon.aws is listed but nothing uses it",
    ]
    assert mismatches({"community.general": "11.4.2"}, used) == []


def test_requirements_yml_versions_are_the_pinned_bundles():
    version, carried = bundle()
    assert version == ic.bundle_version(), "the installed bundle is not requirements-dev.txt's"
    for name, wanted_version in ic.wanted().items():
        assert name in carried, f"ansible=={version} carries no {name}"
        assert carried[name][0] == wanted_version, (
            f"requirements.yml has {name} {wanted_version}, ansible=={version} carries "
            f"{carried[name][0]}"
        )


def test_molecules_collections_come_with_the_dev_bundle():
    _, carried = bundle()
    used = referenced([Path("molecule")], carried)
    assert "containers.podman" in used
    assert "containers.podman" not in ic.wanted()  # a test tool, not the controller's


def test_controller_pins_meet_the_collections_own_requirements():
    _, carried = bundle()
    controller = pins(REPO_ROOT / "requirements.txt")
    core = controller["ansible-core"]
    for name in ic.wanted():
        runtime = yaml.safe_load((carried[name][1] / "meta" / "runtime.yml").read_text())
        assert core in SpecifierSet(runtime["requires_ansible"]), (name, runtime)
    aws_reqs = (carried["amazon.aws"][1] / "requirements.txt").read_text().splitlines()
    needed = [Requirement(line) for line in aws_reqs if line and not line.startswith("#")]
    assert {r.name for r in needed} == {"boto3", "botocore"}
    for req in needed:
        assert controller[req.name] in req.specifier, (req, controller[req.name])


# ---------------------------------------------------------------------------
# requirements.txt and requirements-dev.txt
# ---------------------------------------------------------------------------

CONTROLLER = {
    "ansible-core",
    "cryptography",
    "ansible-runner",
    "plotly",
    "narwhals",
    "boto3",
    "botocore",
}


def test_requirements_txt_is_the_controller_and_dev_adds_the_test_tools_once():
    controller = pins(REPO_ROOT / "requirements.txt")
    dev = pins(REPO_ROOT / "requirements-dev.txt")
    assert set(controller) == CONTROLLER
    assert "-r requirements.txt" in (REPO_ROOT / "requirements-dev.txt").read_text().splitlines()
    assert set(controller) & set(dev) == set(), "one place for each pin"
    for tool in ("ansible", "molecule", "ansible-lint", "pytest-testinfra", "torch", "moto"):
        assert tool in dev and tool not in controller
    assert dev["ansible"] == ic.bundle_version()


def test_make_site_installs_requirements_txt_and_the_collections_not_the_dev_chain(tmp_path):
    env = dict(os.environ, MAKEFLAGS="", MAKELEVEL="")
    proc = subprocess.run(
        ["make", "-n", "site", f"VENV={tmp_path}/venv", f"KINDLING_CACHE={tmp_path}/cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "-r requirements.txt" in proc.stdout
    assert "requirements-dev.txt" not in proc.stdout
    assert "tools/install_collections.py --dest collections" in proc.stdout
    assert "ansible-playbook playbooks/site.yml" in proc.stdout


# ---------------------------------------------------------------------------
# tools/install_collections.py against a stand-in bundle wheel
# ---------------------------------------------------------------------------


def fake_wheel(path: Path, collections: dict[str, str]) -> Path:
    """A wheel with each collection's MANIFEST.json, a module and a plugin."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, version in collections.items():
            ns, coll = name.split(".")
            prefix = f"ansible_collections/{ns}/{coll}/"
            info = {"collection_info": {"namespace": ns, "name": coll, "version": version}}
            archive.writestr(prefix + "MANIFEST.json", json.dumps(info))
            archive.writestr(prefix + "plugins/modules/thing.py", f"# {name} {version}\n")
        archive.writestr("ansible_community.py", "")
    return path


def write_requirements(tmp_path: Path, collections: dict[str, str], bundle_pin="12.3.0"):
    reqs = tmp_path / "requirements.yml"
    entries = [{"name": n, "version": v} for n, v in collections.items()]
    reqs.write_text(yaml.safe_dump({"collections": entries}))
    dev = tmp_path / "requirements-dev.txt"
    dev.write_text(f"-r requirements.txt\nansible=={bundle_pin}\nmolecule==26.10.0\n")
    return {"requirements": reqs, "requirements_dev": dev}


BUNDLE = {"amazon.aws": "10.1.2", "ansible.posix": "2.1.0", "community.docker": "4.8.5"}


def test_install_copies_only_the_listed_collections_then_does_nothing(tmp_path, capsys):
    wheel = fake_wheel(tmp_path / "ansible-12.3.0-py3-none-any.whl", BUNDLE)
    reqs = write_requirements(tmp_path, {"amazon.aws": "10.1.2", "ansible.posix": "2.1.0"})
    dest = tmp_path / "collections"
    assert ic.install(dest, tmp_path / "cache", wheel, **reqs) is True
    tree = dest / "ansible_collections"
    assert sorted(str(p.relative_to(tree)) for p in tree.glob("*/*")) == [
        "amazon/aws",
        "ansible/posix",
    ]
    assert (tree / "amazon/aws/plugins/modules/thing.py").read_text() == "# amazon.aws 10.1.2\n"
    assert json.loads((dest / ic.STAMP_NAME).read_text()) == {
        "bundle": "ansible==12.3.0",
        "collections": {"amazon.aws": "10.1.2", "ansible.posix": "2.1.0"},
    }
    assert [p.name for p in dest.iterdir() if p.name.startswith(".extract-")] == []

    before = (tree / "amazon/aws/MANIFEST.json").stat().st_ino
    wheel.unlink()  # a second run must not need the wheel, nor download it (empty cache)
    assert ic.install(dest, tmp_path / "cache", None, **reqs) is False
    assert (tree / "amazon/aws/MANIFEST.json").stat().st_ino == before
    assert not (tmp_path / "cache").exists()
    assert "already in" in capsys.readouterr().out


def test_a_collection_dropped_from_requirements_yml_is_removed(tmp_path):
    wheel = fake_wheel(tmp_path / "ansible-12.3.0-py3-none-any.whl", BUNDLE)
    dest = tmp_path / "collections"
    both = write_requirements(tmp_path, {"amazon.aws": "10.1.2", "community.docker": "4.8.5"})
    ic.install(dest, tmp_path, wheel, **both)
    assert (dest / "ansible_collections/community/docker/MANIFEST.json").is_file()
    one = write_requirements(tmp_path, {"amazon.aws": "10.1.2"})
    assert ic.install(dest, tmp_path, wheel, **one) is True
    assert not (dest / "ansible_collections/community/docker").exists()
    assert (dest / "ansible_collections/amazon/aws/MANIFEST.json").is_file()


def test_a_removed_collection_directory_is_put_back(tmp_path):
    wheel = fake_wheel(tmp_path / "ansible-12.3.0-py3-none-any.whl", BUNDLE)
    dest = tmp_path / "collections"
    reqs = write_requirements(tmp_path, {"ansible.posix": "2.1.0"})
    ic.install(dest, tmp_path, wheel, **reqs)
    manifest = dest / "ansible_collections/ansible/posix/MANIFEST.json"
    manifest.unlink()
    assert ic.install(dest, tmp_path, wheel, **reqs) is True
    assert manifest.is_file()


def test_a_version_other_than_the_bundles_fails_naming_both(tmp_path):
    wheel = fake_wheel(tmp_path / "ansible-12.3.0-py3-none-any.whl", BUNDLE)
    reqs = write_requirements(tmp_path, {"amazon.aws": "10.2.0"})
    dest = tmp_path / "collections"
    with pytest.raises(ic.InstallError, match=r"carries amazon\.aws 10\.1\.2.*asks for 10\.2\.0"):
        ic.install(dest, tmp_path, wheel, **reqs)
    assert not (dest / ic.STAMP_NAME).exists()
    assert not (dest / "ansible_collections/amazon/aws").exists()


def test_a_collection_the_bundle_lacks_fails(tmp_path):
    wheel = fake_wheel(tmp_path / "ansible-12.3.0-py3-none-any.whl", BUNDLE)
    reqs = write_requirements(tmp_path, {"community.general": "11.4.2"})
    with pytest.raises(ic.InstallError, match=r"carries no community\.general"):
        ic.install(tmp_path / "collections", tmp_path, wheel, **reqs)


def test_a_truncated_wheel_fails_naming_it(tmp_path):
    wheel = tmp_path / "ansible-12.3.0-py3-none-any.whl"
    wheel.write_bytes(fake_wheel(tmp_path / "whole.whl", BUNDLE).read_bytes()[:100])
    reqs = write_requirements(tmp_path, {"amazon.aws": "10.1.2"})
    with pytest.raises(ic.InstallError, match="not a whole wheel"):
        ic.install(tmp_path / "collections", tmp_path, wheel, **reqs)


@pytest.mark.parametrize("version", [">=10.0.0", "10.1", "", "*"])
def test_requirements_yml_needs_exact_versions(tmp_path, version):
    reqs = tmp_path / "requirements.yml"
    reqs.write_text(yaml.safe_dump({"collections": [{"name": "amazon.aws", "version": version}]}))
    with pytest.raises(ic.InstallError, match="exact version"):
        ic.wanted(reqs)


def test_the_bundle_must_be_pinned_exactly_once(tmp_path):
    dev = tmp_path / "requirements-dev.txt"
    dev.write_text("ansible-core==2.19.14\nansible-lint==26.10.1\n")
    with pytest.raises(ic.InstallError, match="exactly once"):
        ic.bundle_version(dev)
    dev.write_text("ansible==12.3.0  # the bundle\n")
    assert ic.bundle_version(dev) == "12.3.0"


def test_main_reports_a_problem_on_stderr_and_exits_1(tmp_path, capsys):
    """The repository's own requirements.yml against a wheel with an older amazon.aws."""
    carried = dict(ic.wanted(), **{"amazon.aws": "9.0.0"})
    wheel = fake_wheel(tmp_path / "w.whl", carried)
    rc = ic.main(["--dest", str(tmp_path / "c"), "--cache", str(tmp_path), "--wheel", str(wheel)])
    assert rc == 1
    assert "carries amazon.aws 9.0.0" in capsys.readouterr().err
    assert not (tmp_path / "c" / ic.STAMP_NAME).exists()


def test_the_script_runs_as_make_runs_it(tmp_path):
    """A real run of the file (imports, argument parsing) against the stand-in wheel."""
    wheel = fake_wheel(tmp_path / "w.whl", ic.wanted())
    script = REPO_ROOT / "tools" / "install_collections.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--dest", str(tmp_path / "c"), "--wheel", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "c" / ic.STAMP_NAME).read_text())["collections"] == ic.wanted()
