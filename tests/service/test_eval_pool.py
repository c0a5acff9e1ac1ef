"""Evaluation cannot be starved: every way an isolated evaluation ends gives its worker back
(or a fresh one), waiting for a worker has a bound (503), numbers no JSON can carry are refused
up front (422 naming where), and a worker has a memory limit.  Real worker processes, a real
`wlmap serve` over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.engine import pool as evaluator
from app.engine.interpret import InterpretationError
from app.karta.load import definition_from_document

from .conftest import Server
from .test_api import TASK, problem
from .test_deadline import BASE, hostile

BIG = 2**64  # one beyond what orjson (and so any JSON the service writes) can carry


def _definition(expr: str, name: str) -> object:
    d = hostile(expr)
    d["metadata"]["name"] = name
    return definition_from_document(d, "inline", "inline")


def _task(name: str, **spec: object) -> dict:
    t = copy.deepcopy(TASK)
    t["metadata"]["name"] = name
    t["spec"].update(spec)
    return t


# -- the pool itself ----------------------------------------------------------------------

def _with_pool(queue_timeout: float, deadline: float, scenario: Callable[[Any], Awaitable[None]],
               size: int = 1) -> None:
    """Run `scenario(pool)` against a started pool (of one worker unless told), closed afterwards."""
    async def run() -> None:
        pool = evaluator.Pool(size, deadline=deadline, queue_timeout=queue_timeout)
        await pool.start()
        try:
            await scenario(pool)
        finally:
            await pool.close()

    asyncio.run(run())


QUICK = _definition(".spec.workers", "quick")


def test_a_cancelled_evaluation_does_not_hand_its_stale_reply_to_the_next_caller() -> None:
    """Cancelled while its worker computes (a client gone, a model closed): the reply it leaves
    in the pipe must never reach the next caller, and the pool must keep serving."""
    slow = _definition("0 | until(. >= 2000000; . + 1)", "slow")  # ~2 s: finishes, but well after the cancel

    async def scenario(pool: Any) -> None:
        job = asyncio.ensure_future(pool.interpret(slow, _task("first"), None))
        await asyncio.sleep(0.3)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        for name in ("second", "third"):
            result = await asyncio.wait_for(pool.interpret(QUICK, _task(name, workers=7), None), 30)
            assert result["workload"]["name"] == name  # its own answer, not the stale one
            assert result["totals"]["pods"] == 7

    _with_pool(15, 20, scenario)


def test_an_input_that_cannot_be_encoded_costs_no_worker() -> None:
    async def scenario(pool: Any) -> None:
        for _ in range(3):
            with pytest.raises(InterpretationError, match="cannot be encoded"):
                await pool.interpret(QUICK, _task("big", workers=BIG), None)
        result = await asyncio.wait_for(pool.interpret(QUICK, _task("ok"), None), 30)
        assert result["workload"]["name"] == "ok"

    _with_pool(15, 20, scenario)


def test_waiting_for_a_worker_is_bounded() -> None:
    hang = _definition("until(false; .)", "hang")

    async def scenario(pool: Any) -> None:
        busy = asyncio.ensure_future(pool.interpret(hang, _task("hang"), None))
        await asyncio.sleep(0.2)
        with pytest.raises(evaluator.EvaluationBusy):
            await asyncio.wait_for(pool.interpret(QUICK, _task("waits"), None), 30)
        busy.cancel()
        with pytest.raises(asyncio.CancelledError):
            await busy
        result = await asyncio.wait_for(pool.interpret(QUICK, _task("after"), None), 30)
        assert result["workload"]["name"] == "after"

    _with_pool(0.3, 5, scenario)


# -- over HTTP ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pool_server() -> Server:
    s = Server("--eval-workers", "2", "--eval-deadline", "3")
    yield s
    s.stop()


def _yaml_request(obj: dict, definition: dict) -> bytes:
    return yaml.safe_dump({"object": obj, "definition": definition}).encode()


def test_unencodable_numbers_do_not_starve_the_workers(pool_server: Server) -> None:
    """The reported repro: a YAML body with an integer beyond 64 bits and an inline definition,
    twice (as many as there are workers), then an ordinary inline request."""
    with httpx.Client(base_url=pool_server.url, timeout=10) as c:
        for _ in range(2):
            r = c.post("/interpret", content=_yaml_request(_task("big", workers=BIG), BASE),
                       headers={"content-type": "application/yaml"})
            body = problem(r, 422)
            assert body["type"].endswith("unencodable-number")
            assert body["errors"][0]["path"] == "object.spec.workers"
        r = c.post("/interpret", json={"object": TASK, "definition": BASE})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("media,body,path", [
    ("application/yaml", "object:\n  apiVersion: v1\n  kind: X\n  spec: {replicas: 99999999999999999999999}\n",
     "object.spec.replicas"),
    ("application/yaml", "object:\n  apiVersion: v1\n  kind: X\n  spec: {ratio: .nan}\n", "object.spec.ratio"),
    ("application/yaml", "object:\n  apiVersion: v1\n  kind: X\n  spec: {list: [1, -.inf]}\n", "object.spec.list[1]"),
    ("application/json", '{"object": {"apiVersion": "v1", "kind": "X", "spec": {"replicas": 99999999999999999999999}}}',
     "object.spec.replicas"),
    ("application/json", '{"object": {"apiVersion": "v1", "kind": "X", "spec": {"n": -9223372036854775809}}}',
     "object.spec.n"),
    ("application/json", '{"object": {"apiVersion": "v1", "kind": "X", "spec": {"ratio": NaN}}}', "object.spec.ratio"),
    ("application/json", '{"object": {"apiVersion": "v1", "kind": "X", "spec": {"big": 1e400}}}', "object.spec.big"),
])
def test_numbers_no_json_can_carry_are_refused_with_their_path(pool_server: Server, media: str, body: str,
                                                               path: str) -> None:
    with httpx.Client(base_url=pool_server.url, timeout=10) as c:
        sent = [("/interpret", body)] + ([("/interpret/batch", f'{{"items": [{body}]}}')] if "json" in media else [])
        for route, content in sent:
            r = c.post(route, content=content, headers={"content-type": media})
            got = problem(r, 422)
            assert got["type"].endswith("unencodable-number"), got
            assert got["errors"][0]["path"].endswith(path), got


def test_64_bit_integers_are_accepted(pool_server: Server) -> None:
    with httpx.Client(base_url=pool_server.url, timeout=10) as c:
        for n in (2**64 - 1, -(2**63)):
            r = c.post("/interpret", json={"object": _task("edge", workers=n), "definition": BASE})
            assert r.status_code == 200, r.text
        r = c.post("/interpret", json={"object": _task("edge", label="x" + "1" * 30), "definition": BASE})
        assert r.status_code == 200, r.text  # 19 digits in a string are no number


def test_a_busy_pool_answers_503_with_retry_after() -> None:
    s = Server("--eval-workers", "1", "--eval-deadline", "3", "--eval-queue-timeout", "0.5")
    hog_done = threading.Event()

    def hog() -> None:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            c.post("/interpret", json={"object": TASK, "definition": hostile("until(false; .)")})
        hog_done.set()

    try:
        with httpx.Client(base_url=s.url, timeout=10) as c:
            assert c.post("/interpret", json={"object": TASK, "definition": BASE}).status_code == 200  # worker up
            threading.Thread(target=hog, daemon=True).start()
            r, until = None, time.monotonic() + 20
            while time.monotonic() < until and not hog_done.is_set():  # until the hog has the only worker
                r = c.post("/interpret", json={"object": TASK, "definition": BASE})
                if r.status_code != 200:
                    break
            body = problem(r, 503)
            assert body["type"].endswith("evaluation-busy")
            assert r.headers["retry-after"] == "1"
            assert hog_done.wait(30)
            for _ in range(40):  # the hog's worker was killed at the deadline: served again once replaced
                r = c.post("/interpret", json={"object": TASK, "definition": BASE})
                if r.status_code != 503:
                    break
                time.sleep(0.5)
            assert r.status_code == 200, r.text
    finally:
        s.stop()


def test_a_worker_that_exhausts_its_memory_is_replaced() -> None:
    s = Server("--eval-workers", "1", "--eval-deadline", "10", "--eval-worker-memory", "400")
    try:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            for _ in range(2):
                r = c.post("/interpret", json={"object": TASK,
                                               "definition": hostile('("x" * 1000000000) | length')})
                body = problem(r, 422)
                assert body["type"].endswith("evaluation-memory-exceeded"), body
                assert "400 MiB" in body["detail"]
            r = c.post("/interpret", json={"object": TASK, "definition": BASE})
            assert r.status_code == 200, r.text
            assert "wlmap_evaluation_worker_restarts_total" in c.get("/metrics").text
    finally:
        s.stop()


# -- the CLI ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["spec: {replicas: 99999999999999999999999}\n", "spec: {ratio: .inf}\n",
                                  ('{"apiVersion": "acme.example.com/v1", "kind": "BatchTask", "metadata": {"name": "t"}, '
                                   '"spec": {"replicas": 99999999999999999999999}}')])
def test_cli_refuses_numbers_no_json_can_carry(tmp_path: Path, text: str) -> None:
    f = tmp_path / "task.yaml"
    f.write_text("apiVersion: acme.example.com/v1\nkind: BatchTask\nmetadata: {name: t}\n" + text
                 if not text.startswith("{") else text)
    wlmap = Path(sys.executable).parent / "wlmap"
    r = subprocess.run([str(wlmap), "interpret", str(f)], check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "spec." in r.stderr and "Traceback" not in r.stderr, r.stderr



def test_the_worker_pipe_is_blocking_again_after_a_reply_on_uvloop() -> None:
    """uvloop's add_reader leaves a watched descriptor non-blocking: the next message over the
    pipe's buffer (64 KiB, e.g. a 1 MB inline definition) could then fail with BlockingIOError
    when the worker was slow to read (a 500 and a replaced worker).  After each reply the pipe is
    blocking again."""
    import os

    import uvloop

    async def scenario() -> None:
        pool = evaluator.Pool(1, deadline=10, queue_timeout=10)
        await pool.start()
        try:
            await pool.interpret(_definition(".spec.workers", "blocking"), _task("t"), None)
            assert all(os.get_blocking(w.conn.fileno()) for w in pool._all)
        finally:
            await pool.close()

    uvloop.run(scenario())


def test_what_a_worker_is_remembered_to_hold_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each distinct inline definition leaves its digest with the worker it ran on: that memory
    is bounded, and a definition forgotten there is simply sent whole again."""
    monkeypatch.setattr(evaluator, "KNOWN_DIGESTS", 3)

    async def scenario(pool: Any) -> None:
        defs = [_definition(".spec.workers", f"known-{i}") for i in range(6)]
        for d in defs + defs[:2]:  # the first two again, after they were forgotten
            out = await pool.interpret(d, _task("t"), None)
            assert out["definition"]["name"] == d.name
        assert all(len(w.known) <= 3 for w in pool._all)

    _with_pool(10, 10, scenario)


def test_background_work_never_takes_the_last_worker_from_callers() -> None:
    """The live model's evaluations (a burst of them, each a runaway that holds its worker for
    the whole deadline) use at most all workers but one: a caller's evaluation is served next,
    not after the burst."""
    from app.engine.pool import BACKGROUND

    async def scenario(pool: Any) -> None:
        done: list[str] = []
        runaway = _definition("def f: f; f", "runaway")

        async def background(i: int) -> None:
            BACKGROUND.set(True)  # as the model's loops do (this task's context only)
            with contextlib.suppress(evaluator.EvaluationTimeout, evaluator.EvaluationBusy):
                await pool.interpret(runaway, _task(f"bg-{i}"), None)
            done.append(f"bg-{i}")

        burst = [asyncio.create_task(background(i)) for i in range(4)]
        await asyncio.sleep(0.05)  # the burst is queued first
        await pool.interpret(_definition(".spec.workers", "caller"), _task("caller"), None)
        done.append("caller")
        await asyncio.gather(*burst)
        assert done.index("caller") <= 1, done  # at most the one runaway already running ended first

    _with_pool(30, 1.0, scenario, size=2)


def test_a_worker_that_dies_while_starting_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed before it said it was ready (an operator's kill, the OOM killer at start)
    used to abort the pool's start: the other worker was never added, and every request then
    waited out the startup bound (60 s) for a 503.  It is started again instead."""
    real = evaluator.Pool._start_worker
    calls = {"n": 0}

    def flaky(self: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("an evaluation worker did not start")
        return real(self)

    monkeypatch.setattr(evaluator.Pool, "_start_worker", flaky)

    async def scenario(pool: Any) -> None:
        out = await pool.interpret(_definition(".spec.workers", "after-a-failed-start"), _task("t"), None)
        assert out["definition"]["name"] == "after-a-failed-start"
        for _ in range(100):  # the replacement comes up within a few seconds
            if len(pool._all) == 2:
                break
            await asyncio.sleep(0.1)
        assert len(pool._all) == 2 and calls["n"] == 3

    _with_pool(10, 10, scenario, size=2)
