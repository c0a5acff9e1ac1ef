"""What every `wlmap` command shares: exit codes, the CLI error, JSON output, the registry of
built-in plus --definition definitions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from ..karta.load import Definition, NotAKarta, load_builtin, load_path
from ..karta.registry import Registry

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_NO_DEFINITION = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def _err(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)


def _dump_json(v: Any) -> str:
    return json.dumps(v, indent=2, ensure_ascii=False)


def _read(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise CliError(f"read {path}: {e.strerror or e}") from None


def build_registry(extra: list[str] | None) -> Registry:
    layer: list[Definition] = []
    for p in extra or []:
        try:
            defs = load_path(p, "directory")
        except (OSError, DocumentError, NotAKarta) as e:
            raise CliError(f"--definition {p}: {e}") from None
        for d in defs:
            if not d.valid:
                first = next(f.message for f in d.findings if f.level == "error")
                print(f"warning: definition {d.name or d.origin} is invalid and is not used: {first}",
                      file=sys.stderr)
        layer += defs
    return Registry.of(load_builtin(), layer)
