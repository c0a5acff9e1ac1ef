"""The fast variant of the soak (benchmarks/soak.py runs it for 10 minutes): a real server held
at 80% of its measured capacity by wrk for 30 s answers every request, and keeps its workers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.soak
def test_short_soak_has_no_errors(tmp_path: Path) -> None:
    if shutil.which("wrk") is None:
        pytest.fail("wrk is not installed (make test installs it)")
    out = tmp_path / "soak.json"
    # memory trends need minutes to mean anything: judged by the long run, not here
    r = subprocess.run([sys.executable, "benchmarks/soak.py", "--minutes", "0.5", "--segment", "10",
                        "--max-slope", "1000", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["errors"] == 0 and res["server_alive"] and res["worker_restarts"] == 0
    assert res["requests"] > 1000 and len(res["segments"]) == 3
