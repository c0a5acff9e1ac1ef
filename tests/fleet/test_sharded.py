"""The fleet behind a store: two shards and two API replicas over three real API servers and a
real Redis (Debian's redis-server), against the same fleet served by one process.

Shards (`--role shard`) claim the clusters with Leases in the home cluster and write rows, answers
and change events to Redis; API replicas (`--role api`) watch nothing and answer from it.  The
faults of issue 24 are made for real: a shard killed with SIGKILL, the store stopped and started
again empty, a stream moved from one API replica to the other with its token.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.store.mirror import META_POLL
from app.store.shard import STALE

from ..cluster.fixtures import SERVICE_NS
from ..cluster.kubeobjects import running, shard_lease_rbac
from ..cluster.test_streams import JOBSET, NOT_READY, Stream, _name, _ready
from ..cluster.util import fixture_object
from ..service.conftest import Server
from ..store.redis_server import RedisServer
from .conftest import NS, Fleet, fleet_args, wait_synced
from .test_fleet import resource_requests

CLUSTERS = ["a", "b", "c"]


def lease_rbac(f: Fleet) -> None:
    for doc in shard_lease_rbac("wlmap-service", SERVICE_NS):
        f.kubectl["a"].apply(doc)


class Sharded:
    def __init__(self, f: Fleet, redis: RedisServer):
        self.f, self.redis = f, redis
        self.shards: list[Server] = []
        self.apis: list[Server] = []
        self.started = 0

    def args(self, role: str) -> list[str]:
        return fleet_args(self.f, "--auth", "none", "--store", self.redis.url, "--role", role)

    def start_shard(self) -> Server:
        self.started += 1
        pod = f"shard-{self.started}"  # a shard's identity starts with its pod's name
        s = Server(*self.args("shard"), env={"POD_NAME": pod})
        s.pod = pod  # type: ignore[attr-defined]
        self.shards.append(s)
        return s

    def owners(self, api: Server) -> dict[str, str]:
        out = {}
        for c in CLUSTERS:
            st = httpx.get(api.url + f"/model?cluster={c}", timeout=10).json()
            out[c] = (st.get("units") or [{}])[0].get("owner") or ""
        return out

    def stop(self) -> None:
        for s in self.shards + self.apis:
            s.stop()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    r = RedisServer().start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def sharded(fleet: Fleet, redis_server: RedisServer) -> Iterator[Sharded]:
    lease_rbac(fleet)
    s = Sharded(fleet, redis_server)
    try:
        s.start_shard()
        s.start_shard()
        s.apis = [Server(*s.args("api")), Server(*s.args("api"))]
        for api in s.apis:
            wait_synced(api, CLUSTERS, timeout=90)
            wait_watching(api)  # the second shard's arrival hands a cluster over: until it is watched again
        yield s
    finally:
        s.stop()


def wait_watching(api: Server, timeout: float = 60.0) -> None:
    _eventually(lambda: all(httpx.get(api.url + f"/model?cluster={c}", timeout=10).json()["freshness"]["watching"]
                            for c in CLUSTERS), timeout=timeout)


def _strip(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("freshness", None)
    doc.pop("metadata", None)
    return doc


def _eventually(pred: Any, timeout: float = 30.0, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"not within {timeout} s (last: {last!r})")


def _same_as_single_process(single: Server, api: Server) -> None:
    one = httpx.get(single.url + "/workloads", timeout=30).json()
    two = httpx.get(api.url + "/workloads", timeout=30).json()
    assert [(_r["cluster"], _r["workload"]["name"]) for _r in two["items"]] == \
        [(_r["cluster"], _r["workload"]["name"]) for _r in one["items"]]
    assert two["items"] == one["items"]


def test_api_replicas_answer_like_the_single_process(sharded: Sharded, fleet_service: Server) -> None:
    """Lists, one workload with its pods and diagnosis, pods=false and /clusters: what a single
    process answers, from either API replica, with `source: store`."""
    for api in sharded.apis:
        _eventually(lambda api=api: _lists_equal(fleet_service, api))
        for c in CLUSTERS:
            path = f"/clusters/{c}/workloads/{NS}/train-{c}"
            one = httpx.get(fleet_service.url + path, timeout=30)
            two = httpx.get(api.url + path, timeout=30)
            assert two.status_code == 200, two.text
            assert _strip(two.json()) == _strip(one.json())
            assert two.json()["freshness"]["source"] == "store"
            assert two.json()["freshness"]["watching"] is True
            bare = httpx.get(api.url + path, params={"pods": "false"}, timeout=30)
            assert _strip(bare.json()) == _strip(httpx.get(fleet_service.url + path, params={"pods": "false"},
                                                           timeout=30).json())
        assert _series(api) == _series(fleet_service)  # workload metrics, from the store's rows and facts
        items = {i["name"]: i for i in httpx.get(api.url + "/clusters", timeout=10).json()["items"]}
        assert sorted(items) == CLUSTERS and all(items[c]["synced"] for c in CLUSTERS)
        # one name in two clusters: the same 409 naming both
        amb = httpx.get(api.url + f"/workloads/{NS}/shared", timeout=30)
        assert amb.status_code == 409 and {c["cluster"] for c in amb.json()["candidates"]} == {"b", "c"}


def _series(server: Server) -> list[str]:
    text = httpx.get(server.url + "/metrics/workloads", timeout=30).text
    return sorted(line for line in text.splitlines() if line.startswith("wlmap_workload"))


def _lists_equal(single: Server, api: Server) -> bool:
    try:
        _same_as_single_process(single, api)
        return True
    except AssertionError:
        return False


def test_clusters_are_spread_over_both_shards(sharded: Sharded) -> None:
    owners = sharded.owners(sharded.apis[0])
    assert all(owners.values()), owners
    counts = sorted([list(owners.values()).count(o) for o in set(owners.values())])
    assert counts == [1, 2], owners  # three clusters over two shards: 2 and 1
    units = sorted(_metric(s, "wlmap_shard_units") for s in sharded.shards)
    assert units == [1.0, 2.0]
    assert all(_metric(s, "wlmap_store_connected") == 1.0 for s in sharded.shards + sharded.apis)


def _metric(server: Server, name: str) -> float:
    for line in httpx.get(server.url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def test_reads_from_api_replicas_cost_the_api_servers_nothing(sharded: Sharded, fleet: Fleet) -> None:
    api = sharded.apis[1]
    httpx.get(api.url + "/workloads", timeout=30).raise_for_status()
    # the shards' own background on `a` (Lease renewals and looks, every second or two) not counted
    before = {n: resource_requests(s, but="leases") for n, s in fleet.servers.items()}
    for _ in range(20):
        assert httpx.get(api.url + "/workloads", timeout=30).status_code == 200
        for c in CLUSTERS:
            assert httpx.get(api.url + f"/clusters/{c}/workloads/{NS}/train-{c}", timeout=30).status_code == 200
    after = {n: resource_requests(s, but="leases") for n, s in fleet.servers.items()}
    assert sum(after[n] - before[n] for n in ("b", "c")) == 0, (before, after)
    assert after["a"] - before["a"] <= 12, (before, after)


def _set_ready(f: Fleet, cluster: str, pod: str, ready: bool) -> None:
    k = f.kubectl[cluster]
    k.set_status(k.get("v1", "Pod", NS, pod), running("gpu-node-0") if ready else NOT_READY)


def test_a_change_reaches_every_replica_and_a_stream_resumes_on_the_other(sharded: Sharded, fleet: Fleet) -> None:
    """A list stream from replica 1, which is then killed (SIGKILL); its token taken to replica 2
    after two changes: exactly those changes, in order, no 410, nothing repeated."""
    a1, a2 = sharded.apis
    rb, rc = _ready_of(a1, "b", "train-b"), _ready_of(a1, "c", "train-c")
    assert rb and rc
    s1 = Stream(a1.url + "/workloads")
    try:
        n = s1.synced(30)
        token = s1.events[n - 1]["id"]
        os.kill(a1.proc.pid, signal.SIGKILL)
        a1.proc.wait(10)
    finally:
        s1.close()
        a1.stop()
    a1 = sharded.apis[0] = Server(*sharded.args("api"))  # its replacement, for the tests after
    wait_synced(a1, CLUSTERS, timeout=60)
    _set_ready(fleet, "b", "train-b-coordinator-0-0", False)
    _eventually(lambda: _ready_of(a2, "b", "train-b") == rb - 1)
    _set_ready(fleet, "c", "train-c-coordinator-0-0", False)
    _eventually(lambda: _ready_of(a2, "c", "train-c") == rc - 1)
    s2 = Stream(a2.url + "/workloads", headers={"Last-Event-ID": token})
    try:
        s2.synced(30)
        got = [(e["object"]["cluster"], _name(e), _ready(e)) for e in s2.changes()]
        assert s2.status == 200
        assert got == [("b", "train-b", rb - 1), ("c", "train-c", rc - 1)], got
        # and the live stream goes on from there
        _set_ready(fleet, "b", "train-b-coordinator-0-0", True)
        s2.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "train-b" and _ready(e) == rb, 15)
    finally:
        s2.close()
        _set_ready(fleet, "c", "train-c-coordinator-0-0", True)
    # a workload stream's token resumes on the other replica too
    w1 = Stream(a1.url + f"/clusters/c/workloads/{NS}/train-c")
    try:
        w1.wait(lambda e: e["type"] in ("ADDED", "MODIFIED") and _ready(e) == rc, 30)
        wtoken = [e for e in w1.events if e["type"] != "BOOKMARK"][-1]["id"]
    finally:
        w1.close()
    _set_ready(fleet, "c", "train-c-coordinator-0-0", False)
    _eventually(lambda: _ready_of(a2, "c", "train-c") == rc - 1)
    w2 = Stream(a2.url + f"/clusters/c/workloads/{NS}/train-c", headers={"Last-Event-ID": wtoken})
    try:
        first = w2.wait(lambda e: e["type"] != "BOOKMARK", 15)
        assert first["type"] == "MODIFIED" and _ready(first) == rc - 1, first
    finally:
        w2.close()
        _set_ready(fleet, "c", "train-c-coordinator-0-0", True)


def _ready_of(api: Server, cluster: str, name: str) -> int | None:
    r = httpx.get(api.url + f"/clusters/{cluster}/workloads", timeout=10)
    if r.status_code != 200:
        return None
    return next((x["pods"]["ready"] for x in r.json()["items"] if x["workload"]["name"] == name), None)


def test_a_new_workload_can_be_read_as_soon_as_a_stream_shows_it(sharded: Sharded, fleet: Fleet) -> None:
    """A new workload's row reaches the store with its answer (one fenced write), so a UI that
    opens a workload the moment a list stream shows it gets it, never "answer pending"."""
    api = sharded.apis[1]
    k = fleet.kubectl["b"]
    s = Stream(api.url + "/workloads")
    names = [f"fresh-{i}" for i in range(5)]
    try:
        n = s.synced(30)
        for name in names:
            obj, status = fixture_object(JOBSET, NS, name)
            k.set_status(k.apply(obj), status)
        for name in names:
            s.wait(lambda e, name=name: e["type"] == "ADDED" and _name(e) == name, 30, after=n)
            r = httpx.get(api.url + f"/clusters/b/workloads/{NS}/{name}", timeout=10)
            assert r.status_code == 200, r.text
            assert r.json()["workload"]["name"] == name
    finally:
        s.close()
        for name in names:
            k.delete("jobset.x-k8s.io/v1alpha2", "JobSet", NS, name)


def test_a_killed_shard_is_replaced_without_failed_reads_or_an_added_storm(sharded: Sharded, fleet: Fleet) -> None:
    api = sharded.apis[0]
    owners = sharded.owners(api)
    victim = next(s for s in sharded.shards if any(o.startswith(_pod_of(s)) for o in owners.values()))
    lost = [c for c, o in owners.items() if o.startswith(_pod_of(victim))]
    assert lost
    before = _ready_of(api, lost[0], f"train-{lost[0]}")
    assert before
    stream = Stream(api.url + "/workloads")
    try:
        n = stream.synced(30)
        t0 = time.monotonic()
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(10)
        sharded.shards.remove(victim)
        _set_ready(fleet, lost[0], f"train-{lost[0]}-coordinator-0-0", False)  # a change while nobody watches
        failures: list[str] = []
        seen: list[tuple[float, bool, bool]] = []  # (s after the kill, said watching, the dead shard still owned it)
        while True:
            owned = sharded.owners(api)
            for c in lost:
                r = httpx.get(api.url + f"/clusters/{c}/workloads/{NS}/train-{c}", timeout=10)
                if r.status_code != 200:
                    failures.append(r.text)
                else:
                    dead_owns = owned.get(c, "").startswith(_pod_of(victim))
                    seen.append((time.monotonic() - t0, r.json()["freshness"]["watching"], dead_owns))
            if _ready_of(api, lost[0], f"train-{lost[0]}") == before - 1 and all(
                    o and not o.startswith(_pod_of(victim)) for c, o in sharded.owners(api).items()):
                break
            assert time.monotonic() - t0 < 30, f"not taken over within 30 s: {sharded.owners(api)}"
            time.sleep(0.2)
        assert failures == []
        # answered as last written, and said so until a shard took over: once its heartbeats are
        # stale (STALE, seen within a meta poll), a dead shard's unit is never said to be watched
        # (the takeover may come first: the Lease is as long as STALE)
        late = [x for x in seen if x[2] and x[1] and x[0] > STALE + META_POLL + 1.5]
        assert late == [], late
        taken = time.monotonic() - t0
        assert taken <= 30
        time.sleep(1)
        after = [e for e in stream.events[n:] if e["type"] != "BOOKMARK"]
        storm = [e for e in after if e["type"] == "ADDED"]
        assert storm == [], [(_name(e), e["object"].get("cluster")) for e in storm]
        mods = [(e["object"]["cluster"], _name(e)) for e in after]
        assert (lost[0], f"train-{lost[0]}") in mods
    finally:
        stream.close()
        _set_ready(fleet, lost[0], f"train-{lost[0]}-coordinator-0-0", True)
        sharded.start_shard()  # two shards again for the tests after
        wait_watching(api)


def _pod_of(server: Server) -> str:
    return str(server.pod) + "_"  # type: ignore[attr-defined]


def test_the_store_going_away_is_a_503_and_shards_resync_when_it_is_back(sharded: Sharded) -> None:
    api = sharded.apis[1]
    s = Stream(api.url + "/workloads")
    try:
        n = s.synced(30)
        token = s.events[n - 1]["id"]
        sharded.redis.stop()
        r = _eventually(lambda: (x := httpx.get(api.url + "/clusters/b/workloads", timeout=15)).status_code == 503
                        and x, timeout=20)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["type"].endswith("store-unavailable") or "store" in r.json()["detail"]
        one = httpx.get(api.url + f"/clusters/b/workloads/{NS}/train-b", timeout=15)
        assert one.status_code == 503
        s.wait(lambda e: e["type"] == "ERROR", 20)  # the open stream is told to resume
    finally:
        s.close()
    sharded.redis.start()  # empty: everything it held is gone
    _eventually(lambda: _ready_of(api, "b", "train-b"), timeout=60)
    wait_synced(api, CLUSTERS, timeout=60)
    # a token from before the store restarted cannot be resumed: 410, never a silent gap
    r = httpx.get(api.url + "/workloads", params={"watch": "true", "resumeFrom": token}, timeout=15)
    assert r.status_code == 410, r.text


@pytest.mark.redis  # its own store
def test_role_all_with_namespace_buckets_answers_like_the_single_process(fleet: Fleet,
                                                                       fleet_service: Server) -> None:
    """Two `--role all` processes on a store of their own, each cluster in three namespace
    buckets: the buckets spread over both, and either process answers like one process."""
    lease_rbac(fleet)
    redis = RedisServer().start()
    procs: list[Server] = []
    try:
        for i in (1, 2):
            procs.append(Server(*fleet_args(fleet, "--auth", "none", "--store", redis.url, "--role", "all",
                                            "--shard-buckets", "3"), env={"POD_NAME": f"all-{i}"}))
        for p in procs:
            wait_synced(p, CLUSTERS, timeout=90)

        def spread() -> list[str] | None:
            units = [u for c in CLUSTERS
                     for u in httpx.get(procs[0].url + f"/model?cluster={c}", timeout=10).json()["units"]]
            assert sorted(u["unit"] for u in units) == sorted(f"{c}#{b}" for c in CLUSTERS for b in range(3))
            owners = [(u["owner"] or "").split("_")[0] for u in units]
            return owners if sorted(owners.count(o) for o in set(owners)) == [4, 5] else None  # 9 units over 2

        _eventually(spread, timeout=60)
        for p in procs:
            wait_watching(p)
        for p in procs:
            _eventually(lambda p=p: _lists_equal(fleet_service, p))
            # capacity: each bucket's pods counted once, summed over the shards that own them
            _eventually(lambda p=p: [i["capacity"] for i in httpx.get(p.url + "/clusters", timeout=10).json()["items"]]
                        == [httpx.get(fleet_service.url + f"/clusters/{c}", timeout=10).json()["capacity"]
                            for c in CLUSTERS])
            for c in CLUSTERS:
                path = f"/clusters/{c}/workloads/{NS}/train-{c}"
                assert _strip(httpx.get(p.url + path, timeout=30).json()) == \
                    _strip(httpx.get(fleet_service.url + path, timeout=30).json())
    finally:
        for p in procs:
            p.stop()
        redis.stop()
