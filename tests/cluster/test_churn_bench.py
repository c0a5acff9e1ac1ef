"""The fast variant of the churn benchmark (benchmarks/churn_bench.py): on its own real API
server with a small fill, every pod status patch the driver makes is accepted and shows on the
list stream and, for the sampled ones, on GET one; the pods it left not-ready are made ready
again.  Speed is the benchmark's business, not this test's: nothing here is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .apiserver import ensure_binaries

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.kube  # the benchmark starts its own API server (and Redis, through the store)
@pytest.mark.parametrize("store", [False, pytest.param(True, marks=pytest.mark.redis)],
                         ids=["one-process", "through-the-store"])
def test_short_churn_sees_every_change(tmp_path: Path, store: bool) -> None:
    """`through-the-store`: `--role all` on a real Redis, so each change goes model -> store ->
    the reads and streams, the path of a shard and an API replica."""
    if not ensure_binaries():
        if os.environ.get("WLMAP_REQUIRE_KUBE") == "1":
            pytest.fail("kube-apiserver/etcd binaries are missing (scripts/kube-apiserver/build.sh)")
        pytest.skip("kube-apiserver binaries are not built")
    out = tmp_path / "churn.json"
    r = subprocess.run([sys.executable, "benchmarks/churn_bench.py", "--workloads", "12", "--namespaces", "2",
                        "--rates", "10,20", "--seconds", "2", "--pause", "0", "--json", str(out),
                        *(["--store"] if store else [])],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads(out.read_text())
    steps = res["steps"]
    assert steps and steps[0]["target_per_s"] == 10  # a loaded machine may stop it after the first rate
    for st in steps:
        assert st["patches"] == st["target_per_s"] * 2 and st["accepted"] == st["patches"] and st["failed"] == 0
        assert st["stream_never"] == 0 and st["left_unseen"] == 0, st
        assert st["get_n"] >= 1 and st["get_never"] == 0, st
    assert isinstance(res["restored"], int) and res["stream_error"] == ""  # the fill put back as it was
    assert res["verdict"]["absorbed_per_s"] > 0
    assert res.get("store", False) is store
