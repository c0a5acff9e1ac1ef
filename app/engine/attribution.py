"""Place a workload's pods on its components and instances (reference `ResolveDescribe`).

Which pods belong to the workload is decided before this (owner-reference chain, or the caller
supplying them).  Here, selectors only say *where* each pod goes: a pod-bearing component
claims the pods its type selector matches (or all of them when it is the only component with
a specDefinition), grouping components pass everything down, and multi-instance components
narrow pods by the instance id their instance selector reads.
"""

from __future__ import annotations

from operator import itemgetter
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


def pod_row(pod: PodInput, name: str, component: str, instance: str | None) -> dict[str, Any]:
    """The pod's row; `name` is pod.name (a property: callers read it once per pod)."""
    obj = pod.obj
    ready = pod_ready(obj)
    row = {"name": name, "component": component, "instance": instance,
           "phase": (obj.get("status") or {}).get("phase"), "ready": ready,
           "node": (obj.get("spec") or {}).get("nodeName") or None,
           "reason": None if ready else not_ready_reason(obj)}
    waiting = None if ready else container_waiting_reason(obj)
    if waiting:
        row["containerReason"] = waiting
    return row


_Named = tuple[str, PodInput]  # (pod.name, the pod): the name is a property, read once per pod
_BY_NAME = itemgetter(0)


def attribute_pods(cd: CompiledDefinition, values: dict[str, Any], pods: list[PodInput], tree: dict[str, Any],
                   warnings: list[str]) -> dict[str, Any]:
    sole_owner = sum(1 for c in cd.components.values() if c.spec_definition is not None) == 1
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()

    def claims(name: str, offered: list[_Named]) -> list[_Named]:
        c = cd.components[name]
        sel = c.pod_selector.component_type_selector if c.pod_selector else None
        if sel is None:
            return list(offered) if sole_owner else []
        out = []
        for pod_name, p in offered:
            try:
                if matches_type(sel, p):
                    out.append((pod_name, p))
            except PodError as e:
                warnings.append(f"pod {pod_name}: component {name}: {e}")
        return out

    def by_instance(name: str, c: ComponentDefinition, claimed: list[_Named]) -> dict[str | None, list[_Named]]:
        """The claimed pods grouped by the instance id each declares (read once per pod)."""
        sel = c.pod_selector.component_instance_selector
        ids: dict[str, str | None] = {}  # pod name -> its instance id (a later namesake wins)
        for pod_name, p in claimed:
            if sel is None or not sel.id_path:
                ids[pod_name] = None  # no instance selector: the pod cannot be placed
                continue
            try:
                ids[pod_name] = p.single(sel.id_path)
            except PodError as e:
                ids[pod_name] = None
                warnings.append(f"pod {pod_name}: component {name}: cannot read its instance: {e}")
        groups: dict[str | None, list[_Named]] = {}
        for named in claimed:
            groups.setdefault(ids[named[0]], []).append(named)
        return groups

    def walk(node: dict[str, Any], offered: list[_Named], is_root: bool) -> None:
        name = node["name"]
        c = cd.components[name]
        if c.pod_bearing:
            claimed = claims(name, offered)
            instances = node["instances"]
            multi = not is_root and c.pod_selector is not None and any(i["id"] is not None for i in instances)
            groups = by_instance(name, c, claimed) if multi else None
            for inst in instances:
                mine = claimed if groups is None else groups.get(inst["id"], [])
                inst_rows = [pod_row(p, pod_name, name, inst["id"]) for pod_name, p in sorted(mine, key=_BY_NAME)]
                rows.extend(inst_rows)
                placed.update(pod_name for pod_name, _ in mine)
                inst["live"] = {"current": len(inst_rows), "ready": sum(r["ready"] for r in inst_rows),
                                "desired": inst["totals"]["pods"],
                                "nodes": sorted({r["node"] for r in inst_rows if r["node"]})}
                if is_root:
                    break  # the root renders all its instances as one row
        for child in node["children"]:
            walk(child, offered, False)

    named = [(p.name, p) for p in pods]
    walk(tree, named, True)
    ready_names = {r["name"] for r in rows if r["ready"]}
    return {
        "current": len(placed), "ready": len(ready_names & placed),
        "desired": tree["totals"]["pods"] if tree["totals"] is not None else None,  # unknown when partial
        "pods": sorted(rows, key=lambda r: (r["name"], r["component"])),
        "unplaced": sorted(pod_name for pod_name, _ in named if pod_name not in placed),
    }
