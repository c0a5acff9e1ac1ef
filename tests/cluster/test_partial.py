"""Partial interpretations of live workloads on a real API server: a component that cannot be
read leaves the status, the other components and their pods in place (docs/api-contract.md,
"Partial interpretations"), in GET /workloads/{ns}/{name}, the summary rows and `wlmap describe`."""

from __future__ import annotations

from typing import Any

import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .kubeobjects import Kubectl, pod, running
from ..cli.test_cli_live import PYTORCHJOB, manifest, wlmap

NS = "wl-partial"
NAME = "half-read"
BAD = 'replicas value "many" at index 0 is not a number'


def half_read_job(kubectl: Kubectl, ns: str, name: str = NAME) -> dict[str, Any]:
    """A running PyTorchJob whose Worker replica count is not a number (the CRD here keeps
    unknown shapes, as an older or laxer schema would): master reads, worker does not.  One
    ready pod of each."""
    kubectl.ensure_namespace(ns)
    doc, status = manifest(PYTORCHJOB, ns)
    doc["metadata"]["name"] = name
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "many"
    pj = kubectl.set_status(kubectl.apply(doc), status)
    for role in ("master", "worker"):
        po = kubectl.apply(pod(ns, f"{name}-{role}-0", pj, node="gpu-node-1",
                               labels={"training.kubeflow.org/replica-type": role,
                                       "training.kubeflow.org/replica-index": "0"}))
        kubectl.set_status(po, running("gpu-node-1"))
    return pj


@pytest.fixture(scope="module")
def job(kubectl: Kubectl) -> dict[str, Any]:
    return half_read_job(kubectl, NS)


def test_live_view_keeps_status_and_places_pods_on_components_that_computed(service: Server, job: dict) -> None:
    r = service.client().get(f"/workloads/{NS}/{NAME}", params={"kind": "PyTorchJob"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["complete"] is False
    assert body["status"]["phase"] == "Running"
    assert body["totals"] is None and body["gang"] is None  # never a partial count
    [comp, gang] = body["errors"]
    assert (comp["part"], comp["component"], gang["part"], gang["component"]) == ("component", "worker", "gang",
                                                                                  "worker")
    assert comp["message"] == f"failed to get scales: {BAD}"
    assert comp["path"] == "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath"
    master, worker = body["tree"]["children"]
    assert worker["error"] == comp and worker["instances"] == [] and worker["totals"] is None
    assert master["instances"][0]["live"] == {"current": 1, "ready": 1, "desired": 1, "nodes": ["gpu-node-1"]}
    live = body["live"]
    assert [p["name"] for p in live["pods"]] == [f"{NAME}-master-0"]
    assert live["unplaced"] == [f"{NAME}-worker-0"]  # its component could not be read
    assert live["desired"] is None and live["current"] == 1


def test_summary_row_keeps_the_phase_without_counts(service: Server, job: dict) -> None:
    r = service.client().get("/workloads", params={"namespace": NS})
    assert r.status_code == 200, r.text
    [row] = r.json()["items"]
    assert row["phase"] == "Running" and row["complete"] is False
    assert row["gpus"] is None and row["pods"] == {"ready": 2, "desired": None}
    assert "error" not in row and row["errors"][0]["component"] == "worker"


def test_describe_prints_the_partial_tree_and_exits_1(apiserver: ApiServer, job: dict) -> None:
    r = wlmap("describe", f"pytorchjob/{NAME}", "-n", NS, kubeconfig=apiserver.kubeconfig("admin"))
    assert r.returncode == 1, r.stderr
    assert "Phase: Running" in r.stdout
    assert "worker ✗ FAILED" in r.stdout and f"{NAME}-master-0" in r.stdout
    assert "gang: unknown" in r.stdout and "Not placed on a component: half-read-worker-0" in r.stdout
    assert "INCOMPLETE: 2 parts could not be computed" in r.stdout and BAD in r.stdout
    j = wlmap("describe", f"pytorchjob/{NAME}", "-n", NS, "-o", "json", kubeconfig=apiserver.kubeconfig("admin"))
    assert j.returncode == 1
    assert '"complete": false' in j.stdout


def test_get_marks_the_partial_row(apiserver: ApiServer, job: dict) -> None:
    r = wlmap("get", "pytorchjobs", "-n", NS, kubeconfig=apiserver.kubeconfig("admin"))
    assert r.returncode == 0, r.stderr
    [row] = [line for line in r.stdout.splitlines() if line.startswith(NAME)]
    assert "Running*" in row.split() and row.split()[4] == "2/?" and row.split()[5] == "?"
    assert f"PyTorchJob/{NAME} is incomplete (*)" in r.stderr and BAD in r.stderr
