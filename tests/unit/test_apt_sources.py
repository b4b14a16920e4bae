"""module_utils/apt_sources.py and library/apt_components_add.py: which components a host lacks.

The source files are shaped like those of real images: Debian 12's cloud image (deb822
``/etc/apt/sources.list.d/debian.sources``), mmdebstrap's one-line ``sources.list``, an
Ubuntu 22.04 ``sources.list``. The component lists and suites are read from the vendor
catalogue (``distro_driver_packages``), the way the role passes them to the module.
"""

from __future__ import annotations

import json

import apt_components_add
import pytest
from ansible.module_utils import apt_sources as aps
from ansible.module_utils.testing import patch_module_args
from ansible.module_utils.vendor_catalogue import CATALOGUE

DEBIAN = CATALOGUE["distro_driver_packages"]["debian"]
UBUNTU = CATALOGUE["distro_driver_packages"]["ubuntu"]
DEBIAN_COMPONENTS = list(DEBIAN["components"])
UBUNTU_COMPONENTS = list(UBUNTU["components"])
BOOKWORM = [s.format(codename="bookworm") for s in DEBIAN["suites"]]
JAMMY = [s.format(codename="jammy") for s in UBUNTU["suites"]]
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
DEBIAN_URI = "http://deb.debian.org/debian"
SECURITY_URI = "http://deb.debian.org/debian-security"
OURS = "sources.list.d/kindling-nvidia-distro.sources"

# Debian 12's cloud image (debian-12-genericcloud-amd64): deb822, main only.
DEBIAN12_CLOUD = f"""\
Types: deb deb-src
URIs: {DEBIAN_URI}
Suites: bookworm bookworm-updates
Components: main
Signed-By: {KEYRING}

Types: deb deb-src
URIs: {SECURITY_URI}
Suites: bookworm-security
Components: main
Signed-By: {KEYRING}
"""

# mmdebstrap's default sources.list.
MMDEBSTRAP = f"deb {DEBIAN_URI} bookworm main\n"

UBUNTU_JAMMY = """\
# See http://help.ubuntu.com/community/UpgradeNotes for how to upgrade to
# newer versions of the distribution.
deb http://archive.ubuntu.com/ubuntu/ jammy main
deb http://archive.ubuntu.com/ubuntu/ jammy-updates main restricted
deb-src http://archive.ubuntu.com/ubuntu/ jammy main restricted
deb http://security.ubuntu.com/ubuntu/ jammy-security main universe
"""


def test_the_catalogue_names_what_these_tests_assume():
    # Checks the catalogue's record: Debian's driver lives in non-free, non-free-firmware
    # and contrib, Ubuntu's in restricted, for the release and its -updates/-security.
    assert set(DEBIAN_COMPONENTS) == {"non-free", "non-free-firmware", "contrib"}
    assert UBUNTU_COMPONENTS == ["restricted"]
    assert BOOKWORM == ["bookworm", "bookworm-updates", "bookworm-security"]
    assert JAMMY == ["jammy", "jammy-updates", "jammy-security"]


def etc_apt(tmp_path, sources_list=None, **parts):
    """A tmp etc/apt tree: sources.list and sources.list.d/<name> files (``_`` for ``.``)."""
    root = tmp_path / "etc" / "apt"
    (root / "sources.list.d").mkdir(parents=True)
    if sources_list is not None:
        (root / "sources.list").write_text(sources_list)
    for name, text in parts.items():
        (root / "sources.list.d" / name.replace("__", ".")).write_text(text)
    return root


def rows(missing):
    return [(m["uri"], m["suite"], m["missing"], m["signed_by"]) for m in missing]


# ---------------------------------------------------------------------------
# parse_one_line
# ---------------------------------------------------------------------------


def test_one_line_options_in_brackets_and_comments():
    text = (
        "# a comment line\n"
        "\n"
        f"deb [arch=amd64 signed-by={KEYRING}] {DEBIAN_URI} bookworm main contrib # trailing\n"
        "deb-src http://deb.debian.org/debian bookworm main\n"
        "#deb http://deb.debian.org/debian bookworm-backports main\n"
        "deb http://only-a-uri\n"
        "not a sources line\n"
    )
    entries = aps.parse_one_line(text, "/etc/apt/sources.list")
    assert len(entries) == 2
    deb, src = entries
    assert deb == {
        "path": "/etc/apt/sources.list",
        "types": ["deb"],
        "uris": [DEBIAN_URI],
        "suites": ["bookworm"],
        "components": ["main", "contrib"],
        "signed_by": KEYRING,
        "enabled": True,
    }
    assert src["types"] == ["deb-src"]
    assert src["signed_by"] == ""


def test_one_line_option_keys_are_case_insensitive():
    (entry,) = aps.parse_one_line(f"deb [Signed-By={KEYRING}] {DEBIAN_URI} bookworm main\n")
    assert entry["signed_by"] == KEYRING


def test_deb_src_entries_do_not_count_for_the_result():
    everything = " ".join(DEBIAN_COMPONENTS)
    text = f"deb {DEBIAN_URI} bookworm main\ndeb-src {DEBIAN_URI} bookworm main {everything}\n"
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, "")]
    # A deb-src entry with main alone is no base either.
    only_src = aps.parse_one_line(f"deb-src {DEBIAN_URI} bookworm main\n")
    assert aps.missing_components(only_src, BOOKWORM, DEBIAN_COMPONENTS) == []


# ---------------------------------------------------------------------------
# parse_deb822
# ---------------------------------------------------------------------------


def test_deb822_stanzas_comments_enabled_and_multi_line_fields():
    text = (
        "# Managed by cloud-init\n"
        "Types: deb\n"
        f"URIs: {DEBIAN_URI}\n"
        "Suites: bookworm\n"
        "  bookworm-updates\n"
        "Components: main\n"
        "# a comment inside the stanza\n"
        f"Signed-By: {KEYRING}\n"
        "\n"
        "\n"
        "Types: deb\n"
        "URIs: http://deb.debian.org/debian\n"
        "Suites: bookworm-backports\n"
        "Components: main\n"
        "Enabled: no\n"
        "\n"
        "types: deb deb-src\n"
        f"uris: {SECURITY_URI}\n"
        "suites: bookworm-security\n"
        "components: main non-free\n"
        "Signed-By:\n"
        " -----BEGIN PGP PUBLIC KEY BLOCK-----\n"
        " .\n"
        " mQINBGPL\n"
        " -----END PGP PUBLIC KEY BLOCK-----\n"
    )
    entries = aps.parse_deb822(text, "/etc/apt/sources.list.d/debian.sources")
    assert len(entries) == 3
    first, backports, security = entries
    assert first == {
        "path": "/etc/apt/sources.list.d/debian.sources",
        "types": ["deb"],
        "uris": [DEBIAN_URI],
        "suites": ["bookworm", "bookworm-updates"],
        "components": ["main"],
        "signed_by": KEYRING,
        "enabled": True,
    }
    assert backports["enabled"] is False
    assert backports["suites"] == ["bookworm-backports"]
    assert security["types"] == ["deb", "deb-src"]
    assert security["components"] == ["main", "non-free"]
    assert security["enabled"] is True
    assert security["signed_by"].startswith("\n-----BEGIN PGP PUBLIC KEY BLOCK-----")
    assert "mQINBGPL" in security["signed_by"]


@pytest.mark.parametrize("value", ["no", "No", "false", "0"])
def test_deb822_enabled_no_spellings(value):
    (entry,) = aps.parse_deb822(
        f"Types: deb\nURIs: {DEBIAN_URI}\nSuites: bookworm\nComponents: main\nEnabled: {value}\n"
    )
    assert entry["enabled"] is False


def test_deb822_enabled_yes_is_enabled():
    (entry,) = aps.parse_deb822(
        f"Types: deb\nURIs: {DEBIAN_URI}\nSuites: bookworm\nComponents: main\nEnabled: yes\n"
    )
    assert entry["enabled"] is True


# ---------------------------------------------------------------------------
# read_sources
# ---------------------------------------------------------------------------


def test_read_sources_reads_list_and_sources_files_only(tmp_path):
    root = etc_apt(
        tmp_path,
        sources_list=f"deb {DEBIAN_URI} bookworm main\n",
        extra__list="deb http://extra.example.com/debian bookworm main\n",
        debian__sources=DEBIAN12_CLOUD,
        old__list__save="deb http://saved.example.com/debian bookworm main\n",
        disabled__list__disabled="deb http://disabled.example.com/debian bookworm main\n",
        notes__txt="deb http://notes.example.com/debian bookworm main\n",
        backup__sources__bak=DEBIAN12_CLOUD.replace("deb.debian.org", "backup.example.com"),
    )
    entries = aps.read_sources(str(root))
    uris = [u for e in entries for u in e["uris"]]
    assert uris == [
        DEBIAN_URI,  # sources.list first
        DEBIAN_URI,  # then sources.list.d, sorted: debian.sources
        SECURITY_URI,
        "http://extra.example.com/debian",  # extra.list
    ]
    paths = {e["path"] for e in entries}
    assert paths == {
        str(root / "sources.list"),
        str(root / "sources.list.d" / "debian.sources"),
        str(root / "sources.list.d" / "extra.list"),
    }


def test_read_sources_without_sources_list_or_parts(tmp_path):
    assert aps.read_sources(str(tmp_path / "nothing")) == []
    root = etc_apt(tmp_path)
    assert aps.read_sources(str(root)) == []


def test_read_sources_leaves_out_excluded_files(tmp_path):
    root = etc_apt(tmp_path, debian__sources=DEBIAN12_CLOUD, kindling__sources=DEBIAN12_CLOUD)
    excluded = str(root / "sources.list.d" / "kindling.sources")
    entries = aps.read_sources(str(root), exclude=[excluded])
    assert {e["path"] for e in entries} == {str(root / "sources.list.d" / "debian.sources")}
    # The excluded path is normalised before it is compared.
    odd = str(root / "sources.list.d" / "." / "kindling.sources")
    assert len(aps.read_sources(str(root), exclude=[odd])) == 2
    assert len(aps.read_sources(str(root))) == 4


# ---------------------------------------------------------------------------
# missing_components
# ---------------------------------------------------------------------------


def test_debian12_cloud_image_lacks_all_three_on_every_suite():
    missing = aps.missing_components(aps.parse_deb822(DEBIAN12_CLOUD), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [
        (DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, KEYRING),
        (DEBIAN_URI, "bookworm-updates", DEBIAN_COMPONENTS, KEYRING),
        (SECURITY_URI, "bookworm-security", DEBIAN_COMPONENTS, KEYRING),
    ]


def test_mmdebstrap_one_line_gives_one_row():
    missing = aps.missing_components(aps.parse_one_line(MMDEBSTRAP), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, "")]


def test_a_host_with_every_component_lacks_nothing():
    text = DEBIAN12_CLOUD.replace(
        "Components: main", "Components: main contrib non-free non-free-firmware"
    )
    assert aps.missing_components(aps.parse_deb822(text), BOOKWORM, DEBIAN_COMPONENTS) == []
    one_line = f"deb {DEBIAN_URI} bookworm main contrib non-free non-free-firmware\n"
    assert aps.missing_components(aps.parse_one_line(one_line), BOOKWORM, DEBIAN_COMPONENTS) == []


def test_partial_components_only_the_others_are_missing():
    one_line = f"deb {DEBIAN_URI} bookworm main contrib\n"
    missing = aps.missing_components(aps.parse_one_line(one_line), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [
        (DEBIAN_URI, "bookworm", [c for c in DEBIAN_COMPONENTS if c != "contrib"], "")
    ]


def test_components_from_another_entry_of_the_same_uri_and_suite_count():
    text = f"deb {DEBIAN_URI} bookworm main\ndeb {DEBIAN_URI} bookworm non-free contrib\n"
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", ["non-free-firmware"], "")]


def test_an_entry_for_another_release_is_ignored():
    text = (
        f"deb {DEBIAN_URI} bullseye main\n"
        f"deb {DEBIAN_URI} bullseye-updates main\n"
        f"deb {SECURITY_URI} bullseye-security main\n"
    )
    assert aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS) == []
    # Beside a bookworm entry, only bookworm's row appears.
    text += f"deb {DEBIAN_URI} bookworm main\n"
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert [(m["uri"], m["suite"]) for m in missing] == [(DEBIAN_URI, "bookworm")]


def test_an_entry_without_main_is_no_base():
    text = f"deb http://mirror.example.com/nvidia bookworm extras\n{MMDEBSTRAP}"
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert [m["uri"] for m in missing] == [DEBIAN_URI]


def test_a_disabled_stanza_does_not_count():
    disabled_full = (
        f"Types: deb\nURIs: {DEBIAN_URI}\nSuites: bookworm\n"
        "Components: main contrib non-free non-free-firmware\nEnabled: no\n"
    )
    entries = aps.parse_one_line(MMDEBSTRAP) + aps.parse_deb822(disabled_full)
    missing = aps.missing_components(entries, BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, "")]
    # Nor is a disabled stanza with main a base.
    disabled_main = disabled_full.replace(" contrib non-free non-free-firmware", "")
    assert (
        aps.missing_components(aps.parse_deb822(disabled_main), BOOKWORM, DEBIAN_COMPONENTS) == []
    )


def test_a_trailing_slash_uri_is_the_same_uri():
    text = f"deb {DEBIAN_URI}/ bookworm main\ndeb {DEBIAN_URI} bookworm contrib non-free\n"
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", ["non-free-firmware"], "")]
    # And the base with the slash and the one without give one row, not two.
    both = f"deb {DEBIAN_URI}/ bookworm main\ndeb {DEBIAN_URI} bookworm main\n"
    missing = aps.missing_components(aps.parse_one_line(both), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(missing) == [(DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, "")]


def test_ubuntu_jammy_wants_restricted():
    missing = aps.missing_components(aps.parse_one_line(UBUNTU_JAMMY), JAMMY, UBUNTU_COMPONENTS)
    # jammy-updates has restricted already; the deb-src line's restricted does not count.
    assert rows(missing) == [
        ("http://archive.ubuntu.com/ubuntu", "jammy", ["restricted"], ""),
        ("http://security.ubuntu.com/ubuntu", "jammy-security", ["restricted"], ""),
    ]


def test_rows_are_ordered_by_uri_then_the_suites_order():
    text = (
        f"deb {SECURITY_URI} bookworm-security main\n"
        f"deb {DEBIAN_URI} bookworm-updates main\n"
        f"deb {DEBIAN_URI} bookworm main\n"
    )
    missing = aps.missing_components(aps.parse_one_line(text), BOOKWORM, DEBIAN_COMPONENTS)
    assert [(m["uri"], m["suite"]) for m in missing] == [
        (DEBIAN_URI, "bookworm"),
        (DEBIAN_URI, "bookworm-updates"),
        (SECURITY_URI, "bookworm-security"),
    ]


# ---------------------------------------------------------------------------
# render_deb822
# ---------------------------------------------------------------------------


def test_render_groups_suites_of_one_uri_signed_by_and_components():
    missing = aps.missing_components(aps.parse_deb822(DEBIAN12_CLOUD), BOOKWORM, DEBIAN_COMPONENTS)
    comps = " ".join(DEBIAN_COMPONENTS)
    assert aps.render_deb822(missing, header="# Managed by Kindling\n# second line") == (
        "# Managed by Kindling\n"
        "# second line\n"
        "Types: deb\n"
        f"URIs: {DEBIAN_URI}\n"
        "Suites: bookworm bookworm-updates\n"
        f"Components: {comps}\n"
        f"Signed-By: {KEYRING}\n"
        "\n"
        "Types: deb\n"
        f"URIs: {SECURITY_URI}\n"
        "Suites: bookworm-security\n"
        f"Components: {comps}\n"
        f"Signed-By: {KEYRING}\n"
    )


def test_render_splits_suites_with_different_missing_components():
    missing = [
        {"uri": DEBIAN_URI, "suite": "bookworm", "missing": ["non-free"], "signed_by": ""},
        {"uri": DEBIAN_URI, "suite": "bookworm-updates", "missing": ["contrib"], "signed_by": ""},
    ]
    text = aps.render_deb822(missing)
    stanzas = text.strip().split("\n\n")
    assert len(stanzas) == 2
    assert "Suites: bookworm\nComponents: non-free" in stanzas[0]
    assert "Suites: bookworm-updates\nComponents: contrib" in stanzas[1]
    assert "Signed-By" not in text  # none to reuse: apt's default keyrings
    assert aps.parse_deb822(text)[0]["types"] == ["deb"]


def test_render_splits_suites_with_different_signed_by():
    missing = [
        {"uri": DEBIAN_URI, "suite": "bookworm", "missing": ["non-free"], "signed_by": "/a.gpg"},
        {
            "uri": DEBIAN_URI,
            "suite": "bookworm-updates",
            "missing": ["non-free"],
            "signed_by": "/b.gpg",
        },
    ]
    stanzas = aps.render_deb822(missing).strip().split("\n\n")
    assert [s.splitlines()[-1] for s in stanzas] == ["Signed-By: /a.gpg", "Signed-By: /b.gpg"]


def test_render_keeps_an_inline_signed_by():
    base = (
        f"Types: deb\nURIs: {DEBIAN_URI}\nSuites: bookworm\nComponents: main\n"
        "Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mQINBGPL\n"
        " -----END PGP PUBLIC KEY BLOCK-----\n"
    )
    entries = aps.parse_deb822(base)
    missing = aps.missing_components(entries, BOOKWORM, DEBIAN_COMPONENTS)
    assert missing[0]["signed_by"] == entries[0]["signed_by"]
    (added,) = aps.parse_deb822(aps.render_deb822(missing))
    assert added["signed_by"] == entries[0]["signed_by"]


def test_render_is_empty_when_nothing_is_missing():
    assert aps.render_deb822([]) == ""
    assert aps.render_deb822([], header="# Managed by Kindling") == ""


def test_render_output_reads_back_as_the_missing_components():
    missing = aps.missing_components(aps.parse_deb822(DEBIAN12_CLOUD), BOOKWORM, DEBIAN_COMPONENTS)
    rendered = aps.parse_deb822(aps.render_deb822(missing, header="# header"))
    entries = aps.parse_deb822(DEBIAN12_CLOUD) + rendered
    assert aps.missing_components(entries, BOOKWORM, DEBIAN_COMPONENTS) == []


# ---------------------------------------------------------------------------
# plan, end to end
# ---------------------------------------------------------------------------


def test_plan_on_a_debian12_cloud_image_is_stable_once_written(tmp_path):
    root = etc_apt(tmp_path, debian__sources=DEBIAN12_CLOUD)
    ours = str(root / OURS)
    header = "# Managed by Kindling (role nvidia_driver)"
    first = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS, exclude=[ours], header=header)
    assert first["release_entries"] == 2
    assert len(first["missing"]) == 3
    assert first["content"].startswith(header + "\nTypes: deb\n")
    adds = " ".join(DEBIAN_COMPONENTS)
    assert first["summary"] == (
        f"{DEBIAN_URI} bookworm: adds {adds}; {DEBIAN_URI} bookworm-updates: adds {adds}; "
        f"{SECURITY_URI} bookworm-security: adds {adds}"
    )

    (root / OURS).write_text(first["content"])
    second = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS, exclude=[ours], header=header)
    assert second == first
    # Without the exclusion the written file would make the plan empty: the role would then
    # remove the file, and the next run add it again.
    unexcluded = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS, header=header)
    assert unexcluded["missing"] == [] and unexcluded["content"] == ""


def test_plan_when_the_sources_have_everything(tmp_path):
    full = DEBIAN12_CLOUD.replace(
        "Components: main", "Components: main contrib non-free non-free-firmware"
    )
    root = etc_apt(tmp_path, debian__sources=full)
    result = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS, header="# h")
    assert result["missing"] == []
    assert result["content"] == ""
    assert result["release_entries"] == 2
    assert result["summary"] == (
        f"{', '.join(DEBIAN_COMPONENTS)} already enabled for {', '.join(BOOKWORM)}"
    )


def test_plan_without_any_entry_of_the_release_says_so(tmp_path):
    root = etc_apt(tmp_path, sources_list=f"deb {DEBIAN_URI} bullseye main\n")
    result = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS)
    assert result["missing"] == [] and result["content"] == ""
    assert result["release_entries"] == 0
    assert result["summary"].startswith("no apt source of the suites bookworm, bookworm-updates")


def test_plan_mmdebstrap_sources_list(tmp_path):
    root = etc_apt(tmp_path, sources_list=MMDEBSTRAP)
    result = aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS)
    assert rows(result["missing"]) == [(DEBIAN_URI, "bookworm", DEBIAN_COMPONENTS, "")]
    assert result["content"] == (
        f"Types: deb\nURIs: {DEBIAN_URI}\nSuites: bookworm\n"
        f"Components: {' '.join(DEBIAN_COMPONENTS)}\n"
    )


# ---------------------------------------------------------------------------
# library/apt_components_add.py
# ---------------------------------------------------------------------------


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        apt_components_add.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_on_a_tmp_etc_apt(tmp_path, capsys):
    root = etc_apt(tmp_path, debian__sources=DEBIAN12_CLOUD)
    ours = root / OURS
    args = {
        "suites": BOOKWORM,
        "components": DEBIAN_COMPONENTS,
        "exclude": [str(ours)],
        "etc_apt": str(root),
        "header": "# Managed by Kindling",
    }
    failed, result = run_module(args, capsys)
    assert not failed, result
    assert result["changed"] is False
    assert result["release_entries"] == 2
    assert [(m["uri"], m["suite"]) for m in result["missing"]] == [
        (DEBIAN_URI, "bookworm"),
        (DEBIAN_URI, "bookworm-updates"),
        (SECURITY_URI, "bookworm-security"),
    ]
    assert (
        result["content"]
        == aps.plan(str(root), BOOKWORM, DEBIAN_COMPONENTS, [str(ours)], "# Managed by Kindling")[
            "content"
        ]
    )
    assert result["content"].startswith("# Managed by Kindling\nTypes: deb\n")

    ours.write_text(result["content"])
    failed, again = run_module(args, capsys)
    assert not failed
    assert again["content"] == result["content"]
