"""Run the real gojq binary as a parse oracle (differential testing).

``gojq -n -- EXPR`` is executed for each expression.  A parse failure makes the
CLI exit with status 3 and print::

    gojq: invalid query: EXPR
        EXPR
          ^  MESSAGE

``MESSAGE`` is exactly ``gojq.ParseError.Error()``.  Anything else (success,
compile errors such as ``function not defined``, runtime errors, or a timeout
because the query runs forever) means the query *parsed*.

Note: the gojq CLI trims Unicode white space around the query before parsing
(the library does not), so differential inputs must not start or end with
characters such as ``\\v``, ``\\f`` or U+00A0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

GOJQ_DEFAULT = "/usr/bin/gojq"
INSTALL_HINT = (
    "the gojq binary is required for the differential parser tests but was not found at "
    f"{GOJQ_DEFAULT} (or on PATH); install it with `apt-get install gojq` (Debian/Ubuntu, 0.12.11)"
)
EXPECTED_VERSION = "0.12.11"

_CARET = re.compile(r"\n[ \t]*\^  (.*)\Z", re.S)


def gojq_path() -> str | None:
    override = os.environ.get("GOJQ")
    if override and os.path.exists(override):
        return override
    if os.path.exists(GOJQ_DEFAULT):
        return GOJQ_DEFAULT
    return shutil.which("gojq")


def gojq_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"gojq (\d+\.\d+\.\d+)", out.stdout + out.stderr)
    return m.group(1) if m else (out.stdout + out.stderr).strip()


def _run_one(path: str, expr: str, timeout: float) -> tuple[bool, str | None]:
    try:
        proc = subprocess.run(
            [path, "-n", "--", expr],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"},
        )
    except subprocess.TimeoutExpired:
        return True, None  # parse errors are reported before evaluation starts
    err = proc.stderr.decode("utf-8", "surrogateescape")
    if proc.returncode == 3 and err.startswith("gojq: invalid query:"):
        m = _CARET.search(err.rstrip("\n"))
        if m is None:
            raise AssertionError(f"cannot find the caret line in gojq's output for {expr!r}: {err!r}")
        return False, m.group(1)
    return True, None


def run_gojq(exprs: Iterable[str], timeout: float = 5.0) -> dict[str, tuple[bool, str | None]]:
    """Map each expression to ``(parsed, message)`` according to gojq."""
    path = gojq_path()
    if path is None:
        raise RuntimeError(INSTALL_HINT)
    uniq = list(dict.fromkeys(exprs))
    workers = max(4, min(32, (os.cpu_count() or 2) * 4))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda e: _run_one(path, e, timeout), uniq))
    return dict(zip(uniq, results))
