"""What the model keeps of each object: the few fields it indexes, plus the object projected to
what the engine and the live view can read, as compact JSON (parsed again only when needed).

The projection comes from the engine's own analysis (`jqlang.paths.needs`, the same that feeds
jq only what an expression can reach): the union over every definition that reads the kind,
plus the fields the engine reads outside jq (envelope, generation flags, pod readiness).  So
an interpretation of the kept object equals the interpretation of the full object (tested),
while managedFields, last-applied, env lists and most of a pod spec never take memory.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import orjson

from ..cluster.diagnosis import NONE, Symptom, pod_symptoms, scheduled
from ..engine.attribution import pod_ready
from ..engine.compiled import compiled
from ..engine.interpret import strip_noise
from ..jqlang import JqParseError, parse
from ..jqlang.inputs import exact
from ..jqlang.paths import Tree, merge, needs, project
from ..karta.load import Definition
from .capacity import Held, held_by
from .packing import Packer, unpack

# (group, kind, name, uid, controller, version)
Owner = tuple[str, str, str, str, bool, str]

_META: Tree = {
    "name": True,
    "namespace": True,
    "uid": True,
    "resourceVersion": True,
    "generation": True,
    "creationTimestamp": True,
    "deletionTimestamp": True,
    "ownerReferences": True,
}
# What the engine reads of any workload object outside its definition's expressions (and the
# labels: a batch's groupBy reads them of the objects it fetches).
WORKLOAD_BASE: Tree = {
    "apiVersion": True,
    "kind": True,
    "metadata": dict(_META, labels=True),
    "status": {"observedGeneration": True},
}
# What the live view reads of a pod (attribution, readiness, reasons, the pod checks).
_CONTAINER_STATUS: Tree = {None: {"name": True, "ready": True, "restartCount": True, "state": True}}
POD_BASE: Tree = {
    "apiVersion": True,
    "kind": True,
    "metadata": dict(_META, labels=True),
    "spec": {"nodeName": True},
    "status": {
        "phase": True,
        "reason": True,
        "conditions": True,
        "containerStatuses": _CONTAINER_STATUS,
        "initContainerStatuses": _CONTAINER_STATUS,
    },
}


@dataclass(slots=True)
class Obj:
    group: str
    kind: str
    namespace: str
    name: str
    uid: str
    rv: str
    owners: tuple[Owner, ...]
    created: str | None
    body: bytes | None  # the projected object as JSON, packed (None: metadata-only kinds)
    ready: bool = False  # pods: the Ready condition is True
    # pods: what keeps it from running (diagnosis), and whether it has a node; read from the
    # whole object once per change, so the projection need not keep the messages' sources
    symptoms: tuple[Symptom, ...] = NONE
    scheduled: bool = False
    dictionary: bytes | None = None  # what `body` was packed against (None: not packed)
    # pods: the capacity it holds on its node (model/capacity.py: Held), None when it holds none
    # (unbound, terminal); read from the whole object, whose container resources are not kept
    held: Held | None = None

    def object(self) -> dict[str, Any]:
        if self.body is None:
            return {}
        return orjson.loads(self.body if self.dictionary is None else unpack(self.body, self.dictionary))

    @property
    def controller(self) -> Owner | None:
        for o in self.owners:
            if o[4]:
                return o
        return None


_intern = sys.intern


def _created(ts: Any) -> str | None:
    """Interned: the pods of one workload are mostly created within the same second."""
    return _intern(ts) if type(ts) is str else ts


def owners_of(meta: dict[str, Any]) -> tuple[Owner, ...]:
    out = []
    for ref in meta.get("ownerReferences") or []:
        if not isinstance(ref, dict) or not ref.get("uid"):
            continue
        group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
        # interned: the name and UID of an owner repeat in each of its children (pods of a Job)
        out.append(
            (
                _intern(group),
                _intern(str(ref.get("kind") or "")),
                _intern(str(ref.get("name") or "")),
                _intern(str(ref["uid"])),
                ref.get("controller") is True,
                _intern(version),
            )
        )
    owners = tuple(out)
    global _last_owners
    if owners == _last_owners:  # siblings come one after another (a list, a rollout): one tuple for all
        return _last_owners
    _last_owners = owners
    return owners


_last_owners: tuple[Owner, ...] = ()


def record(
    obj: dict[str, Any],
    group: str,
    kind: str,
    projection: Tree | bool | None,
    is_pod: bool = False,
    packer: Packer | None = None,
) -> Obj | None:
    """The model's record of a wire object (`projection` None: metadata only), its body packed
    by `packer` (the kind's) if given."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("uid") or not meta.get("name"):
        return None
    body = None
    if projection is not None:
        kept = strip_noise(obj) if projection is True else project(obj, projection)
        try:
            body = exact(orjson.dumps(kept))
        except TypeError:  # an integer beyond 64 bits: keep it as the engine would read it
            from ..jqlang.values import normalize

            body = exact(orjson.dumps(normalize(kept)))
    dictionary = None
    if body is not None and packer is not None:
        body, dictionary = packer.pack(body)
    rec = Obj(
        _intern(group),
        _intern(kind),
        _intern(str(meta.get("namespace") or "")),
        str(meta["name"]),
        str(meta["uid"]),
        str(meta.get("resourceVersion") or ""),
        owners_of(meta),
        _created(meta.get("creationTimestamp")),
        body,
        dictionary=dictionary,
    )
    if is_pod:
        rec.ready, rec.symptoms, rec.scheduled = pod_ready(obj), pod_symptoms(obj), scheduled(obj)
        rec.held = held_by(obj)
    return rec


def workload_projection(definitions: list[Definition]) -> Tree | bool:
    """What of a workload kind's objects must be kept for these definitions (its versions)."""
    tree: Tree | bool | None = WORKLOAD_BASE
    for d in definitions:
        tree = merge(tree, compiled(d).projection)
        if tree is True:
            return True
    return tree if tree is not None else True


def pod_expression_projection(definitions: list[Definition]) -> Tree | bool:
    """What every definition's pod expressions (selectors, gang filters and keys) can read."""
    from ..engine.compiled import expression_texts

    tree: Tree | bool | None = {}
    for d in definitions:
        for text in expression_texts(d)[1]:
            try:
                tree = merge(tree, needs(parse(text)))
            except JqParseError:
                return True
            if tree is True:
                return True
    return tree if tree is not None else {}


def covers(wide: Tree | bool | None, narrow: Tree | bool | None) -> bool:
    """Whether everything `narrow` keeps, `wide` keeps too (then no relist is needed)."""
    if narrow is None:
        return True
    if wide is None:
        return False
    if wide is True:
        return True
    if narrow is True:
        return False
    assert isinstance(wide, dict) and isinstance(narrow, dict), "a tree is a dict or True"
    for k, sub in narrow.items():
        if k not in wide and None not in wide:
            return False
        w = wide.get(k, wide.get(None))
        if sub == {} and w is not None:
            continue
        if not covers(w, sub):
            return False
    return True
