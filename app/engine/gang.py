"""Gang hints: the reference `CalculateSubtreeScale`, candidate members, group keys, and the
PodGroups KAI Scheduler would build from them (names `pg-<uid>[-keys]` / `pg-<uid>-<name>`)."""

from __future__ import annotations

import re
from typing import Any

from .compiled import CompiledDefinition
from .instances import ComponentValues, ExtractionError
from .pods import PodError, PodInput, infer_component, infer_instance, matches_subtree

_NOT_GIVEN = object()
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class GangError(Exception):
    pass


class ComponentFailed(GangError):
    """A component the gang sizes could not be extracted: the whole gang is unknown (a partial
    minimum would under-size the group).  `path` is the gang instruction that needed it."""

    def __init__(self, component: str, error: ExtractionError, path: str = ""):
        super().__init__(error.message)
        self.component, self.error, self.path = component, error, path


def _values(values: dict[str, ComponentValues | ExtractionError], name: str) -> ComponentValues:
    v = values.get(name)
    if isinstance(v, ExtractionError):
        raise ComponentFailed(name, v)
    if v is None:
        raise GangError(f"component {name} is not defined")
    return v


def subtree_scale(cd: CompiledDefinition, values: dict[str, Any], component: str, instance: Any = _NOT_GIVEN) -> int:
    """`CalculateSubtreeScale(component, instanceId?)`, bit for bit."""
    if instance is not _NOT_GIVEN and instance == "":
        raise GangError("instance id is empty")
    if component not in cd.components:
        raise GangError(f"component {component} is not defined")
    if cd.has_scale:
        return _by_definition(cd, values, component, instance, start=True)
    return _by_leaves(cd, values, component, instance, start=True)


def _by_definition(cd: CompiledDefinition, values: dict[str, Any], name: str, instance: Any, start: bool) -> int:
    cv = _values(values, name)
    if start and instance is not _NOT_GIVEN and instance is not None:
        inst = next((i for i in cv.instances if i.id == instance), None)
        if inst is None:
            raise GangError(f"instance id {instance} not found")
        own = inst.scale.effective_min() if inst.scale else 0
    else:
        own = sum(i.scale.effective_min() for i in cv.instances if i.scale is not None)
    kids = cd.children.get(name, [])
    if not kids:
        return own
    child_sum = sum(_by_definition(cd, values, k, _NOT_GIVEN, start=False) for k in kids)
    if child_sum == 0:
        return own
    if own == 0:
        return child_sum
    return own * child_sum


def _by_leaves(cd: CompiledDefinition, values: dict[str, Any], name: str, instance: Any, start: bool) -> int:
    c = cd.components[name]
    if c.pod_bearing:
        if not c.instance_id_path:
            return 1
        cv = _values(values, name)
        if start and instance is not _NOT_GIVEN and instance is not None:
            if instance not in cv.ids:
                raise GangError(f"instance id {instance} not found")
            return 1
        return len(cv.ids)
    return sum(_by_leaves(cd, values, k, _NOT_GIVEN, start=False) for k in cd.children.get(name, []))


def _topology(t: Any) -> dict[str, str] | None:
    if t is None:
        return None
    return {
        "topologyName": t.topology_name,
        "preferredTopologyLevel": t.preferred_topology_level,
        "requiredTopologyLevel": t.required_topology_level,
    }


def _safe(fn: Any, path: str) -> tuple[int | None, str | None]:
    try:
        return fn(), None
    except ComponentFailed as e:
        e.path = path
        raise
    except GangError as e:
        return None, str(e)


_GANG = "spec.optimizationInstructions.gangScheduling"


def workload_gang(cd: CompiledDefinition, values: dict[str, Any], owner_id: str) -> dict[str, Any]:
    """The workload-level gang view (no pods needed); {} without gang instructions.  Raises
    ComponentFailed when a component it sizes could not be extracted."""
    gang = cd.definition.karta.gang
    if gang is None or (gang.pod_group is None and not gang.pod_groups):
        return {}
    root = cd.order[0]
    out: dict[str, Any] = {}
    if gang.pod_group is not None:
        pg = gang.pod_group
        v2: dict[str, Any] = {"name": f"pg-{owner_id}-{pg.name}", "definitionName": pg.name}
        subs = []
        for i, sg in enumerate(pg.sub_groups or []):
            n, err = _safe(
                lambda sg=sg: subtree_scale(cd, values, sg.component_name or ""), f"{_GANG}.podGroup.subGroups[{i}]"
            )
            entry: dict[str, Any] = {"name": sg.component_name, "minAvailable": n}
            if sg.topology is not None:
                entry["topology"] = _topology(sg.topology)
            if err is None and (n or 0) <= 0:
                err = f"component {sg.component_name} must expose a replica scale definition"
            if err:
                entry["error"] = err
            subs.append(entry)
        if subs:
            v2["minAvailable"], v2["minSubGroup"], v2["subGroups"] = 0, len(subs), subs
        else:
            n, err = _safe(lambda: subtree_scale(cd, values, root), f"{_GANG}.podGroup")
            v2["minAvailable"] = n
            v2["minSubGroup"] = 0
            v2["subGroups"] = []
            if err:
                v2["error"] = err
        if pg.topology is not None:
            v2["topology"] = _topology(pg.topology)
        out["mode"] = "podGroup"
        out["podGroup"] = v2
    if gang.pod_groups:
        groups = []
        for gi, g in enumerate(gang.pod_groups):
            members = []
            for mi, m in enumerate(g.members or []):
                n, err = _safe(
                    lambda m=m: subtree_scale(cd, values, m.component_name or ""),
                    f"{_GANG}.podGroups[{gi}].members[{mi}]",
                )
                entry = {
                    "component": m.component_name,
                    "minAvailable": n,
                    "groupByKeyPaths": list(m.group_by_key_paths or []),
                    "filters": list(m.filters or []),
                }
                if err:
                    entry["error"] = err
                members.append(entry)
            groups.append({"name": g.name, "members": members})
        out["podGroups"] = groups
        out.setdefault("mode", "podGroups")  # podGroup wins when both are set
    return out


def pods_gang(
    cd: CompiledDefinition, values: dict[str, Any], pods: list[PodInput], owner_id: str
) -> list[dict[str, Any]]:
    """What KAI's Karta grouper decides for each pod (the definition's gang read once, not per pod)."""
    gang = cd.definition.karta.gang
    assert gang is not None, "called only for a workload whose gang view is not empty"
    if gang.pod_group is not None:
        group = f"pg-{owner_id}-{gang.pod_group.name}"
        sub_groups = [sg.component_name for sg in gang.pod_group.sub_groups or []]
        return [_pod_group_row(cd, p, group, sub_groups) for p in pods]
    return [_pod_groups_row(cd, values, p, owner_id) for p in pods]


def _pod_group_row(cd: CompiledDefinition, pod: PodInput, group: str, sub_groups: list[str | None]) -> dict[str, Any]:
    row: dict[str, Any] = {"pod": pod.name}
    try:
        row["component"] = infer_component(cd, pod)
        row["podGroup"] = group
        row["subGroups"] = [name for name in sub_groups if matches_subtree(cd, name or "", pod)]
    except PodError as e:
        row["error"] = str(e)
    return row


def _pod_groups_row(cd: CompiledDefinition, values: dict[str, Any], pod: PodInput, owner_id: str) -> dict[str, Any]:
    row: dict[str, Any] = {"pod": pod.name}
    try:
        component = infer_component(cd, pod)
        row["component"] = component
        eff = _effective_member(cd, pod, component)
        if eff is None:
            raise GangError(f"pod {pod.namespace}/{pod.name} does not match any Karta pod group member definition")
        instance = None
        if eff.effective_component == component:
            instance = infer_instance(cd, component, _values(values, component).ids, pod)
        keys = []
        for p in eff.member.group_by_key_paths or []:
            try:
                keys.append(pod.single(p))
            except PodError as e:
                raise GangError(f'failed to extract group key from path "{p}": {e}') from None
        name = f"pg-{owner_id}" + ("-" + "-".join(keys) if keys else "")
        if keys and (len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name)):
            raise GangError(f'pod group name "{name}" is not a valid DNS-1123 subdomain')
        row.update(
            {
                "instance": instance,
                "effectiveComponent": eff.effective_component,
                "podGroupDefinition": eff.pod_group_name,
                "groupKeys": keys,
                "podGroup": name,
                "minAvailable": subtree_scale(
                    cd, values, eff.effective_component, instance if instance is not None else _NOT_GIVEN
                ),
            }
        )
    except (PodError, GangError) as e:
        row["error"] = str(e)
    return row


def _effective_member(cd: CompiledDefinition, pod: PodInput, component: str) -> Any:
    for cand in cd.candidates.get(component, []):
        passed = True
        for f in cand.member.filters or []:
            try:
                value = pod.single_value(f)
            except PodError as e:
                raise GangError(
                    f"failed to evaluate filters for component {cand.effective_component} in group "
                    f'{cand.pod_group_name}: failed to evaluate filter "{f}": {e}'
                ) from None
            if value is not True:  # only boolean true passes
                passed = False
                break
        if passed:
            return cand
    return None


def group_pods(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods grouped by PodGroup name, in first-seen order (alpha mode)."""
    groups: dict[str, dict[str, Any]] = {}
    for r in rows:
        if "error" in r or "podGroup" not in r:
            continue
        g = groups.setdefault(r["podGroup"], {"name": r["podGroup"], "minAvailable": r.get("minAvailable"), "pods": []})
        g["pods"].append(r["pod"])
    return list(groups.values())
