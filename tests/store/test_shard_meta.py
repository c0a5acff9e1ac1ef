"""A unit taken over: what the new owner writes to the unit's meta before its model has synced.

Readers (API replicas) find a workload by the kinds in the unit's meta.  A new owner's model
knows no kind before its first sync; had its first heartbeats written that empty list, every
read of the cluster would answer 404 ("no served kind") until the new owner synced — reads
failed during a takeover (measured by benchmarks/store_bench.py).  The previous owner's kinds
must stay until the new owner has listed the cluster, and then be the new owner's own.

A real Redis and the suite's real API server; the shard's parts as the service builds them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest

from app.cli.common import build_registry
from app.cluster.kube import Kube
from app.engine.pool import Evaluator
from app.fleet.member import Member
from app.fleet.specs import ClusterSpec
from app.model.events import EventLog
from app.model.live import LiveModel
from app.store import keys
from app.store.claims import Claims
from app.store.connection import connect
from app.store.shard import ClusterPart, Shard
from app.store.writer import Ops, UnitWriter

from ..cluster.apiserver import ApiServer
from ..cluster.fixtures import SERVICE_NS
from .redis_server import RedisServer

OLD_KINDS = [["jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True, "jobset-x-k8s-io-jobset-v1alpha2"]]


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    r = RedisServer().start()
    yield r
    r.stop()


def test_a_new_owner_keeps_the_kinds_until_its_model_synced(apiserver: ApiServer, redis_server: RedisServer) -> None:
    async def run() -> None:
        redis = connect(redis_server.url)
        kube = await Kube.connect(str(apiserver.kubeconfig("service")))
        ev = Evaluator("none", 1, 10.0)
        await ev.start()
        registry = build_registry(None)
        stop = asyncio.Event()
        m: LiveModel | None = None
        try:
            # the previous owner (epoch 1) had synced the unit: its kinds are in the meta
            old = UnitWriter(redis, "a", "a", "old-shard", 1, 1000)
            await old.claim()
            o = Ops()
            for f, v in (("kinds", orjson.dumps(OLD_KINDS)), ("everSynced", b"1"), ("watching", b"1")):
                o.hset("meta", f, v)
            await old.write(o)

            # the new owner (epoch 2), its model not yet listed: its heartbeat
            shard = Shard(None, redis, Claims(kube, SERVICE_NS, identity="new-shard"),  # type: ignore[arg-type]
                          lambda: registry, ev.interpret)
            member = Member(ClusterSpec("a", "flag", kubeconfig=str(apiserver.kubeconfig("service"))), registry=lambda: registry,
                            interpret=ev.interpret, events=EventLog(), kube=kube)
            part = ClusterPart(shard, member, {0: 2})
            part.writers[0] = UnitWriter(redis, "a", "a", "new-shard", 2, 1000)
            m = LiveModel(kube, lambda: registry, ev.interpret, cluster="a")
            await part._beat(m)
            meta = {k.decode(): v.decode() for k, v in (await redis.hgetall(keys.key("a", "meta"))).items()}
            assert meta["owner"] == "new-shard" and meta["epoch"] == "2"
            assert meta["watching"] == "0" and meta["synced"] == "0"  # owned, not yet watched: readers say so
            assert orjson.loads(meta["kinds"]) == OLD_KINDS  # still found by the kinds the store's rows are of

            # once synced, the kinds are the new owner's own
            m.start(stop)
            for _ in range(600):
                if m.synced:
                    break
                await asyncio.sleep(0.1)
            assert m.synced
            part.need_resync = False
            await part._beat(m)
            kinds = orjson.loads(await redis.hget(keys.key("a", "meta"), "kinds"))
            want = sorted([kw.resource.group, kw.resource.kind] for kw in m.kinds.values() if kw.definition)
            assert want and sorted([g, k] for g, _v, k, *_ in kinds) == want
        finally:
            stop.set()
            if m is not None:
                await m.close()
            await ev.close()
            await kube.close()
            await redis.aclose()

    asyncio.run(run())
