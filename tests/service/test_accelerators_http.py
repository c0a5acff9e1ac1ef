"""Accelerators and integer units over real HTTP (issue 22): the default rules, and
--accelerator-resource / --gpu-resource (and their WLMAP_* variables) changing the answer of a
real `wlmap serve` -- in its HTTP worker processes and in its evaluation workers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from app.service.models import Interpretation

from .conftest import ROOT, Server

DEPLOYMENT, STATEFULSET = yaml.safe_load_all((ROOT / "tests" / "data" / "manifests" / "accelerators.yaml").read_text())


def interpret(s: Server, obj: dict) -> dict:
    with s.client() as c:
        r = c.post("/interpret", json=obj)
    assert r.status_code == 200, r.text
    Interpretation.model_validate(r.json())
    return r.json()


def test_default_rules_count_every_vendor_and_integer_units() -> None:
    s = Server()
    try:
        d = interpret(s, DEPLOYMENT)
        assert d["totals"]["gpus"] == 16 and d["totals"]["accelerators"] == {"amd.com/gpu": 16}
        assert d["totals"]["requestValues"] == {"amd.com/gpu": 16, "cpu": 26000, "memory": 512 * 2**30}
        [inst] = d["tree"]["instances"]
        assert inst["pod"]["accelerators"] == {"amd.com/gpu": 8} and inst["pod"]["requestValues"]["cpu"] == 13000
        st = interpret(s, STATEFULSET)
        assert st["totals"]["gpus"] == 3  # the Intel sidecars; MIG slices are not whole GPUs
        assert st["totals"]["accelerators"] == {"gpu.intel.com/i915": 3, "nvidia.com/mig-1g.10gb": 6}
        assert st["totals"]["requestValues"]["memory"] == 3 * (8 * 2**30 + 3 * 2**29)
    finally:
        s.stop()


def test_the_flags_change_the_answer_in_http_and_evaluation_workers() -> None:
    # Two HTTP workers (settings travel as WLMAP_*) and every definition in an evaluation worker
    # (a spawned process, given the rules when it starts); one list from the flag, one from the env.
    s = Server("--workers", "2", "--isolation", "all", "--gpu-resource", "nvidia.com/gpu",
               env={"WLMAP_ACCELERATOR_RESOURCE": "nvidia.com/mig-*,example.com/*"})
    try:
        for _ in range(4):  # whichever HTTP worker answers
            d = interpret(s, DEPLOYMENT)
            assert d["totals"]["gpus"] == 0 and d["totals"]["accelerators"] == {}
            assert d["totals"]["requestValues"]["amd.com/gpu"] == 16
            st = interpret(s, STATEFULSET)
            assert st["totals"]["gpus"] == 0
            assert st["totals"]["accelerators"] == {"nvidia.com/mig-1g.10gb": 6}
    finally:
        s.stop()


def test_a_bad_pattern_is_a_usage_error() -> None:
    wlmap = Path(sys.executable).parent / "wlmap"
    r = subprocess.run([str(wlmap), "serve", "--accelerator-resource", "amd.com/[gpu]"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "not a resource name or pattern" in r.stderr
    r = subprocess.run([str(wlmap), "serve"], capture_output=True, text=True, timeout=60,
                       env={"WLMAP_GPU_RESOURCE": "a b", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and "not a resource name or pattern" in r.stderr
    assert "Traceback" not in r.stderr
