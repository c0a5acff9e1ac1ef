"""An owner kind no definition covers, on the chain from a workload to its pods, is watched as
metadata only and still links the pods (app/model/owners.py): a definition of our own, the
JobSet's with its group renamed and its Jobs replaced by `Stage`, a kind nothing interprets.
(The catalog defines the usual intermediate kinds, Jobs and ReplicaSets, so this chain is made
here.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl, crd, owner_ref, pod, running
from .util import ROOT, eventually

NS = "owner-meta"
GROUP = "owners.example.com"
JOBSET = ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/definition.yaml"
PIPELINE_DEF = (JOBSET.read_text().replace("jobset.x-k8s.io", GROUP).replace("kind: JobSet", "kind: Pipeline")
                .replace("jobset-x-k8s-io-jobset", "owners-example-com-pipeline")
                .replace("kind: {group: batch, version: v1, kind: Job}",
                         f"kind: {{group: {GROUP}, version: v1alpha2, kind: Stage}}"))


@pytest.fixture(scope="module")
def chain(kubectl: Kubectl) -> Iterator[dict[str, Any]]:
    kubectl.ensure_namespace(NS)
    kubectl.apply(crd(GROUP, "Pipeline", "pipelines", ["v1alpha2"]))
    kubectl.apply(crd(GROUP, "Stage", "stages", ["v1alpha2"]))
    kubectl.wait_crds([f"pipelines.{GROUP}", f"stages.{GROUP}"])
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "pipeline-def", "namespace": SERVICE_NS,
                       "labels": {"workload-map.dev/definitions": "true"}},
          "data": {"pipeline.yaml": PIPELINE_DEF}}
    kubectl.apply(cm)
    template = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    pipe = kubectl.apply({"apiVersion": f"{GROUP}/v1alpha2", "kind": "Pipeline",
                          "metadata": {"name": "p1", "namespace": NS},
                          "spec": {"replicatedJobs": [{"name": "trainer", "replicas": 1, "template": {
                              "spec": {"parallelism": 1, "completions": 1, "template": template}}}]}})
    stage = kubectl.apply({"apiVersion": f"{GROUP}/v1alpha2", "kind": "Stage",
                           "metadata": {"name": "p1-trainer-0", "namespace": NS,
                                        "ownerReferences": [owner_ref(pipe)]}, "spec": {}})
    p = kubectl.apply(pod(NS, "p1-trainer-0-x", stage, labels={"jobset.sigs.k8s.io/replicatedjob-name": "trainer",
                                                               "jobset.sigs.k8s.io/job-index": "0"}, node="n1"))
    kubectl.set_status(p, running("n1"))
    yield {"pipeline": pipe, "stage": stage}
    kubectl.delete("v1", "ConfigMap", SERVICE_NS, "pipeline-def")
    kubectl.delete("v1", "Pod", NS, p["metadata"]["name"])
    kubectl.delete(f"{GROUP}/v1alpha2", "Stage", NS, "p1-trainer-0")
    kubectl.delete(f"{GROUP}/v1alpha2", "Pipeline", NS, "p1")


def test_pods_link_through_an_owner_kind_watched_as_metadata(service: Server, chain: dict[str, Any]) -> None:
    def live() -> dict[str, Any] | None:
        r = httpx.get(f"{service.url}/workloads/{NS}/p1", timeout=10)
        return r.json() if r.status_code == 200 and (r.json().get("live") or {}).get("current") == 1 else None

    doc, _ = eventually(live, timeout=30, what="the pod placed through the Stage")
    (placed,) = doc["live"]["pods"]
    assert (placed["name"], placed["component"], placed["instance"]) == ("p1-trainer-0-x", "replicated-job", "trainer")
    modes = {(k["group"], k["kind"]): k["mode"] for k in httpx.get(f"{service.url}/model", timeout=10).json()["kinds"]}
    assert modes[(GROUP, "Stage")] == "metadata" and modes[(GROUP, "Pipeline")] == "full"
    names = [r["workload"]["name"] for r in httpx.get(f"{service.url}/workloads", params={"namespace": NS},
                                                      timeout=10).json()["items"]]
    assert names == ["p1"]  # the Stage is no workload of its own
