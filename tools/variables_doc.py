#!/usr/bin/env python3
"""Render docs/VARIABLES.md from every role's meta/argument_specs.yml.

The argument specs are the one place a role's variables are declared, typed and
described; this keeps the single user-facing list in step with them.

    python tools/variables_doc.py            # rewrite docs/VARIABLES.md
    python tools/variables_doc.py --check    # exit 1 when the file is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ansible.module_utils
import yaml

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "VARIABLES.md"
# The shapes come from module_utils/role_inputs.py, which modules import as
# ansible.module_utils.role_inputs; make the repository's folder part of that package.
ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
from ansible.module_utils.role_inputs import SHAPES  # noqa: E402

HEADER = """# Variables

Every variable a user can set, per role, generated from the roles'
`meta/argument_specs.yml` by `tools/variables_doc.py` (a unit test fails when this file
is out of date). Defaults live in each role's `defaults/main.yml`; the role READMEs
explain them in context. Inventories set them in `group_vars/` (see `inventories/gpu`).

The shape column is what stage 1 of site.yml checks before any change, on top of the
type: module_utils/role_inputs.py assigns every variable one of the shared types of
module_utils/input_types.py, or says why it has none ("free (...)").
"""


def _one_line(value: object) -> str:
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return " ".join(str(value).split()).replace("|", "\\|")


def _default(spec: dict) -> str:
    if "default" not in spec:
        return "(required)" if spec.get("required") else ""
    value = spec["default"]
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    # A bare scalar dumps as "300\n...\n": drop YAML's end-of-document marker.
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return f"`{text}`".replace("|", "\\|")


def render() -> str:
    parts = [HEADER]
    for specs_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = specs_file.parent.parent.name
        specs = yaml.safe_load(specs_file.read_text())["argument_specs"]
        for entry, spec in specs.items():
            options = spec.get("options") or {}
            if not options:
                continue
            title = role if entry == "main" else f"{role} (`tasks_from: {entry}`)"
            parts.append(f"\n## {title}\n\n{_one_line(spec.get('short_description', ''))}\n")
            shapes = SHAPES.get(role, {}) if entry == "main" else {}
            parts.append(
                "| variable | type | shape | default | description |\n|---|---|---|---|---|"
            )
            for name, opt in options.items():
                kind = opt.get("type", "str")
                if kind == "list" and "elements" in opt:
                    kind = f"list of {opt['elements']}"
                if "choices" in opt:
                    kind += " (" + ", ".join(str(c) for c in opt["choices"]) + ")"
                desc = _one_line(opt.get("description", ""))
                shape = _one_line(shapes[name].describe()) if name in shapes else "see main"
                parts.append(f"| `{name}` | {kind} | {shape} | {_default(opt)} | {desc} |")
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python tools/variables_doc.py")
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
