"""The long fuzzing run: the suite's property tests (hypothesis) and schema-driven HTTP fuzzing
(schemathesis over openapi.json) with every example budget multiplied, counted.

    python benchmarks/fuzz_long.py [--scale 8]

Runs `pytest tests/fuzz` with WLMAP_FUZZ_SCALE=<scale> and hypothesis' statistics, sums the test
cases each property ran, and fails unless every test passed and at least --min cases ran.
The runs are deterministic (derandomized), so a failure reproduces with the same command.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = re.compile(r"- (\d+) passing, (\d+) failing, and (\d+) invalid test cases")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=8.0)
    ap.add_argument("--min", type=int, default=10_000, help="generated cases the run must reach")
    ap.add_argument("--log", default=str(Path(tempfile.gettempdir()) / "wlmap-fuzz-long.log"),
                    help="where pytest's whole output goes (failures with their falsifying examples)")
    args = ap.parse_args()
    env = dict(os.environ, WLMAP_FUZZ_SCALE=str(args.scale))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz",
                           "--hypothesis-show-statistics", "--timeout", "3600"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    Path(args.log).write_text(proc.stdout + proc.stderr)
    passing = failing = invalid = 0
    per_file: dict[str, int] = {}
    current = ""
    for line in proc.stdout.splitlines():
        if line.startswith("tests/") and line.rstrip().endswith(":"):
            current = line.split("::")[0]
        m = CASES.search(line)
        if m:
            p, f, i = (int(x) for x in m.groups())
            passing, failing, invalid = passing + p, failing + f, invalid + i
            per_file[current] = per_file.get(current, 0) + p + f
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    print(f"pytest: {summary}")
    for f, n in sorted(per_file.items()):
        print(f"  {f}: {n} cases")
    print(f"generated cases: {passing + failing} ({passing} passing, {failing} failing; {invalid} draws rejected) "
          f"in {took:.0f} s at scale {args.scale:g}")
    ok = proc.returncode == 0 and failing == 0 and passing >= args.min
    print("verdict:", "PASS" if ok else "FAIL")
    if proc.returncode != 0:
        failures = proc.stdout.split("= FAILURES =", 1)[-1].split("Hypothesis Statistics", 1)[0]
        print(failures[-6000:])
        print(f"whole output: {args.log}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
