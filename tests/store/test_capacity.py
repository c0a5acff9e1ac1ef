"""A cluster's capacity through the store (app/store/capacity.py): the encoding round trip, the
merge of namespace buckets' shares, the size of 3,000 nodes, and on a real Redis a shard's
fenced writes (differences only) followed by an API replica's hub."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from app.capacity.nodes import Inventory, Node, Taint, Usage
from app.model.capacity import ClusterCapacity
from app.store import keys
from app.store.capacity import (
    CapacityExport,
    UnitCapacity,
    decode_node,
    decode_usage,
    encode_node,
    encode_usage,
    merged,
)
from app.store.connection import connect
from app.store.mirror import StoreHub
from app.store.writer import Fenced, Ops, UnitWriter

from .redis_server import RedisServer

GPU = "nvidia.com/gpu"


def _gpu_node(i: int, labels: int = 34) -> Node:
    """A GPU node with feature discovery's kind of labels (34 by default)."""
    lab = {f"feature.node.kubernetes.io/cpu-cpuid.{k}": "true" for k in range(labels - 4)}
    lab |= {
        "kubernetes.io/hostname": f"gpu-{i:05d}",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
    }
    return Node(
        f"gpu-{i:05d}",
        labels=lab,
        taints=[Taint(GPU, "present", "NoSchedule")],
        unschedulable=i % 50 == 0,
        ready=i % 100 != 0,
        allocatable={
            "cpu": 191450,
            "memory": 2_000_000_000_000,
            GPU: 8,
            "pods": 110,
            "ephemeral-storage": 3_500_000_000_000,
        },
    )


def _same(a: Node, b: Node) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in Node.__slots__)


def test_a_node_and_the_usage_read_back_as_they_were_written() -> None:
    n = Node(
        "n1",
        labels={"a": "1", "zone": "z"},
        taints=[Taint("k", "", "NoExecute"), Taint("gpu", "true", "NoSchedule")],
        unschedulable=True,
        ready=False,
        allocatable={"cpu": 4000, "memory": 1 << 34, GPU: 8},
    )
    back = decode_node("n1", encode_node(n))
    assert _same(back, n) and isinstance(back.taints[0], Taint) and str(back.taints[1]) == "gpu=true:NoSchedule"
    assert _same(decode_node("e", encode_node(Node("e"))), Node("e", ready=True))
    u = Usage()
    u.add({"cpu": 1500, GPU: 2})
    u.add({"cpu": 500})
    got = decode_usage(encode_usage({"n1": u, "idle": Usage()}))
    assert list(got) == ["n1"]  # a node no pod holds anything on is not written
    assert (got["n1"].pods, got["n1"].requested) == (2, {"cpu": 2000, GPU: 2})


def _unit(
    at: int, covers: list[int], nodes: list[Node], usage: dict[str, tuple[int, dict[str, int]]], state: str = "ready"
) -> UnitCapacity:
    us = {}
    for name, (pods, req) in usage.items():
        us[name] = Usage()
        us[name].pods, us[name].requested = pods, req
    head = {
        "state": state,
        "reason": None if state == "ready" else "lists pending",
        "partial": None,
        "at": at,
        "covers": covers,
        "watching": True,
    }
    return UnitCapacity(head, {n.name: n for n in nodes}, us)


def test_buckets_shares_are_summed_once_each_and_a_missing_one_is_said() -> None:
    nodes = [Node("a", allocatable={"cpu": 8000, "pods": 10}), Node("b", allocatable={"cpu": 8000, "pods": 10})]
    one = _unit(100, [0], nodes, {"a": (1, {"cpu": 1000})})
    two = _unit(200, [1, 2], nodes[:1], {"a": (2, {"cpu": 3000}), "b": (1, {"cpu": 500})})
    cap, state, partial = merged([one, two], 3, True)
    assert state == ("ready", None) and partial is None
    assert sorted(cap.inventory.nodes) == ["a"]  # the nodes of the latest write
    assert cap.inventory.free()["a"] == {"cpu": 4000, "pods": 7}
    assert cap.answer(state, partial, ())["resources"]["pods"]["requested"] == 3  # node b's pod: on an unknown node
    # a takeover: a newer head counts bucket 1 again; the older one covering 1 and 2 is left out
    three = _unit(300, [1], nodes, {"a": (1, {"cpu": 100})})
    cap, state, partial = merged([one, two, three], 3, True)
    assert cap.inventory.free()["a"] == {"cpu": 6900, "pods": 8}
    assert partial == "the pods of 1 of 3 namespace buckets are not counted yet (a shard is taking them over)"
    assert merged([], 1, True)[1][0] == "starting"
    assert merged([_unit(5, [0], nodes, {}, state="starting")], 1, True)[1] == ("starting", "lists pending")


def test_three_thousand_nodes_take_a_megabyte_once_and_their_usage_kilobytes_per_write() -> None:
    inv = Inventory()
    for i in range(3000):
        inv.set_node(_gpu_node(i))
        if i % 2 == 0:
            inv.hold(f"gpu-{i:05d}", {"cpu": 96000, "memory": 1_000_000_000_000, GPU: 4})
    nodes = sum(len(encode_node(n)) + len(n.name) for n in inv.nodes.values())
    usage = len(encode_usage(inv.usage))
    t = time.perf_counter()
    back = {n.name: decode_node(n.name, encode_node(n)) for n in inv.nodes.values()}
    decode_usage(encode_usage(inv.usage))
    took = time.perf_counter() - t
    print(f"3000 nodes: nodes hash {nodes / 1e6:.2f} MB, usage {usage / 1e3:.1f} kB, round trip {took * 1e3:.0f} ms")
    assert all(_same(back[k], v) for k, v in inv.nodes.items())
    assert nodes < 1_300_000 and usage < 15_000  # measured: 1.0 MB (5.4 MB as JSON) and 7.6 kB (108 kB)


async def _claimed(redis: Any) -> UnitWriter:
    """The writer of unit `c` as shard-1 at epoch 1, its claim made."""
    w = UnitWriter(redis, "c", "c", "shard-1", 1, 1000)
    await w.claim()
    return w


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as r:
        yield r


def test_a_shard_writes_only_what_changed_and_a_replica_reads_it_back(redis_server: RedisServer) -> None:
    async def run() -> None:
        redis = connect(redis_server.url)
        w = await _claimed(redis)
        cap = ClusterCapacity()
        for i in range(3):
            cap.on_node("ADDED", None, None, _gpu_node(i))
        cap.on_pod(None, ("gpu-00001", (("cpu", 1000), (GPU, 2))))
        export = CapacityExport("shard-1:1:x")
        export.held(await w.held_nodes())
        cap.on_change = export.touch  # as the shard wires it

        async def write() -> Ops:
            o = Ops()
            export.into(o, cap, ("ready", None), None, [0])
            await w.write(o)
            return o

        await write()
        hub = StoreHub(redis)
        hub.register("c", object())
        await hub._poll_meta()  # a replica starting: the meta's version is new to it
        got = hub.capacity["c"]
        assert sorted(got.nodes) == ["gpu-00000", "gpu-00001", "gpu-00002"]
        assert _same(got.nodes["gpu-00001"], _gpu_node(1)) and got.usage["gpu-00001"].requested == {"cpu": 1000, GPU: 2}

        # a pod ends, one node's label changes, one goes: only that node's record is written
        cap.on_pod(("gpu-00001", (("cpu", 1000), (GPU, 2))), None)
        relabelled = _gpu_node(2)
        relabelled.labels["wlmap.test/new"] = "yes"
        cap.on_node("MODIFIED", None, _gpu_node(2), relabelled)
        cap.on_node("DELETED", None, _gpu_node(0), None)
        assert export.nodes_due == {"gpu-00000", "gpu-00002"}
        assert export.wait() is not None and export.wait() > 0.5  # coalesced: the last write was just now
        export.last -= 1.0
        o = await write()
        assert sorted(a for a in o.args if isinstance(a, str) and a.startswith("gpu-")) == ["gpu-00000", "gpu-00002"]
        assert sorted(k.decode() for k in await redis.hkeys(keys.key("c", "nodes"))) == ["gpu-00001", "gpu-00002"]
        await hub._poll_meta()
        got = hub.capacity["c"]
        assert sorted(got.nodes) == ["gpu-00001", "gpu-00002"] and got.usage == {}
        assert got.nodes["gpu-00002"].labels["wlmap.test/new"] == "yes"

        # the part comes to own another bucket whose capacity it counts here: it clears that unit's
        other = UnitWriter(redis, "c#1", "c", "shard-1", 1, 1000)
        await other.claim()
        o = Ops()
        o.hset("nodes", "n", b"x")
        await other.write(o)
        o = Ops()
        o.delete("nodes")
        o.delete("cap")
        assert await other.write(o) == 0 and not await redis.exists(keys.key("c#1", "nodes"))

        # a new owner (epoch 2) claims the unit: the old one's capacity write is refused
        new = UnitWriter(redis, "c", "c", "shard-2", 2, 1000)
        await new.claim()
        export.last -= 1.0
        export.due = True
        with pytest.raises(Fenced):
            await write()
        await redis.aclose()

    asyncio.run(run())


def test_the_replica_follows_capacity_entries_within_a_second(redis_server: RedisServer) -> None:
    async def run() -> None:
        redis = connect(redis_server.url)
        w = await _claimed(redis)
        cap = ClusterCapacity()
        cap.on_node("ADDED", None, None, Node("n", allocatable={"cpu": 1000, "pods": 5}))
        export = CapacityExport("t")
        o = Ops()
        export.into(o, cap, ("ready", None), None, [0])
        await w.write(o)
        hub = StoreHub(redis)
        hub.register("c", object())
        stop = asyncio.Event()
        task = asyncio.create_task(hub.run(stop))
        deadline = time.monotonic() + 5
        while "c" not in hub.capacity:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        cap.on_pod(None, ("n", (("cpu", 300),)))
        o = Ops()
        export.into(o, cap, ("ready", None), None, [0])
        t = time.monotonic()
        await w.write(o)
        while "n" not in hub.capacity["c"].usage:
            assert time.monotonic() - t < 1.0, "the CAPACITY entry was not followed within 1 s"
            await asyncio.sleep(0.01)
        assert hub.capacity["c"].usage["n"].requested == {"cpu": 300}
        assert orjson.loads(await redis.hget(keys.key("c", "cap"), "head"))["covers"] == [0]
        stop.set()
        await task
        await redis.aclose()

    asyncio.run(run())
