"""What every `wlmap` command shares: exit codes, the CLI error, JSON output, the registry of
built-in plus --definition definitions."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from ..karta.load import Definition, NotAKarta, load_builtin, load_path
from ..karta.registry import Registry

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_NO_DEFINITION = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE, errors: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.code = code
        self.errors = errors  # an interpretation's errors (path, message, expression), when it failed


def print_error(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)


def dump_json(v: Any) -> str:
    return json.dumps(v, indent=2, ensure_ascii=False)


def read_input(path: str) -> bytes:
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
                print(f"warning: definition {d.name or d.origin} is invalid and is not used: {first}", file=sys.stderr)
        layer += defs
    return Registry.of(load_builtin(), layer)


def request_timeout(text: str) -> float | None:
    """kubectl's --request-timeout: a number of seconds or a duration (1s, 2m, 1h, 1m30s); 0: none."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        seconds = float(text)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise argparse.ArgumentTypeError(f'invalid duration "{text}": a number of seconds or e.g. 30s, 2m, 1h')
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        seconds = sum(float(n) * scale[u] for n, u in parts)
    return None if seconds == 0 else seconds


def add_context_flags(p: argparse.ArgumentParser, context_help: str, timeout_help: str) -> None:
    """--context (repeatable) or --all-contexts, and --context-timeout: the flags of a command that
    reads several kubeconfig contexts at once (`live._named_contexts` reads them)."""
    which = p.add_mutually_exclusive_group()
    which.add_argument("--context", action="append", metavar="CTX", help=context_help)
    which.add_argument("--all-contexts", action="store_true", help="read every context of the kubeconfig, concurrently")
    p.add_argument("--context-timeout", type=float, default=10.0, metavar="SECONDS", help=timeout_help)
