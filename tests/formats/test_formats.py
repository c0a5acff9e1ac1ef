"""Consumer formats (docs/api-contract.md, "Consumer formats"): every catalog fixture answered in
Kueue's, Karmada's and KAI's shapes, each validated against that project's published CRD schema
(tests/data/schemas/, their headers name the source), and exact answers for chosen kinds."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from app.engine.interpret import InterpretationError, interpret
from app.formats import FormatError, IncompleteInterpretation, render
from app.karta.load import load_builtin
from app.karta.registry import Registry

REGISTRY = Registry.of(load_builtin())
ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "definitions"
FIXTURES = sorted(CATALOG.glob("**/testdata/*.yaml"))
SCHEMAS = {n: yaml.safe_load((ROOT / "tests/data/schemas" / f"{f}.yaml").read_text())
           for n, f in (("kueue", "kueue-podsets"), ("karmada", "karmada-components"), ("kai", "kai-podgroup-spec"))}
# Built once: jsonschema.validate checks the schema itself and builds a validator on every call.
VALIDATORS = {n: jsonschema.validators.validator_for(s)(s) for n, s in SCHEMAS.items()}
for _schema in SCHEMAS.values():
    jsonschema.validators.validator_for(_schema).check_schema(_schema)


def _workloads(path: Path) -> list[dict]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") != "Pod" and REGISTRY.resolve_object(d) is not None][:1]


def _interpret(obj: dict) -> dict:
    return interpret(obj, REGISTRY.resolve_object(obj), templates=True)


def _validate(fmt: str, shape: dict) -> None:
    if fmt == "kueue":
        if shape["podSets"]:  # a workload without a pod template has no Workload to write
            VALIDATORS["kueue"].validate(shape["podSets"])
    elif fmt == "karmada":
        VALIDATORS["karmada"].validate(shape["components"])
    else:
        for group in shape["podGroups"]:
            assert group["metadata"]["name"]
            VALIDATORS["kai"].validate(group["spec"])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(CATALOG)))
def test_every_fixture_answers_in_every_format_valid_for_its_crd(path: Path):
    for obj in _workloads(path):
        try:
            result = _interpret(obj)
        except InterpretationError:  # fixtures of refused objects (tests/engine cover them)
            continue
        if result["errors"]:  # a partial interpretation: every format refuses it (the service's 422)
            for fmt in ("kueue", "karmada", "kai"):
                with pytest.raises(IncompleteInterpretation):
                    render(fmt, result)
            continue
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
    # JobSet has no plugin of KAI's own: the Karta grouper names the group; the default grouper
    # gives the queue (none labelled: default-queue), the priority class (train) and the labels
    assert render("kai", r)["podGroups"] == [{
        "metadata": {"name": "pg-5f0c2a7e-3f4b-4d21-9d0a-6b1f7c9e2a10-jobset", "namespace": "team-a",
                     "labels": {"app.kubernetes.io/name": "llm-pretrain", "kai.scheduler/queue": "default-queue"},
                     "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                          "name": "llm-pretrain", "uid": "5f0c2a7e-3f4b-4d21-9d0a-6b1f7c9e2a10"}]},
        "spec": {"minMember": 7, "queue": "default-queue", "priorityClassName": "train"}}]


def test_pytorchjob_elastic_minimum_is_kueue_min_count_and_kai_min_member():
    r = _fixture("kubeflow.org/PyTorchJob/v1/testdata/elastic.yaml")
    sets = render("kueue", r)["podSets"]
    assert [(s["name"], s["count"], s.get("minCount")) for s in sets] == [("worker", 3, 2)]  # no Master pod
    (group,) = render("kai", r)["podGroups"]
    # KAI's PyTorchJob plugin groups it (not the Karta): the default grouper's name
    assert group["metadata"]["name"] == f"pg-bert-elastic-{r['workload']['uid']}"
    assert group["spec"] == {"minMember": 2, "queue": "default-queue", "priorityClassName": "train"}
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
    assert render("kai", r)["podGroups"][0]["spec"]["minMember"] == 6


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
    # no preemptibility label: KAI's grouper leaves it to the scheduler (from the class's value)
    assert g["spec"] == {"minMember": 1, "queue": "team-a", "priorityClassName": "train"}
    assert g["metadata"]["labels"] == {"kai.scheduler/queue": "team-a", "priorityClassName": "train"}
    obj["metadata"]["labels"]["kai.scheduler/preemptibility"] = "non-preemptible"
    assert render("kai", _interpret(obj))["podGroups"][0]["spec"]["preemptibility"] == "non-preemptible"


def _kai_spec(rel: str, labels: dict | None = None, pod_labels: dict | None = None, annotations: dict | None = None,
              priority: str | None = None) -> dict:
    obj = _workloads(CATALOG / rel)[0]
    obj["metadata"]["labels"] = labels or {}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    tmpl = obj["spec"]["template"]
    tmpl.setdefault("metadata", {})["labels"] = {**(tmpl["metadata"].get("labels") or {}), **(pod_labels or {})}
    if priority:
        tmpl["spec"]["priorityClassName"] = priority
    return render("kai", _interpret(obj))["podGroups"][0]["spec"]


DEPLOYMENT = "apps/Deployment/v1/testdata/running.yaml"


def test_kai_queue_as_the_default_grouper_finds_it():
    assert _kai_spec(DEPLOYMENT)["queue"] == "default-queue"
    assert _kai_spec(DEPLOYMENT, pod_labels={"kai.scheduler/queue": "pods"})["queue"] == "pods"
    assert _kai_spec(DEPLOYMENT, {"kai.scheduler/queue": "owner"}, {"kai.scheduler/queue": "pods"})["queue"] == "owner"
    # a project, with the pod's node pool
    assert _kai_spec(DEPLOYMENT, {"project": "vision"})["queue"] == "vision"
    assert _kai_spec(DEPLOYMENT, {"project": "vision"}, {"kai.scheduler/node-pool": "h100"})["queue"] == "vision-h100"


def test_kai_priority_class_labels_then_the_pods_then_the_types_default():
    assert _kai_spec(DEPLOYMENT)["priorityClassName"] == "inference"  # the Deployment plugin's default
    assert _kai_spec(DEPLOYMENT, priority="high")["priorityClassName"] == "high"
    assert _kai_spec(DEPLOYMENT, pod_labels={"priorityClassName": "build"}, priority="high")["priorityClassName"] == "build"
    assert _kai_spec(DEPLOYMENT, {"priorityClassName": "train"}, {"priorityClassName": "build"})["priorityClassName"] == "train"
    ray = _fixture("ray.io/RayCluster/v1/testdata/running.yaml")
    assert render("kai", ray)["podGroups"][0]["spec"]["priorityClassName"] == "train"  # the default grouper's
    obj = _workloads(CATALOG / "ray.io/RayCluster/v1/testdata/running.yaml")[0]
    obj["metadata"]["labels"] = {"ray.io/priority-class-name": "inference", "priorityClassName": "train"}
    assert render("kai", _interpret(obj))["podGroups"][0]["spec"]["priorityClassName"] == "inference"


def test_kai_preemptibility_only_from_a_valid_label_and_topology_from_the_owners_annotations():
    assert "preemptibility" not in _kai_spec(DEPLOYMENT, {"priorityClassName": "train"})
    assert _kai_spec(DEPLOYMENT, pod_labels={"kai.scheduler/preemptibility": "preemptible"})["preemptibility"] == "preemptible"
    assert "preemptibility" not in _kai_spec(DEPLOYMENT, {"kai.scheduler/preemptibility": "sometimes"},
                                             {"kai.scheduler/preemptibility": "preemptible"})  # the owner's wins, invalid
    spec = _kai_spec(DEPLOYMENT, annotations={"kai.scheduler/topology": "default",
                                              "kai.scheduler/topology-required-placement": "zone",
                                              "kai.scheduler/topology-preferred-placement": "rack"})
    assert spec["topologyConstraint"] == {"topology": "default", "requiredTopologyLevel": "zone",
                                          "preferredTopologyLevel": "rack"}
    jobset = _workloads(CATALOG / "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")[0]
    jobset["metadata"]["annotations"] = {"kai.scheduler/topology": "default",
                                         "kai.scheduler/topology-required-placement": "rack"}
    group = render("kai", _interpret(jobset))["podGroups"][0]  # no Karta topology: the owner's stays
    assert group["spec"]["topologyConstraint"] == {"topology": "default", "requiredTopologyLevel": "rack"}


PIPELINE = {"apiVersion": "acme.example.com/v1alpha1", "kind": "Pipeline",
            "metadata": {"name": "etl", "namespace": "data", "uid": "pipe-uid"},
            "spec": {"stages": [{"name": "extract", "parallelism": 2, "template": {"spec": {"containers": [
                                    {"name": "x", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
                                {"name": "load", "parallelism": 3, "template": {"spec": {"containers": [
                                    {"name": "l", "image": "l"}]}}}],
                     "coordinator": {"container": {"name": "c", "image": "c"}}}}


def test_kai_alpha_pod_groups_without_pods_one_group_with_the_largest_member_minimum():
    from app.karta.load import load_path
    (d,) = load_path(ROOT / "tests/data/examples/pipeline.karta.yaml", "builtin")
    r = interpret(PIPELINE, d, templates=True)
    assert r["gang"]["mode"] == "podGroups"
    (group,) = render("kai", r)["podGroups"]
    # stage's members have a minimum of 5 (2 + 3 over its instances), coordinator's 1: KAI sets a
    # group's minimum from one member's, never their sum
    assert group["metadata"]["name"] == "pg-pipe-uid" and group["spec"]["minMember"] == 5


def test_more_pod_templates_than_kueue_admits_is_refused():
    obj = _workloads(CATALOG / "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")[0]
    job = obj["spec"]["replicatedJobs"][0]
    obj["spec"]["replicatedJobs"] = [dict(job, name=f"j{i}") for i in range(9)]
    with pytest.raises(FormatError, match="at most 8"):
        render("kueue", _interpret(obj))


def test_the_schemas_refuse_what_their_projects_refuse():
    """The stored schemas have teeth: a shape each project's API server would refuse fails here."""
    with pytest.raises(jsonschema.ValidationError):
        VALIDATORS["kueue"].validate([{"name": "w", "count": -1, "template": {"spec": {"containers": []}}}])
    with pytest.raises(jsonschema.ValidationError):
        VALIDATORS["karmada"].validate([{"replicas": 2}])  # no name
    with pytest.raises(jsonschema.ValidationError):
        VALIDATORS["kai"].validate({"minMember": "four"})
