"""Live answers in the store in parts (app/store/answers.py): what a shard writes per change, and
the answer an API replica assembles from it, equal to what the single process answers.

The model is fed by hand (benchmarks/pod_events_bench.py `Fed`: the fill's JobSets, Jobs and
kubelet-written pods through the informers' own keep and handle paths); the store's hashes are a
dict here (tests/fleet/test_sharded.py runs the same through a real Redis and real services)."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from app.cluster.reader import allow_all
from app.cluster.views import with_diagnosis
from app.engine.interpret import interpret
from app.store.answers import Written, part_field, plan, view
from benchmarks.pod_events_bench import Fed


class Hashes:
    """A unit's hashes as the shard's plans leave them."""

    def __init__(self) -> None:
        self.h: dict[str, dict[str, bytes]] = {}
        self.written: dict[str, Written] = {}
        self.sets = 0

    def export(self, fed: Fed, uid: str) -> list[tuple[str, str, bytes]]:
        x = fed.loop.run_until_complete(fed.model.export(uid))
        assert x is not None
        field = uid
        was = self.written.get(field)
        now, sig, sets, dels = plan(x, field, was, (self.h.get("sig") or {}).get(field), set(was.pods) if was else set())
        self.written[field] = now
        for what, key, value in sets:
            self.h.setdefault(what, {})[key] = value
        for what, key in dels:
            self.h.get(what, {}).pop(key, None)
        self.sets += len(sets)
        return sets

    def answer(self, uid: str) -> bytes:
        field = uid
        pods = orjson.loads(self.h["pods"][field])
        got = view(self.h["live"][field], [self.h["parts"].get(part_field(field, u)) for _, u in pods],
                   self.h["warn"].get(field), True)
        assert got is not None
        body, entries = got
        return with_diagnosis(body, orjson.dumps(entries), [])


def _single(fed: Fed, uid: str) -> bytes:
    o = fed.model.graph.by_uid[uid]
    return fed.loop.run_until_complete(fed.model.describe(o.namespace, o.name, allow=allow_all, freshness=False))


def _same(a: bytes, b: bytes) -> None:
    assert orjson.loads(a) == orjson.loads(b)


def _workloads(fed: Fed) -> list[str]:
    return [u for u, st in fed.model.states.items() if st.row is not None]


def _pod_line(pod: dict[str, Any], rv: int, kind: str = "MODIFIED") -> bytes:
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = str(rv)
    return orjson.dumps({"type": kind, "object": pod})


def test_a_replica_assembles_what_the_single_process_answers() -> None:
    fed = Fed(4)
    fed.settle()
    store = Hashes()
    for uid in _workloads(fed):
        store.export(fed, uid)
        _same(store.answer(uid), _single(fed, uid))
        assert fed.model.answer_parts is not None


def test_a_pod_event_writes_its_part_and_a_gone_pod_is_deleted() -> None:
    fed = Fed(2)
    fed.settle()
    store = Hashes()
    for uid in _workloads(fed):
        store.export(fed, uid)
    pods = fed.fill[2]
    pod = next(p for p in pods if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]))
    for c in pod["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    fed.apply("Pod", _pod_line(pod, 99_000_001))
    fed.settle()
    owner = next(u for u in _workloads(fed) if pod["metadata"]["uid"] in fed.model.graph.member_uids(u))
    sets = store.export(fed, owner)
    assert sorted(what for what, _, _ in sets) == ["parts", "sig"], "one pod changed: its part (and the digest) only"
    assert sets[0][1] == part_field(owner, pod["metadata"]["uid"])
    _same(store.answer(owner), _single(fed, owner))
    assert b'"ready":false' in store.h["parts"][part_field(owner, pod["metadata"]["uid"])]

    fed.apply("Pod", _pod_line(pod, 99_000_002, "DELETED"))
    fed.settle()
    sets = store.export(fed, owner)
    assert {what for what, _, _ in sets} == {"pods", "sig"}
    assert part_field(owner, pod["metadata"]["uid"]) not in store.h["parts"]
    _same(store.answer(owner), _single(fed, owner))
    assert store.export(fed, owner) == [], "nothing moved: nothing written"


def test_a_definition_evaluated_out_of_process_is_stored_whole() -> None:
    async def whole(d: Any, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        return interpret(obj, d, pods)  # a plain interpret: no parts engine, as for an isolated definition

    fed = Fed(2, whole)
    fed.settle()
    assert fed.model.answer_parts is None
    store = Hashes()
    for uid in _workloads(fed):
        sets = store.export(fed, uid)
        assert {what for what, _, _ in sets} == {"live", "pods", "warn", "sig"}
        _same(store.answer(uid), _single(fed, uid))
