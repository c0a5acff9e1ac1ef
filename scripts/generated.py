"""A file generated from the code: written, or with `--check` compared (exit 1 when stale)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(target: Path, render: Callable[[], str], script: str) -> int:
    text = render()
    if "--check" in sys.argv:
        if not target.exists() or target.read_text() != text:
            print(f"{target} is stale: run python {script}", file=sys.stderr)
            return 1
        print(f"{target} is current")
        return 0
    target.write_text(text)
    print(f"wrote {target}")
    return 0
