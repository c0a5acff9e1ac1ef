"""The Node view and free capacity: units as the scheduler compares them, usage of bound pods."""

from __future__ import annotations

import sys

from app.capacity.nodes import Inventory, Node, Taint, Usage, free, pod_contribution

GIB = 1024**3


def node_object(**over: object) -> dict:
    obj: dict = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {"zone": "a", "gpu": "h100"}, "annotations": {"big": "x" * 5000}},
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "maintenance", "effect": "PreferNoSchedule"},
            ],
        },
        "status": {
            "allocatable": {
                "cpu": "95500m",
                "memory": "1000Gi",
                "ephemeral-storage": "1Ti",
                "hugepages-2Mi": "1Gi",
                "nvidia.com/gpu": "8",
                "nvidia.com/mig-1g.10gb": "7",
                "pods": "110",
            },
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "images": [{"names": ["x" * 200], "sizeBytes": 1}] * 50,
        },
    }
    obj.update(over)
    return obj


def pod(node: str | None, cpu: str = "1", memory: str = "1Gi", gpu: str | None = None, phase: str = "Running") -> dict:
    requests = {"cpu": cpu, "memory": memory} | ({"nvidia.com/gpu": gpu} if gpu else {})
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def test_a_node_view_reads_name_labels_taints_cordon_readiness() -> None:
    n = Node.from_object(node_object())
    assert n.name == "gpu-1"
    assert n.labels == {"zone": "a", "gpu": "h100"}
    assert n.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"), Taint("maintenance", "", "PreferNoSchedule"))
    assert str(n.taints[0]) == "nvidia.com/gpu=present:NoSchedule"
    assert str(n.taints[1]) == "maintenance:PreferNoSchedule"
    assert n.unschedulable is True
    assert n.ready is True


def test_allocatable_in_the_units_the_scheduler_compares() -> None:
    n = Node.from_object(node_object())
    assert n.allocatable == {
        "cpu": 95_500,  # millicores
        "memory": 1000 * GIB,  # bytes
        "ephemeral-storage": 1024 * GIB,
        "hugepages-2Mi": GIB,
        "nvidia.com/gpu": 8,  # counts
        "nvidia.com/mig-1g.10gb": 7,
        "pods": 110,
    }
    assert all(type(v) is int for v in n.allocatable.values())


def test_ready_needs_the_ready_condition_true() -> None:
    for conditions, ready in (
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        ([], False),
        ([{"type": "Ready", "status": "True"}], True),
    ):
        obj = node_object()
        obj["status"]["conditions"] = conditions
        assert Node.from_object(obj).ready is ready


def test_a_minimal_node_and_unreadable_amounts() -> None:
    n = Node.from_object({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "lots", "memory": "1Ki"}}})
    assert (n.labels, n.taints, n.unschedulable, n.ready) == ({}, (), False, False)
    assert n.allocatable == {"memory": 1024}  # an amount that does not parse counts as none


def _deep_size(o: object, seen: set[int]) -> int:
    """Bytes of o and what it holds, counting nothing in `seen` (shared, interned strings)."""
    if id(o) in seen:
        return 0
    seen.add(id(o))
    size = sys.getsizeof(o)
    if isinstance(o, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in o.items())
    elif isinstance(o, tuple):
        size += sum(_deep_size(x, seen) for x in o)
    elif isinstance(o, Node):
        size += sum(_deep_size(getattr(o, a), seen) for a in Node.__slots__)
    return size


def test_the_view_keeps_nothing_else_of_the_object_and_is_small() -> None:
    """A GPU node with 34 labels (feature discovery adds many): each further node of a cluster
    costs under 2 KB, its label keys and common values shared with the others."""

    def gpu_node(i: int) -> Node:
        obj = node_object()
        obj["metadata"]["name"] = f"gpu-node-{i:04d}"
        obj["metadata"]["labels"] = {f"nvidia.com/gpu.feature-{k}": "true" for k in range(30)} | {
            "kubernetes.io/hostname": f"gpu-node-{i:04d}",
            "topology.kubernetes.io/zone": "us-east-1a",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        }
        return Node.from_object(obj)

    first, second = gpu_node(1), gpu_node(2)
    assert not hasattr(second, "__dict__")
    seen: set[int] = set()
    _deep_size(first, seen)
    assert _deep_size(second, seen) < 2048


def test_a_pod_holds_its_effective_requests_once_bound_and_until_terminal() -> None:
    assert pod_contribution(pod(None)) is None
    assert pod_contribution(pod("n", phase="Succeeded")) is None
    assert pod_contribution(pod("n", phase="Failed")) is None
    assert pod_contribution(pod("n", cpu="0.0001", memory="1", gpu="500m", phase="Pending")) == (
        "n",
        {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1},  # rounded up per pod, as the scheduler does
    )
    # init containers and overhead count (pod_requests): max(init 4, 1 + 1) + overhead 250m
    p = pod("n", cpu="1")
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "1"}}})
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]
    p["spec"]["overhead"] = {"cpu": "250m"}
    assert pod_contribution(p) == ("n", {"cpu": 4250, "memory": GIB})


def test_free_is_allocatable_minus_requests_and_pod_slots() -> None:
    n = Node("n", allocatable={"cpu": 4000, "memory": 8 * GIB, "nvidia.com/gpu": 2, "pods": 3})
    u = Usage()
    u.add({"cpu": 1500, "memory": GIB, "nvidia.com/gpu": 1})
    u.add({"cpu": 500, "example.com/foo": 1})
    assert free(n, u) == {"cpu": 2000, "memory": 7 * GIB, "nvidia.com/gpu": 1, "pods": 1, "example.com/foo": -1}
    u.remove({"cpu": 500, "example.com/foo": 1})
    assert free(n, u) == {"cpu": 2500, "memory": 7 * GIB, "nvidia.com/gpu": 1, "pods": 2}
    assert free(n) == n.allocatable


def test_the_inventory_follows_pods_coming_and_going() -> None:
    inv = Inventory()
    inv.set_node(Node("a", allocatable={"cpu": 4000, "memory": 8 * GIB, "pods": 10}))
    inv.set_node(Node("b", allocatable={"cpu": 2000, "memory": 4 * GIB, "pods": 10}))
    inv.set_pod("ns/p1", pod("a", cpu="1", memory="1Gi"))
    inv.set_pod("ns/p2", pod("a", cpu="2", memory="1Gi"))
    inv.set_pod("ns/p3", pod(None))  # pending, unbound: holds nothing
    assert inv.free()["a"] == {"cpu": 1000, "memory": 6 * GIB, "pods": 8}
    assert inv.free()["b"] == {"cpu": 2000, "memory": 4 * GIB, "pods": 10}
    inv.set_pod("ns/p2", pod("a", cpu="2", memory="1Gi", phase="Succeeded"))  # done: gives it back
    inv.set_pod("ns/p3", pod("b", cpu="500m", memory="1Gi"))  # now bound to b
    assert inv.free() == {
        "a": {"cpu": 3000, "memory": 7 * GIB, "pods": 9},
        "b": {"cpu": 1500, "memory": 3 * GIB, "pods": 9},
    }
    inv.remove_pod("ns/p1")
    inv.remove_pod("ns/p3")
    inv.remove_pod("ns/unknown")
    assert inv.free() == {"a": inv.nodes["a"].allocatable, "b": inv.nodes["b"].allocatable}
    assert inv.usage == {}
    inv.remove_node("b")
    assert list(inv.free()) == ["a"]


def test_a_node_without_pod_slots_has_none_free() -> None:
    assert free(Node("n", allocatable={"cpu": 1000})) == {"cpu": 1000, "pods": 0}


def test_inventory_hold_and_release() -> None:
    inv = Inventory()
    inv.hold("a", {"cpu": 500})
    inv.hold("a", (("cpu", 250), ("nvidia.com/gpu", 1)))  # requests as pairs, as a caller keeps them
    assert inv.usage["a"].requested == {"cpu": 750, "nvidia.com/gpu": 1} and inv.usage["a"].pods == 2
    inv.release("a", (("cpu", 250), ("nvidia.com/gpu", 1)))
    inv.release("b", {"cpu": 1})  # a node nothing holds: nothing to give back
    inv.release("a", {"cpu": 500})
    assert inv.usage == {}
