"""`POST /interpret/update` with a `ref` against a real API server: the object is read as stored
(not the live model's projection), and the returned JSON patch, sent to the API server, stores
exactly the returned object."""

from __future__ import annotations

import copy
import urllib.error
from typing import Any

import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .kubeobjects import Kubectl, obj_path
from .util import fixture_object

NS = "rewrites"
SET = {"labels": {"kai.scheduler/queue": "team-a"}, "annotations": {"example.com/injected": "yes"},
       "schedulerName": "kai-scheduler", "priorityClassName": "train-high", "nodeSelector": {"pool": "h100"},
       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
JSON_PATCH = "application/json-patch+json"


def _without_noise(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server changes on any write: resourceVersion, generation, managedFields."""
    out = copy.deepcopy(obj)
    for f in ("resourceVersion", "generation", "managedFields"):
        out["metadata"].pop(f, None)
    return out


def _templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [rj["template"]["spec"]["template"] for rj in obj["spec"]["replicatedJobs"]]
    return [r["template"] for r in obj["spec"]["pytorchReplicaSpecs"].values()]


@pytest.mark.parametrize("rel", ["definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml",
                                 "definitions/kubeflow.org/PyTorchJob/v1/testdata/running.yaml"])
def test_the_returned_patch_applied_by_the_api_server_stores_the_returned_object(
        rel: str, service: Server, kubectl: Kubectl, apiserver: ApiServer):
    kubectl.ensure_namespace(NS)
    obj, _ = fixture_object(rel, NS)
    for t in _templates(obj):  # a field the live model does not keep: it must survive the rewrite
        t.setdefault("metadata", {})["annotations"] = {"keep": "me"}
    stored = kubectl.apply(obj)
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "namespace": NS, "name": obj["metadata"]["name"]}
    with service.client() as c:
        r = c.post("/interpret/update", json={"ref": ref, "set": SET})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["changed"] > 0
        assert body["patch"][0] == {"op": "test", "path": "/metadata/resourceVersion",
                                    "value": stored["metadata"]["resourceVersion"]}
        after = apiserver.call("PATCH", obj_path(stored), body["patch"], content_type=JSON_PATCH)
        assert _without_noise(after) == _without_noise(body["object"])
        for t in _templates(after):
            assert t["metadata"]["annotations"] == {"keep": "me", "example.com/injected": "yes"}
            assert t["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
            assert t["spec"]["schedulerName"] == "kai-scheduler"
            assert t["spec"]["containers"][0].get("command") or t["spec"]["containers"][0]["image"]
        # made against the version it read: once the object moved on, the API server refuses it
        with pytest.raises(urllib.error.HTTPError) as e:
            apiserver.call("PATCH", obj_path(stored), body["patch"], content_type=JSON_PATCH)
        assert e.value.code == 422
        # the stored object reads back: the same rewrite again changes nothing
        again = c.post("/interpret/update", json={"ref": ref, "set": SET})
        assert again.status_code == 200 and again.json()["changed"] == 0 and again.json()["patch"] == [], again.text
