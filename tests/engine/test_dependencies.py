"""Dependencies (docs/api-contract.md, "Dependencies"): the objects a workload's pod definitions
refer to by name, read from templates, pod specs and fragmented definitions alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.engine.interpret import interpret
from app.karta.load import load_builtin
from app.karta.registry import Registry

from ..karta_kit import child, karta, load, root, workload

REGISTRY = Registry.of(load_builtin())
CATALOG = Path(__file__).resolve().parents[2] / "definitions"
FIXTURES = sorted(CATALOG.glob("**/testdata/*.yaml"))


def _interpret(obj: dict) -> dict:
    return interpret(obj, REGISTRY.resolve_object(obj))


def _job(name: str, spec: dict) -> dict:
    return {"name": name, "replicas": 1, "template": {"spec": {"template": {"spec": spec}}}}


TRAINER = {
    "serviceAccountName": "trainer",
    "priorityClassName": "train-high",
    "imagePullSecrets": [{"name": "registry"}],
    "volumes": [
        {"name": "cfg", "configMap": {"name": "train-config"}},
        {"name": "tls", "secret": {"secretName": "tls", "optional": True}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "dataset"}},
        {"name": "both", "projected": {"sources": [
            {"configMap": {"name": "shared", "optional": True}},
            {"secret": {"name": "api-token"}},
            {"serviceAccountToken": {"path": "token"}},
        ]}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}},
        {"name": "cache", "emptyDir": {}},
        {"name": "s3", "csi": {"driver": "s3.csi.example.com", "nodePublishSecretRef": {"name": "s3-keys"}}},
    ],
    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
    "containers": [{
        "name": "trainer", "image": "train:1",
        "env": [
            {"name": "PLAIN", "value": "x"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "modes", "key": "m", "optional": True}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "envFrom": [{"configMapRef": {"name": "train-config"}}, {"secretRef": {"name": "wandb", "optional": True}}],
        "resources": {"claims": [{"name": "gpus"}]},
    }],
}
LOADER = {
    "serviceAccountName": "default",
    "priorityClassName": "system-cluster-critical",
    "initContainers": [{"name": "wait", "image": "busybox",
                        "envFrom": [{"configMapRef": {"name": "shared"}}]}],
    "containers": [{"name": "load", "image": "load:1",
                    "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "tls", "key": "k", "optional": True}}}]}],
    "resourceClaims": [{"name": "old-api", "source": {"resourceClaimName": "shared-nic"}}],
}
JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "train", "namespace": "team-a"},
    "spec": {"replicatedJobs": [_job("trainer", TRAINER), _job("loader", LOADER)]},
}


def test_every_reference_of_every_pod_template_is_listed_once_sorted():
    deps = _interpret(JOBSET)["dependencies"]
    by = {(d["kind"], d["name"]): d for d in deps}
    assert [(d["kind"], d["name"]) for d in deps] == sorted(by)
    assert set(by) == {
        ("ConfigMap", "modes"), ("ConfigMap", "shared"), ("ConfigMap", "train-config"),
        ("PersistentVolumeClaim", "dataset"), ("PriorityClass", "train-high"),
        ("ResourceClaim", "shared-nic"), ("ResourceClaimTemplate", "eight-gpus"),
        ("Secret", "api-token"), ("Secret", "hf"), ("Secret", "registry"), ("Secret", "s3-keys"),
        ("Secret", "tls"), ("Secret", "wandb"), ("ServiceAccount", "trainer"),
    }
    # Every entry names the JobSet's one pod-bearing component.
    assert {c for d in deps for c in d["components"]} == {"replicated-job"}


def test_optional_only_when_every_reference_is():
    by = {(d["kind"], d["name"]): d["optional"] for d in _interpret(JOBSET)["dependencies"]}
    assert by[("Secret", "tls")] is True            # optional in the volume and in the env
    assert by[("Secret", "wandb")] is True
    assert by[("ConfigMap", "modes")] is True
    assert by[("ConfigMap", "shared")] is False     # optional in a projection, required by envFrom
    assert by[("ConfigMap", "train-config")] is False
    assert by[("Secret", "registry")] is False      # a private image cannot be pulled without it
    assert by[("PersistentVolumeClaim", "dataset")] is False


def test_what_every_cluster_has_or_the_pod_creates_is_not_listed():
    names = {d["name"] for d in _interpret(JOBSET)["dependencies"]}
    assert "default" not in names and "system-cluster-critical" not in names
    assert "scratch" not in names  # an ephemeral volume's claim is created with the pod


def test_components_in_definition_order():
    obj = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
        "spec": {"pytorchReplicaSpecs": {
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "pytorch", "image": "t", "envFrom": [{"secretRef": {"name": "creds"}}]}]}}},
            "Master": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "pytorch", "image": "t", "envFrom": [{"secretRef": {"name": "creds"}}]}]}}},
        }},
    }
    (dep,) = _interpret(obj)["dependencies"]
    assert dep == {"kind": "Secret", "name": "creds", "components": ["master", "worker"], "optional": False}


def test_fragmented_definition_reads_its_containers_and_claims():
    d = load(karta(root(), [child("server", specDefinition={"fragmentedPodSpecDefinition": {
        "containersPath": ".spec.containers",
        "resourceClaimsPath": ".spec.claims",
        "priorityClassNamePath": ".spec.priority",
    }})]))
    obj = workload(spec={
        "containers": [{"name": "c", "image": "i", "env": [
            {"name": "K", "valueFrom": {"secretKeyRef": {"name": "key"}}}]}],
        "claims": [{"name": "g", "resourceClaimTemplateName": "gpu"}],
        "priority": "serve",
    })
    deps = interpret(obj, d)["dependencies"]
    assert [(x["kind"], x["name"], x["components"]) for x in deps] == [
        ("PriorityClass", "serve", ["server"]),
        ("ResourceClaimTemplate", "gpu", ["server"]),
        ("Secret", "key", ["server"]),
    ]


def test_no_pod_definition_no_dependencies():
    flow = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "f"},
            "spec": {"flows": [{"name": "a"}]}}
    assert _interpret(flow)["dependencies"] == []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(CATALOG)))
def test_catalog_fixture_dependencies_name_pod_bearing_components(path: Path):
    for obj in yaml.safe_load_all(path.read_text()):
        if not isinstance(obj, dict) or obj.get("kind") == "Pod" and "pods" in path.name:
            continue
        d = REGISTRY.resolve_object(obj)
        if d is None:
            continue
        out = interpret(obj, d)
        bearing = {c.name for c in d.karta.components if c.pod_bearing}
        keys = [(x["kind"], x["name"]) for x in out["dependencies"]]
        assert keys == sorted(set(keys))
        for x in out["dependencies"]:
            assert x["components"] and set(x["components"]) <= bearing
