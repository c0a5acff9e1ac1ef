"""Karmada's components (work.karmada.io ResourceBinding `spec.components[]`, what the resource
interpreter's InterpretComponent answers): per pod-bearing instance its replicas and what each
replica needs (ComponentReplicaRequirements)."""

from __future__ import annotations

from typing import Any

from .common import PodPart, pod_parts, workload_meta


def node_claim(spec: dict[str, Any]) -> dict[str, Any] | None:
    """NodeClaim: node selector, tolerations and the hard node affinity (only the required terms
    bind a pod to nodes); None when the pod has none of them."""
    claim: dict[str, Any] = {}
    if spec.get("nodeSelector"):
        claim["nodeSelector"] = spec["nodeSelector"]
    if spec.get("tolerations"):
        claim["tolerations"] = spec["tolerations"]
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    hard = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, dict) else None
    if isinstance(hard, dict) and hard.get("nodeSelectorTerms"):
        claim["hardNodeAffinity"] = hard
    return claim or None


def _requirements(p: PodPart, namespace: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    claim = node_claim(p.template["spec"])
    if claim is not None:
        out["nodeClaim"] = claim
    if p.pod.get("requests"):
        out["resourceRequest"] = dict(p.pod["requests"])
    if namespace:
        out["namespace"] = namespace
    if p.pod.get("priorityClassName"):
        out["priorityClassName"] = p.pod["priorityClassName"]
    return out


def components(interpretation: dict[str, Any]) -> dict[str, Any]:
    namespace = workload_meta(interpretation).get("namespace")
    return {
        "components": [
            {"name": p.name, "replicas": p.count, "replicaRequirements": _requirements(p, namespace)}
            for p in pod_parts(interpretation)
        ]
    }
