"""`wlmap update --replicas` and `wlmap divide` (issue 32 item 1), through the CLI's entry point."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .test_cli_update import _run

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
DEPLOYMENT = CATALOG / "apps/Deployment/v1/testdata/running.yaml"
LWS = CATALOG / "leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml"


def test_update_replicas(capsys):
    code, out, _ = _run(capsys, "update", str(DEPLOYMENT), "--replicas", "deployment=9")
    assert code == 0 and yaml.safe_load(out)["spec"]["replicas"] == 9
    code, out, _ = _run(capsys, "update", str(DEPLOYMENT), "--replicas", "deployment=2", "-o", "json")
    assert code == 0 and json.loads(out)["totals"]["pods"] == 2


def test_update_replicas_refused_by_name(capsys):
    code, _, err = _run(capsys, "update", str(LWS), "--replicas", "worker=3")
    assert code == 1 and "component worker: its replicas are computed" in err
    code, _, err = _run(capsys, "update", str(DEPLOYMENT), "--replicas", "deployment=x")
    assert code == 2


def test_divide_prints_one_document_per_cluster(capsys):
    code, out, _ = _run(capsys, "divide", str(DEPLOYMENT), "--cluster", "a=2", "--cluster", "b=1")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["spec"]["replicas"] for d in docs] == [3, 1]
    assert out.startswith("# cluster: a (deployment=3)\n") and "# cluster: b (deployment=1)\n" in out
    code, out, _ = _run(capsys, "divide", str(DEPLOYMENT), "--cluster", "a=1", "--cluster", "b=1", "-o", "json")
    body = json.loads(out)
    assert code == 0 and [p["replicas"] for p in body["parts"]] == [{"deployment": 2}, {"deployment": 2}]
