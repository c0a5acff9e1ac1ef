"""Replica counts written through a definition's `scaleDefinition.replicasPath` (the revision of
`POST /interpret/update`'s `replicas`, and each part of `POST /divide`).

A count is asked per component (`{"worker": 3}`: every instance of it) or per instance
(`{"worker/<instance id>": 3}`), and is the component's whole-workload pod count of that role
(docs/definitions.md, "Counting convention"): the value is written where the definition reads it,
never converted.  So a component whose replicasPath is computed (LeaderWorkerSet workers,
`replicas x (size - 1)`; a literal; a status field) is refused by name, as is one without a
replicasPath, one whose path addresses a location per instance that does not align with its
instances, and a count outside the instance's minReplicas / maxReplicas.

The path is resolved to locations as pod paths are (app/jqlang/writepaths.py), with one addition:
a fallback standing in for an absent field addresses that field (`.spec.replicas // 1` on an
object without `spec.replicas` writes `spec.replicas`).  A bound read from the same locations as
the count (KServe's `minReplicas` is both) follows it and bounds nothing.

Location i holds the count of instance id i in the order the instance ids are read (the reference's
zip); the interpretation lists instances sorted by id, so when the locations must get different
counts, `probe` writes 1..k into them and the probe's interpretation says which instance reads
which (one evaluation, in the evaluator the caller gives: an inline definition stays in its
worker).  The caller then checks the rewrite with `update.read_back_problems` given `expected`.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..jqlang.writepaths import Location, PathNotWritable, resolve_paths
from ..karta.load import Definition
from .update import ROOT_FIXED, Rewrite, UpdateError, _get, attempts, make_patch, pointer, read_back_problems, set_at

INT32_MAX = 2**31 - 1
BOUNDS = (("minReplicas", "min_replicas_path"), ("maxReplicas", "max_replicas_path"))

Counts = dict[str, dict[str | None, int]]  # component -> instance id (None: the implicit one) -> count
Evaluate = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def refusal(component: str, message: str, key: str | None = None) -> UpdateError:
    return UpdateError(f"component {component}: {message}", f"replicas.{key or component}", component)


def check_replicas(value: Any) -> dict[str, int]:
    """The request's `replicas`: `{"<component>" | "<component>/<instance id>": count}`."""
    if not isinstance(value, dict) or not value:
        raise UpdateError('replicas must be an object {"<component>": count} with at least one entry', "replicas")
    for k, n in value.items():
        if not isinstance(k, str) or not k or k.startswith("/"):
            raise UpdateError(f"replicas: {k!r} is not a component name", "replicas")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= INT32_MAX:
            raise UpdateError(f"replicas.{k} must be an integer from 0 to {INT32_MAX}", f"replicas.{k}")
    return value


def nodes(tree: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The interpretation's components by name."""
    out = {str(tree.get("name")): tree}
    for c in tree.get("children") or []:
        out.update(nodes(c))
    return out


@dataclass
class Slot:
    """Where one component's counts are written: one location per instance, in id order as read."""

    component: str
    expression: str
    locations: list[Location]
    # the instance (tree id) each location holds the count of; None until aligned (several
    # locations); an entry None is the implicit instance
    instances: list[str | None] | None
    bounds: dict[str | None, dict[str, int | None]]  # instance -> the bounds that hold it
    follows: tuple[str, ...]  # the bounds read from the same locations (they follow the count)
    current: dict[str | None, int | None] = field(default_factory=dict)

    def ids(self) -> list[str | None]:
        return list(self.current)


def slot(d: Definition, obj: dict[str, Any], before: Mapping[str, Any], component: str) -> Slot:
    """The writable locations of one component's count, or a refusal (UpdateError) saying why not."""
    c = next((x for x in d.karta.components if x.name == component), None)
    if c is None:
        names = ", ".join(sorted(x.name or "" for x in d.karta.components))
        raise refusal(component, f"no such component (the definition {d.name} has {names})")
    sc = c.scale_definition
    if sc is None or not sc.replicas_path:
        raise refusal(component, "the definition gives no scaleDefinition.replicasPath: its count cannot be written")
    node = nodes(before.get("tree") or {}).get(component)
    if node is None or node.get("error"):
        raise refusal(component, "its instances could not be read from the object")
    instances = node.get("instances") or []
    try:
        locs = resolve_paths(sc.replicas_path, obj, defaults=True)
    except PathNotWritable as e:
        raise refusal(component, f"its replicas are computed, not written anywhere: {e}") from None
    fixed = [pointer(loc) for loc in locs if not loc or any(loc[: len(f)] == f for f in ROOT_FIXED)]
    if fixed:
        raise refusal(component, f"its replicas are read from {fixed[0] or 'the object root'}, which is not writable")
    if len(locs) != len(instances):
        raise refusal(
            component,
            f"its replicasPath addresses {len(locs)} location(s) for {len(instances)} instance(s): "
            "cannot tell which count is which",
        )
    follows = []
    for name, attr in BOUNDS:
        expr = getattr(sc, attr)
        if not expr:
            continue
        try:
            same = expr == sc.replicas_path or sorted(resolve_paths(expr, obj, defaults=True)) == sorted(locs)
        except PathNotWritable:
            same = False
        if same:
            follows.append(name)
    return Slot(
        component,
        sc.replicas_path,
        locs,
        [i.get("id") for i in instances] if len(locs) == 1 else None,
        {i.get("id"): {b: i.get(b) for b, _ in BOUNDS if b not in follows} for i in instances},
        tuple(follows),
        {i.get("id"): i.get("replicas") for i in instances},
    )


def expand(slots: Mapping[str, Slot], asked: Mapping[str, int]) -> Counts:
    """The request's counts per instance: `c` for every instance of c, `c/<id>` for one (which wins)."""
    out: Counts = {}
    for key in sorted(asked, key=lambda k: "/" in k):  # components first, then single instances
        comp, _, inst = key.partition("/")
        s = slots[comp]
        ids = s.ids()
        if inst:
            if inst not in ids:
                known = ", ".join(str(i) for i in ids if i is not None) or "none: it has one implicit instance"
                raise refusal(comp, f"no instance {inst!r} (its instances: {known})", key)
            out.setdefault(comp, {})[inst] = asked[key]
        else:
            out.setdefault(comp, {}).update({i: asked[key] for i in ids})
    for comp, per in out.items():
        for one, n in per.items():
            b = slots[comp].bounds.get(one) or {}
            lo, hi = b.get("minReplicas"), b.get("maxReplicas")
            which = comp if one is None else f"{comp}/{one}"
            if lo is not None and n < lo:
                raise refusal(comp, f"{n} is below {which}'s minReplicas {lo}", which)
            if hi is not None and n > hi:
                raise refusal(comp, f"{n} is above {which}'s maxReplicas {hi}", which)
    return out


def slots_for(
    d: Definition, obj: dict[str, Any], before: Mapping[str, Any], asked: Mapping[str, int]
) -> dict[str, Slot]:
    """The slots of the components the request names."""
    return {c: slot(d, obj, before, c) for c in dict.fromkeys(k.partition("/")[0] for k in asked)}


def unaligned(slots: Mapping[str, Slot], counts: Counts) -> list[Slot]:
    """The slots whose locations get different counts and are not aligned yet."""
    return [
        s
        for s in slots.values()
        if s.instances is None and len({counts.get(s.component, {}).get(i, s.current.get(i)) for i in s.ids()}) > 1
    ]


async def align(d: Definition, obj: dict[str, Any], slots: list[Slot], evaluate: Evaluate) -> None:
    """Which instance each location counts, from the interpretation of a probe with 1..k written
    into a slot's k locations."""
    if not slots:
        return
    probe = copy.deepcopy(obj)
    for s in slots:
        for n, loc in enumerate(s.locations, 1):
            set_at(probe, loc, n)
    read = nodes((await evaluate(probe)).get("tree") or {})
    for s in slots:
        seen = {i.get("replicas"): i.get("id") for i in (read.get(s.component) or {}).get("instances") or []}
        order = [seen.get(n, "?") for n in range(1, len(s.locations) + 1)]
        if "?" in order or sorted(order, key=str) != sorted(s.ids(), key=str):
            raise refusal(s.component, "cannot tell which instance each location of its replicasPath counts")
        s.instances = order


def write(original: dict[str, Any], start: Rewrite, slots: Mapping[str, Slot], counts: Counts) -> Rewrite:
    """`start` (the original, or a set-rewrite of it) with the counts written; the patch is from
    the original."""
    out = copy.deepcopy(start.object)
    writes = list(start.writes)
    for comp, per in counts.items():
        s = slots[comp]
        ids = s.instances if s.instances is not None else [None] * len(s.locations)
        for loc, inst in zip(s.locations, ids, strict=True):
            if s.instances is not None and inst not in per:
                continue  # an instance not asked (`c/<other id>`): its count stays
            n = per[inst] if s.instances is not None else next(iter(per.values()))
            old = _get(out, loc)
            changed = not (isinstance(old, int) and not isinstance(old, bool) and old == n)
            if changed:
                set_at(out, loc, n)
            w = {"component": comp, "form": "replicas", "fields": ["replicas"], "expression": s.expression}
            writes.append(w | {"path": pointer(loc), "changed": changed, "instance": inst})
    patch = make_patch(original, out)
    rv = _get(original, ("metadata", "resourceVersion"))
    if patch and isinstance(rv, str) and rv:
        patch.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": rv})
    return Rewrite(out, patch, writes, list(dict.fromkeys(start.components + list(counts))))


def expected(slots: Mapping[str, Slot], counts: Counts) -> dict[str, dict[str | None, dict[str, int]]]:
    """What each counted instance must read after the write: its replicas, and the bounds that follow."""
    return {
        comp: {inst: {f: n for f in ("replicas", *slots[comp].follows)} for inst, n in per.items()}
        for comp, per in counts.items()
    }


def identity(obj: dict[str, Any]) -> Rewrite:
    """The rewrite that changes nothing (a request with `replicas` and no `set`)."""
    return Rewrite(copy.deepcopy(obj), [], [], [])


async def prepare(
    d: Definition, obj: dict[str, Any], before: Mapping[str, Any], asked: Mapping[str, int], evaluate: Evaluate
) -> tuple[dict[str, Slot], Counts]:
    """The slots of a request's `replicas` and its counts per instance, aligned (one probe
    evaluation at most); UpdateError when refused."""
    slots = slots_for(d, obj, before, check_replicas(dict(asked)))
    counts = expand(slots, asked)
    await align(d, obj, unaligned(slots, counts), evaluate)
    return slots, counts


@dataclass
class Revised:
    rewrite: Rewrite
    after: dict[str, Any]  # the rewritten object's interpretation
    moved: list[str]  # where it differs from what was asked (empty: it reads back)


async def revise(
    d: Definition,
    obj: dict[str, Any],
    before: dict[str, Any],
    set_: dict[str, Any] | None,
    components: list[str] | None,
    asked: Mapping[str, int] | None,
    evaluate: Evaluate,
) -> Revised:
    """`set_` (update.py) and the `asked` counts written, each try of the set rewrite read back
    in turn (the first that reads back is the answer).  UpdateError when refused."""
    slots, counts = await prepare(d, obj, before, asked, evaluate) if asked is not None else ({}, {})
    scales = expected(slots, counts) if counts else None
    tries = attempts(d, obj, set_, components) if set_ is not None else iter([identity(obj)])
    out = None
    for rw in tries:
        if counts:
            rw = write(obj, rw, slots, counts)
        after = await evaluate(rw.object)
        out = Revised(rw, after, read_back_problems(before, after, set_ or {}, rw, scales))
        if not out.moved:
            break
    assert out is not None  # attempts yields at least one rewrite
    return out
