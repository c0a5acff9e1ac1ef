"""Place a workload's pods on its components and instances (reference `ResolveDescribe`).

Which pods belong to the workload is decided before this (owner-reference chain, or the caller
supplying them).  Here, selectors only say *where* each pod goes: a pod-bearing component
claims the pods its type selector matches (or all of them when it is the only component with
a specDefinition), grouping components pass everything down, and multi-instance components
narrow pods by the instance id their instance selector reads.
"""

from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Any

from ..karta.model import ComponentDefinition
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
    conds = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
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
        waiting = ((cs or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return waiting["reason"]
    return None


def pod_row(pod: PodInput, component: str, instance: str | None) -> dict[str, Any]:
    obj = pod.obj
    ready = pod_ready(obj)
    row = {
        "name": pod.name,
        "component": component,
        "instance": instance,
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


# C-level keys and reads: walk runs per component and instance, where generators cost the most.
_BY_NAME = attrgetter("name")
_ROW_ORDER = itemgetter("name", "component")
_READY, _NODE = itemgetter("ready"), itemgetter("node")


def attribute_pods(
    cd: CompiledDefinition, values: dict[str, Any], pods: list[PodInput], tree: dict[str, Any], warnings: list[str]
) -> dict[str, Any]:
    sole_owner = sum(1 for c in cd.components.values() if c.spec_definition is not None) == 1
    bearing = set(cd.leaves)  # the pod-bearing components (`pod_bearing` walks the spec definition)
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()

    def claims(name: str, offered: list[PodInput]) -> list[PodInput]:
        c = cd.components[name]
        sel = c.pod_selector.component_type_selector if c.pod_selector else None
        if sel is None:
            return list(offered) if sole_owner else []
        out = []
        for p in offered:
            try:
                if matches_type(sel, p):
                    out.append(p)
            except PodError as e:
                warnings.append(f"pod {p.name}: component {name}: {e}")
        return out

    def by_instance(name: str, c: ComponentDefinition, claimed: list[PodInput]) -> dict[str | None, list[PodInput]]:
        """The claimed pods grouped by the instance id each declares (read once per pod)."""
        sel = c.pod_selector.component_instance_selector if c.pod_selector is not None else None
        ids: dict[str, str | None] = {}  # pod name -> its instance id (a later namesake wins)
        for p in claimed:
            if sel is None or not sel.id_path:
                ids[p.name] = None  # no instance selector: the pod cannot be placed
                continue
            try:
                ids[p.name] = p.single(sel.id_path)
            except PodError as e:
                ids[p.name] = None
                warnings.append(f"pod {p.name}: component {name}: cannot read its instance: {e}")
        groups: dict[str | None, list[PodInput]] = {}
        for p in claimed:
            groups.setdefault(ids[p.name], []).append(p)
        return groups

    def walk(node: dict[str, Any], offered: list[PodInput], is_root: bool) -> None:
        name = node["name"]
        if name in bearing:
            c = cd.components[name]
            claimed = claims(name, offered)
            instances = node["instances"]
            multi = not is_root and c.pod_selector is not None and any(i["id"] is not None for i in instances)
            groups = by_instance(name, c, claimed) if multi else None
            for inst in instances:
                mine = claimed if groups is None else groups.get(inst["id"], [])
                inst_rows = [pod_row(p, name, inst["id"]) for p in sorted(mine, key=_BY_NAME)]
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
            walk(child, offered, False)

    walk(tree, pods, True)
    ready_names = {r["name"] for r in rows if r["ready"]}
    return {
        "current": len(placed),
        "ready": len(ready_names & placed),
        "desired": tree["totals"]["pods"] if tree["totals"] is not None else None,  # unknown when partial
        "pods": sorted(rows, key=_ROW_ORDER),
        "unplaced": sorted(p.name for p in pods if p.name not in placed),
    }
