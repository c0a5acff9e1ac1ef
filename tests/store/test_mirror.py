"""An API replica's mirror of the store, on a real Redis: whatever stops it following the
stream, reads stop being answered as fresh, and it recovers by itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import orjson
import pytest

from app.store import keys
from app.store.connection import connect
from app.store.mirror import StoreHub
from app.store.writer import Ops, UnitWriter

from .redis_server import RedisServer

ROW = {"workload": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "ns", "name": "one",
                    "uid": "u1"}, "phase": "Running", "pods": {"ready": 1, "desired": 1}}
FIELD = keys.row_field("jobset.x-k8s.io", "JobSet", "ns", "one")


class Model:
    """What the hub tells a cluster's reader: a workload changed."""

    def __init__(self) -> None:
        self.changed_keys: list[tuple[str, str, str, str]] = []

    def changed(self, key: tuple[str, str, str, str]) -> None:
        self.changed_keys.append(key)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    r = RedisServer().start()
    yield r
    r.stop()


async def _until(check, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.02)


def test_an_entry_the_mirror_cannot_read_is_not_served_as_fresh_and_it_recovers(redis_server: RedisServer) -> None:
    async def run() -> None:
        redis = connect(redis_server.url)
        w = UnitWriter(redis, "c", "c", "shard-1", 1, 1000)
        await w.claim()
        ops = Ops()
        ops.hset("rows", FIELD, orjson.dumps(ROW))
        ops.xadd("ADDED", FIELD, orjson.dumps(ROW), "jobset.x-k8s.io|jobsets")
        await w.write(ops)
        hub = StoreHub(redis)
        model = Model()
        hub.register("c", model)
        stop = asyncio.Event()
        task = asyncio.create_task(hub.run(stop))
        try:
            await _until(lambda: hub.connected and FIELD in hub.rows.get("c", {}))
            sub = hub.log.subscribe(lambda e: True)
            # an entry whose row is not JSON (a writer of another version, a corrupted store)
            await redis.xadd(keys.STREAM, {"u": "c", "c": "c", "t": "MODIFIED", "k": FIELD, "o": b"{not json",
                                           "r": "jobset.x-k8s.io|jobsets"})
            await _until(lambda: not hub.connected)  # reads are refused (503), not answered from a guess
            assert sub.overflowed  # and open streams are told to resume
            await _until(lambda: hub.connected)  # loaded again, from the hashes
            assert hub.rows["c"][FIELD] == ROW
            # and it follows again
            moved = dict(ROW, phase="Failed")
            ops = Ops()
            ops.hset("rows", FIELD, orjson.dumps(moved))
            ops.xadd("MODIFIED", FIELD, orjson.dumps(moved), "jobset.x-k8s.io|jobsets")
            await w.write(ops)
            await _until(lambda: hub.rows["c"][FIELD]["phase"] == "Failed")
        finally:
            stop.set()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await redis.aclose()

    asyncio.run(run())


def test_a_writer_whose_epoch_was_overtaken_is_refused(redis_server: RedisServer) -> None:
    """Fencing: once a newer owner claimed the unit, the old one's writes change nothing."""
    from app.store.writer import Fenced

    async def run() -> None:
        redis = connect(redis_server.url)
        old, new = UnitWriter(redis, "c", "c", "shard-1", 3, 1000), UnitWriter(redis, "c", "c", "shard-2", 4, 1000)
        await old.claim()
        await new.claim()
        ops = Ops()
        ops.hset("rows", FIELD, orjson.dumps(ROW))
        with pytest.raises(Fenced):
            await old.write(ops)
        assert await redis.hget(keys.key("c", "rows"), FIELD) is None
        with pytest.raises(Fenced):
            await old.claim()  # an older epoch cannot take it back
        assert await new.write(ops) == 0
        assert orjson.loads(await redis.hget(keys.key("c", "rows"), FIELD)) == ROW
        await redis.aclose()

    asyncio.run(run())
