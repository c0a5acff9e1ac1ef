"""Kueue's PodSets (kueue.x-k8s.io/v1beta1 Workload `spec.podSets[]`): what Kueue's own
integrations build for a job, from the interpretation: one PodSet per pod-bearing instance."""

from __future__ import annotations

from typing import Any

from .common import FormatError, PodPart, pod_parts

MAX_POD_SETS = 8  # the Workload CRD's podSets maxItems

# Pod template annotations Kueue reads for Topology Aware Scheduling -> PodSetTopologyRequest fields
_TOPOLOGY = "kueue.x-k8s.io/podset-"
_LEVELS = {
    "required-topology": "required",
    "preferred-topology": "preferred",
    "slice-required-topology": "podSetSliceRequiredTopology",
}


def topology_request(annotations: dict[str, Any]) -> dict[str, Any] | None:
    """The PodSet's topologyRequest from its template's annotations, None without any."""
    out: dict[str, Any] = {}
    for suffix, field in _LEVELS.items():
        value = annotations.get(_TOPOLOGY + suffix)
        if isinstance(value, str) and value:
            out[field] = value
    if str(annotations.get(_TOPOLOGY + "unconstrained-topology", "")).lower() == "true":
        out["unconstrained"] = True
    size = annotations.get(_TOPOLOGY + "slice-size")
    if isinstance(size, str) and size.isdigit() and int(size) > 0:
        out["podSetSliceSize"] = int(size)
    return out or None


def _template(part: PodPart) -> dict[str, Any]:
    """A PodTemplateSpec Kueue accepts: metadata keeps only labels and annotations (the CRD's
    rule), and every container has a name (an assembled fragment may lack one)."""
    meta = {k: part.template["metadata"][k] for k in ("labels", "annotations") if part.template["metadata"].get(k)}
    spec = dict(part.template["spec"])
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [
                c if not isinstance(c, dict) or c.get("name") else {**c, "name": f"{part.name}-{i}"}
                for i, c in enumerate(spec[key])
            ]
    return {"metadata": meta, "spec": spec}


def pod_sets(interpretation: dict[str, Any]) -> dict[str, Any]:
    parts = pod_parts(interpretation)
    if len(parts) > MAX_POD_SETS:
        raise FormatError(
            f"{len(parts)} pod templates; a Kueue Workload holds at most {MAX_POD_SETS} PodSets "
            f"({', '.join(p.name for p in parts)})"
        )
    out = []
    partial = False  # Kueue lets one PodSet only use minCount (partial admission)
    for p in parts:
        entry: dict[str, Any] = {"name": p.name, "count": p.count}
        if not partial and p.minimum is not None and 1 <= p.minimum < p.count:
            entry["minCount"] = p.minimum
            partial = True
        entry["template"] = _template(p)
        topology = topology_request(p.template["metadata"].get("annotations") or {})
        if topology is not None:
            entry["topologyRequest"] = topology
        out.append(entry)
    return {"podSets": out}
