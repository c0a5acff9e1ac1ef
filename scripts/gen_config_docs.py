"""Write docs/configuration.md from the settings' declaration (app/service/settings.py);
`--check` fails when the file is stale."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from generated import write_or_check  # scripts/generated.py

from app.service.flags import shown_default
from app.service.settings import OPTS, kind

TARGET = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

INTRO = """\
# Configuration

`wlmap serve` takes each setting as a flag or as an environment variable (a flag given wins; in a
pod, the Helm chart sets the variables). A repeatable flag adds to its variable's list, except
`--accelerator-resource` and `--gpu-resource`, which replace it (they are taken by `wlmap
interpret`, `describe` and `get` too). Lists in variables are comma-separated, `WLMAP_DEFINITIONS`
is separated like `PATH`. Booleans are `true` or `false`. Settings that cannot work together
(`--role shard` without `--store`, half a TLS pair, ...) stop the service at start with `error:`
and exit code 2.

This page is generated from `app/service/settings.py` by `python scripts/gen_config_docs.py`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    rows = ["| Flag | Environment | Default | Meaning |", "|---|---|---|---|"]
    for name, o in OPTS.items():
        k = kind(name)
        value = "true|false" if k is bool else "|".join(k) if isinstance(k, tuple) else o.metavar
        flag = f"`{o.flag}{' ' + value if value else ''}`" if o.flag else "—"
        default = shown_default(name)
        default = (default if o.default_text else f"`{default}`") if default else "—"
        sep = " (path-separated)" if o.sep == os.pathsep and o.sep != "," else ""
        rows.append(f"| {_cell(flag)} | `{o.env}`{sep} | {_cell(default)} | "
                    f"{_cell(o.help)} |")
    return INTRO + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(write_or_check(TARGET, render, "scripts/gen_config_docs.py"))
