"""What one request can make the service do is bounded: pods interpreted (--max-pods, for one
interpretation or a whole batch together) and batch items (at most 1000, the schema's bound)."""

from __future__ import annotations

import httpx

from .test_api import TASK, problem


def _pods(n: int) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"}}
            for i in range(n)]


def _answered(client: httpx.Client, path: str, body: dict) -> httpx.Response:
    """The answer once the evaluation workers are up (a fresh server starts them with its first
    request, which can overrun the deadline on a loaded machine)."""
    for _ in range(10):
        r = client.post(path, json=body)
        if "evaluation-deadline-exceeded" not in r.text:
            return r
    return r


def test_pods_beyond_the_bound_are_a_413(client: httpx.Client):
    body = problem(client.post("/interpret", json={"object": TASK, "pods": _pods(10_001)}), 413)
    assert body["type"].endswith("too-many-pods") and "10000" in body["detail"]
    assert _answered(client, "/interpret", {"object": TASK, "pods": _pods(20)}).status_code == 200


def test_a_batch_counts_the_pods_of_all_its_items(client: httpx.Client):
    items = [{"object": TASK, "pods": _pods(4_000)} for _ in range(3)]  # 12000 in all
    body = problem(client.post("/interpret/batch", json={"items": items}), 413)
    assert body["type"].endswith("too-many-pods")
    r = _answered(client, "/interpret/batch", {"items": [{"object": TASK, "pods": _pods(50)}] * 2})
    assert r.status_code == 200 and [("error" in i) for i in r.json()["items"]] == [False, False]


def test_a_batch_holds_at_most_1000_items(client: httpx.Client):
    r = client.post("/interpret/batch", json={"items": [{"object": TASK}] * 1001})
    problem(r, 422)
    assert _answered(client, "/interpret/batch", {"items": [{"object": TASK}] * 1000}).status_code == 200
