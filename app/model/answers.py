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

from ..engine.attribution import PodPart
from ..engine.interpret import LiveBase, generic_flags, with_pods
from ..karta.load import Definition
from .records import Obj


@runtime_checkable
class PartsEngine(Protocol):
    """What an `interpret` callable offers when it evaluates some definitions in this process."""

    def live_base(self, d: Definition, obj: dict[str, Any]) -> LiveBase | None:
        """The base of `obj`'s live view (None: `d` is evaluated elsewhere). Raises as `interpret` does."""
        ...

    def pod_parts(self, base: LiveBase, pods: list[dict[str, Any]]) -> list[PodPart]: ...


@dataclass(slots=True)
class _Entry:
    sig: tuple[str, str]  # (the object's resourceVersion, the definition's digest)
    base: LiveBase
    flags: dict[str, bool]  # the object's generation flags, which the live view carries
    parts: dict[str, tuple[str, PodPart]] = field(default_factory=dict)  # pod uid -> (its rv, its part)


class Answers:
    """The bases and pod parts of the workloads read or changed most recently (bounded)."""

    def __init__(self, engine: PartsEngine, maxsize: int = 2048):
        self.engine = engine
        self.entries: LRUCache[str, _Entry] = LRUCache(maxsize=maxsize)
        self.bases_computed = 0
        self.parts_computed = 0

    def base(self, obj: Obj, d: Definition, body: dict[str, Any] | None = None) -> _Entry | None:
        """The workload's base at the object's version (computed now if it is not kept)."""
        e = self.entries.get(obj.uid)
        if e is not None and e.sig == (obj.rv, d.digest):
            return e
        if body is None:
            body = obj.object()
        b = self.engine.live_base(d, body)
        if b is None:
            return None
        self.bases_computed += 1
        e = self.entries[obj.uid] = _Entry((obj.rv, d.digest), b, generic_flags(body))
        return e

    def result(self, obj: Obj, d: Definition) -> dict[str, Any] | None:
        """The interpretation without pods (None: not evaluated here)."""
        e = self.base(obj, d)
        return None if e is None else orjson.loads(e.base.result)

    def answer(self, obj: Obj, d: Definition, pods: list[Obj]) -> dict[str, Any] | None:
        """The interpretation with these pods (sorted by name, as the model reads them); only the
        parts of pods new or changed since the last answer are computed (None: not evaluated here)."""
        got = self.current(obj, d, pods)
        if got is None:
            return None
        e, parts = got
        out = with_pods(e.base, parts)
        out.setdefault("live", {}).update(e.flags)
        return out

    def current(self, obj: Obj, d: Definition, pods: list[Obj]) -> tuple[_Entry, list[PodPart]] | None:
        """The workload's base and its pods' parts, in the pods' order, each computed only if it
        is not kept at the version given (None: not evaluated here)."""
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
            made = self.engine.pod_parts(e.base, [p.object() for p in missing])
            self.parts_computed += len(made)
            for p, part in zip(missing, made, strict=True):
                parts[p.uid] = (p.rv, part)
        e.parts = parts  # pods gone from the workload leave with their parts
        return e, [parts[p.uid][1] for p in pods]


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
    pods: list[tuple[Obj, PodPart]]
    warnings: list[Any]  # WarningEvent
    graph: Any  # the owner graph (each pod's chain, for the diagnosis)
    whole: tuple[bytes, bytes] | None = None  # (answer, diagnosis) JSON
