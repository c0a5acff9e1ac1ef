"""The recording file, the recorded sequence as steps, and the scale-up into copies.

A recording is gzip JSONL (plain JSONL when the name does not end in .gz), one record a line:

    {"record": "discovery", "path": "/apis/batch/v1", "doc": {...}}
    {"record": "list", "resource": {group, version, kind, plural, namespaced}, "resourceVersion": "812",
     "items": [...]}                                          (items with apiVersion and kind)
    {"record": "event", "resource": "/apis/batch/v1/jobs", "type": "MODIFIED", "object": {...}}

Events follow the lists, in resourceVersion order (etcd's revision is global, so one order over
every kind).  A resource is named by its collection path without a namespace (`key_of`).

Steps: the recorded events, each with the workload it changes (the top of its owner chain) and
that workload's ready pod count after it.  `cycle` appends the inverse of every step in reverse
order (a Ready flip flipped back, a pod added then deleted), so the sequence ends where it began
and can repeat for ever, every event changing something real.

Copies: copy k of a namespaced object lives in namespace `<ns>-x<k>` (copy 0 keeps its names)
with every uid it carries (its own, its owners', labels holding a controller's uid) rewritten
the same way everywhere, so owner chains stay within their copy.  Cluster-scoped objects
(Nodes, CRDs) are not copied.
"""

from __future__ import annotations

import dataclasses
import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from app.cluster.kube import Resource as Res

RV_MARK = b'"@@rv@@"'  # where a rendered object's resourceVersion goes
NOT_WORKLOADS = {"/api/v1/events", "/api/v1/configmaps"}  # namespaced, never a workload
UID_RE = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def key_of(res: Res) -> str:
    """A resource's name in the recording: its collection path without a namespace."""
    return res.path()


@dataclass
class Recording:
    discovery: dict[str, Any] = field(default_factory=dict)  # path -> document
    resources: dict[str, Res] = field(default_factory=dict)  # key -> resource
    lists: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # key -> objects
    list_rv: dict[str, str] = field(default_factory=dict)
    events: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (key, type, object)

    def save(self, path: Path) -> None:
        with _open(path, "wb") as f:
            for p, doc in self.discovery.items():
                f.write(orjson.dumps({"record": "discovery", "path": p, "doc": doc}) + b"\n")
            for key, res in self.resources.items():
                f.write(orjson.dumps({"record": "list", "resource": dataclasses.asdict(res), "resourceVersion":
                                      self.list_rv.get(key, ""), "items": self.lists.get(key, [])}) + b"\n")
            for key, typ, obj in self.events:
                f.write(orjson.dumps({"record": "event", "resource": key, "type": typ, "object": obj}) + b"\n")

    @classmethod
    def load(cls, path: Path) -> Recording:
        rec = cls()
        with _open(path, "rb") as f:
            for line in f:
                d = orjson.loads(line)
                if d["record"] == "discovery":
                    rec.discovery[d["path"]] = d["doc"]
                elif d["record"] == "list":
                    res = Res(**d["resource"])
                    key = key_of(res)
                    rec.resources[key], rec.lists[key], rec.list_rv[key] = res, d["items"], d["resourceVersion"]
                else:
                    rec.events.append((d["resource"], d["type"], d["object"]))
        return rec


def _open(path: Path, mode: str) -> IO[bytes]:
    return gzip.open(path, mode) if str(path).endswith(".gz") else open(path, mode)


def rv_of(obj: dict[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def pod_ready(obj: dict[str, Any]) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


# -- steps -----------------------------------------------------------------------------------

@dataclass
class Step:
    res: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]  # what the event carries (for DELETED: the last state)
    workload: tuple[str, str] | None = None  # (namespace, name) of the top owner; None: no workload
    ready: int = -1  # that workload's Ready pods after the step (-1: no workload)


class _State:
    """Objects by (resource, namespace, name) and by uid, to walk owner chains and count Ready pods."""

    def __init__(self, rec: Recording):
        self.pods_key = "/api/v1/pods"
        self.objs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.by_uid: dict[str, dict[str, Any]] = {}
        for key, items in rec.lists.items():
            for o in items:
                self.apply(key, "ADDED", o)

    def apply(self, key: str, typ: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        m = obj.get("metadata") or {}
        k = (key, m.get("namespace") or "", m.get("name") or "")
        before = self.objs.get(k)
        if before is not None:
            self.by_uid.pop((before.get("metadata") or {}).get("uid"), None)
        if typ == "DELETED":
            self.objs.pop(k, None)
        else:
            self.objs[k] = obj
            if m.get("uid"):
                self.by_uid[m["uid"]] = obj
        return before

    def top(self, obj: dict[str, Any]) -> dict[str, Any]:
        seen = set()
        while True:
            refs = (obj.get("metadata") or {}).get("ownerReferences") or []
            ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
            owner = self.by_uid.get(ref.get("uid")) if ref else None
            if owner is None or id(owner) in seen:
                return obj
            seen.add(id(owner))
            obj = owner

    def ready(self, top: dict[str, Any]) -> int:
        uid = (top.get("metadata") or {}).get("uid")
        return sum(1 for (key, _, _), o in self.objs.items()
                   if key == self.pods_key and pod_ready(o) and (self.top(o).get("metadata") or {}).get("uid") == uid)


def steps(rec: Recording, cycle: bool = False) -> list[Step]:
    """The recorded events as steps (`cycle`: then their inverses, last first), each with the
    workload it changes and its ready count after it."""
    state = _State(rec)
    fwd: list[tuple[Step, dict[str, Any] | None]] = []
    for key, typ, obj in rec.events:
        before = state.objs.get((key, (obj.get("metadata") or {}).get("namespace") or "",
                                 (obj.get("metadata") or {}).get("name") or ""))
        fwd.append((Step(key, typ, obj), before))
        state.apply(key, typ, obj)
    seq = [s for s, _ in fwd]
    if cycle:
        for s, before in reversed(fwd):
            if s.type == "MODIFIED" and before is not None:
                seq.append(Step(s.res, "MODIFIED", before))
            elif s.type == "ADDED":
                seq.append(Step(s.res, "DELETED", s.obj))
            elif s.type == "DELETED":
                seq.append(Step(s.res, "ADDED", before or s.obj))
    # the effects, replayed from the lists
    state = _State(rec)
    for s in seq:
        before = state.apply(s.res, s.type, s.obj)
        top = state.top(s.obj if s.type != "DELETED" else (before or s.obj))  # a deleted object: the owners it had
        tm = top.get("metadata") or {}
        if tm.get("namespace") and s.res not in NOT_WORKLOADS:
            s.workload = (tm["namespace"], tm["name"])
            s.ready = state.ready(top)
    return seq


# -- copies ----------------------------------------------------------------------------------

def copy_namespace(ns: str, k: int) -> str:
    return ns if k == 0 or not ns else f"{ns}-x{k}"


def copy_uid(uid: bytes, k: int) -> bytes:
    return uid[:24] + b"%012x" % (int(uid[24:], 16) ^ k) if k else uid


class Template:
    """An object's JSON cut where copies and versions differ (its namespace, the uids it carries,
    its resourceVersion): rendering joins the pieces with the copy's values, no JSON work and
    one pass over the bytes per event."""

    __slots__ = ("name", "ns", "parts", "slots", "uids")

    def __init__(self, obj: dict[str, Any], copied_uids: set[bytes]):
        meta = obj.get("metadata") or {}
        self.ns, self.name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        data = orjson.dumps({**obj, "metadata": {**meta, "resourceVersion": "@@rv@@"}})
        self.uids = list(dict.fromkeys(u for u in UID_RE.findall(data) if u in copied_uids)) if self.ns else []
        tokens = [RV_MARK, *self.uids] + ([_ns_field(self.ns)] if self.ns else [])
        self.parts: list[bytes] = []
        self.slots: list[bytes] = []
        at = 0
        for m in re.finditer(b"|".join(re.escape(t) for t in tokens), data):
            self.parts.append(data[at:m.start()])
            self.slots.append(m.group())
            at = m.end()
        self.parts.append(data[at:])

    def render(self, k: int, rv: int) -> bytes:
        subs = {RV_MARK: b'"%d"' % rv}
        if self.ns:
            subs[_ns_field(self.ns)] = _ns_field(copy_namespace(self.ns, k))
            for u in self.uids:
                subs[u] = copy_uid(u, k)
        out = [b""] * (2 * len(self.parts) - 1)
        out[0::2] = self.parts
        out[1::2] = [subs[s] for s in self.slots]
        return b"".join(out)


def _ns_field(ns: str) -> bytes:
    return b'"namespace":"%s"' % ns.encode()


def copied_uids(rec: Recording) -> set[bytes]:
    """The uids of namespaced objects: those are rewritten in copies."""
    out: set[bytes] = set()
    objs: Iterator[dict[str, Any]] = (o for items in rec.lists.values() for o in items)
    for o in [*objs, *(e[2] for e in rec.events)]:
        m = o.get("metadata") or {}
        if m.get("namespace") and m.get("uid"):
            out.add(str(m["uid"]).encode())
    return out
