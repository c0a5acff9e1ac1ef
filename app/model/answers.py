"""Live answers assembled from parts: a workload's interpretation without pods (its *base*, one
per version of the object and definition) and one *part* per pod (engine/interpret.py
`live_base`, `pod_parts`, `with_pods`).

A pod event changes one pod: its part is due again, nothing else.  The answer is assembled when
it is read, from the base and the parts already computed, so a burst of pod events costs the
model no evaluation at all until someone reads, and then only the changed pods' expressions.
Definitions evaluated out of process (untrusted, app/engine/pool.py) have no parts here: their
answer is computed whole, in a worker, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson
from cachetools import LRUCache

from ..engine.attribution import Layout, PodPart, part_doc, part_from
from ..engine.interpret import LiveBase, generic_flags, with_parts
from ..jqlang.inputs import exact
from ..karta.load import Definition
from .owners import OwnerGraph
from .packing import deflate, inflate
from .records import Obj


@runtime_checkable
class PartsEngine(Protocol):
    """What an `interpret` callable offers when it evaluates some definitions in this process."""

    def live_base(self, d: Definition, obj: dict[str, Any]) -> tuple[LiveBase, dict[str, Any]] | None:
        """The base of `obj`'s live view and the interpretation without pods it holds (None: `d` is
        evaluated elsewhere). Raises as `interpret` does."""
        ...

    def pod_parts(self, base: LiveBase, pods: list[dict[str, Any]]) -> list[PodPart]: ...


@dataclass(slots=True)
class _Entry:
    """One workload's base as kept: small (the evaluation's own state is in `Answers.hot`)."""

    sig: tuple[str, str]  # (the object's resourceVersion, the definition's digest)
    result: bytes  # the interpretation without pods, JSON, deflated
    layout: Layout
    flags: dict[str, bool]  # the object's generation flags, which the live view carries
    parts: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # pod uid -> (its rv, its part as JSON)


class Answers:
    """The bases and pod parts of the workloads read or changed most recently (bounded).

    An entry keeps the base as JSON and the parts as JSON (~1.5 KB for a JobSet of 8 pods); the
    evaluation's own state a new part is computed from (the compiled definition's component
    values: ~20 KB with what they hold of the object) is kept only for the `hot` workloads, the
    most recently changed, and evaluated again for another."""

    def __init__(self, engine: PartsEngine, maxsize: int = 2048, hot: int = 1024):
        self.engine = engine
        self.entries: LRUCache[str, _Entry] = LRUCache(maxsize=maxsize)
        self.hot: LRUCache[str, tuple[tuple[str, str], LiveBase]] = LRUCache(maxsize=hot)
        self.bases_computed = 0
        self.parts_computed = 0

    def base(self, obj: Obj, d: Definition) -> _Entry | None:
        """The workload's base at the object's version (computed now if it is not kept)."""
        e = self.entries.get(obj.uid)
        if e is not None and e.sig == (obj.rv, d.digest):
            return e
        got = self.evaluated(obj, d)
        return None if got is None else got[0]

    def evaluated(
        self, obj: Obj, d: Definition, body: dict[str, Any] | None = None
    ) -> tuple[_Entry, dict[str, Any]] | None:
        """The workload's base evaluated now, with the interpretation without pods (None: not
        evaluated here)."""
        body = body if body is not None else obj.object()
        got = self.engine.live_base(d, body)
        if got is None:
            return None
        b, result = got
        self.bases_computed += 1
        self.hot[obj.uid] = ((obj.rv, d.digest), b)
        e = self.entries[obj.uid] = _Entry((obj.rv, d.digest), deflate(b.result), b.layout, generic_flags(body))
        return e, result

    def result(self, obj: Obj, d: Definition) -> dict[str, Any] | None:
        """The interpretation without pods (None: not evaluated here)."""
        e = self.base(obj, d)
        return None if e is None else orjson.loads(inflate(e.result))

    def answer(self, obj: Obj, d: Definition, pods: list[Obj]) -> dict[str, Any] | None:
        """The interpretation with these pods (sorted by name, as the model reads them); only the
        parts of pods new or changed since the last answer are computed (None: not evaluated here)."""
        got = self.current(obj, d, pods)
        if got is None:
            return None
        e, docs = got
        return assembled(orjson.loads(inflate(e.result)), e.layout, [orjson.loads(doc) for doc in docs], e.flags)

    def current(self, obj: Obj, d: Definition, pods: list[Obj]) -> tuple[_Entry, list[bytes]] | None:
        """The workload's base and its pods' parts (JSON), in the pods' order, each computed only
        if it is not kept at the version given (None: not evaluated here)."""
        e = self.base(obj, d)
        if e is None:
            return None
        kept, parts = e.parts, {}
        missing = []
        for p in pods:
            got = kept.get(p.uid)
            if got is not None and got[0] == p.rv:
                parts[p.uid] = got
            else:
                missing.append(p)
        if missing:
            hot = self.hot.get(obj.uid)
            if hot is None or hot[0] != e.sig:
                self.evaluated(obj, d)
                hot = self.hot[obj.uid]
            b = hot[1]
            new = self.engine.pod_parts(b, [p.object() for p in missing])
            self.parts_computed += len(new)
            for p, part in zip(missing, new, strict=True):
                parts[p.uid] = (p.rv, exact(orjson.dumps(part_doc(part))))  # (orjson's own buffer is KBs larger)
        e.parts = parts  # pods gone from the workload leave with their parts
        return e, [parts[p.uid][1] for p in pods]


def assembled(
    result: dict[str, Any], layout: Layout, parts: list[dict[str, Any]], flags: dict[str, bool]
) -> dict[str, Any]:
    """The live answer from a base's interpretation (`result`, the caller's own copy), its pods'
    parts (as `part_doc` gave them) and the object's generation flags: the one assembly behind the
    model's reads and an API replica's (app/store/answers.py)."""
    with_parts(result, layout, [part_from(doc) for doc in parts])
    result.setdefault("live", {}).update(flags)
    return result


@dataclass(slots=True)
class Export:
    """What a shard writes to the store for one workload (app/store/answers.py says how): its
    row, the object as kept, and its live answer as the base and the pods' parts it is assembled
    from (the pods in name order, with the Warning Events its diagnosis reads), or, for a
    definition evaluated out of process, the answer and both forms of its diagnosis whole."""

    row: dict[str, Any]
    rv: str
    kept: bytes | None  # the object as kept (JSON); None: the store holds this version already
    entry: _Entry | None  # the base (None: `whole`)
    pods: list[tuple[Obj, bytes]]  # each pod and its part (JSON)
    warnings: list[Any]  # WarningEvent
    graph: OwnerGraph  # each pod's chain, for the diagnosis
    whole: tuple[bytes, bytes] | None = None  # (answer, diagnosis) JSON
