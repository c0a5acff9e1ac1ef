"""The workloads the browser tests look at, created on the real API server.

One namespace (`ui-demo`) with a mix a platform engineer would see: the JobSet of the cluster
tests (5 of 7 pods exist, 4 ready, one Unschedulable), a PyTorchJob of 33 pods (the tree must
stay legible), a suspended JobSet, a failed PyTorchJob, an InferenceService and a bare Pod.
"""

from __future__ import annotations

from typing import Any

from ..cluster.kubeobjects import Kubectl, owner_ref, pod, running
from ..cluster.test_workloads import _jobset_with_pods
from ..cluster.util import fixture_object

NS = "ui-demo"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata"
PYTORCH = "definitions/kubeflow.org/PyTorchJob/v1/testdata"
ISVC = "definitions/serving.kserve.io/InferenceService/v1beta1/testdata/running-raw-gpu.yaml"
BIG_WORKERS = 32


def _not_ready(reason: str) -> dict[str, Any]:
    return {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                               {"type": "Ready", "status": "False", "reason": reason}]}


def _pytorchjob(kubectl: Kubectl, ns: str, name: str, workers: int) -> dict[str, Any]:
    """A running PyTorchJob (master + `workers`, 8 GPUs each) with its pods: spread over nodes
    of 4 pods, the last two workers not ready yet."""
    obj, status = fixture_object(f"{PYTORCH}/running.yaml", ns, name)
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
    status["replicaStatuses"]["Worker"]["active"] = workers
    job = kubectl.set_status(kubectl.apply(obj), status)
    for role, count in (("master", 1), ("worker", workers)):
        for i in range(count):
            n = i + (1 if role == "worker" else 0)
            node = f"dgx-{n // 4:02d}"
            late = role == "worker" and i >= workers - 2
            p = kubectl.apply(pod(ns, f"{name}-{role}-{i}", job, gpus=8, node=node,
                                  labels={"training.kubeflow.org/job-name": name,
                                          "training.kubeflow.org/replica-type": role,
                                          "training.kubeflow.org/replica-index": str(i)}))
            kubectl.set_status(p, _not_ready("ContainersNotReady") if late else running(node))
    return job


def build(kubectl: Kubectl, ns: str = NS) -> dict[str, Any]:
    kubectl.ensure_namespace(ns)
    out: dict[str, Any] = {"namespace": ns}
    out["jobset"] = _jobset_with_pods(kubectl, ns, "llm-pretrain")
    out["big"] = _pytorchjob(kubectl, ns, "llama-finetune", BIG_WORKERS)

    sus, st = fixture_object(f"{JOBSET}/suspended.yaml", ns, "sweep-lr")
    kubectl.set_status(kubectl.apply(sus), st)
    failed, st = fixture_object(f"{PYTORCH}/failed.yaml", ns, "bert-eval")
    kubectl.set_status(kubectl.apply(failed), st)

    isvc, st = fixture_object(ISVC, ns, "llama3-serve")
    isvc = kubectl.set_status(kubectl.apply(isvc), st)
    kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "llama3-serve-predictor", "namespace": ns,
                                "ownerReferences": [owner_ref(isvc)]},
                   "spec": {"selector": {"matchLabels": {"app": "llama3-serve"}},
                            "template": {"metadata": {"labels": {"app": "llama3-serve"}},
                                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}})

    debug = kubectl.apply(pod(ns, "debug-shell", None, node="cpu-node-1"))
    kubectl.set_status(debug, running("cpu-node-1"))
    return out
