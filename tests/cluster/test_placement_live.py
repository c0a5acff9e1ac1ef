"""Placement in the live view, on a real API server: the live model keeps what the pod view reads
of a template (tolerations, affinity, spread constraints...), so GET /workloads/{ns}/{name}
shows them as the manifest has them, and follows a change of them."""

from __future__ import annotations

import copy
from typing import Any

import httpx

from ..service.conftest import Server
from .kubeobjects import Kubectl
from .util import eventually, fixture_object

NS = "wl-placement"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}]}]}}}
SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"jobset.sigs.k8s.io/jobset-name": "placed"}}}]


def _trainer_spec(obj: dict[str, Any]) -> dict[str, Any]:
    [rj] = [r for r in obj["spec"]["replicatedJobs"] if r["name"] == "trainer"]
    return rj["template"]["spec"]["template"]["spec"]


def _views(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i["pod"] for i in body["tree"]["children"][0]["instances"]}


def _live(c: httpx.Client, name: str) -> dict[str, Any] | None:
    r = c.get(f"/workloads/{NS}/{name}")
    return r.json() if r.status_code == 200 else None


def test_live_view_shows_the_template_placement(service: Server, kubectl: Kubectl) -> None:
    kubectl.ensure_namespace(NS)
    obj, status = fixture_object(JOBSET, NS, "placed")
    spec = _trainer_spec(obj)
    assert spec["tolerations"] == TOLERATIONS  # the fixture's, as a real JobSet carries them
    spec.update(affinity=AFFINITY, topologySpreadConstraints=SPREAD, nodeSelector={"pool": "h100"},
                runtimeClassName="nvidia", priorityClassName="training")
    js = kubectl.set_status(kubectl.apply(obj), status)
    c = service.client()

    body, _ = eventually(lambda: _live(c, "placed"), what="the JobSet in the live model")
    trainer = _views(body)["trainer"]
    assert trainer["tolerations"] == TOLERATIONS
    assert trainer["affinity"] == AFFINITY
    assert trainer["topologySpreadConstraints"] == SPREAD
    assert trainer["nodeSelector"] == {"pool": "h100"}
    assert trainer["runtimeClassName"] == "nvidia" and trainer["priorityClassName"] == "training"
    assert "tolerations" not in _views(body)["coordinator"]  # per instance: the coordinator has none

    # the live answer (from the model's kept projection) equals the interpretation of the whole object
    full = kubectl.get("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "placed")
    r = c.post("/interpret", json={"object": full})
    assert r.status_code == 200, r.text
    assert _views(body) == _views(r.json())

    # a changed template reaches the live view through the watch
    changed = copy.deepcopy(obj)
    _trainer_spec(changed)["tolerations"] = TOLERATIONS + [{"key": "dedicated", "operator": "Equal", "value": "ml",
                                                            "effect": "NoExecute", "tolerationSeconds": 30}]
    kubectl.apply(changed)
    eventually(lambda: len(_views(_live(c, "placed") or {"tree": {"children": [{"instances": []}]}})
                           .get("trainer", {}).get("tolerations") or []) == 2, what="the new toleration")
    kubectl.delete("jobset.x-k8s.io/v1alpha2", "JobSet", NS, js["metadata"]["name"])


def test_batch_groups_live_objects_by_their_labels(service: Server, kubectl: Kubectl) -> None:
    """groupBy reads the labels of the object a `ref` fetched, as of an inline object."""
    kubectl.ensure_namespace(NS)
    refs = []
    for name, team in (("g-a", "a"), ("g-b", "b"), ("g-a2", "a")):
        obj, status = fixture_object(JOBSET, NS, name)
        obj["metadata"]["labels"] = {"team": team}
        kubectl.set_status(kubectl.apply(obj), status)
        refs.append({"ref": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": name}})
    inline, _ = fixture_object(JOBSET, NS, "g-inline")
    inline["metadata"]["labels"] = {"team": "b"}
    missing = {"ref": dict(refs[0]["ref"], name="g-missing")}
    r = service.client().post("/interpret/batch", params={"groupBy": "team"},
                              json={"items": [*refs, {"object": inline}, missing]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["items"][4]["error"]["status"] == 404
    assert [(g["value"], g["items"]) for g in out["groups"]] == [("a", [0, 2]), ("b", [1, 3]), (None, [4])]
    one = out["items"][0]["totals"]  # every JobSet here is the same fixture: 7 pods, 12 GPUs, 648Gi
    for g, n in zip(out["groups"], (2, 2, 0)):
        assert (g["totals"]["pods"], g["totals"]["gpus"]) == (one["pods"] * n, one["gpus"] * n)
    assert out["groups"][0]["totals"]["requests"] == {"cpu": "164", "memory": "1296Gi", "nvidia.com/gpu": "24"}
    assert out["totals"]["pods"] == 4 * one["pods"] and out["totals"]["failed"] == 1
