"""An interpretation's pod groups (app/capacity/workload.py), from real catalog interpretations."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.capacity.nodes import Node
from app.capacity.plan import Gang, PodGroup, plan
from app.capacity.workload import NotFittable, _Group, _shares, pod_groups
from app.engine.interpret import interpret
from app.karta.load import load_builtin
from app.karta.registry import Registry

ROOT = Path(__file__).resolve().parents[2] / "definitions"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.of(load_builtin())


def interpreted(registry: Registry, path: str, edit=None) -> dict:
    obj = yaml.safe_load((ROOT / path).read_text())
    if edit:
        edit(obj)
    d = registry.resolve_object(obj)
    assert d is not None
    return interpret(obj, d)


def by_name(groups):
    return {g.name: g for g in groups}


def test_jobset_with_gpus_is_one_gang_of_every_pod(registry):
    groups = by_name(pod_groups(interpreted(registry, "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")))
    assert set(groups) == {"replicated-job/coordinator", "replicated-job/evaluator", "replicated-job/trainer"}
    trainer = groups["replicated-job/trainer"]
    assert trainer.count == 4
    assert trainer.requests == {"cpu": 16000, "memory": 137438953472, "nvidia.com/gpu": 2}
    assert trainer.constraints.tolerations == ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    gang = trainer.gang
    assert gang is not None and gang.topology_key is None
    assert {g.gang for g in groups.values()} == {gang}  # minAvailable 7 = every pod: counts unchanged
    assert sum(g.count for g in groups.values()) == 7
    assert groups["replicated-job/coordinator"].constraints.tolerations == ()


def test_per_role_minimums_when_they_add_up(registry):
    # Volcano: minAvailable 3 of 4 pods; the tasks' own minimums (master 1, worker 2) add up to it
    groups = by_name(pod_groups(interpreted(registry, "batch.volcano.sh/Job/v1alpha1/testdata/running.yaml")))
    assert {n: g.count for n, g in groups.items()} == {"task/master": 1, "task/worker": 2}
    # Grove: 12 of 24 pods, per clique
    groups = by_name(pod_groups(interpreted(registry, "grove.io/PodCliqueSet/v1alpha1/testdata/running.yaml")))
    assert {n: g.count for n, g in groups.items()} == {
        "clique/decode": 2, "clique/frontend": 2, "clique/pleader": 2, "clique/pworker": 6}


def test_subgroup_names_its_component_others_place_all(registry):
    groups = by_name(pod_groups(interpreted(registry, "trainer.kubeflow.org/TrainJob/v1alpha1/testdata/running.yaml")))
    node = groups["node"]
    assert node.count == 2 and node.gang is not None and node.gang.name.endswith("-trainjob/node")
    assert groups["dataset-initializer"].gang is None and groups["dataset-initializer"].count == 1


def test_required_topology_level_is_the_gang_key(registry):
    doc = interpreted(registry, "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")
    doc["gang"]["podGroup"]["topology"] = {"requiredTopologyLevel": "nvidia.com/gpu.clique"}
    assert {g.gang.topology_key for g in pod_groups(doc)} == {"nvidia.com/gpu.clique"}


def test_no_gang_hint_every_pod_places(registry):
    doc = interpreted(registry, "apps/Deployment/v1/testdata/degraded.yaml")
    (g,) = pod_groups(doc)
    assert g.gang is None and g.count == doc["totals"]["pods"]


def test_placement_fields_become_constraints(registry):
    def edit(obj):
        spec = obj["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
        spec["nodeSelector"] = {"pool": "h100"}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}}}

    groups = by_name(pod_groups(interpreted(registry, "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml", edit)))
    trainer = groups["replicated-job/trainer"].constraints
    assert trainer.node_selector == {"pool": "h100"}
    assert trainer.affinity["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "rack"


def test_the_groups_plan(registry):
    groups = pod_groups(interpreted(registry, "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"))
    big = {"cpu": 64000, "memory": 1 << 40, "nvidia.com/gpu": 8, "pods": 110}
    nodes = [Node(f"n{i}", allocatable=big) for i in range(2)]
    p = plan(groups, nodes, {n.name: dict(big) for n in nodes})
    assert p.fits and sum(k for placed in p.placement.values() for _, k in placed) == 7


def test_a_partial_interpretation_is_not_fitted():
    with pytest.raises(NotFittable, match="trainer"):
        pod_groups({"errors": [{"part": "component", "component": "trainer"}], "tree": {}, "gang": None})


def _g(name: str, count: int, min_replicas: int | None = None) -> _Group:
    return _Group(PodGroup(name, count, {}), name, (name,), min_replicas)


def test_shares_are_proportional_with_largest_remainders():
    assert _shares([_g("a", 3), _g("b", 1)], None) == [3, 1]
    assert _shares([_g("a", 3), _g("b", 1)], 9) == [3, 1]
    assert _shares([_g("a", 3), _g("b", 1)], 0) == [3, 1]  # a gang that cannot be sized: every pod
    assert _shares([_g("a", 3), _g("b", 3)], 3) == [2, 1]  # ties to the first
    assert _shares([_g("a", 6), _g("b", 2)], 4) == [3, 1]
    assert _shares([_g("a", 4, 1), _g("b", 4, 3)], 4) == [1, 3]  # own minimums add up
    assert _shares([_g("a", 4, 1), _g("b", 4, 1)], 4) == [2, 2]  # they do not


def test_alpha_members_take_their_nearest_component():
    interp = {
        "tree": {"name": "root", "instances": [], "children": [
            {"name": "stage", "instances": [{"id": None, "pod": {"requestValues": {"nvidia.com/gpu": 1}},
                                             "totals": {"pods": 4}}], "children": []}]},
        "gang": {"mode": "podGroups",
                 "podGroups": [{"name": "g", "members": [{"component": "root", "minAvailable": 2}]}]},
    }
    (g,) = pod_groups(interp)
    assert g.name == "stage" and g.count == 2 and g.gang == Gang("g")
