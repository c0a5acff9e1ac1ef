"""Divide a workload over clusters (`POST /divide`, `wlmap divide`): one rewritten copy per cluster,
each component's counts split by the clusters' weights.

Each instance's count is split by largest remainder (exact shares floored, the rest one by one to
the largest remainders, ties to the larger weight, then to the cluster listed first), so the
parts' counts add up to the original's and the same request always gives the same parts.  A
component is kept whole, in the part of the highest-weight cluster (the first listed among
equals), when a gang covers it (app/engine/gang.py: a `podGroup` covers the whole workload, a
`podGroups` member its component's subtree: its pods start together or not at all), when its
count cannot be written (app/engine/replicas.py says why), or when a share would fall outside its
minReplicas / maxReplicas.  Its count is then 0 in the other parts; where 0 cannot be written
either (no writable path while it has pods, or a minimum above 0), every copy would carry it, so
nothing is divided: the one part is the whole workload.

Each part's object is the original with the counts written (names unchanged) and reads back as
asked (update.read_back_problems); a cluster whose part would hold no count above 0 gets no part.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..karta.load import Definition
from .replicas import Counts, Evaluate, Slot, align, expected, identity, nodes, slot, write
from .update import UpdateError, read_back_problems


class DivideError(Exception):
    """A part does not read back (`moved`: where its interpretation differs)."""

    def __init__(self, cluster: str, moved: list[str]):
        super().__init__(f"the part for {cluster} does not read back")
        self.cluster, self.moved = cluster, moved


def shares(total: int, weights: Sequence[int]) -> list[int]:
    """`total` split by `weights` (largest remainder; see the module docstring)."""
    w = sum(weights)
    if total <= 0 or w <= 0:
        return [0] * len(weights)
    exact = [Fraction(total * x, w) for x in weights]
    out = [int(q) for q in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - out[i]), -weights[i], i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def gang_components(d: Definition) -> set[str]:
    """The components a gang instruction covers as one group."""
    gang = d.karta.gang
    comps = d.karta.components
    if gang is None:
        return set()
    if gang.pod_group is not None:
        return {c.name or "" for c in comps}
    children: dict[str, list[str]] = {}
    for c in comps:
        if c.owner_ref:
            children.setdefault(c.owner_ref, []).append(c.name or "")
    out: set[str] = set()
    todo = [m.component_name or "" for g in gang.pod_groups or [] for m in g.members or []]
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo += children.get(n, [])
    return out


def _fits(s: Slot, per: Mapping[str | None, int]) -> bool:
    for inst, n in per.items():
        b = s.bounds.get(inst) or {}
        lo, hi = b.get("minReplicas"), b.get("maxReplicas")
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            return False
    return True


def _counted(tree: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """A part's `replicas` (per component with a count, summed over its instances) and its
    `instances` (`<component>/<id>`, for components with instance ids)."""
    per_comp: dict[str, int] = {}
    per_inst: dict[str, int] = {}
    for name, node in nodes(tree).items():
        for i in node.get("instances") or []:
            n = i.get("replicas")
            if n is None:
                continue
            per_comp[name] = per_comp.get(name, 0) + n
            if i.get("id") is not None:
                per_inst[f"{name}/{i['id']}"] = n
    return per_comp, per_inst


def _part(cluster: str, obj: dict[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    per_comp, per_inst = _counted(after.get("tree") or {})
    out = {"cluster": cluster, "replicas": per_comp, "object": obj, "totals": after.get("totals")}
    return out | ({"instances": per_inst} if per_inst else {})


async def divide(
    d: Definition,
    obj: dict[str, Any],
    before: dict[str, Any],
    clusters: Sequence[tuple[str, int]],
    evaluate: Evaluate,
) -> dict[str, Any]:
    """`{"parts": [...], "kept": [{"component", "reason"}], "divided": bool}` (module docstring)."""
    names = [c for c, _ in clusters]
    weights = [w for _, w in clusters]
    top = max(range(len(clusters)), key=lambda i: (weights[i], -i))
    gang = gang_components(d)
    slots: dict[str, Slot] = {}
    kept: dict[str, str] = {}
    fixed: dict[str, str] = {}  # kept components whose 0 cannot be written elsewhere
    for name, node in nodes(before.get("tree") or {}).items():
        insts = node.get("instances") or []
        if not any(i.get("replicas") is not None for i in insts):
            if any((i.get("totals") or {}).get("pods") for i in insts):
                fixed[name] = kept[name] = "it has pods and no count (no scaleDefinition.replicasPath)"
            continue
        try:
            slots[name] = slot(d, obj, before, name)
        except UpdateError as e:
            kept[name] = e.message
            if any((i.get("totals") or {}).get("pods") for i in insts):
                fixed[name] = e.message
            continue
        if name in gang:
            kept[name] = f"component {name}: the gang covers it as one group"
    plan: list[Counts] = [{} for _ in clusters]
    for name, s in slots.items():
        whole = name in kept
        split = {inst: shares(n or 0, weights) for inst, n in s.current.items()}
        if not whole and not all(_fits(s, {i: v[k] for i, v in split.items()}) for k in range(len(clusters))):
            kept[name] = f"component {name}: a share would fall outside its minReplicas / maxReplicas"
            whole = True
        if whole:
            split = {inst: [(n or 0) if k == top else 0 for k in range(len(clusters))] for inst, n in s.current.items()}
            if not all(_fits(s, {i: v[k] for i, v in split.items()}) for k in range(len(clusters))):
                fixed[name] = f"component {name}: 0 is below its minReplicas"
        for k in range(len(clusters)):
            plan[k][name] = {inst: v[k] for inst, v in split.items()}
    kept_list = [{"component": c, "reason": r} for c, r in kept.items()]
    if fixed:  # every copy would carry these: the whole workload goes to one cluster
        return {"divided": False, "kept": kept_list, "parts": [_part(names[top], copy.deepcopy(obj), before)]}
    await align(d, obj, [s for s in slots.values() if s.instances is None and len(s.locations) > 1], evaluate)
    parts = []
    for k, counts in enumerate(plan):
        if k != top and not any(n for per in counts.values() for n in per.values()):
            continue
        rw = write(obj, identity(obj), slots, counts)
        after = await evaluate(rw.object)
        moved = read_back_problems(before, after, {}, rw, expected(slots, counts))
        if moved:
            raise DivideError(names[k], moved)
        parts.append(_part(names[k], rw.object, after))
    return {"divided": len(parts) > 1, "kept": kept_list, "parts": parts}
