"""module_utils/input_types.py: each shape's accepted and refused values, and its messages.

A refusal must say what is wrong and how to fix it (an example value), because
role_inputs puts it after "<variable> is <value>:" in the message the user reads.
"""

from __future__ import annotations

import pytest
from ansible.module_utils import input_types as it

# --- AbsPath

PATH = it.AbsPath(example="/opt/kindling")


@pytest.mark.parametrize(
    "value",
    [
        "/opt/conda",
        "/var/lib/kindling/site.lock",
        "/opt/conda/",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/srv/user@host/a+b_c-d",
    ],
)
def test_abspath_accepts_plain_absolute_paths(value):
    assert PATH.check(value) is None


@pytest.mark.parametrize("value", ["/", "//", "///"])
def test_abspath_refuses_the_root_itself(value):
    problem = PATH.check(value)
    assert problem is not None
    assert "/ itself" in problem and "/opt/kindling" in problem


@pytest.mark.parametrize("value", ["", "opt/conda", "./opt", "~/conda", None, 5, ["/opt"]])
def test_abspath_refuses_what_is_not_absolute(value):
    assert PATH.check(value) == "give an absolute path such as /opt/kindling"


@pytest.mark.parametrize(
    "value",
    ["/opt/../etc", "/opt/..", "/opt/./conda", "/.", "/opt//conda", "//opt", "/opt/conda/.."],
)
def test_abspath_refuses_dot_components_and_doubled_slashes(value):
    problem = PATH.check(value)
    assert problem is not None
    assert "'//', '.' or '..'" in problem and "e.g. /opt/kindling" in problem


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("/opt/my conda", "' '"),
        ("/opt/my\tconda", "'\\t'"),
        ("/opt/conda\n", "'\\n'"),
        ("/opt/$HOME", "'$'"),
        ("/opt/%i", "'%'"),
        ("/opt/a;rm", "';'"),
        ("/opt/a:/b", "':'"),
        ("/opt/'quoted'", '"\'"'),
        ('/opt/"quoted"', "'\"'"),
        ("/opt/a\\b", "'\\\\'"),
        ("/opt/caf\u00e9", "'\u00e9'"),
        ("/opt/`id`", "'`'"),
    ],
)
def test_abspath_refuses_characters_that_change_what_it_is_written_into(value, found):
    problem = PATH.check(value)
    assert problem is not None
    assert problem.startswith("a path may hold only letters, digits and _ . - + @")
    assert f"(found {found})" in problem
    assert "use e.g. /opt/kindling" in problem


UNDER = it.AbsPath(under=("/var/lib", "/run"), example="/var/lib/kindling/site.lock")


@pytest.mark.parametrize("value", ["/var/lib/kindling/site.lock", "/run/kindling", "/var/lib/x/"])
def test_abspath_under_accepts_paths_inside(value):
    assert UNDER.check(value) is None


@pytest.mark.parametrize(
    "value", ["/var/lib", "/var/lib/", "/run/", "/var/library/x", "/etc/kindling", "/varlib/x"]
)
def test_abspath_under_refuses_the_directory_itself_and_paths_outside(value):
    problem = UNDER.check(value)
    assert problem == ("it must lie under /var/lib or /run; e.g. /var/lib/kindling/site.lock"), (
        value
    )


def test_abspath_under_gives_its_reason_when_it_has_one():
    shape = it.AbsPath(
        under=("/etc/modprobe.d",),
        name=r"[a-z-]+\.conf",
        why="modprobe only reads /etc/modprobe.d/*.conf",
        example="/etc/modprobe.d/blacklist-nouveau.conf",
    )
    assert shape.check("/etc/modprobe.d/blacklist-nouveau.conf") is None
    assert shape.check("/etc/nouveau.conf") == (
        "modprobe only reads /etc/modprobe.d/*.conf; e.g. /etc/modprobe.d/blacklist-nouveau.conf"
    )
    # The name confines the last component, matched whole.
    assert shape.check("/etc/modprobe.d/blacklist.txt").startswith("modprobe only reads")
    assert shape.check("/etc/modprobe.d/x.conf.bak").startswith("modprobe only reads")


def test_abspath_name_without_a_reason_says_the_name_is_wrong():
    shape = it.AbsPath(name=r"[a-z]+\.gpg", example="/usr/share/keyrings/cuda.gpg")
    assert shape.check("/usr/share/keyrings/cuda.gpg") is None
    assert shape.check("/usr/share/keyrings/cuda.asc") == (
        "its file name has the wrong form; e.g. /usr/share/keyrings/cuda.gpg"
    )


def test_abspath_empty_ok():
    shape = it.AbsPath(empty_ok=True, example="/opt/venvs/jupyter")
    assert shape.check("") is None
    assert shape.check(None) is None
    assert shape.check("relative").startswith("give an absolute path such as /opt/venvs/jupyter")
    assert PATH.check("") is not None
    assert "or empty" in shape.describe() and "or empty" not in PATH.describe()


# --- Url

URL = it.Url(example="https://pypi.org/simple")


@pytest.mark.parametrize(
    "value",
    [
        "https://download.pytorch.org/whl/cu130",
        "https://example.com",
        "https://example.com:8443/simple/?a=1&b=2",
        "http://127.0.0.1:3141/root/pypi/+simple/",
        "http://[::1]:8080/simple",
        "http://localhost/simple",
        "http://127.1.2.3/x",
    ],
)
def test_url_accepts_https_and_http_to_loopback(value):
    assert URL.check(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "http://pypi.org/simple",
        "http://10.0.0.5/simple",
        "http://localhost.example.com/",
        "http://127.0.0.1.example.com/",
        "ftp://example.com/file",
        "file:///srv/mirror",
    ],
)
def test_url_refuses_other_schemes_and_http_elsewhere(value):
    problem = URL.check(value)
    assert problem is not None
    assert problem.startswith("the URL must use https (plain http only to this host's loopback)")
    assert "use e.g. https://pypi.org/simple" in problem


def test_url_http_anywhere_allows_plain_http_with_its_reason():
    shape = it.Url(http_anywhere="checked against its sha256", example="https://example.com/f")
    assert shape.check("http://mirror.example.com/f") is None
    assert "http too: checked against its sha256" in shape.describe()
    assert shape.check("ftp://mirror.example.com/f").startswith("the URL must use https")


def test_url_file_scheme_only_when_listed():
    listed = it.Url(("https", "file"), example="https://example.com/repos")
    assert listed.check("file:///srv/mirror/repos") is None
    assert listed.check("https://example.com/repos") is None
    assert listed.check("http://example.com/repos").startswith("the URL must use https/file")
    assert URL.check("file:///srv/mirror/repos") is not None


@pytest.mark.parametrize(
    "value",
    [
        "https://example.com/a b",
        "https://example.com/a\tb",
        "https://example.com/\n",
        "https://example.com/simple\n",
        " https://example.com/",
        "https://example.com/'x'",
        'https://example.com/"x"',
        "https://example.com/$HOME",
        "https://example.com/a\\b",
        "https://example.com/`id`",
        "https://exa mple.com/",
        "https://",
        "https:///path",
        "example.com/simple",
        "HTTPS://example.com/",
        "",
        None,
        ["https://example.com/"],
    ],
)
def test_url_refuses_what_can_not_be_written_into_a_line(value):
    problem = URL.check(value)
    assert problem is not None
    assert "https://pypi.org/simple" in problem
    if isinstance(value, str):
        assert problem.startswith("not a URL Kindling can write into an apt line")


def test_url_empty_ok():
    shape = it.Url(empty_ok=True)
    assert shape.check("") is None
    assert shape.check(None) is None
    assert shape.check("http://example.com/") is not None


# --- Int, Port, Float


@pytest.mark.parametrize(("value", "ok"), [(0, True), (3600, True), ("300", True), (-1, False)])
def test_int_range_inclusive(value, ok):
    shape = it.Int(0, 3600, "seconds", "how long to wait")
    problem = shape.check(value)
    if ok:
        assert problem is None
    else:
        assert problem == "it must be from 0 to 3600 seconds (how long to wait)"


def test_int_above_range_and_without_unit():
    assert it.Int(0, 3600, "seconds").check(3601) == "it must be from 0 to 3600 seconds"
    assert it.Int(1, 10).check(11) == "it must be from 1 to 10"


@pytest.mark.parametrize("value", [True, False, "eight", "1.5", 2.5, None, [1]])
def test_int_refuses_bools_and_non_integers(value):
    assert it.Int(0, 10).check(value) == "give a whole number from 0 to 10"


@pytest.mark.parametrize(
    ("value", "ok"),
    [(1, True), (8888, True), (65535, True), (0, False), (65536, False), (True, False)],
)
def test_port(value, ok):
    problem = it.Port().check(value)
    assert (problem is None) is ok
    if not ok and not isinstance(value, bool):
        assert problem == "it must be from 1 to 65535 (a TCP port)"


def test_float_closed_range():
    shape = it.Float(0, 16, why="a multiple of the GPU memory")
    for value in (0, 0.0, 2, "2.5", 16):
        assert shape.check(value) is None, value
    assert shape.check(-0.1) == "it must be in [0, 16]: a multiple of the GPU memory"
    assert shape.check(16.01) == "it must be in [0, 16]: a multiple of the GPU memory"


def test_float_low_open():
    shape = it.Float(0, 1, low_open=True, why="a fraction")
    assert shape.check(0.8) is None
    assert shape.check(1) is None
    assert shape.check(0) == "it must be in (0, 1]: a fraction"
    assert shape.check(1.5) == "it must be in (0, 1]: a fraction"
    assert shape.describe() == "number in (0, 1]"


@pytest.mark.parametrize("value", [True, False, "abc", None, [0.5], "nan", float("nan")])
def test_float_refuses_bools_and_non_numbers(value):
    assert it.Float(0, 1).check(value) == "give a number from 0 to 1"


def test_float_refuses_infinity():
    assert it.Float(0, 1).check(float("inf")) == "it must be in [0, 1]"
    assert it.Float(0, 1).check("-inf") == "give a number from 0 to 1"


@pytest.mark.parametrize(
    "text", [" 9400", "9400\n", "9_400", "\uff19\uff14\uff10\uff10", "9400 ", "0x10"]
)
def test_int_refuses_strings_that_are_not_plain_digits(text):
    """int() takes these; a template would then write them as they are."""
    assert it.Port().check(text) == "give a whole number from 1 to 65535"
    assert it.Port().check("9400") is None


@pytest.mark.parametrize("text", [" 0.5", "0.5\n", "1e-1", "0_5"])
def test_float_refuses_strings_that_are_not_plain_numbers(text):
    assert it.Float(0, 1).check(text) == "give a number from 0 to 1"
    assert it.Float(0, 1).check("0.5") is None


# --- Pattern and the patterns built on it


def test_pattern_is_matched_whole_so_a_trailing_newline_fails():
    # re.match(r"^[0-9.]+$") lets "1.2.3\n" through; \A...\Z does not.
    shape = it.Pattern(r"[0-9]+\.[0-9]+\.[0-9]+", '"2.11.0"', "a release is X.Y.Z")
    assert shape.check("1.2.3") is None
    problem = shape.check("1.2.3\n")
    assert problem == (
        "a release is X.Y.Z (it has leading or trailing whitespace or a newline); "
        'give a value like "2.11.0"'
    )
    assert shape.check(" 1.2.3").startswith("a release is X.Y.Z (it has leading")
    assert shape.check("1.2.3.4") == 'a release is X.Y.Z; give a value like "2.11.0"'
    assert shape.check("x1.2.3") is not None
    assert shape.check(123) == 'a release is X.Y.Z; give a value like "2.11.0"'


def test_pattern_alternatives_are_anchored_as_a_group():
    shape = it.Pattern(r"cu[0-9]{3}|cpu", '"cu130" or "cpu"')
    assert shape.check("cu130") is None and shape.check("cpu") is None
    assert shape.check("cu130x") is not None
    assert shape.check("xcpu") is not None
    assert shape.check("gpu") == 'the wrong form; give a value like "cu130" or "cpu"'


@pytest.mark.parametrize("value", ["latest", "LATEST", "Latest"])
def test_pattern_forbid_is_case_insensitive(value):
    shape = it.Pattern(r"[A-Za-z0-9_.-]+", "4.5.3-4.8.2-ubuntu22.04", "a tag", forbid=("latest",))
    assert shape.check(value) == (
        f"{value!r} is not allowed here; give an exact value like 4.5.3-4.8.2-ubuntu22.04"
    )
    assert shape.check("4.5.3-4.8.2-ubuntu22.04") is None
    assert shape.check("latest-1") is None


def test_pattern_empty_ok():
    assert it.Pattern(r"[0-9]+", "1", empty_ok=True).check("") is None
    assert it.Pattern(r"[0-9]+", "1").check("") is not None


@pytest.mark.parametrize("value", ["pytorch", "py-torch_2.1", "A", "0env", "a" * 64])
def test_name_accepts(value):
    assert it.Name().check(value) is None


@pytest.mark.parametrize("value", ["", "-pytorch", ".hidden", "a b", "a/b", "a" * 65, "env\n"])
def test_name_refuses(value):
    problem = it.Name("pytorch").check(value)
    assert problem is not None
    assert problem.startswith("a name must be 1-64 letters, digits, _ . -")
    assert problem.endswith("give a value like pytorch")


def test_name_empty_ok():
    assert it.Name(empty_ok=True).check("") is None


@pytest.mark.parametrize("value", ["jupyter", "_svc", "dcgm-exporter", "a1", "a" * 32])
def test_username_accepts(value):
    assert it.UserName("jupyter").check(value) is None


@pytest.mark.parametrize(
    "value", ["Jupyter", "1user", "-user", "us er", "user$", "a" * 33, "root\n", "", "user.name"]
)
def test_username_refuses(value):
    problem = it.UserName("jupyter").check(value)
    assert problem is not None
    assert problem.startswith("a user or group name must be lower-case letters")
    assert problem.endswith("give a value like jupyter")


def test_sha256():
    digest = "b25b828b702df4dd2a6d24d4eb56cfa912471dd8e3342cde2c3d86fe3dc2d870"
    assert it.Sha256().check(digest) is None
    assert it.Sha256().check(digest.upper()) is None
    for bad in (digest[:-1], digest + "0", digest[:-1] + "g", digest + "\n", ""):
        problem = it.Sha256().check(bad)
        assert problem is not None
        assert problem.startswith("a sha256 is 64 hex digits")
        assert "the 64 hex digits that sha256sum prints" in problem
    assert it.Sha256(empty_ok=True).check("") is None


FULL_FPR = "EB693B3035CD5710E231E123A4B469963BF863CC"


@pytest.mark.parametrize(
    "value",
    [
        FULL_FPR,
        FULL_FPR.lower(),
        "EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC",  # gpg --fingerprint's form
        "EB69 3B30 35CD 5710 E231 E123 A4B4 6996 3BF8 63CC",
    ],
)
def test_fingerprint_accepts_full_fingerprints(value):
    assert it.Fingerprint().check(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "3BF863CC",  # a short key id
        "A4B469963BF863CC",  # a long key id
        FULL_FPR[:-1],
        FULL_FPR + "0",
        FULL_FPR[:-1] + "G",
        "EB69 3B30 35CD 5710 E231   E123 A4B4 6996 3BF8 63CC",
        "EB693B30 35CD5710 E231E123 A4B46996 3BF863CC",
        FULL_FPR + "\n",
        "",
    ],
)
def test_fingerprint_refuses_short_ids_and_malformed(value):
    problem = it.Fingerprint().check(value)
    assert problem is not None
    assert problem.startswith("give the key's full fingerprint, 40 hex digits")
    assert "a short key id is not enough" in problem
    assert "gpg --show-keys --with-fingerprint" in problem


@pytest.mark.parametrize("value", ["jupyter", "kindling-jupyter", "jupyter@lab", "a.b_c"])
def test_unitname_accepts(value):
    assert it.UnitName("jupyter").check(value) is None


def test_unitname_refuses_the_service_suffix_with_the_fix():
    assert it.UnitName("jupyter").check("jupyter.service") == (
        "give the name without .service, e.g. jupyter"
    )


@pytest.mark.parametrize(
    "value", ["a/b", "../jupyter", "/etc/jupyter", "jupyter\n", "jup yter", "", "-jupyter", "j%i"]
)
def test_unitname_refuses_paths_newlines_and_odd_characters(value):
    problem = it.UnitName("jupyter").check(value)
    assert problem is not None
    assert problem.startswith("a unit name must be letters, digits, _ . @ - without .service")
    assert problem.endswith("give a value like jupyter")


@pytest.mark.parametrize(
    "value", ["127.0.0.1", "0.0.0.0", "10.1.2.3", "::1", "::", "fe80::1", "localhost"]
)
def test_ipaddress_accepts(value):
    assert it.IPAddress().check(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        "256.0.0.1",
        "1.2.3",
        "example.com",
        "127.0.0.1\n",
        " 127.0.0.1",
        "::1/128",
        None,
        "localhost.localdomain",
    ],
)
def test_ipaddress_refuses(value):
    assert it.IPAddress("10.0.0.5").check(value) == (
        "give an IP address such as 10.0.0.5 (or localhost)"
    )


# --- Text


def test_text_accepts_printable_text_and_empty_by_default():
    assert it.Text().check("Python (PyTorch) \u2013 caf\u00e9") is None
    assert it.Text().check("") is None
    assert it.Text().check(None) is None


@pytest.mark.parametrize(
    ("value", "found"),
    [("a\nb", "'\\n'"), ("a\tb", "'\\t'"), ("a\x1bb", "'\\x1b'"), ("a\x00b", "'\\x00'")],
)
def test_text_refuses_control_characters(value, found):
    problem = it.Text().check(value)
    assert problem is not None
    assert problem.startswith("it may not hold control characters, newlines or the like")
    assert f"(found {found})" in problem


def test_text_refuses_its_forbidden_characters_with_the_reason():
    shape = it.Text(forbid=',"', why="the counters file is comma-separated")
    assert shape.check("SM clock (in MHz).") is None
    problem = shape.check('clock, "MHz"')
    assert problem == (
        "it may not hold control characters, newlines or , \" (found '\"', ','): "
        "the counters file is comma-separated"
    )


def test_text_max_len_and_empty():
    shape = it.Text(max_len=5, empty_ok=False)
    assert shape.check("abcde") is None
    assert shape.check("abcdef") == "keep it to 5 characters"
    assert shape.check("") == "give some text"
    assert shape.check("   ") == "give some text"
    assert shape.check(5) == "give some text"


# --- containers


def test_listof_names_the_element_that_is_wrong():
    shape = it.ListOf(it.UserName("video"))
    assert shape.check([]) is None
    assert shape.check(["video", "render"]) is None
    problem = shape.check(["video", "Bad Name", "x y"])
    assert problem is not None
    assert problem.startswith("element 1 ('Bad Name'): a user or group name must be")
    assert problem.endswith("give a value like video")


def test_listof_refuses_non_lists():
    for value in ("video", {"a": 1}, None, 5):
        assert it.ListOf(it.Name()).check(value) == "give a list"
    assert it.ListOf(it.Name()).check(("a", "b")) is None


def test_listof_unique_and_min_len():
    shape = it.ListOf(it.Name(), unique=True, min_len=1)
    assert shape.check(["a", "b"]) is None
    assert shape.check(["a", "b", "a"]) == "each element may appear once"
    assert shape.check([]) == "give at least 1 element(s)"
    assert it.ListOf(it.Name()).check(["a", "a"]) is None


def test_dictof_checks_keys_and_values():
    shape = it.DictOf(it.Choice(["Ubuntu", "Debian"]), it.ListOf(it.Pattern(r"[0-9]{2}", '"12"')))
    assert shape.check({"Ubuntu": ["22"], "Debian": []}) is None
    assert shape.check({}) is None
    assert shape.check({"Fedora": ["40"]}) == "unknown key 'Fedora': (keys: Ubuntu, Debian)"
    assert shape.check({"Ubunto": ["22"]}) == (
        "unknown key 'Ubunto': did you mean Ubuntu? (keys: Ubuntu, Debian)"
    )
    assert shape.check({"Debian": ["12", "bookworm"]}) == (
        "entry 'Debian': element 1 ('bookworm'): the wrong form; give a value like \"12\""
    )
    assert shape.check(["Ubuntu"]) == "give a mapping"


COUNTER = it.Record(
    {
        "field": it.Pattern(r"DCGM_FI_[A-Z0-9_]+", "DCGM_FI_DEV_GPU_UTIL", "a DCGM field"),
        "type": it.Choice(["gauge", "counter", "label"]),
        "help": it.Text(forbid=","),
    },
    required=("field", "type"),
)


def test_record_accepts_known_keys():
    assert COUNTER.check({"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge"}) is None
    assert COUNTER.check({"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge", "help": "x"}) is None


def test_record_refuses_missing_and_unknown_keys():
    assert COUNTER.check({"type": "gauge"}) == "key field is missing (keys: field, type, help)"
    assert COUNTER.check({"field": "DCGM_FI_X", "type": "gauge", "halp": "x"}) == (
        "unknown key 'halp': did you mean help? (keys: field, type, help)"
    )
    assert COUNTER.check("DCGM_FI_X") == "give a mapping with keys field, type, help"


def test_record_names_the_field_that_is_wrong():
    problem = COUNTER.check({"field": "DCGM_FI_X", "type": "histogram"})
    assert problem == "its type 'histogram': choose one of gauge, counter, label"
    problem = COUNTER.check({"field": "GPU_UTIL", "type": "gauge"})
    assert problem == "its field 'GPU_UTIL': a DCGM field; give a value like DCGM_FI_DEV_GPU_UTIL"


def test_choice():
    shape = it.Choice(["x86_64", "aarch64"])
    assert shape.check("x86_64") is None
    assert shape.check("amd64") == "choose one of x86_64, aarch64"
    assert shape.check("X86_64") == "choose one of x86_64, aarch64"
    assert shape.describe() == "one of x86_64, aarch64"


# --- Spec, Free


def test_spec_accepts_anything():
    for value in (True, "x", None, [1], {"a": 1}):
        assert it.Spec().check(value) is None
    assert isinstance(it.Spec().describe(), str) and it.Spec().describe()


def test_free_needs_a_reason():
    with pytest.raises(ValueError, match="needs the reason"):
        it.Free("")
    shape = it.Free("checked by gpu_stack_plan")
    assert shape.check({"anything": ["at", "all"]}) is None
    assert shape.describe() == "free (checked by gpu_stack_plan)"


# --- check_all and problem_message


def test_problem_message_names_the_variable_and_shows_a_newline():
    assert it.problem_message("cuda_version", "13.0\n", "it is wrong") == (
        "cuda_version is '13.0\\n': it is wrong"
    )
    assert it.problem_message("jupyter_port", 0, "p") == "jupyter_port is 0: p"
    assert it.problem_message("x", "v", "p", secret=True) == "x is (a value hidden by no_log): p"


def test_check_all_in_shape_order_skipping_missing_values():
    shapes = {"b_port": it.Port(), "a_name": it.Name(), "c_missing": it.Port()}
    found = it.check_all(shapes, {"a_name": "-bad", "b_port": 0, "other": "ignored"})
    assert [name for name, _ in found] == ["b_port", "a_name"]
    assert found[0][1] == "b_port is 0: it must be from 1 to 65535 (a TCP port)"
    assert found[1][1].startswith("a_name is '-bad': a name must be")
    assert it.check_all(shapes, {"a_name": "ok", "b_port": 80}) == []


SECRET = "s3cr3t-Passw0rd"


@pytest.mark.parametrize(
    ("shape", "value"),
    [
        (
            it.Pattern(r"(argon2|sha1):[A-Za-z0-9$=+/,.:_-]+", "argon2:...", "a password hash"),
            SECRET,
        ),
        # These shapes quote the value in their problem; check_all must not pass that on.
        (it.Pattern(r"[A-Za-z0-9-]+", "x", forbid=(SECRET.lower(),)), SECRET),
        (it.ListOf(it.Pattern(r"argon2:.*", "argon2:...")), ["argon2:ok", SECRET]),
        (it.Record({"hash": it.Pattern(r"argon2:.*", "argon2:...")}), {"hash": SECRET}),
        (
            it.DictOf(it.FreeKeys("labels", it.Name()), it.Pattern(r"argon2:.*", "argon2:...")),
            {"k": SECRET},
        ),
        (it.Text(max_len=4), SECRET),
    ],
)
def test_check_all_hides_a_secret_value(shape, value):
    found = it.check_all(
        {"jupyter_password_hash": shape},
        {"jupyter_password_hash": value},
        secret=["jupyter_password_hash"],
    )
    assert len(found) == 1
    name, message = found[0]
    assert name == "jupyter_password_hash"
    assert message.startswith("jupyter_password_hash is (a value hidden by no_log): ")
    assert SECRET not in message
    assert SECRET.lower() not in message.lower()


def test_check_all_shows_a_value_that_is_not_secret():
    found = it.check_all(
        {"h": it.Pattern(r"argon2:.*", "argon2:...")}, {"h": SECRET}, secret=["other"]
    )
    assert found == [("h", f"h is {SECRET!r}: the wrong form; give a value like argon2:...")]


def test_float_with_both_ends_open():
    shape = it.Float(0, 1, low_open=True, high_open=True, why="a margin")
    assert shape.check(0.1) is None and shape.check("0.99") is None
    assert shape.check(0) == "it must be in (0, 1): a margin"
    assert shape.check(1) == "it must be in (0, 1): a margin"
    assert shape.describe() == "number in (0, 1)"


def test_dictof_declares_its_keys():
    with pytest.raises(TypeError):
        it.DictOf(it.Name(), it.Name())
    free = it.DictOf(it.FreeKeys("extra environment variables", it.Name()), it.Text())
    assert free.check({"ANY_thing": "x"}) is None
    assert "any key (extra environment variables)" in free.describe()
