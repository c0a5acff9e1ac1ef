"""The fit: placements, packing policies, gangs and topology, sets, and what is short."""

from __future__ import annotations

import pytest

from app.capacity.filters import Constraints
from app.capacity.nodes import Node, Taint
from app.capacity.plan import Gang, PodGroup, plan

GPU = "nvidia.com/gpu"


def gpu_node(name: str, gpus: int = 8, free_gpus: int | None = None, **labels: str) -> tuple[Node, dict[str, int]]:
    node = Node(name, labels=labels, allocatable={GPU: gpus, "cpu": 64_000, "pods": 110})
    return node, {GPU: gpus if free_gpus is None else free_gpus, "cpu": 64_000, "pods": 110}


def cluster(*entries: tuple[Node, dict[str, int]]) -> tuple[list[Node], dict[str, dict[str, int]]]:
    return [n for n, _ in entries], {n.name: f for n, f in entries}


def test_a_workload_that_fits_places_every_pod() -> None:
    nodes, free = cluster(gpu_node("b"), gpu_node("a"))
    p = plan([PodGroup("worker", 2, {GPU: 8, "cpu": 1000})], nodes, free)
    assert p.fits and p.exact and p.shortfall == {}
    assert p.placement == {"worker": (("a", 1), ("b", 1))}
    assert p.sets == 1


def test_sets_count_complete_copies_on_what_is_left() -> None:
    nodes, free = cluster(gpu_node("a"), gpu_node("b", free_gpus=3))
    assert plan([PodGroup("w", 1, {GPU: 2})], nodes, free).sets == 5  # 4 on a, 1 on b
    assert plan([PodGroup("w", 1, {GPU: 2})], nodes, free, max_sets=3).sets == 3
    assert plan([PodGroup("w", 3, {GPU: 3}), PodGroup("x", 1, {GPU: 1})], nodes, free).sets == 1


def test_binpack_fills_the_most_allocated_node_and_spread_the_least() -> None:
    nodes, free = cluster(gpu_node("a"), gpu_node("b", free_gpus=4), gpu_node("c", free_gpus=7))
    group = [PodGroup("w", 2, {GPU: 2})]
    assert plan(group, nodes, free).placement == {"w": (("b", 2),)}
    # spread: a (empty) first; then c (1 of 8 used) is less allocated than a (2 of 8)
    assert plan(group, nodes, free, policy="spread").placement == {"w": (("a", 1), ("c", 1))}
    with pytest.raises(ValueError, match="unknown policy"):
        plan(group, nodes, free, policy="random")


def test_ties_go_to_the_node_named_first() -> None:
    nodes, free = cluster(gpu_node("n2"), gpu_node("n1"), gpu_node("n3"))
    assert plan([PodGroup("w", 1, {GPU: 8})], nodes, free).placement == {"w": (("n1", 1),)}
    assert plan([PodGroup("w", 1, {GPU: 8})], nodes, free, policy="spread").placement == {"w": (("n1", 1),)}


def test_gpu_pods_go_before_cpu_pods() -> None:
    # the cpu-only group sorts first by name, but GPU pods are packed first: on binpack they
    # take the most allocated node, and the cpu pods follow them there
    a = Node("a", allocatable={GPU: 8, "cpu": 8000, "pods": 10})
    b = Node("b", allocatable={GPU: 8, "cpu": 8000, "pods": 10})
    free = {"a": {GPU: 8, "cpu": 8000, "pods": 10}, "b": {GPU: 4, "cpu": 8000, "pods": 10}}
    p = plan([PodGroup("a-cpu", 1, {"cpu": 4000}), PodGroup("z-gpu", 1, {GPU: 4, "cpu": 4000})], [a, b], free)
    assert p.placement == {"a-cpu": (("b", 1),), "z-gpu": (("b", 1),)}


def test_the_exhaustive_search_finds_what_first_fit_misses() -> None:
    # the GPU pod goes first, to a (the tie goes to the name); then the 3-cpu pod has no room.
    # Only GPU on b and cpu on a works: the search finds it.
    a = Node("a", allocatable={GPU: 1, "cpu": 3, "pods": 5})
    b = Node("b", allocatable={GPU: 1, "cpu": 1, "pods": 5})
    free = {"a": dict(a.allocatable), "b": dict(b.allocatable)}
    groups = [PodGroup("gpu", 1, {GPU: 1, "cpu": 1}), PodGroup("cpu", 1, {"cpu": 3})]
    p = plan(groups, [a, b], free)
    assert p.fits and p.exact
    assert p.placement == {"gpu": (("b", 1),), "cpu": (("a", 1),)}
    out_of_tries = plan(groups, [a, b], free, budget=0)
    assert not out_of_tries.fits and not out_of_tries.exact and out_of_tries.sets == 0


def test_filters_decide_where_pods_may_go() -> None:
    tainted = Node("a", taints=[Taint("gpu", "true", "NoSchedule")], allocatable={GPU: 8, "pods": 10})
    plain = Node("b", labels={"pool": "x"}, allocatable={GPU: 8, "pods": 10})
    free = {"a": {GPU: 8, "pods": 10}, "b": {GPU: 8, "pods": 10}}
    tolerant = Constraints(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert plan([PodGroup("w", 1, {GPU: 8})], [tainted, plain], free).placement == {"w": (("b", 1),)}
    assert plan([PodGroup("w", 2, {GPU: 8}, tolerant)], [tainted, plain], free).fits
    assert not plan([PodGroup("w", 2, {GPU: 8})], [tainted, plain], free).fits
    pinned = Constraints({"pool": "y"}, tolerations=[{"operator": "Exists"}])
    assert plan([PodGroup("w", 1, {GPU: 1}, pinned)], [tainted, plain], free).placement == {}  # does not fit


def test_a_gang_with_a_topology_key_stays_in_one_domain() -> None:
    nodes, free = cluster(
        gpu_node("r1-a", rack="r1"),
        gpu_node("r1-b", rack="r1"),
        gpu_node("r2-a", rack="r2"),
        gpu_node("r2-b", rack="r2"),
        gpu_node("r2-c", rack="r2"),
        gpu_node("loose"),  # no rack label: out for the gang
    )
    gang = Gang("train", "rack")
    groups = [PodGroup("leader", 1, {GPU: 8}, gang=gang), PodGroup("worker", 2, {GPU: 8}, gang=gang)]
    p = plan(groups, nodes, free)
    assert p.fits and p.sets == 1  # only r2 holds three whole nodes
    used = {n for placed in p.placement.values() for n, _ in placed}
    assert used <= {"r2-a", "r2-b", "r2-c"} and len(used) == 3
    # without the topology key, six nodes hold two copies
    free_groups = [PodGroup("leader", 1, {GPU: 8}, gang=Gang("train")), PodGroup("worker", 2, {GPU: 8})]
    assert plan(free_groups, nodes, free).sets == 2


def test_a_gang_too_big_for_any_domain_does_not_fit() -> None:
    nodes, free = cluster(gpu_node("r1-a", rack="r1"), gpu_node("r1-b", rack="r1"), gpu_node("r2-a", rack="r2"))
    p = plan([PodGroup("w", 3, {GPU: 8}, gang=Gang("g", "rack"))], nodes, free)
    assert not p.fits and p.exact and p.sets == 0 and p.placement == {}
    s = p.shortfall["w"]
    assert (s.pods, s.placeable) == (3, 2)
    assert s.reason == (
        "2 of 3 pods place within one rack: the nodes that pass the filters (3) have room for no more; "
        "once they are placed, no node has 8 free nvidia.com/gpu left (none has any)"
    )
    assert s.unplaced == 1
    assert plan([PodGroup("w", 3, {GPU: 8})], nodes, free).fits  # fine without the key
    unlabelled = plan([PodGroup("w", 1, {GPU: 8}, gang=Gang("g", "zone"))], nodes, free)
    assert unlabelled.shortfall["w"].reason == "no node that passes the filters has the label zone"


def test_shortfall_names_the_largest_free_amount() -> None:
    nodes, free = cluster(
        gpu_node("node-3", free_gpus=2), gpu_node("node-17", free_gpus=4), gpu_node("node-20", free_gpus=4)
    )
    p = plan([PodGroup("decode", 2, {GPU: 8, "cpu": 2000})], nodes, free)
    assert not p.fits and p.exact
    s = p.shortfall["decode"]
    assert s.placeable == 0
    by = {n.resource: (n.per_pod, n.most_free, n.node) for n in s.resources}
    assert by == {GPU: (8, 4, "node-17"), "cpu": (2000, 64_000, "node-17"), "pods": (1, 110, "node-17")}
    assert [n.resource for n in s.resources if n.short] == [GPU]
    assert s.reason == "no node has 8 free nvidia.com/gpu (the most on one node is 4: node-17)"


def test_shortfall_counts_the_pods_that_place() -> None:
    nodes, free = cluster(gpu_node("a"), gpu_node("b", free_gpus=4))
    s = plan([PodGroup("w", 8, {GPU: 4})], nodes, free).shortfall["w"]
    assert (s.pods, s.placeable) == (8, 3)
    assert s.reason == (
        "3 of 8 pods place: the nodes that pass the filters (2) have room for no more; "
        "once they are placed, no node has 4 free nvidia.com/gpu left (none has any)"
    )
    assert s.unplaced == 5


def test_shortfall_of_groups_that_only_fit_alone() -> None:
    nodes, free = cluster(gpu_node("a"))
    p = plan([PodGroup("p", 1, {GPU: 6}), PodGroup("d", 1, {GPU: 6})], nodes, free)
    assert not p.fits
    # first-fit places d (its name sorts first among equal pods), p is what is left over
    assert {g: (s.placeable, s.unplaced, s.reason) for g, s in p.shortfall.items()} == {
        "p": (
            1,
            1,
            "all 1 pods place by themselves, but not together with the other groups: once the others are "
            "placed, 1 do not: no node has 6 free nvidia.com/gpu left (the most on one node is 2: a)",
        ),
        "d": (1, 0, "all 1 pods place by themselves, but not together with the other groups"),
    }


def test_shortfall_sums_up_the_filters_that_fail() -> None:
    taint = Taint("gpu", "true", "NoSchedule")
    nodes = [Node(f"t{i}", taints=[taint], allocatable={GPU: 8, "pods": 9}) for i in range(3)]
    nodes += [Node(f"n{i}", ready=False, allocatable={GPU: 8, "pods": 9}) for i in range(2)]
    free = {n.name: dict(n.allocatable) for n in nodes}
    s = plan([PodGroup("w", 1, {GPU: 1})], nodes, free).shortfall["w"]
    assert s.reason == (
        "no node passes the filters: node has taint gpu=true:NoSchedule the pod does not tolerate (3 nodes); "
        "node is NotReady (2 nodes)"
    )
    assert s.resources[0].node is None and s.resources[0].most_free == 0
    assert plan([PodGroup("w", 1, {GPU: 1})], [], {}).shortfall["w"].reason == "there are no nodes"


def test_shortfall_of_pod_slots_and_of_nodes_short_of_something() -> None:
    full = Node("a", allocatable={"cpu": 8000, "pods": 2})
    s = plan([PodGroup("w", 1, {"cpu": 1000})], [full], {"a": {"cpu": 8000, "pods": 0}}).shortfall["w"]
    assert s.reason == "no node that passes the filters has a free pod slot (1 pass)"
    a = Node("a", allocatable={"cpu": 8000, GPU: 1, "pods": 9})
    b = Node("b", allocatable={"cpu": 1000, GPU: 8, "pods": 9})
    free = {"a": dict(a.allocatable), "b": dict(b.allocatable)}
    s = plan([PodGroup("w", 1, {"cpu": 4000, GPU: 4})], [a, b], free).shortfall["w"]
    assert s.reason == "no one node has room for a whole pod: each is short of some resource it requests"


def test_empty_groups_and_names() -> None:
    nodes, free = cluster(gpu_node("a"))
    p = plan([PodGroup("w", 1, {GPU: 8}), PodGroup("idle", 0, {GPU: 8})], nodes, free)
    assert p.fits and p.placement == {"w": (("a", 1),), "idle": ()} and p.sets == 1
    assert plan([], nodes, free, max_sets=7).sets == 7  # nothing to place
    with pytest.raises(ValueError, match="unique"):
        plan([PodGroup("w", 1, {}), PodGroup("w", 1, {})], nodes, free)


def test_a_workload_too_big_for_the_cluster_is_proven_not_to_fit_without_a_search() -> None:
    nodes, free = cluster(*(gpu_node(f"n{i:02d}") for i in range(40)))
    p = plan([PodGroup("w", 400, {GPU: 8})], nodes, free)  # 40 nodes hold 40 of them
    assert not p.fits and p.exact
    assert p.shortfall["w"].placeable == 40


def test_groups_that_fit_alone_but_need_more_than_there_is_are_proven_not_to_fit() -> None:
    nodes, free = cluster(*(gpu_node(f"n{i}") for i in range(10)))
    p = plan([PodGroup("a", 50, {GPU: 1}), PodGroup("b", 40, {GPU: 1})], nodes, free)  # 90 GPUs of 80
    assert not p.fits and p.exact
    assert {s.placeable for s in p.shortfall.values()} == {50, 40}


def test_past_the_search_size_a_failed_packing_is_not_proven() -> None:
    # 80 nodes of 8 GPUs: the 5-GPU pods take one on each node, and the 4-GPU pods find 3 left
    # on every node although 240 GPUs are free in all; 128 pods are too many to search
    nodes, free = cluster(*(gpu_node(f"n{i:02d}") for i in range(80)))
    p = plan([PodGroup("a", 80, {GPU: 5}), PodGroup("b", 48, {GPU: 4})], nodes, free)
    assert not p.fits and not p.exact
    small = plan([PodGroup("a", 2, {GPU: 5}), PodGroup("b", 1, {GPU: 4})], nodes[:2], free)
    assert not small.fits and small.exact  # the same on 2 nodes, searched: proven


def test_topology_choices_past_the_cap_leave_the_verdict_unproven(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.capacity.plan as plan_module

    nodes, free = cluster(gpu_node("a", rack="r1"), gpu_node("b", rack="r2"), gpu_node("c", rack="r2"))
    groups = [PodGroup("w", 2, {GPU: 8}, gang=Gang("g", "rack"))]
    assert plan(groups, nodes, free).fits  # r2
    monkeypatch.setattr(plan_module, "MAX_DOMAIN_CHOICES", 1)  # only r1 is tried
    p = plan(groups, nodes, free)
    assert not p.fits and not p.exact
