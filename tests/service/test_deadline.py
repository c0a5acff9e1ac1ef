"""A definition cannot hang or crash the service: runaway jq is cut at the deadline with a
problem naming the expression, while other requests keep being served."""

from __future__ import annotations

import copy
import json
import threading
import time

import httpx
import pytest
import yaml

from app.jqlang import codegen

from .conftest import EXAMPLES, Server
from .test_api import TASK, problem

BASE = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())


def hostile(replicas_path: str) -> dict:
    d = copy.deepcopy(BASE)
    d["metadata"]["name"] = "hostile"
    d["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = replicas_path
    return d


DIGITS = "(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"
RUNAWAYS = [
    "def f: f; f",
    "until(false; .)",
    "[limit(100000000000; def r: ., r; r)] | length",
    # inside the native subset: its budget hands the 10^10 product to libjq, which the deadline cuts
    "[" + " | ".join(f"{DIGITS} as $v{i}" for i in range(10)) + " | 1] | length",
]


def test_the_product_runaway_is_in_the_native_subset() -> None:
    assert codegen.compile_expression(RUNAWAYS[-1]) is not None


@pytest.mark.parametrize("expr", RUNAWAYS)
def test_runaway_expression_is_cut_and_named(client: httpx.Client, expr: str):
    """Cut: the deadline's own problem (how soon: benchmarks/http_bench.py, "runs away")."""
    r = client.post("/interpret", json={"object": TASK, "definition": hostile(expr)})
    body = problem(r, 422)
    assert body["type"].endswith("evaluation-deadline-exceeded")
    assert body["errors"][0]["expression"] == expr
    assert body["errors"][0]["path"] == "spec.structureDefinition.rootComponent.scaleDefinition.replicasPath"


def test_catastrophic_regex_fails_cleanly_within_the_deadline(client: httpx.Client):
    # Oniguruma (libjq's regex engine) has a retry limit: the backtracking blow-up ends in an
    # error rather than a hang.  Either way the caller is told which expression, fast: as an
    # error on that component of a partial result, or as a deadline problem.
    expr = '("a" * 40) + "b" | test("^(a|aa)+$") | if . then 1 else 0 end'
    started = time.monotonic()
    r = client.post("/interpret", json={"object": TASK, "definition": hostile(expr)})
    assert time.monotonic() - started < 5
    if r.status_code == 200:
        body = r.json()
        assert body["complete"] is False and body["status"]["phase"] == "Running"
    else:
        body = problem(r, 422)
        assert body["type"].endswith("evaluation-deadline-exceeded")
    assert body["errors"][0]["expression"] == expr


def test_other_requests_keep_flowing_during_a_hang(server: Server):
    hang_done = threading.Event()
    result: dict = {}

    def hang() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            result["hang"] = c.post("/interpret", json={"object": TASK, "definition": hostile("def f: f; f")})
        hang_done.set()

    t = threading.Thread(target=hang)
    t.start()
    time.sleep(0.1)
    answered = 0
    with httpx.Client(base_url=server.url, timeout=30) as c:
        while not hang_done.is_set():
            assert c.post("/interpret", json=TASK).status_code == 200  # built-in-free path: directory definition
            answered += 1
    t.join()
    assert result["hang"].status_code == 422
    # served beside it, not queued behind it (their latency: benchmarks/http_bench.py, "runs away")
    assert answered >= 5, answered


def test_environment_never_leaks(client: httpx.Client):
    d = copy.deepcopy(BASE)
    d["metadata"]["name"] = "leaky"
    d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"]["running"] = [
        {"byExpression": {"expression": "[env, $ENV] | tostring", "expectedResult": "[{},{}]"}}]
    r = client.post("/interpret", json={"object": TASK, "definition": d})
    assert r.status_code == 200, r.text
    assert r.json()["status"]["matched"] == ["Running"]  # env and $ENV are empty objects
    assert "PATH" not in r.text and "HOME" not in r.text


def test_worker_survives_many_bad_and_good_requests(client: httpx.Client):
    for i in range(5):
        bad = client.post("/interpret", json={"object": TASK, "definition": hostile("error(\"boom\")")})
        assert bad.status_code == 200 and bad.json()["errors"][0]["message"].endswith(": boom"), bad.text
        assert client.post("/interpret", json=TASK).json()["complete"] is True
    text = client.get("/metrics").text
    assert "wlmap_evaluation_deadline_exceeded_total" in text
