"""Live answers in the store, in parts: what a shard writes per change, and how an API replica
assembles GET one from it.

Per workload (by its row field) a unit holds:

* `live`: the *base* record, deflated: the interpretation without pods, the layout pods are
  placed in, and the object's generation flags (rewritten when the object or its definition
  changes), or for a definition evaluated out of process `{"answer", "diag"}` whole;
* `pods`: the pods in name order, `[[name, uid], ...]` (rewritten when a pod comes or goes);
* `parts`, keyed `<row field>\\x1f<pod uid>`: each pod's part and what its diagnosis reads (its
  symptoms, whether it is scheduled, its controller chain), rewritten when that pod changes;
* `warn`: the Warning Events under the workload (rewritten when they change).

A pod event thus writes one part (~0.5 KB) and, if the ready count moved, the row: never the
whole answer.  A replica reads the four in two round trips and assembles the answer with the
model's own assembly (app/model/answers.py `assembled`) and the diagnosis with `explain`, the
same functions the single process runs, so both answer alike.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import Any

import orjson

from ..cluster.diagnosis import PodFacts, Symptom, WarningEvent, context_of, explain
from ..engine.attribution import layout_doc, layout_from
from ..jqlang.inputs import exact
from ..model.answers import Export, assembled
from ..model.packing import deflate, inflate
from ..model.records import Obj

SEP = "\x1f"  # between a row field and a pod uid (neither holds it)


def part_field(field: str, uid: str) -> str:
    return f"{field}{SEP}{uid}"


class Written:
    """What one workload's answer is in the store, as this shard wrote it (or found it)."""

    __slots__ = ("base", "podlist", "pods", "warn")

    def __init__(self, base: str, pods: dict[str, str], podlist: bytes, warn: bytes):
        self.base, self.pods, self.podlist, self.warn = base, pods, podlist, warn


def base_sig(x: Export) -> str:
    if x.whole is not None:
        return "whole:" + hashlib.blake2b(x.whole[0] + b"\x00" + x.whole[1], digest_size=16).hexdigest()
    assert x.entry is not None
    return f"{x.entry.sig[0]}|{x.entry.sig[1]}"


def podlist(x: Export) -> bytes:
    return exact(orjson.dumps([[p.name, p.uid] for p, _ in x.pods]))  # kept (Written): its own size


def warn_doc(x: Export) -> bytes:
    return exact(orjson.dumps([asdict(w) for w in x.warnings])) if x.warnings else b"[]"


def signature(x: Export, base: str, pods: bytes, warn: bytes) -> bytes:
    """The `sig` of a workload's answer in the store: the object's resourceVersion (the object is
    rewritten only when it moves), then a digest of everything the answer is assembled from, so a
    new owner rewrites only the workloads that changed meanwhile."""
    h = hashlib.blake2b(digest_size=16)
    for part in (base.encode(), pods, warn, *(f"{p.uid}:{p.rv}".encode() for p, _ in x.pods)):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return x.rv.encode() + b"|" + h.digest()


def record(x: Export) -> bytes:
    """The `live` record (deflated)."""
    if x.whole is not None:
        return deflate(b'{"answer":' + x.whole[0] + b',"diag":' + x.whole[1] + b"}")
    e = x.entry
    assert e is not None
    return deflate(
        orjson.dumps({"result": orjson.Fragment(inflate(e.result)), "layout": layout_doc(e.layout), "flags": e.flags})
    )


def pod_doc(x: Export, pod: Obj, part: bytes) -> bytes:
    return orjson.dumps(
        {
            "uid": pod.uid,
            "part": orjson.Fragment(part),
            "symptoms": [asdict(s) for s in pod.symptoms],
            "scheduled": pod.scheduled,
            "chain": sorted(x.graph.chain(pod.uid)),
        }
    )


def plan(
    x: Export, field: str, was: Written | None, held_sig: bytes | None, held_pods: set[str]
) -> tuple[Written, bytes | None, list[tuple[str, str, bytes]], list[tuple[str, str]]]:
    """What to write for a workload's answer: (what the store will hold, its new `sig` or None when
    the store holds it already, the hash fields to set, the hash fields to delete).  `was`: what this
    shard wrote last (None: the store holds what a previous owner wrote, `held_sig` and `held_pods`)."""
    base, pods, warn = base_sig(x), podlist(x), warn_doc(x)
    now = Written(base, {p.uid: p.rv for p, _ in x.pods}, pods, warn)
    sig = signature(x, base, pods, warn)
    if held_sig == sig:
        return now, None, [], []
    sets: list[tuple[str, str, bytes]] = []
    dels: list[tuple[str, str]] = []
    fresh = was is None or was.base != base  # every part is placed on the base: all of them again
    if fresh:
        sets.append(("live", field, record(x)))
    if was is None or was.podlist != pods:
        sets.append(("pods", field, pods))
        dels += [("parts", part_field(field, gone)) for gone in held_pods - set(now.pods)]
    for p, part in x.pods:
        if fresh or was is None or was.pods.get(p.uid) != p.rv:
            sets.append(("parts", part_field(field, p.uid), pod_doc(x, p, part)))
    if was is None or was.warn != warn:
        sets.append(("warn", field, warn))
    sets.append(("sig", field, sig))
    return now, sig, sets, dels


def view(live: bytes, parts: list[bytes | None], warn: bytes | None, events: bool) -> tuple[bytes, Any] | None:
    """GET one's answer (JSON) and its diagnosis entries (None: no diagnosis) from what the store
    holds; None when a part is missing (written in the same script as the pod list, so only while
    a new owner rewrites the workload: the caller answers "pending")."""
    rec = orjson.loads(inflate(live))
    if "answer" in rec:  # evaluated out of process: as its shard computed it
        answer = orjson.dumps(rec["answer"])
        diag = rec.get("diag")
        return answer, (diag["events" if events else "pods"] if diag is not None else None)
    if any(p is None for p in parts):
        return None
    docs = [orjson.loads(p) for p in parts if p is not None]
    out = assembled(rec["result"], layout_from(rec["layout"]), [d["part"] for d in docs], rec["flags"])
    facts = [
        PodFacts(
            d["uid"],
            d["part"]["name"],
            None,
            tuple(Symptom(**dict(s, insufficient=tuple(s.get("insufficient") or ()))) for s in d["symptoms"]),
            d["scheduled"],
            frozenset(d["chain"]),
        )
        for d in docs
    ]
    warnings = [WarningEvent(**w) for w in orjson.loads(warn or b"[]")] if events else []
    return orjson.dumps(out), explain(context_of(out), facts, warnings)
