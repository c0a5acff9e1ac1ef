"""KAI Scheduler's PodGroups (scheduling.run.ai/v2alpha2): the groups its pod grouper makes for
this workload, following its source (docs/api-contract.md, "Consumer formats", says where this
is an approximation).

Every grouper builds on KAI's default grouper: the queue is the top owner's
`kai.scheduler/queue` label, else the pod's, else the `project` label (with `-<node pool>` when
the pod has a `kai.scheduler/node-pool` label), else `default-queue`; the priority class is the
owner's `priorityClassName` label, else the pod's label, else the pod's `priorityClassName`,
else the workload type's default (`inference` for Deployments and Knative Services, `build`
for Notebooks, `train` otherwise); the preemptibility only the owner's or the pod's
`kai.scheduler/preemptibility` label; the topology the owner's `kai.scheduler/topology*`
annotations.  Kinds with a built-in KAI plugin are named as the default grouper names them
(`pg-<name>-<uid>`); others by the Karta gang hints (docs/karta-semantics.md, "Gang hints").
"""

from __future__ import annotations

from typing import Any

from .common import PodPart, dns_label, inputs, pod_parts, workload_meta

QUEUE_LABEL = "kai.scheduler/queue"
NODE_POOL_LABEL = "kai.scheduler/node-pool"
PROJECT_LABEL = "project"
DEFAULT_QUEUE = "default-queue"
PRIORITY_LABEL = "priorityClassName"
RAY_PRIORITY_LABEL = "ray.io/priority-class-name"  # the Ray plugin's own, on the top owner
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
PREEMPTIBILITIES = ("preemptible", "non-preemptible")
TOPOLOGY_ANNOTATIONS = {
    "topology": "kai.scheduler/topology",
    "requiredTopologyLevel": "kai.scheduler/topology-required-placement",
    "preferredTopologyLevel": "kai.scheduler/topology-preferred-placement",
}
# The priority class a plugin falls back to (the default grouper's is `train`).
DEFAULT_PRIORITY = {
    ("apps", "Deployment"): "inference",
    ("serving.knative.dev", "Service"): "inference",
    ("egx.nvidia.io", "SPOTRequest"): "inference",
    ("kubeflow.org", "Notebook"): "build",
}
# Kinds KAI's plugins hub groups itself (pkg/podgrouper/podgrouper/hub/hub.go): for them a Karta
# is not consulted and the group is named by the default grouper.
BUILT_IN = {
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("kubeflow.org", "TFJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "XGBoostJob"),
    ("kubeflow.org", "JAXJob"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "Notebook"),
    ("kubeflow.org", "ScheduledWorkflow"),
    ("ray.io", "RayCluster"),
    ("ray.io", "RayJob"),
    ("ray.io", "RayService"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ("grove.io", "PodGangSet"),
    ("serving.knative.dev", "Service"),
    ("machinelearning.seldon.io", "SeldonDeployment"),
    ("kubevirt.io", "VirtualMachineInstance"),
    ("workspace.devfile.io", "DevWorkspace"),
    ("tekton.dev", "PipelineRun"),
    ("tekton.dev", "TaskRun"),
    ("amlarc.azureml.com", "AmlJob"),
    ("egx.nvidia.io", "SPOTRequest"),
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


def _group_kind(interpretation: dict[str, Any]) -> tuple[str, str]:
    w = workload_meta(interpretation)
    api = str(w.get("apiVersion") or "")
    return (api.rpartition("/")[0], str(w.get("kind") or ""))


def _pod_label(parts: list[PodPart], key: str) -> str | None:
    """A label of the pods (the first pod template that sets it: the grouper reads the pod it
    is grouping)."""
    for p in parts:
        value = (p.template["metadata"].get("labels") or {}).get(key)
        if isinstance(value, str):
            return value
    return None


def _queue(owner: dict[str, Any], parts: list[PodPart]) -> str:
    if isinstance(owner.get(QUEUE_LABEL), str):
        return str(owner[QUEUE_LABEL])
    if (queue := _pod_label(parts, QUEUE_LABEL)) is not None:
        return queue
    project = owner.get(PROJECT_LABEL) if isinstance(owner.get(PROJECT_LABEL), str) else None
    project = project if project is not None else _pod_label(parts, PROJECT_LABEL)
    if project:
        pool = _pod_label(parts, NODE_POOL_LABEL)
        return f"{project}-{pool}" if pool is not None else project
    return DEFAULT_QUEUE


def _priority(interpretation: dict[str, Any], owner: dict[str, Any], parts: list[PodPart]) -> str:
    """The priority class; KAI also checks that the class exists (and reads per-type defaults
    from a ConfigMap), which an answer without the cluster cannot."""
    kind = _group_kind(interpretation)
    if kind[0] == "ray.io" and owner.get(RAY_PRIORITY_LABEL):
        return str(owner[RAY_PRIORITY_LABEL])
    if isinstance(owner.get(PRIORITY_LABEL), str):
        return str(owner[PRIORITY_LABEL])
    found = _pod_label(parts, PRIORITY_LABEL) or next(
        (p.pod["priorityClassName"] for p in parts if p.pod.get("priorityClassName")), None
    )
    return found or DEFAULT_PRIORITY.get(kind, "train")


def _preemptibility(owner: dict[str, Any], parts: list[PodPart]) -> str | None:
    """Only a label sets it (the owner's wins even when invalid, as KAI reads it); else KAI's
    per-type ConfigMap, unknown here, or the scheduler decides from the class's value."""
    value = owner[PREEMPTIBILITY_LABEL] if PREEMPTIBILITY_LABEL in owner else _pod_label(parts, PREEMPTIBILITY_LABEL)
    return value if value in PREEMPTIBILITIES else None


def _common(interpretation: dict[str, Any]) -> dict[str, Any]:
    """The spec fields every PodGroup of the workload shares (queue, priority, preemptibility)."""
    owner = inputs(interpretation).get("labels") or {}
    parts = pod_parts(interpretation)
    out: dict[str, Any] = {
        "queue": _queue(owner, parts),
        "priorityClassName": _priority(interpretation, owner, parts),
    }
    preempt = _preemptibility(owner, parts)
    if preempt is not None:
        out["preemptibility"] = preempt
    return out


def _owner_topology(interpretation: dict[str, Any]) -> dict[str, str] | None:
    """The default grouper's topology: the top owner's annotations."""
    annotations = inputs(interpretation).get("annotations") or {}
    out = {field: annotations[key] for field, key in TOPOLOGY_ANNOTATIONS.items() if annotations.get(key)}
    return out or None


def _metadata(name: str, interpretation: dict[str, Any], queue: str) -> dict[str, Any]:
    """The top owner is the PodGroup's owner; its labels are the PodGroup's, with the queue's."""
    w = workload_meta(interpretation)
    meta: dict[str, Any] = {"name": name}
    if w.get("namespace"):
        meta["namespace"] = w["namespace"]
    meta["labels"] = {**(inputs(interpretation).get("labels") or {}), QUEUE_LABEL: queue}
    if w.get("uid"):
        meta["ownerReferences"] = [
            {"apiVersion": w.get("apiVersion"), "kind": w.get("kind"), "name": w.get("name"), "uid": w["uid"]}
        ]
    return meta


def _group(
    name: str, min_member: int, sub_groups: list[dict[str, Any]], topology: Any, interpretation: dict[str, Any]
) -> dict[str, Any]:
    """One PodGroup; `topology`: the Karta's, which replaces the owner's annotations."""
    spec: dict[str, Any] = {"minMember": max(1, min_member)}  # the CRD's minimum
    if sub_groups:
        spec["subGroups"] = sub_groups
    spec.update(_common(interpretation))
    t = _topology(topology) or _owner_topology(interpretation)
    if t is not None:
        spec["topologyConstraint"] = t
    return {"metadata": _metadata(name, interpretation, spec["queue"]), "spec": spec}


def _sub_groups(pg: dict[str, Any]) -> list[dict[str, Any]]:
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
    return subs


def pod_groups(interpretation: dict[str, Any]) -> dict[str, Any]:
    gang = interpretation.get("gang") or {}
    w = workload_meta(interpretation)
    uid = str(w.get("uid") or w.get("name") or "")
    default_name = f"pg-{w.get('name')}-{uid}"  # the default grouper's
    built_in = _group_kind(interpretation) in BUILT_IN  # KAI's own plugin, not the Karta, groups it
    if gang.get("mode") == "podGroup":
        pg = gang["podGroup"]
        subs = _sub_groups(pg)
        minimum = pg.get("minAvailable") or sum(s["minMember"] for s in subs)
        if built_in:
            return {"podGroups": [_group(default_name, minimum, subs, None, interpretation)]}
        return {"podGroups": [_group(pg["name"], minimum, subs, pg.get("topology"), interpretation)]}
    if gang.get("mode") == "podGroups":
        if gang.get("groups") and not built_in:  # with pods: the groups their keys made
            return {
                "podGroups": [
                    _group(g["name"], g.get("minAvailable") or 0, [], None, interpretation) for g in gang["groups"]
                ]
            }
        # Without pods the keys are unknown: one group `pg-<uid>` (KAI's name when no member has
        # keys).  KAI sets a group's minimum from the member of the pod it last grouped; the
        # largest member's is the one that never lets the gang start short.
        members = [m for g in gang.get("podGroups") or [] for m in g.get("members") or []]
        minimum = max((m.get("minAvailable") or 0 for m in members), default=0)
        return {"podGroups": [_group(default_name if built_in else f"pg-{uid}", minimum, [], None, interpretation)]}
    # no gang hints: KAI's default grouper, one group for the top owner, one pod enough to start
    if not pod_parts(interpretation):
        return {"podGroups": []}
    return {"podGroups": [_group(default_name, 1, [], None, interpretation)]}
