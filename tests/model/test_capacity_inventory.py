"""The model's capacity inventory: what a pod holds (`held_by`), the usage kept without any
per-pod entry, the figures per pool, and what nodes and pods cost in memory (issue 30: at most
2 KB per node; per pod no more than the pod record the model keeps anyway)."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

from app.capacity.nodes import Inventory, Node
from app.cluster.informer import key_of
from app.model.capacity import ClusterCapacity, figures, held_by
from benchmarks.model_memory import build_model, fill_objects

GIB = 1024**3


def _pod(node: str | None, cpu: str = "1", phase: str = "Running", gpu: str | None = None) -> dict[str, Any]:
    req = {"cpu": cpu, "memory": "1Gi"} | ({"nvidia.com/gpu": gpu} if gpu else {})
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": req}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def _gpu_node(i: int) -> dict[str, Any]:
    """A GPU node as feature discovery labels it (34 labels), with the noise a kubelet writes."""
    name = f"gpu-node-{i:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{i}",
            "resourceVersion": str(1000 + i),
            "labels": {f"nvidia.com/gpu.feature-{k}": "true" for k in range(30)}
            | {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": "us-east-1a",
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "big": "x" * 2000},
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "192", "memory": "2Ti", "nvidia.com/gpu": "8", "pods": "110"},
            "allocatable": {"cpu": "191500m", "memory": "2000Gi", "nvidia.com/gpu": "8", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}],
            "images": [{"names": [f"registry/image-{k}@sha256:{'0' * 64}"], "sizeBytes": 1} for k in range(40)],
        },
    }


def _retained(n: int, step: Callable[[int], Any]) -> float:
    """Bytes kept per call of `step` (what it returns stays referenced), objects it builds and
    drops not counted."""
    kept: list[Any] = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            kept.append(step(i))
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before - sys.getsizeof(kept)) / n  # the list holding the results is not the inventory's


def test_held_is_the_node_and_the_effective_requests_shared_between_equal_pods() -> None:
    a, b = held_by(_pod("n1", gpu="2")), held_by(_pod("n2", gpu="2"))
    assert a == ("n1", (("cpu", 1000), ("memory", GIB), ("nvidia.com/gpu", 2)))
    assert b is not None and a is not None and a[1] is b[1]  # one request vector for both
    assert held_by(_pod(None)) is None
    assert held_by(_pod("n1", phase="Succeeded")) is None and held_by(_pod("n1", phase="Failed")) is None
    assert held_by(_pod("n1", cpu="lots")) is None  # not a quantity: holds nothing rather than failing the keep


def test_the_usage_follows_records_without_a_per_pod_entry() -> None:
    cap = ClusterCapacity()
    cap.on_node("ADDED", ("", "n1"), None, Node("n1", allocatable={"cpu": 4000, "memory": 8 * GIB, "pods": 10}))
    one, two = held_by(_pod("n1", cpu="1")), held_by(_pod("n1", cpu="2"))
    cap.on_pod(None, one)
    cap.on_pod(None, two)
    cap.on_pod(None, None)  # unbound
    assert cap.inventory.free()["n1"] == {"cpu": 1000, "memory": 6 * GIB, "pods": 8}
    cap.on_pod(two, None)  # ended or deleted
    cap.on_pod(one, one)  # a change that moves nothing
    assert cap.inventory.free()["n1"] == {"cpu": 3000, "memory": 7 * GIB, "pods": 9}
    cap.on_pod(one, None)
    assert cap.inventory.usage == {} and not hasattr(cap.inventory, "__dict__")
    assert cap.inventory._held == {}  # the model's records carry what each pod holds


def test_figures_largest_free_counts_schedulable_nodes_only() -> None:
    inv = Inventory()
    inv.set_node(Node("b", allocatable={"nvidia.com/gpu": 8, "pods": 10}))
    inv.set_node(Node("a", allocatable={"nvidia.com/gpu": 8, "pods": 10}))
    inv.set_node(Node("c", allocatable={"nvidia.com/gpu": 8, "pods": 10}, unschedulable=True))
    inv.set_node(Node("d", allocatable={"nvidia.com/gpu": 8, "pods": 10}, ready=False))
    inv.hold("a", {"nvidia.com/gpu": 2})
    inv.hold("b", {"nvidia.com/gpu": 2})
    got = figures(inv.nodes.values(), inv.usage)
    assert got["nodes"] == {"total": 4, "ready": 3, "schedulable": 2}
    assert got["resources"]["nvidia.com/gpu"] == {
        "allocatable": 32,
        "requested": 4,
        "free": 28,
        "largestFree": {"amount": 6, "node": "a"},  # a tie: the name that sorts first
    }
    assert got["resources"]["pods"] == {"allocatable": 40, "requested": 2, "free": 38,
                                        "largestFree": {"amount": 9, "node": "a"}}


def test_summary_groups_pools_by_the_first_pool_label_and_no_pool_last() -> None:
    cap = ClusterCapacity()
    nodes = (("x", {"type": "cpu"}), ("g", {"gpu": "h100", "type": "p5"}), ("n", {}), ("y", {"type": "big"}))
    for name, labels in nodes:
        cap.on_node("ADDED", ("", name), None, Node(name, labels=labels, allocatable={"pods": 1}))
    pools = cap.summary(("gpu", "type"))["pools"]
    assert [(p["label"], p["value"], p["nodes"]["total"]) for p in pools] == [
        ("gpu", "h100", 1), ("type", "big", 1), ("type", "cpu", 1), (None, None, 1)]
    assert [r["name"] for r in cap.node_rows("type in (cpu,big)", ("gpu", "type"))] == ["x", "y"]


def test_memory_per_node_and_per_pod() -> None:
    """The figures in app/model/capacity.py's docstring."""
    cap = ClusterCapacity()
    objects: dict[Any, Any] = {}  # the informer's copy
    pod_shape = held_by(_pod("gpu-node-0000", gpu="8"))
    assert pod_shape is not None

    def node(i: int) -> None:
        obj = _gpu_node(i)
        rec = cap.keep_node(obj)
        key = key_of(obj)
        objects[key] = rec
        cap.on_node("ADDED", key, None, rec)
        cap.on_pod(None, (rec.name, pod_shape[1]) if rec is not None else None)  # a usage entry too

    per_node = _retained(300, node)

    _, _, every = fill_objects(40)  # the pods of 40 JobSets, a few request shapes
    pods = [p for p in every if held_by(p) is not None]  # the bound ones: those that hold capacity
    assert len(pods) > 200
    per_pod = _retained(len(pods), lambda i: held_by(pods[i]))
    kept_pod = build_model(40)["tracemalloc_per_pod"]
    print(f"per node {per_node:.0f} B, per pod {per_pod:.0f} B held (+8 B slot), kept pod {kept_pod:.0f} B")
    assert per_node < 2048
    assert per_pod + 8 < 128 and per_pod + 8 < kept_pod / 10
