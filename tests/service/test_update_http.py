"""`POST /interpret/update` over HTTP (a real service process): the rewritten object, its RFC
6902 patch, and problem+json for every bad request."""

from __future__ import annotations

import copy
from pathlib import Path

import httpx
import jsonpatch
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
JOBSET = yaml.safe_load((ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml").read_text())
SET = {"labels": {"kai.scheduler/queue": "team-a"}, "schedulerName": "kai-scheduler",
       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
       "nodeSelector": {"pool": "h100"}, "priorityClassName": "high", "annotations": {"a.example/b": "c"}}


def _problem(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    return r.json()


def test_update_returns_the_object_and_a_patch_that_makes_it(client: httpx.Client):
    r = client.post("/interpret/update", json={"object": JOBSET, "set": SET})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["components"] == ["replicated-job"] and body["changed"] == 3
    assert body["definition"]["name"] == "jobset-x-k8s-io-jobset-v1alpha2"
    assert [w["path"] for w in body["writes"]] == [f"/spec/replicatedJobs/{i}/template/spec/template"
                                                  for i in range(3)]
    assert jsonpatch.apply_patch(copy.deepcopy(JOBSET), body["patch"]) == body["object"]
    for rj in body["object"]["spec"]["replicatedJobs"]:
        tmpl = rj["template"]["spec"]["template"]
        assert tmpl["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
        assert tmpl["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llm-pretrain"  # kept
        assert tmpl["spec"]["schedulerName"] == "kai-scheduler"
    # the rewritten object interprets with the set values in its pod views
    tree = client.post("/interpret", json=body["object"]).json()["tree"]
    for inst in tree["children"][0]["instances"]:
        assert inst["pod"]["schedulerName"] == "kai-scheduler" and inst["pod"]["nodeSelector"]["pool"] == "h100"


def test_update_of_a_fragmented_component_without_the_path_is_a_422(client: httpx.Client):
    obj = yaml.safe_load((ROOT / "definitions/trainer.kubeflow.org/TrainJob/v1alpha1/testdata/running.yaml")
                         .read_text())
    p = _problem(client.post("/interpret/update", json={"object": obj, "set": {"labels": {"a": "b"}}}), 422)
    assert "has no path for this fragment: labels" in p["detail"]
    assert p["errors"][0]["path"] == "set.labels" and p["errors"][0]["component"]


def test_update_that_does_not_read_back_is_refused(client: httpx.Client):
    obj = yaml.safe_load((ROOT / "definitions/leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/"
                                 "leader-defaults-to-worker.yaml").read_text())
    p = _problem(client.post("/interpret/update", json={"object": obj, "set": {"schedulerName": "s"},
                                                        "components": ["leader"]}), 422)
    assert p["type"].endswith("update-does-not-read-back") and "/pod/schedulerName" in p["detail"]
    both = client.post("/interpret/update", json={"object": obj, "set": {"schedulerName": "s"},
                                                   "components": ["leader", "worker"]})
    assert both.status_code == 200, both.text


@pytest.mark.parametrize("body,status,where", [
    ({"object": JOBSET, "set": {"queue": "a"}}, 422, "set.queue"),
    ({"object": JOBSET, "set": {"labels": {"a": 1}}}, 422, "set.labels.a"),
    ({"object": JOBSET}, 422, "set"),
    ({"object": JOBSET, "set": {"labels": {"a": "b"}}, "components": ["nope"]}, 422, "components"),
    ({"object": JOBSET, "set": {"labels": {"$patch": "replace"}}}, 422, "set.labels"),
    ({"object": JOBSET, "set": {"tolerations": [{"key": "k", "effect": "Sometimes"}]}}, 422, "set.tolerations"),
    ({"object": {"kind": "JobSet"}, "set": {"labels": {"a": "b"}}}, 422, None),
    ({"object": {**JOBSET, "spec": {"replicatedJobs": 3}}, "set": {"labels": {"a": "b"}}}, 422, "definition"),
    ({"object": {**JOBSET, "metadata": "oops"}, "set": {"labels": {"a": "b"}}}, 422, None),
    ({"set": {"labels": {"a": "b"}}}, 422, None),
    ({"object": {**JOBSET, "apiVersion": "x.example/v1"}, "set": {"labels": {"a": "b"}}}, 404, None),
])
def test_bad_update_requests_are_problems(client: httpx.Client, body: dict, status: int, where: str | None):
    p = _problem(client.post("/interpret/update", json=body), status)
    if where is not None:
        assert any(e.get("path", "").startswith(where) for e in p.get("errors") or []), p


def test_update_with_an_inline_definition(client: httpx.Client):
    karta = {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "inline-thing"},
             "spec": {"structureDefinition": {"rootComponent": {
                 "name": "thing", "kind": {"group": "acme.example.com", "version": "v1", "kind": "Thing"},
                 "specDefinition": {"podTemplateSpecPath": ".spec.template"},
                 "statusDefinition": {"statusMappings": {}}}}}}
    obj = {"apiVersion": "acme.example.com/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"},
           "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    r = client.post("/interpret/update", json={"object": obj, "definition": karta, "set": {"labels": {"q": "1"}}})
    assert r.status_code == 200, r.text
    assert r.json()["patch"] == [{"op": "add", "path": "/spec/template/metadata", "value": {"labels": {"q": "1"}}}]
    karta["spec"]["structureDefinition"]["rootComponent"]["specDefinition"]["podTemplateSpecPath"] = \
        ".spec.template | select(.spec.containers[0].name | test(\"(a+)+$\"))"
    p = _problem(client.post("/interpret/update", json={"object": obj, "definition": karta,
                                                        "set": {"labels": {"q": "1"}}}), 422)
    assert "`test` is not evaluated in write paths" in p["detail"]
