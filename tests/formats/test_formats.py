"""Consumer formats (docs/api-contract.md, "Consumer formats"): every catalog fixture answered in
Kueue's, Karmada's and KAI's shapes, each validated against that project's published CRD schema
(tests/data/schemas/, their headers name the source), and exact answers for chosen kinds."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from app.engine.interpret import interpret
from app.formats import FormatError, render
from app.karta.load import load_builtin
from app.karta.registry import Registry

REGISTRY = Registry.of(load_builtin())
ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "definitions"
FIXTURES = sorted(CATALOG.glob("**/testdata/*.yaml"))
SCHEMAS = {n: yaml.safe_load((ROOT / "tests/data/schemas" / f"{f}.yaml").read_text())
           for n, f in (("kueue", "kueue-podsets"), ("karmada", "karmada-components"), ("kai", "kai-podgroup-spec"))}


def _workloads(path: Path) -> list[dict]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") != "Pod" and REGISTRY.resolve_object(d) is not None][:1]


def _interpret(obj: dict) -> dict:
    return interpret(obj, REGISTRY.resolve_object(obj), templates=True)


def _validate(fmt: str, shape: dict) -> None:
    if fmt == "kueue":
        if shape["podSets"]:  # a workload without a pod template has no Workload to write
            jsonschema.validate(shape["podSets"], SCHEMAS["kueue"])
    elif fmt == "karmada":
        jsonschema.validate(shape["components"], SCHEMAS["karmada"])
    else:
        for group in shape["podGroups"]:
            assert group["metadata"]["name"]
            jsonschema.validate(group["spec"], SCHEMAS["kai"])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(CATALOG)))
def test_every_fixture_answers_in_every_format_valid_for_its_crd(path: Path):
    for obj in _workloads(path):
        try:
            result = _interpret(obj)
        except Exception:  # fixtures of refused objects (tests/engine cover them)
            pytest.skip("does not interpret")
        if result["errors"]:
            pytest.skip("partial interpretation: the formats refuse it (422)")
        for fmt in ("kueue", "karmada", "kai"):
            try:
                shape = render(fmt, result)
            except FormatError:
                assert fmt == "kueue"  # only Kueue bounds the number of pod templates
                continue
            _validate(fmt, shape)


def _fixture(rel: str) -> dict:
    return _interpret(_workloads(CATALOG / rel)[0])


def test_jobset_one_pod_set_per_replicated_job():
    r = _fixture("jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")
    sets = render("kueue", r)["podSets"]
    assert [(s["name"], s["count"], "minCount" in s) for s in sets] == [
        ("coordinator", 1, False), ("evaluator", 2, False), ("trainer", 4, False)]
    assert sets[0]["template"]["metadata"] == {"labels": {"app.kubernetes.io/part-of": "llm-pretrain"}}
    assert sets[0]["template"]["spec"]["containers"][0]["name"] == "coordinator"
    comps = render("karmada", r)["components"]
    assert comps[2] == {"name": "trainer", "replicas": 4, "replicaRequirements": {
        "nodeClaim": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "resourceRequest": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "2"},
        "namespace": "team-a"}}
    assert render("kai", r)["podGroups"] == [{
        "metadata": {"name": "pg-5f0c2a7e-3f4b-4d21-9d0a-6b1f7c9e2a10-jobset", "namespace": "team-a",
                     "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                          "name": "llm-pretrain", "uid": "5f0c2a7e-3f4b-4d21-9d0a-6b1f7c9e2a10"}]},
        "spec": {"minMember": 7}}]


def test_pytorchjob_elastic_minimum_is_kueue_min_count_and_kai_min_member():
    r = _fixture("kubeflow.org/PyTorchJob/v1/testdata/elastic.yaml")
    sets = render("kueue", r)["podSets"]
    assert [(s["name"], s["count"], s.get("minCount")) for s in sets] == [("worker", 3, 2)]  # no Master pod
    assert render("kai", r)["podGroups"][0]["spec"] == {"minMember": 2}
    assert render("karmada", r)["components"][0]["replicas"] == 3


def test_leaderworkerset_leader_and_worker_sets():
    r = _fixture("leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml")
    assert [(s["name"], s["count"]) for s in render("kueue", r)["podSets"]] == [("leader", 2), ("worker", 6)]
    assert render("kai", r)["podGroups"][0]["spec"]["minMember"] == 8


def test_raycluster_groups_and_only_one_min_count():
    r = _fixture("ray.io/RayCluster/v1/testdata/running.yaml")
    sets = render("kueue", r)["podSets"]
    # cpu-workers' minimum is 0 (no partial admission); gpu-workers' 2 is the one minCount
    assert [(s["name"], s["count"], s.get("minCount")) for s in sets] == [
        ("head", 1, None), ("cpu-workers", 3, None), ("gpu-workers", 4, 2)]
    assert render("kai", r)["podGroups"][0]["spec"] == {"minMember": 6}


def test_deployment_default_group_queue_priority_and_preemptibility():
    obj = _workloads(CATALOG / "apps/Deployment/v1/testdata/running.yaml")[0]
    obj["metadata"]["labels"] = {"kai.scheduler/queue": "team-a", "priorityClassName": "train"}
    tmpl = obj["spec"]["template"]
    tmpl.setdefault("metadata", {})["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block",
        "kueue.x-k8s.io/podset-slice-required-topology": "kubernetes.io/hostname",
        "kueue.x-k8s.io/podset-slice-size": "2"}
    r = _interpret(obj)
    (s,) = render("kueue", r)["podSets"]
    assert s["name"] == "deployment" and s["count"] == 4
    assert s["topologyRequest"] == {"required": "cloud.google.com/gce-topology-block",
                                    "podSetSliceRequiredTopology": "kubernetes.io/hostname", "podSetSliceSize": 2}
    (g,) = render("kai", r)["podGroups"]
    uid = r["workload"]["uid"]
    assert g["metadata"]["name"] == f"pg-{r['workload']['name']}-{uid}"
    assert g["spec"] == {"minMember": 1, "queue": "team-a", "priorityClassName": "train",
                         "preemptibility": "preemptible"}
    obj["metadata"]["labels"]["kai.scheduler/preemptibility"] = "non-preemptible"
    assert render("kai", _interpret(obj))["podGroups"][0]["spec"]["preemptibility"] == "non-preemptible"


def test_more_pod_templates_than_kueue_admits_is_refused():
    obj = _workloads(CATALOG / "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")[0]
    job = obj["spec"]["replicatedJobs"][0]
    obj["spec"]["replicatedJobs"] = [dict(job, name=f"j{i}") for i in range(9)]
    with pytest.raises(FormatError, match="at most 8"):
        render("kueue", _interpret(obj))
