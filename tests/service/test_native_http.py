"""How a definition's expressions are evaluated, as the API and the CLI say it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

WLMAP = Path(sys.executable).parent / "wlmap"


def test_definition_evaluation_over_http(client: httpx.Client) -> None:
    r = client.get("/definitions/sparkoperator-k8s-io-sparkapplication-v1beta2", params={"evaluation": "true"})
    assert r.status_code == 200
    ev = r.json()
    assert ev["expressions"] == len(ev["items"]) and 0 < ev["native"] < ev["expressions"]
    slow = [x for x in ev["items"] if not x["native"]]
    assert all("def bytes" in x["expression"] and x["reason"] == "uses funcdef" for x in slow)
    assert client.get("/definitions/jobset-x-k8s-io-jobset-v1alpha2", params={"evaluation": "true"}).json()["native"] \
        == 13
    assert client.get("/definitions/jobset-x-k8s-io-jobset-v1alpha2").json()["kind"] == "Karta"  # unchanged


def test_definition_evaluation_in_the_cli() -> None:
    p = subprocess.run([str(WLMAP), "definitions", "show", "sparkoperator-k8s-io-sparkapplication-v1beta2",
                        "--evaluation"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    first, header, *rows = p.stdout.splitlines()
    assert first.endswith("expressions run natively (the rest through libjq)")
    assert header.split()[:3] == ["STAGE", "HOW", "EXPRESSION"]
    assert sum(1 for r in rows if " libjq " in r and r.rstrip().endswith("uses funcdef")) == 2
    j = subprocess.run([str(WLMAP), "definitions", "show", "sparkoperator-k8s-io-sparkapplication-v1beta2",
                        "--evaluation", "-o", "json"], capture_output=True, text=True, timeout=60)
    assert json.loads(j.stdout)["native"] == int(first.split()[0])
