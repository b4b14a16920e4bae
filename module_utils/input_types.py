"""Kindling's shared input types: the shapes a role variable's value must fit.

argument_specs.yml gives Ansible's coarse types (str, int, path, list, choices).
These are the finer shapes that fit a value's meaning, written once and used by every
role (module_utils/role_inputs.py names which variable has which shape):

- ``AbsPath``: an absolute path that is not ``/``, with no ``.``/``..`` component,
  no doubled slash, and only the characters ``A-Z a-z 0-9 _ . - + @``. That rules out
  whitespace, control characters, quotes, ``$``, ``%`` (a systemd specifier), ``;``,
  ``:`` (a PATH or ``docker -v`` separator) and ``\\``, so a path can be written
  unquoted into a unit, a shell-sourced profile snippet, an apt line or a command line.
  ``under`` confines it to a directory; ``name`` fixes the form of its last component.
- ``Url``: https (or http to this host's loopback), or, where the content is verified
  by a signature or a checksum, plain http too; no whitespace, quotes or shell metas.
- ``Int``/``Float``: a number in a stated range; ``Port`` is 1-65535.
- ``Pattern``: a string matched whole (``\\A…\\Z``: a trailing newline fails, which
  ``^…$`` lets through); ``Version`` and ``Name`` are patterns.
- ``UnitName``: a systemd unit name; the host-side check (role_inputs) also refuses one
  that an installed unit not written by Kindling already has.
- ``ListOf``/``DictOf``/``Record``: containers of the above.
- ``Spec``: argument_specs' own type or choices is the whole shape (bools, choices).
- ``Free``: no finer shape, with the reason written beside it.

Each ``check`` returns ``None`` or a problem: what is wrong and the fix, to be put after
``<variable> is <value>``. The caller names the variable (see ``problem_message``).
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

PATH_COMPONENT = re.compile(r"\A[A-Za-z0-9_.+@-]+\Z")
URL = re.compile(
    r"\A(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*)"
    r"(?::(?P<port>[0-9]{1,5}))?(?P<rest>[/?][A-Za-z0-9._~!&()*+,;=:@%/?-]*)?\Z"
)


class Shape:
    """One shape; ``check`` returns None when the value fits, else the problem and fix."""

    empty_ok = False

    def check(self, value: Any) -> Optional[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def _empty(self, value: Any) -> bool:
        return self.empty_ok and value in ("", None)


def _quoted(value: Any) -> str:
    """The value as the message shows it: repr for strings, so a newline shows as \\n."""
    return repr(value) if isinstance(value, str) else str(value)


def problem_message(name: str, value: Any, problem: str, secret: bool = False) -> str:
    shown = "(a value hidden by no_log)" if secret else _quoted(value)
    return f"{name} is {shown}: {problem}"


class Spec(Shape):
    """argument_specs' type or choices is the whole shape (bools, fixed choices)."""

    def __init__(self, why: str = "argument_specs' type and choices are the whole shape"):
        self.why = why

    def check(self, value: Any) -> Optional[str]:
        return None

    def describe(self) -> str:
        return "type and choices only"


class Free(Shape):
    """No finer shape than argument_specs' type, for the stated reason."""

    def __init__(self, why: str):
        if not why:
            raise ValueError("Free needs the reason why the value has no finer shape")
        self.why = why

    def check(self, value: Any) -> Optional[str]:
        return None

    def describe(self) -> str:
        return f"free ({self.why})"


# The directories of the Filesystem Hierarchy Standard 3.0 (chapters 3-5: the root
# filesystem, /usr and /var) and the Debian/Ubuntu ones beside them. A directory a role
# makes its own (owner, mode, contents) may lie inside them but never be one of them.
SYSTEM_DIRS = frozenset(
    [
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
        "/etc/opt",
        "/etc/apt",
        "/etc/default",
        "/etc/systemd",
        "/etc/systemd/system",
        "/usr/bin",
        "/usr/include",
        "/usr/lib",
        "/usr/lib64",
        "/usr/libexec",
        "/usr/local",
        "/usr/local/bin",
        "/usr/local/lib",
        "/usr/local/share",
        "/usr/local/sbin",
        "/usr/local/include",
        "/usr/sbin",
        "/usr/share",
        "/usr/src",
        "/var/backups",
        "/var/cache",
        "/var/lib",
        "/var/lib/apt",
        "/var/lib/dpkg",
        "/var/lib/systemd",
        "/var/local",
        "/var/lock",
        "/var/log",
        "/var/mail",
        "/var/opt",
        "/var/run",
        "/var/spool",
        "/var/tmp",
    ]
)


class AbsPath(Shape):
    def __init__(
        self,
        under: Sequence[str] = (),
        name: Optional[str] = None,
        why: str = "",
        empty_ok: bool = False,
        example: str = "/opt/kindling",
        own_dir: bool = False,
    ):
        self.own_dir = own_dir
        self.under = tuple(under)
        self.name = re.compile(r"\A(?:" + name + r")\Z") if name else None
        self.why = why
        self.empty_ok = empty_ok
        self.example = example

    def check(self, value: Any) -> Optional[str]:
        if self._empty(value):
            return None
        if not isinstance(value, str) or not value.startswith("/"):
            return f"give an absolute path such as {self.example}"
        if value == "/" or value.rstrip("/") == "":
            return (
                "/ itself is never a place Kindling writes to; give a directory of its own "
                f"such as {self.example}"
            )
        if self.own_dir and value.rstrip("/") in SYSTEM_DIRS:
            return (
                f"{value.rstrip('/')} is a system directory, and the role would make it its own "
                f"(owner, mode, contents); give a directory of its own such as {self.example}"
            )
        parts = value.rstrip("/").split("/")[1:]
        for part in parts:
            if part in ("", ".", ".."):
                return (
                    "a path may not contain '//', '.' or '..' (it must name the place it ends "
                    f"up at); write it out, e.g. {self.example}"
                )
            if not PATH_COMPONENT.match(part):
                bad = sorted({c for c in part if not re.match(r"[A-Za-z0-9_.+@-]", c)})
                return (
                    "a path may hold only letters, digits and _ . - + @ (found "
                    f"{', '.join(repr(c) for c in bad)}): whitespace, quotes, $, %, ;, : and "
                    f"control characters would change the unit, profile or command it is written "
                    f"into; use e.g. {self.example}"
                )
        if self.under:
            inside = [d for d in self.under if value.rstrip("/").startswith(d.rstrip("/") + "/")]
            if not inside:
                why = self.why or "it must lie under " + " or ".join(self.under)
                return f"{why}; e.g. {self.example}"
        if self.name and not self.name.match(parts[-1]):
            return f"{self.why or 'its file name has the wrong form'}; e.g. {self.example}"
        return None

    def describe(self) -> str:
        text = "absolute path (not /, no ..)"
        if self.under:
            text += " under " + " or ".join(self.under)
        if self.own_dir:
            text += ", not a system directory"
        if self.empty_ok:
            text += ", or empty"
        return text


class Url(Shape):
    """A URL; https unless ``http`` says why plain http is safe for this download."""

    def __init__(
        self,
        schemes: Sequence[str] = ("https",),
        http_anywhere: str = "",
        empty_ok: bool = False,
        example: str = "https://example.com/",
    ):
        self.schemes = tuple(schemes)
        self.http_anywhere = http_anywhere  # the reason, when http is as safe as https here
        self.empty_ok = empty_ok
        self.example = example

    def check(self, value: Any) -> Optional[str]:
        if self._empty(value):
            return None
        if not isinstance(value, str):
            return f"give a URL such as {self.example}"
        match = URL.match(value)
        if not match or (not match.group("host") and match.group("scheme") != "file"):
            return (
                f"not a URL Kindling can write into an apt line, a unit or a command line (no "
                f"whitespace, quotes, $ or backslashes); give one such as {self.example}"
            )
        scheme, host = match.group("scheme"), match.group("host").strip("[]")
        if scheme in self.schemes:
            return None
        if scheme == "http" and (self.http_anywhere or _loopback(host)):
            return None
        allowed = "/".join(self.schemes)
        return (
            f"the URL must use {allowed}"
            + (" (plain http only to this host's loopback)" if "https" in self.schemes else "")
            + f": anything on the way could change what is downloaded; use e.g. {self.example}"
        )

    def describe(self) -> str:
        text = "/".join(self.schemes) + " URL"
        if self.http_anywhere:
            text += f" (http too: {self.http_anywhere})"
        elif "https" in self.schemes:
            text += " (http only to loopback)"
        return text + (", or empty" if self.empty_ok else "")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Int(Shape):
    def __init__(self, low: int, high: int, unit: str = "", why: str = ""):
        self.low, self.high, self.unit, self.why = low, high, unit, why

    def check(self, value: Any) -> Optional[str]:
        # A string must be plain digits: int() would also take " 9400", "9400\n", "9_400"
        # and other scripts' digits, which templates then write as they are.
        if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"give a whole number from {self.low} to {self.high}"
        if self.low <= value <= self.high:
            return None
        unit = f" {self.unit}" if self.unit else ""
        return f"it must be from {self.low} to {self.high}{unit}" + (
            f" ({self.why})" if self.why else ""
        )

    def describe(self) -> str:
        return f"int {self.low}-{self.high}" + (f" {self.unit}" if self.unit else "")


def Port() -> Int:
    return Int(1, 65535, why="a TCP port")


class Float(Shape):
    def __init__(
        self,
        low: float,
        high: float,
        low_open: bool = False,
        why: str = "",
        high_open: bool = False,
    ):
        self.low, self.high, self.low_open, self.why = low, high, low_open, why
        self.high_open = high_open

    def _interval(self) -> str:
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"{left}{self.low}, {self.high}{right}"

    def check(self, value: Any) -> Optional[str]:
        if isinstance(value, str) and not re.fullmatch(r"[+-]?[0-9]+(\.[0-9]+)?", value):
            return f"give a number from {self.low} to {self.high}"
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if isinstance(value, bool) or number != number:  # a bool, or not a number (nan)
            return f"give a number from {self.low} to {self.high}"
        too_low = number <= self.low if self.low_open else number < self.low
        too_high = number >= self.high if self.high_open else number > self.high
        if too_low or too_high:
            return f"it must be in {self._interval()}" + (f": {self.why}" if self.why else "")
        return None

    def describe(self) -> str:
        return f"number in {self._interval()}"


class Pattern(Shape):
    """A string matched whole: ``\\A(?:regex)\\Z`` (a trailing newline does not pass)."""

    def __init__(
        self,
        regex: str,
        example: str,
        what: str = "",
        empty_ok: bool = False,
        forbid: Sequence[str] = (),
    ):
        self.regex = re.compile(r"\A(?:" + regex + r")\Z")
        self.source = regex
        self.example = example
        self.what = what
        self.empty_ok = empty_ok
        self.forbid = tuple(forbid)

    def check(self, value: Any) -> Optional[str]:
        if self._empty(value):
            return None
        if not isinstance(value, str) or not self.regex.match(value):
            what = self.what or "the wrong form"
            if isinstance(value, str) and value.strip() != value:
                what += " (it has leading or trailing whitespace or a newline)"
            return f"{what}; give a value like {self.example}"
        if value.lower() in self.forbid:
            return f"{value!r} is not allowed here; give an exact value like {self.example}"
        return None

    def describe(self) -> str:
        return f"matches {self.source}" + (", or empty" if self.empty_ok else "")


def Name(example: str = "pytorch", empty_ok: bool = False) -> Pattern:
    return Pattern(
        r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}",
        example,
        "a name must be 1-64 letters, digits, _ . - (starting with a letter or digit)",
        empty_ok,
    )


def UserName(example: str) -> Pattern:
    # useradd's own rule on Debian/Ubuntu (NAME_REGEX of adduser), without the trailing $.
    return Pattern(
        r"[a-z_][a-z0-9_-]{0,31}",
        example,
        "a user or group name must be lower-case letters, digits, _ and - "
        "(at most 32, starting with a letter or _)",
    )


def Sha256(empty_ok: bool = False) -> Pattern:
    return Pattern(
        r"[0-9a-fA-F]{64}",
        "the 64 hex digits that sha256sum prints",
        "a sha256 is 64 hex digits",
        empty_ok,
    )


def Fingerprint(empty_ok: bool = False) -> Pattern:
    # 40 hex digits, or grouped in fours as gpg --fingerprint prints them.
    return Pattern(
        r"[0-9A-Fa-f]{40}|(?:[0-9A-Fa-f]{4} {1,2}){9}[0-9A-Fa-f]{4}",
        "the 40 hex digits that gpg --show-keys --with-fingerprint prints",
        "give the key's full fingerprint, 40 hex digits (a short key id is not enough)",
        empty_ok,
    )


class UnitName(Pattern):
    """A systemd service name without '.service'; the host check refuses a taken one."""

    def __init__(self, example: str):
        super().__init__(
            r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}",
            example,
            "a unit name must be letters, digits, _ . @ - without .service",
        )

    def check(self, value: Any) -> Optional[str]:
        problem = super().check(value)
        if problem is None and isinstance(value, str) and value.endswith(".service"):
            return f"give the name without .service, e.g. {self.example}"
        if problem is None and isinstance(value, str):
            package = system_unit(value)
            if package:
                return (
                    f"{value} is a unit of Debian's {package} package "
                    "(module_utils/debian_units.py, generated from Debian's Contents index); a "
                    "unit of that name in /etc/systemd/system would shadow or replace the "
                    "system's on every host that has the package, now or later. Choose a name "
                    f"of its own, e.g. kindling-{value}"
                )
        return problem

    def describe(self) -> str:
        return (
            "systemd service name, not one Debian's system packages ship "
            "(module_utils/debian_units.py) nor one an installed unit not written by Kindling has"
        )


class IPAddress(Shape):
    def __init__(self, example: str = "127.0.0.1"):
        self.example = example

    def check(self, value: Any) -> Optional[str]:
        if value == "localhost":
            return None
        if isinstance(value, str) and "%" in value:
            # A scoped IPv6 address (fe80::1%eth0): % is a specifier in systemd units.
            return f"give an address without a %zone, such as {self.example}"
        try:
            ipaddress.ip_address(str(value))
        except ValueError:
            return f"give an IP address such as {self.example} (or localhost)"
        return None

    def describe(self) -> str:
        return "IP address or localhost"


class Text(Shape):
    """Printable text on one line, without the characters its format can't hold."""

    def __init__(self, forbid: str = "", max_len: int = 200, empty_ok: bool = True, why: str = ""):
        self.forbid, self.max_len, self.empty_ok, self.why = forbid, max_len, empty_ok, why

    def check(self, value: Any) -> Optional[str]:
        if self._empty(value):
            return None
        if not isinstance(value, str) or not value.strip():
            return "give some text"
        if len(value) > self.max_len:
            return f"keep it to {self.max_len} characters"
        bad = [c for c in value if not c.isprintable() or c in self.forbid]
        if bad:
            return (
                "it may not hold control characters, newlines or "
                f"{' '.join(self.forbid) or 'the like'} "
                f"(found {', '.join(sorted({repr(c) for c in bad}))})"
                + (f": {self.why}" if self.why else "")
            )
        return None

    def describe(self) -> str:
        return "one line of printable text" + (
            f" without {' '.join(self.forbid)}" if self.forbid else ""
        )


class ListOf(Shape):
    def __init__(self, element: Shape, unique: bool = False, min_len: int = 0):
        self.element, self.unique, self.min_len = element, unique, min_len

    def check(self, value: Any) -> Optional[str]:
        if not isinstance(value, (list, tuple)):
            return "give a list"
        if len(value) < self.min_len:
            return f"give at least {self.min_len} element(s)"
        for index, item in enumerate(value):
            problem = self.element.check(item)
            if problem:
                return f"element {index} ({_quoted(item)}): {problem}"
        if self.unique and len({repr(v) for v in value}) != len(value):
            return "each element may appear once"
        return None

    def describe(self) -> str:
        return f"list of {self.element.describe()}"


def nearest(name: Any, known: Iterable[Any]) -> str:
    """ "did you mean X? " for the known name closest to ``name`` (difflib), or ""."""
    known = [str(k) for k in known]
    near = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    return f"did you mean {near[0]}? " if near else ""


class FreeKeys(Shape):
    """The keys of a free-form map (extra environment variables, labels): any name that
    fits ``key``, on purpose, for the reason given; a dict input says so with this."""

    def __init__(self, why: str, key: Optional[Shape] = None):
        self.why, self.key = why, key

    def check(self, value: Any) -> Optional[str]:
        return self.key.check(value) if self.key else None

    def describe(self) -> str:
        return f"any key ({self.why})"


class DictOf(Shape):
    """A dict whose keys are declared: a ``Choice`` of the known keys (an unknown key is
    refused naming the nearest one), or ``FreeKeys`` for a free-form map, on purpose."""

    def __init__(self, keys: Shape, values: Shape):
        if not isinstance(keys, (Choice, FreeKeys)):
            raise TypeError("DictOf keys: a Choice of the known keys, or FreeKeys(why)")
        self.keys, self.values = keys, values

    def check(self, value: Any) -> Optional[str]:
        if not isinstance(value, dict):
            return "give a mapping"
        for key, item in value.items():
            if isinstance(self.keys, Choice) and key not in self.keys.choices:
                known = ", ".join(str(c) for c in self.keys.choices)
                return f"unknown key {key!r}: {nearest(key, self.keys.choices)}(keys: {known})"
            problem = self.keys.check(key) or self.values.check(item)
            if problem:
                return f"entry {key!r}: {problem}"
        return None

    def describe(self) -> str:
        return f"mapping of {self.keys.describe()} to {self.values.describe()}"


class Record(Shape):
    """A dict with known keys, each with its shape; ``required`` keys must be there. An
    unknown key is refused first, naming the nearest known one (a misspelled required key
    is named as what it is, not as a missing one)."""

    def __init__(self, fields: Dict[str, Shape], required: Iterable[str] = ()):
        self.fields, self.required = fields, tuple(required)

    def check(self, value: Any) -> Optional[str]:
        if not isinstance(value, dict):
            return "give a mapping with keys " + ", ".join(self.fields)
        unknown = sorted(set(value) - set(self.fields), key=str)
        if unknown:
            return (
                f"unknown key {unknown[0]!r}: {nearest(unknown[0], self.fields)}"
                f"(keys: {', '.join(self.fields)})"
            )
        missing = [k for k in self.required if k not in value]
        if missing:
            return f"key {missing[0]} is missing (keys: {', '.join(self.fields)})"
        for key, shape in self.fields.items():
            if key in value:
                problem = shape.check(value[key])
                if problem:
                    return f"its {key} {_quoted(value[key])}: {problem}"
        return None

    def describe(self) -> str:
        return "mapping with " + ", ".join(self.fields)


class Choice(Shape):
    """A value from a fixed set, for the elements and keys argument_specs can't restrict."""

    def __init__(self, choices: Sequence[Any]):
        self.choices = tuple(choices)

    def check(self, value: Any) -> Optional[str]:
        if value in self.choices:
            return None
        return "choose one of " + ", ".join(str(c) for c in self.choices)

    def describe(self) -> str:
        return "one of " + ", ".join(str(c) for c in self.choices)


def check_all(
    shapes: Dict[str, Shape], values: Dict[str, Any], secret: Iterable[str] = ()
) -> List[Tuple[str, str]]:
    """(variable, message) for every value that does not fit its shape, in shape order."""
    secret = set(secret)
    found = []
    for name, shape in shapes.items():
        if name not in values:
            continue
        problem = shape.check(values[name])
        if problem and name in secret and any(leaf in problem for leaf in _leaves(values[name])):
            problem = f"it does not fit ({shape.describe()})"  # the problem quoted the value
        if problem:
            found.append((name, problem_message(name, values[name], problem, name in secret)))
    return found


def _leaves(value: Any) -> Iterable[str]:
    """The scalars inside a value, as text: what a secret's message must not contain."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(key)
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif value not in (None, ""):
        yield str(value)


# --- Counts: how many of something, as Ansible's ``serial`` takes it


class Count(Shape):
    """A whole number 1 or more, a percentage from 1% to 100%, or a list of those.

    Ansible's ``serial`` (kindling_serial) and any input like it: a batch of hosts.
    Ansible itself turns ``"25%"`` into a number of hosts with int(), so a word ends the
    run in a raw exception, and 0, a negative number or 150% would be taken as they are.
    """

    def __init__(self, what: str = "hosts per batch", example: str = '"25%"', list_ok: bool = True):
        self.what, self.example, self.list_ok = what, example, list_ok

    def _fix(self) -> str:
        text = (
            f"give a whole number of {self.what} (1 or more), or a percentage from 1% to 100% "
            f"such as {self.example}"
        )
        return text + (', or a list of those such as [1, "25%", "100%"]' if self.list_ok else "")

    def _one(self, value: Any) -> Optional[str]:
        if isinstance(value, bool):
            return self._fix()
        if isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"[0-9]+%", text) and value == text:
                if 1 <= int(text[:-1]) <= 100:
                    return None
                return f"a percentage must be from 1% to 100%; {self._fix()}"
            if re.fullmatch(r"[+-]?[0-9]+", value):
                value = int(value)
            else:
                return self._fix()
        if not isinstance(value, int):
            return self._fix()
        if value < 1:
            return f"it must be 1 or more ({value} would leave no {self.what}); {self._fix()}"
        return None

    def check(self, value: Any) -> Optional[str]:
        if isinstance(value, (list, tuple)):
            if not self.list_ok:
                return self._fix()
            if not value:
                return f"an empty list has no batch size; {self._fix()}"
            for index, item in enumerate(value):
                problem = self._one(item)
                if problem:
                    return f"element {index} ({_quoted(item)}): {problem}"
            return None
        return self._one(value)

    def describe(self) -> str:
        return "count: int >= 1 or 1%-100%" + (", or a list of those" if self.list_ok else "")


# --- Files read by another program: each path input names the program that reads it


class Consumer:
    """A program that reads files from a directory, and the rule for the names it reads."""

    def __init__(self, title: str, dirs: Sequence[str], name: str, rule: str, man: str):
        self.title, self.dirs, self.rule, self.man = title, tuple(dirs), rule, man
        self.name = re.compile(r"\A(?:" + name + r")\Z")
        self.source = name

    def reads(self, file_name: str) -> bool:
        return bool(self.name.match(file_name))


CONSUMERS: Dict[str, Consumer] = {
    "apt_sources": Consumer(
        "apt sources (deb822)",
        ("/etc/apt/sources.list.d",),
        r"[A-Za-z0-9_.-]+\.sources",
        'apt reads /etc/apt/sources.list.d files whose names "may only contain letters (a-z '
        'and A-Z), digits (0-9), underscore (_), hyphen (-) and period (.) characters" and '
        'that end in ".list or .sources depending on the contained style"; Kindling writes '
        "the deb822 style, so the name ends in .sources",
        "sources.list(5)",
    ),
    "apt_preferences": Consumer(
        "apt preferences",
        ("/etc/apt/preferences.d",),
        r"[A-Za-z0-9_-]+|[A-Za-z0-9_-][A-Za-z0-9_.-]*\.pref",
        "apt reads /etc/apt/preferences.d files that \"have either no or 'pref' as filename "
        "extension and only contain alphanumeric, hyphen (-), underscore (_) and period (.) "
        'characters"; any other file is ignored with only a notice, and the pin never applies',
        "apt_preferences(5)",
    ),
    "modprobe_d": Consumer(
        "modprobe.d",
        ("/etc/modprobe.d",),
        r"[A-Za-z0-9_.+-]+\.conf",
        "modprobe only reads /etc/modprobe.d/*.conf",
        "modprobe.d(5): configuration files are read from /etc/modprobe.d/*.conf",
    ),
    "ld_so_conf_d": Consumer(
        "ld.so.conf.d",
        ("/etc/ld.so.conf.d",),
        r"[A-Za-z0-9_.+-]+\.conf",
        "ldconfig only reads /etc/ld.so.conf.d/*.conf",
        "ldconfig(8); Debian's /etc/ld.so.conf is `include /etc/ld.so.conf.d/*.conf`",
    ),
    "profile_d": Consumer(
        "profile.d",
        ("/etc/profile.d",),
        r"[A-Za-z0-9_.-]+\.sh",
        "login shells read only /etc/profile.d/*.sh",
        "bash(1) INVOCATION; Debian's /etc/profile sources `/etc/profile.d/*.sh`",
    ),
    "apt_keyring": Consumer(
        "apt signed-by keyring",
        ("/usr/share/keyrings", "/etc/apt/keyrings"),
        r"[A-Za-z0-9_.-]+\.gpg",
        "a keyring lives in /usr/share/keyrings or /etc/apt/keyrings and ends in .gpg (apt "
        'reads a binary keyring as Signed-By only "with the file extension .gpg")',
        "sources.list(5), Signed-By",
    ),
    "dockerd": Consumer(
        "dockerd",
        ("/etc/docker",),
        r"daemon\.json",
        "dockerd reads only /etc/docker/daemon.json",
        "dockerd(8): --config-file defaults to /etc/docker/daemon.json",
    ),
}


class ConsumedFile(AbsPath):
    """A path of a file that another program reads: its name must be one that program reads.

    ``derived`` lists the names a role makes from this one ((what, function of the file
    name)): each is held to the same consumer's rule.
    """

    def __init__(
        self,
        consumer: str,
        example: str,
        derived: Sequence[Tuple[str, Any]] = (),
        empty_ok: bool = False,
    ):
        self.consumer = CONSUMERS[consumer]
        self.derived = tuple(derived)
        super().__init__(
            under=self.consumer.dirs,
            name=self.consumer.source,
            why=f"{self.consumer.rule} ({self.consumer.man})",
            example=example,
            empty_ok=empty_ok,
        )

    def check(self, value: Any) -> Optional[str]:
        problem = super().check(value)
        if problem or self._empty(value):
            return problem
        base = value.rstrip("/").rsplit("/", 1)[-1]
        for what, derive in self.derived:
            name = derive(base)
            if not self.consumer.reads(name):
                return (
                    f"the role derives {what} from it, named {name}, which "
                    f"{self.consumer.title} ignores: {self.consumer.rule} "
                    f"({self.consumer.man}); e.g. {self.example}"
                )
        return None

    def describe(self) -> str:
        return f"a file {self.consumer.title} reads ({self.consumer.man}): " + super().describe()


# --- Listeners: the address and port a Kindling service listens on


def is_wildcard(address: Any) -> bool:
    """0.0.0.0, :: and their other spellings: every interface of the host."""
    try:
        return ipaddress.ip_address(str(address)).is_unspecified
    except ValueError:
        return False


class ListenPort(Int):
    """A TCP port a service listens on; below 1024 only for a service that runs as root."""

    def __init__(self, runs_as: str, example: int):
        super().__init__(1, 65535, why="a TCP port")
        self.runs_as, self.example = runs_as, example

    def check(self, value: Any) -> Optional[str]:
        problem = super().check(value)
        if problem:
            return problem
        if int(value) < 1024:
            return (
                f"ports below 1024 are privileged (only root may listen on them), and the "
                f"service runs as {self.runs_as}, not root; use a port from 1024 to 65535 such as "
                f"the default {self.example}, and put a reverse proxy in front for 80 or 443"
            )
        return None

    def describe(self) -> str:
        return f"TCP port 1024-65535 (the service runs as {self.runs_as})"


# --- Unit names of the operating system


def system_unit(name: str) -> Optional[str]:
    """The Debian package that ships a unit of this name (module_utils/debian_units.py)."""
    try:
        from ansible.module_utils.debian_units import UNITS
    except ImportError:  # pragma: no cover - imported as a plain module in tools
        from debian_units import UNITS  # type: ignore
    if name in UNITS:
        return UNITS[name]
    if "@" in name and name.split("@", 1)[0] + "@" in UNITS:
        return UNITS[name.split("@", 1)[0] + "@"]
    return None
