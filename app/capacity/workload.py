"""An interpretation's pods as the capacity plan's pod groups (`app.capacity.plan.PodGroup`).

Reads only the interpretation's JSON (docs/api-contract.md: `tree`, each pod-bearing instance's
`pod` and `totals`, the `gang` hint), so every definition of the catalog, and any other, is
handled the same way: no framework is named here.

**Groups.** One group per pod-bearing instance of the tree: named `component/instance`
(`component` alone for an instance without an id), `count` its desired pods (`totals.pods`), its
requests the pod view's `requestValues` (effective per-pod requests, already the plan's integer
units), its constraints the pod view's `nodeSelector`, `tolerations` and required node affinity
(`Constraints.of_pod_spec`). Instances with no desired pod are left out.

**Gangs.** Without a gang hint (`{}`), no group is a gang and every pod must place. Otherwise
each group belongs to one gang set with a minimum:

- `podGroup` form without subgroups: every group, minimum `podGroup.minAvailable`;
- `podGroup` form with subgroups: a subgroup names a component; its groups are those of that
  component and of its descendants (the nearest subgroup wins when they nest), minimum the
  subgroup's `minAvailable`. Groups in no subgroup are no gang's: all their pods must place;
- `podGroups` (alpha) form: each member names a component; a group belongs to the member naming
  its own component, else its nearest ancestor (member filters and group keys need pods: they
  are not read; the keys split a member's pods into several gangs, whose minimums add up to
  the member's), minimum the member's `minAvailable`.

A set's minimum is shared among its groups: each group's `count` becomes its share. When the
minimum is unknown (the hint says `error`), zero (a gang that cannot be sized: no constraint a
scheduler would keep) or at least the set's pods, every pod must place.
When it is less: if the groups' own minimums (`minReplicas`, capped at their pods) add up to it
exactly (per-role minimums, as Volcano tasks and Grove cliques give), each group keeps its own;
otherwise the minimum is split in proportion to the groups' pods (largest remainders, ties to
the group that comes first). The fit then requires exactly those pods placed at once.

**Topology.** A subgroup's `topology.requiredTopologyLevel` (else the podGroup's) is the gang's
`topology_key`: its pods stay within one value of that node label. One gang per subgroup (named
`<podGroup>/<subgroup>`), else one for the podGroup; the alpha form has no topology. When both
the podGroup and a subgroup require a level, the subgroup's is used (the nesting of one in the
other is not checked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.capacity.filters import Constraints
from app.capacity.nodes import as_list, as_mapping
from app.capacity.plan import Gang, PodGroup


class NotFittable(ValueError):
    """The interpretation cannot be fitted (a component failed, so its pods are unknown)."""


@dataclass(frozen=True)
class _Group:
    group: PodGroup
    component: str
    path: tuple[str, ...]  # the component's ancestors, root first, then itself
    min_replicas: int | None


def _placement(pod: Mapping[str, Any]) -> Constraints:
    return Constraints.of_pod_spec({k: pod[k] for k in ("nodeSelector", "tolerations", "affinity") if k in pod})


def _int(raw: object) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _groups(tree: Mapping[str, Any], above: tuple[str, ...] = ()) -> list[_Group]:
    name = str(tree.get("name") or "")
    path = (*above, name)
    out = []
    for inst in as_list(tree.get("instances")):
        pod = as_mapping(inst).get("pod")
        count = _int(as_mapping(inst.get("totals")).get("pods")) or 0
        if not isinstance(pod, Mapping) or count <= 0:
            continue
        requests = {str(k): v for k, v in as_mapping(pod.get("requestValues")).items() if _int(v) is not None}
        instance = str(inst["id"]) if inst.get("id") is not None else None
        label = f"{name}/{instance}" if instance is not None else name
        group = PodGroup(label, count, requests, _placement(pod), component=name, instance=instance)
        out.append(_Group(group, name, path, _int(inst.get("minReplicas"))))
    for child in as_list(tree.get("children")):
        out.extend(_groups(as_mapping(child), path))
    return out


def _shares(groups: Sequence[_Group], minimum: int | None) -> list[int]:
    """Each group's part of a set's minimum (see the module docstring)."""
    counts = [g.group.count for g in groups]
    total = sum(counts)
    if minimum is None or minimum <= 0 or minimum >= total:
        return counts
    own = [min(g.min_replicas, g.group.count) if g.min_replicas is not None else None for g in groups]
    if all(o is not None for o in own) and sum(o for o in own if o is not None) == minimum:
        return [o or 0 for o in own]
    exact = [c * minimum for c in counts]
    shares = [e // total for e in exact]
    rest = minimum - sum(shares)
    by_remainder = sorted(range(len(groups)), key=lambda i: (-(exact[i] % total), i))
    for i in by_remainder[:rest]:
        shares[i] += 1
    return shares


def _level(topology: object) -> str | None:
    level = as_mapping(topology).get("requiredTopologyLevel")
    return level if isinstance(level, str) and level else None


def _nearest(groups: Sequence[_Group], names: Sequence[str]) -> dict[int, str]:
    """Group index -> the name in `names` nearest it: its component, else its nearest ancestor."""
    out = {}
    for i, g in enumerate(groups):
        hit = next((c for c in reversed(g.path) if c in names), None)
        if hit is not None:
            out[i] = hit
    return out


def _apply(
    groups: list[_Group], members: Sequence[int], minimum: int | None, gang: Gang, out: dict[int, PodGroup]
) -> None:
    chosen = [groups[i] for i in members]
    for i, share in zip(members, _shares(chosen, minimum), strict=True):
        out[i] = replace(groups[i].group, count=share, gang=gang)


def pod_groups(interpretation: Mapping[str, Any]) -> list[PodGroup]:
    """The plan's pod groups of one interpretation (see the module docstring). Raises
    NotFittable when a component or the gang could not be computed."""
    failed = [e for e in as_list(interpretation.get("errors")) if as_mapping(e).get("part") in ("component", "gang")]
    if failed:
        what = ", ".join(sorted({str(as_mapping(e).get("component") or "gang") for e in failed}))
        raise NotFittable(f"the interpretation is partial (failed: {what}): its pods are not all known")
    groups = _groups(as_mapping(interpretation.get("tree")))
    gang = as_mapping(interpretation.get("gang"))
    out: dict[int, PodGroup] = {}
    pg = as_mapping(gang.get("podGroup")) if "podGroup" in gang else None
    if pg is not None:
        name = str(pg.get("name") or pg.get("definitionName") or "gang")
        subs = [as_mapping(s) for s in as_list(pg.get("subGroups"))]
        if not subs:
            whole = Gang(name, _level(pg.get("topology")))
            _apply(groups, range(len(groups)), _int(pg.get("minAvailable")), whole, out)
        else:
            by_name = {str(s.get("name")): s for s in subs}
            nearest = _nearest(groups, list(by_name))
            for sub_name, sub in by_name.items():
                members = [i for i, c in nearest.items() if c == sub_name]
                key = _level(sub.get("topology")) or _level(pg.get("topology"))
                _apply(groups, members, _int(sub.get("minAvailable")), Gang(f"{name}/{sub_name}", key), out)
    elif gang.get("podGroups"):
        for entry in as_list(gang.get("podGroups")):
            entry = as_mapping(entry)
            listed = [as_mapping(m) for m in as_list(entry.get("members"))]
            mins = {str(m.get("component")): _int(m.get("minAvailable")) for m in listed}
            nearest = _nearest(groups, list(mins))
            for component, minimum in mins.items():
                chosen = [i for i, c in nearest.items() if c == component and i not in out]
                _apply(groups, chosen, minimum, Gang(str(entry.get("name") or "gang")), out)
    return [out.get(i, g.group) for i, g in enumerate(groups)]
