"""Refuse a plugin name that would not make a valid distribution, package and entry point."""

import re
import sys

NAME = {{ cookiecutter.plugin_name|tojson }}
SLUG = {{ cookiecutter.__slug|tojson }}

if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", SLUG):
    sys.exit(
        f"plugin_name {NAME!r} gives {SLUG!r}: use letters, digits, spaces or hyphens, "
        "starting with a letter (for example 'hello' or 'shell guard')"
    )
for prefix in ("pluggable-pi-", "pi-"):
    if SLUG.startswith(prefix):
        sys.exit(f"plugin_name {NAME!r}: leave out the {prefix!r} prefix, the template names the distribution pluggable-pi-<name>")
for key, value in {
    "description": {{ cookiecutter.description|tojson }},
    "author_name": {{ cookiecutter.author_name|tojson }},
    "author_email": {{ cookiecutter.author_email|tojson }},
}.items():
    if '"' in value or "\\" in value or "\n" in value:
        sys.exit(f"{key} {value!r}: leave out double quotes, backslashes and line breaks (it goes into pyproject.toml)")
