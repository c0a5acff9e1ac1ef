"""Place a workload's pods on its components and instances (reference `ResolveDescribe`).

Which pods belong to the workload is decided before this (owner-reference chain, or the caller
supplying them).  Here, selectors only say *where* each pod goes: a pod-bearing component
claims the pods its type selector matches (or all of them when it is the only component with
a specDefinition), grouping components pass everything down, and multi-instance components
narrow pods by the instance id their instance selector reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

from .compiled import CompiledDefinition
from .pods import PodError, PodInput, matches_type


def pod_ready(pod: dict[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def not_ready_reason(pod: dict[str, Any]) -> str | None:
    """PodScheduled=False reason, else status.reason, else the Ready=False reason."""
    status = pod.get("status") or {}
    # (every pod's part reads this, placed or not: a condition of any shape is data, never a crash)
    conds = {c["type"]: c for c in status.get("conditions") or [] if isinstance(c, dict) and type(c.get("type")) is str}
    sched = conds.get("PodScheduled")
    if sched and sched.get("status") == "False" and sched.get("reason"):
        return sched["reason"]
    if status.get("reason"):
        return status["reason"]
    ready = conds.get("Ready")
    if ready and ready.get("status") == "False" and ready.get("reason"):
        return ready["reason"]
    return None


def container_waiting_reason(pod: dict[str, Any]) -> str | None:
    """The first waiting container's reason (CrashLoopBackOff, ImagePullBackOff, ...)."""
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = cs.get("state") if isinstance(cs, dict) else None
        waiting = state.get("waiting") if isinstance(state, dict) else None
        if isinstance(waiting, dict) and waiting.get("reason"):
            return waiting["reason"]
    return None


# C-level keys and reads: walk runs per component and instance, where generators cost the most.
_BY_NAME = attrgetter("name")
_ROW_ORDER = itemgetter("name", "component")
_READY, _NODE = itemgetter("ready"), itemgetter("node")


@dataclass(frozen=True, slots=True)
class Layout:
    """What placing pods reads of one interpretation's tree: its pod-bearing components in the
    order the tree is walked, each with whether it is the root (its instances render as one row)
    and whether pods are narrowed to instances by the id they declare (a non-root component with
    a pod selector and instance ids)."""

    steps: tuple[tuple[str, bool, bool], ...]  # (component, is_root, by instance)
    sole_owner: bool  # the only component with a specDefinition claims every pod


def layout_of(cd: CompiledDefinition, tree: dict[str, Any]) -> Layout:
    bearing = set(cd.leaves)  # the pod-bearing components (`pod_bearing` walks the spec definition)
    steps: list[tuple[str, bool, bool]] = []

    def walk(node: dict[str, Any], is_root: bool) -> None:
        name = node["name"]
        if name in bearing:
            c = cd.components[name]
            multi = not is_root and c.pod_selector is not None and any(i["id"] is not None for i in node["instances"])
            steps.append((name, is_root, multi))
        for child in node["children"]:
            walk(child, False)

    walk(tree, True)
    sole = sum(1 for c in cd.components.values() if c.spec_definition is not None) == 1
    return Layout(tuple(steps), sole)


class PodPart:
    """What one pod contributes to a live view, computed from the pod alone (and the layout it is
    placed in): its row's own fields, per pod-bearing component whether it claims the pod and the
    instance id the pod declares, the warnings reading them gave, and its gang row.  A pod event
    recomputes only its pod's part; the view is assembled from the parts (`assemble`)."""

    __slots__ = ("gang", "name", "places", "row")

    def __init__(self, name: str, row: dict[str, Any], places: dict[str, Place], gang: dict[str, Any] | None):
        self.name, self.row, self.places, self.gang = name, row, places, gang


# per component: (claimed, the instance id the pod declares, the claim's warning, the id's warning)
Place = tuple[bool, "str | None", "str | None", "str | None"]


def _row_fields(obj: dict[str, Any]) -> dict[str, Any]:
    ready = pod_ready(obj)
    row = {
        "phase": (obj.get("status") or {}).get("phase"),
        "ready": ready,
        "node": (obj.get("spec") or {}).get("nodeName") or None,
        "reason": None if ready else not_ready_reason(obj),
    }
    if not ready:
        waiting = container_waiting_reason(obj)
        if waiting:
            row["containerReason"] = waiting
    return row


def pod_part(cd: CompiledDefinition, layout: Layout, p: PodInput, gang: dict[str, Any] | None = None) -> PodPart:
    places: dict[str, Place] = {}
    for name, _, multi in layout.steps:
        c = cd.components[name]
        sel = c.pod_selector.component_type_selector if c.pod_selector else None
        claimed, claim_warning = False, None
        if sel is None:
            claimed = layout.sole_owner
        else:
            try:
                claimed = matches_type(sel, p)
            except PodError as e:
                claim_warning = f"pod {p.name}: component {name}: {e}"
        iid = id_warning = None
        if claimed and multi:
            isel = c.pod_selector.component_instance_selector if c.pod_selector is not None else None
            if isel is not None and isel.id_path:  # else the pod cannot be placed
                try:
                    iid = p.single(isel.id_path)
                except PodError as e:
                    id_warning = f"pod {p.name}: component {name}: cannot read its instance: {e}"
        places[name] = (claimed, iid, claim_warning, id_warning)
    return PodPart(p.name, _row_fields(p.obj), places, gang)


def assemble(layout: Layout, tree: dict[str, Any], parts: list[PodPart], warnings: list[str]) -> dict[str, Any]:
    """The live view (reference `ResolveDescribe`) from the pods' parts, in their order: each
    instance's `live` is set in `tree` (the caller's own copy), the warnings appended."""
    multi = {name: m for name, _, m in layout.steps}
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()

    def walk(node: dict[str, Any], is_root: bool) -> None:
        name = node["name"]
        if name in multi:
            claimed: list[PodPart] = []
            for p in parts:
                got, _, note, _ = p.places[name]
                if note is not None:
                    warnings.append(note)
                if got:
                    claimed.append(p)
            groups: dict[str | None, list[PodPart]] | None = None
            if multi[name]:
                ids: dict[str, str | None] = {}  # pod name -> its instance id (a later namesake wins)
                for p in claimed:
                    _, iid, _, note = p.places[name]
                    if note is not None:
                        warnings.append(note)
                    ids[p.name] = iid
                groups = {}
                for p in claimed:
                    groups.setdefault(ids[p.name], []).append(p)
            for inst in node["instances"]:
                iid = inst["id"]
                mine = claimed if groups is None else groups.get(iid, [])
                inst_rows = [
                    {"name": p.name, "component": name, "instance": iid, **p.row} for p in sorted(mine, key=_BY_NAME)
                ]
                rows.extend(inst_rows)
                placed.update(map(_BY_NAME, mine))
                inst["live"] = {
                    "current": len(inst_rows),
                    "ready": sum(map(_READY, inst_rows)),
                    "desired": inst["totals"]["pods"],
                    "nodes": sorted(set(filter(None, map(_NODE, inst_rows)))),
                }
                if is_root:
                    break  # the root renders all its instances as one row
        for child in node["children"]:
            walk(child, False)

    walk(tree, True)
    ready_names = {r["name"] for r in rows if r["ready"]}
    return {
        "current": len(placed),
        "ready": len(ready_names & placed),
        "desired": tree["totals"]["pods"] if tree["totals"] is not None else None,  # unknown when partial
        "pods": sorted(rows, key=_ROW_ORDER),
        "unplaced": sorted(p.name for p in parts if p.name not in placed),
    }


# -- as JSON: a shard writes parts to the store, an API replica assembles the view from them --------
def layout_doc(layout: Layout) -> dict[str, Any]:
    return {"steps": [list(s) for s in layout.steps], "soleOwner": layout.sole_owner}


def layout_from(doc: dict[str, Any]) -> Layout:
    return Layout(tuple((str(n), bool(r), bool(m)) for n, r, m in doc["steps"]), bool(doc["soleOwner"]))


def part_doc(part: PodPart) -> dict[str, Any]:
    return {"name": part.name, "row": part.row, "places": part.places, "gang": part.gang}


def part_from(doc: dict[str, Any]) -> PodPart:
    places = {k: (bool(v[0]), v[1], v[2], v[3]) for k, v in doc["places"].items()}
    return PodPart(str(doc["name"]), doc["row"], places, doc["gang"])
