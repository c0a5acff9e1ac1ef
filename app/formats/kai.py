"""KAI Scheduler's PodGroups (scheduling.run.ai/v2alpha2): the groups its pod grouper makes for
this workload, from the engine's gang hints (docs/karta-semantics.md, "Gang hints").

The grouper reads the top owner's labels: `kai.scheduler/queue` names the queue,
`priorityClassName` the priority class (else the pods' own), `kai.scheduler/preemptibility` the
preemptibility; without that label KAI derives it from the priority class's value (below 100:
preemptible).  Values are known here for KAI's own classes only; for any other class the field
is left out and KAI decides at scheduling time.
"""

from __future__ import annotations

from typing import Any

from .common import dns_label, inputs, pod_parts, workload_meta

QUEUE_LABEL = "kai.scheduler/queue"
PRIORITY_LABEL = "priorityClassName"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
PREEMPTIBILITIES = ("preemptible", "non-preemptible")
# The priority classes KAI installs, by value (train 50, build-preemptible 75, build 100,
# inference 125): below 100 is preemptible.
KAI_CLASSES = {
    "train": "preemptible",
    "build-preemptible": "preemptible",
    "build": "non-preemptible",
    "inference": "non-preemptible",
}


def _topology(t: Any) -> dict[str, str] | None:
    if not isinstance(t, dict):
        return None
    out = {
        "topology": t.get("topologyName"),
        "requiredTopologyLevel": t.get("requiredTopologyLevel"),
        "preferredTopologyLevel": t.get("preferredTopologyLevel"),
    }
    return {k: v for k, v in out.items() if v} or None


def _common(interpretation: dict[str, Any]) -> dict[str, Any]:
    """The spec fields every PodGroup of the workload shares (queue, priority, preemptibility)."""
    labels = inputs(interpretation).get("labels") or {}
    out: dict[str, Any] = {}
    if labels.get(QUEUE_LABEL):
        out["queue"] = labels[QUEUE_LABEL]
    priority = labels.get(PRIORITY_LABEL) or next(
        (p.pod["priorityClassName"] for p in pod_parts(interpretation) if p.pod.get("priorityClassName")), None
    )
    if priority:
        out["priorityClassName"] = priority
    preempt = labels.get(PREEMPTIBILITY_LABEL)
    if preempt not in PREEMPTIBILITIES:
        preempt = KAI_CLASSES.get(priority or "")
    if preempt:
        out["preemptibility"] = preempt
    return out


def _metadata(name: str, interpretation: dict[str, Any]) -> dict[str, Any]:
    w = workload_meta(interpretation)
    meta: dict[str, Any] = {"name": name}
    if w.get("namespace"):
        meta["namespace"] = w["namespace"]
    if w.get("uid"):  # the grouper makes the top owner the PodGroup's owner
        meta["ownerReferences"] = [
            {"apiVersion": w.get("apiVersion"), "kind": w.get("kind"), "name": w.get("name"), "uid": w["uid"]}
        ]
    return meta


def _group(
    name: str, min_member: int, sub_groups: list[dict[str, Any]], topology: Any, interpretation: dict[str, Any]
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": max(1, min_member)}  # the CRD's minimum
    if sub_groups:
        spec["subGroups"] = sub_groups
    spec.update(_common(interpretation))
    t = _topology(topology)
    if t is not None:
        spec["topologyConstraint"] = t
    return {"metadata": _metadata(name, interpretation), "spec": spec}


def pod_groups(interpretation: dict[str, Any]) -> dict[str, Any]:
    gang = interpretation.get("gang") or {}
    w = workload_meta(interpretation)
    owner = str(w.get("uid") or w.get("name") or "")
    if gang.get("mode") == "podGroup":
        pg = gang["podGroup"]
        subs = []
        for sg in pg.get("subGroups") or []:
            entry: dict[str, Any] = {
                "name": dns_label(sg.get("name") or ""),
                "minMember": max(1, sg.get("minAvailable") or 0),
            }
            t = _topology(sg.get("topology"))
            if t is not None:
                entry["topologyConstraint"] = t
            subs.append(entry)
        minimum = pg.get("minAvailable") or sum(s["minMember"] for s in subs)
        return {"podGroups": [_group(pg["name"], minimum, subs, pg.get("topology"), interpretation)]}
    if gang.get("mode") == "podGroups":
        if gang.get("groups"):  # with pods: the groups their keys made
            return {
                "podGroups": [
                    _group(g["name"], g.get("minAvailable") or 0, [], None, interpretation) for g in gang["groups"]
                ]
            }
        # without pods, the keys are unknown: one group for the workload, every member's minimum
        minimum = sum(m.get("minAvailable") or 0 for g in gang.get("podGroups") or [] for m in g.get("members") or [])
        return {"podGroups": [_group(f"pg-{owner}", minimum, [], None, interpretation)]}
    # no gang hints: KAI's default grouper, one group for the top owner, one pod enough to start
    if not pod_parts(interpretation):
        return {"podGroups": []}
    return {"podGroups": [_group(f"pg-{w.get('name')}-{owner}", 1, [], None, interpretation)]}
