"""Shards claiming units (clusters, or "cluster#bucket") through Leases (issue 24, item 1): the
assignment is even and stable, and on a real API server every unit is held by exactly one shard,
handed over at once on a clean stop and after expiry when a shard dies, dropped before its Lease
can expire under a shard that cannot renew, with epochs that grow on every change of owner.

The shards run in this process, each with its own connection as the `wlmap-service` user, which
has the chart's Lease rights in its own namespace; every test uses its own claims group."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from app.cluster.kube import Kube
from app.cluster.lease import LEASES
from app.store import keys
from app.store.claims import (
    GROUP_LABEL,
    KIND_LABEL,
    UNIT_ANNOTATION,
    Claims,
    lease_name,
)

from ..cluster.apiserver import ApiServer
from ..cluster.kubeobjects import Kubectl
from .redis_server import RedisServer

NS = "wlmap-claims"
RBAC = "rbac.authorization.k8s.io/v1"
FAST = {"lease_seconds": 3, "renew": 1.0, "retry": 0.5}
T = TypeVar("T")


# -- assign(): pure ------------------------------------------------------------------------

def test_assign_gives_every_shard_floor_or_ceil_and_the_same_answer_everywhere() -> None:
    rng = random.Random(7)
    for n_units in (0, 1, 2, 5, 7, 30, 101):
        units = [f"cluster-{i}" if i % 3 else f"cluster-{i}#{i % 4}" for i in range(n_units)]
        for n_shards in range(1, 9):
            shards = [f"wlmap-shard-{j}_{rng.getrandbits(32):08x}" for j in range(n_shards)]
            got = Claims.assign(units, shards)
            assert sorted(got) == sorted(units)
            loads = Counter(got.values())
            assert {loads[s] for s in shards} <= {n_units // n_shards, math.ceil(n_units / n_shards)}, loads
            shuffled_u, shuffled_s = units[:], shards[:]
            rng.shuffle(shuffled_u), rng.shuffle(shuffled_s)
            assert Claims.assign(iter(shuffled_u), iter(shuffled_s)) == got  # any order, any shard
    assert Claims.assign(["a"], []) == {}


def test_assign_moves_few_units_when_a_shard_comes_or_goes() -> None:
    units = [f"cluster-{i}#{b}" for i in range(40) for b in range(5)]  # 200 units
    for n in range(2, 11):
        shards = [f"shard-{j}_{j:08x}" for j in range(n)]
        before = Claims.assign(units, shards)
        joined = Claims.assign(units, [*shards, "shard-new_ffffffff"])
        moved = sum(before[u] != joined[u] for u in units)
        # at least a fair share must move to the newcomer; rendezvous keeps it near that (modulo
        # hashing would move about n/(n+1) of all units)
        assert math.floor(len(units) / (n + 1)) <= moved <= 2 * math.ceil(len(units) / (n + 1)), (n, moved)
        left = Claims.assign(units, shards[1:])
        moved = sum(before[u] != left[u] for u in units)
        assert sum(before[u] == shards[0] for u in units) <= moved <= 2 * math.ceil(len(units) / n), (n, moved)


def test_lease_names_are_valid_whatever_the_unit() -> None:
    import re

    dns = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    names = {lease_name("workload-map", "unit", u)
             for u in ("Prod/EU West#3", "prod-eu-west#3", "ü" * 300, "", "-", "a.b", "A.B")}
    assert len(names) == 7 and all(dns.match(n) and len(n) <= 63 for n in names), names
    with pytest.raises(ValueError):
        Claims(None, NS, group="not a label value!")  # type: ignore[arg-type]


# -- on the API server ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def lease_rbac(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[str]:
    """What the chart grants the shards: Leases in the service namespace (here NS)."""
    kubectl.ensure_namespace(NS)
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "wlmap-service"}
    docs = [{"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "wlmap-shard", "namespace": NS},
             "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]},
            {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "wlmap-shard", "namespace": NS},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wlmap-shard"},
             "subjects": [user]}]
    for doc in docs:
        kubectl.apply(doc)
    yield str(apiserver.kubeconfig("service"))
    for doc in reversed(docs):
        kubectl.delete(doc["apiVersion"], doc["kind"], NS, doc["metadata"]["name"])


class Shard:
    """One Claims loop with its own connection, and what its on_change heard."""

    def __init__(self, kube: Kube, group: str, units: list[str], namespace: str = NS, **kw: Any):
        self.kube = kube
        self.claims = Claims(kube, namespace, group=group, **{**FAST, **kw})
        self.claims.set_units(units)
        self.heard: list[tuple[float, dict[str, int], set[str]]] = []
        self.claims.on_change = self._heard
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self.claims.run(self.stop))

    async def _heard(self, acquired: dict[str, int], released: set[str]) -> None:
        self.heard.append((time.monotonic(), dict(acquired), set(released)))

    @property
    def id(self) -> str:
        return self.claims.identity

    async def stop_cleanly(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 10)

    async def crash(self) -> None:
        """Gone without a word: nothing released, nothing deleted, no on_change."""
        async def nothing() -> None:
            return None

        self.claims.release = nothing  # type: ignore[method-assign]
        self.claims.on_change = None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


class Cluster:
    """Shards of one group, and the admin's view of their Leases."""

    def __init__(self, admin: Kube, kubeconfig: str, group: str):
        self.admin, self.kubeconfig, self.group = admin, kubeconfig, group
        self.shards: list[Shard] = []

    async def shard(self, units: list[str], **kw: Any) -> Shard:
        s = Shard(await Kube.connect(self.kubeconfig), self.group, units, **kw)
        self.shards.append(s)
        return s

    async def two(self, units: list[str], **kw: Any) -> tuple[Shard, Shard, dict[str, str]]:
        """Two shards, once they share the units out."""
        a, b = await self.shard(units, **kw), await self.shard(units, **kw)
        owners, _ = await until(lambda: self.assigned([a, b], units), 15, f"{len(units)} units over 2 shards")
        return a, b, owners

    async def assigned(self, shards: list[Shard], units: list[str]) -> dict[str, str]:
        """settled(), and as the assignment every shard computes (an even spread can pass by on
        the way there while a newcomer is not yet seen by all: waited out, not asserted)."""
        owners = await self.settled(shards, units)
        return owners if owners and owners == Claims.assign(units, [s.id for s in shards]) else {}

    async def leases(self, kind: str) -> list[dict[str, Any]]:
        sel = f"{GROUP_LABEL}={self.group},{KIND_LABEL}={kind}"
        return (await self.admin.list(LEASES, NS, label_selector=sel))["items"]

    async def unit_leases(self) -> dict[str, dict[str, Any]]:
        """unit -> its Lease's spec."""
        return {x["metadata"]["annotations"][UNIT_ANNOTATION]: x["spec"] for x in await self.leases("unit")}

    async def settled(self, shards: list[Shard], units: list[str]) -> dict[str, str]:
        """Every unit owned by exactly one of `shards`, evenly, agreeing with the Leases
        themselves and with their epochs; unit -> owner identity, or {} when not (yet) so."""
        owners: dict[str, str] = {}
        for s in shards:
            for u in s.claims.owned:
                if u in owners:
                    return {}
                owners[u] = s.id
        if sorted(owners) != sorted(units):
            return {}
        loads = sorted(len(s.claims.owned) for s in shards)
        if loads[-1] - loads[0] > 1:
            return {}
        held = {s.id: dict(s.claims.owned) for s in shards}  # as of now: the look below may change them
        specs = await self.unit_leases()
        for u, owner in owners.items():
            spec = specs.get(u) or {}
            if spec.get("holderIdentity") != owner or spec.get("leaseTransitions", 0) != held[owner].get(u):
                return {}
        return owners

    async def close(self) -> None:
        for s in self.shards:
            if not s.task.done():
                await s.stop_cleanly()
            await s.kube.close()


def on_api(apiserver: ApiServer, kubeconfig: str, group: str, body: Callable[[Cluster], Awaitable[None]]) -> None:
    """Run a test's body with shards of `group`; every shard still running is stopped after it."""
    async def run() -> None:
        admin = await Kube.connect(str(apiserver.kubeconfig("admin")))
        c = Cluster(admin, kubeconfig, group)
        try:
            await body(c)
        finally:
            await c.close()
            await admin.close()

    asyncio.run(run())


async def until(check: Callable[[], Awaitable[T]], timeout: float, what: str) -> tuple[T, float]:
    """Poll an async check until it is truthy: (its value, seconds taken)."""
    start = time.monotonic()
    while True:
        got = await check()
        if got:
            return got, time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what} not reached within {timeout} s (last: {got!r})")
        await asyncio.sleep(0.05)


UNITS = ["alpha", "beta", "gamma#0", "gamma#1", "Delta/West"]


def test_shards_spread_units_evenly_and_each_unit_has_one_owner(apiserver: ApiServer, lease_rbac: str) -> None:
    # nothing here waits for an expiry: Leases long enough that a loaded machine's late renewal
    # (a 3 s Lease renewed every second, all shards on one event loop) is not taken for a death
    steady = {"lease_seconds": 15}

    async def body(c: Cluster) -> None:
        a, b, owners = await c.two(UNITS, **steady)
        assert sorted(Counter(owners.values()).values()) == [2, 3]
        assert owners == Claims.assign(UNITS, [a.id, b.id])  # the assignment every shard computes

        async def status_agrees() -> dict[str, Any]:
            # status() is a's last look; the units can settle from b's side a look before it
            st = a.claims.status()
            return st if st["live"] == sorted([a.id, b.id]) and st["assignment"] == owners else {}

        st, _ = await until(status_agrees, 10, "a's status shows both shards and the assignment")
        assert st["identity"] == a.id and st["group"] == "t-spread"
        assert st["owned"] == {u: e for u, e in sorted(a.claims.owned.items())}
        assert set(st["owned"]) == {u for u, s in owners.items() if s == a.id}

        d = await c.shard(UNITS, **steady)
        owners, _ = await until(lambda: c.assigned([a, b, d], UNITS), 15, "5 units over 3 shards")
        assert sorted(Counter(owners.values()).values()) == [1, 2, 2]
        assert owners == Claims.assign(UNITS, [a.id, b.id, d.id])
        assert len(await c.leases("shard")) == 3
    on_api(apiserver, lease_rbac, "t-spread", body)


def test_a_crashed_shard_s_units_are_taken_over_once_its_leases_expire(apiserver: ApiServer,
                                                                       lease_rbac: str) -> None:
    async def body(c: Cluster) -> None:
        a, b, _ = await c.two(UNITS)
        theirs = {u: b.claims.owned[u] for u in b.claims.owned}
        await b.crash()
        assert {u for u, spec in (await c.unit_leases()).items() if spec["holderIdentity"] == b.id} == set(theirs)
        _, took = await until(lambda: c.settled([a], UNITS), FAST["lease_seconds"] + 2 * FAST["retry"] + 3,
                              "the crashed shard's units taken over")
        assert all(a.claims.owned[u] > epoch for u, epoch in theirs.items())  # the epoch grew
        # not before its Leases expired (they were renewed at most `renew` s before the crash)
        assert took >= FAST["lease_seconds"] - FAST["renew"] - 0.5
        # the dead shard's own Lease is deleted once it has been dead a while
        await until(lambda: _only(c, [a.id]), 4 * FAST["lease_seconds"], "the dead shard's Lease deleted")
    on_api(apiserver, lease_rbac, "t-crash", body)


async def _only(c: Cluster, ids: list[str]) -> bool:
    return sorted(x["spec"].get("holderIdentity") for x in await c.leases("shard")) == sorted(ids)


def test_a_clean_stop_hands_units_over_at_the_next_look(apiserver: ApiServer, lease_rbac: str) -> None:
    slow = {"lease_seconds": 12}  # a release must not be mistaken for an expiry

    async def body(c: Cluster) -> None:
        a, b, _ = await c.two(UNITS, **slow)
        theirs = dict(b.claims.owned)
        await b.stop_cleanly()
        assert b.claims.owned == {} and b.heard[-1][2] == set(theirs)  # told it lost them
        assert await _only(c, [a.id])  # its shard Lease is deleted
        _, took = await until(lambda: c.settled([a], UNITS), 10, "the stopped shard's units taken over")
        assert took < slow["lease_seconds"] / 2  # released: no need to wait for an expiry
        assert all(a.claims.owned[u] > epoch for u, epoch in theirs.items())
    on_api(apiserver, lease_rbac, "t-stop", body)


def test_units_come_and_go_and_an_epoch_grows_on_every_change_of_owner(apiserver: ApiServer,
                                                                       lease_rbac: str) -> None:
    async def body(c: Cluster) -> None:
        a = await c.shard(["one"])
        await until(lambda: c.settled([a], ["one"]), 10, "one unit owned")
        first = a.claims.owned["one"]

        a.claims.set_units(["one", "two", "three"])
        await until(lambda: c.settled([a], ["one", "two", "three"]), 10, "units added")
        assert a.claims.owned["one"] == first  # renewed, not re-acquired

        a.claims.set_units(["two", "three"])
        await until(lambda: _is(a.claims.owned.keys(), {"two", "three"}), 10, "a unit removed")
        assert a.heard[-1][1:] == ({}, {"one"})
        # its Lease stays, released (deleting it would restart its epoch)
        await until(lambda: _released(c, "one"), 5, "the removed unit's Lease released")

        a.claims.set_units(["one", "two", "three"])
        await until(lambda: c.settled([a], ["one", "two", "three"]), 10, "the unit back")
        assert a.claims.owned["one"] > first  # released and re-acquired: a new epoch

        b = await c.shard(["one", "two", "three"])
        owners, _ = await until(lambda: c.settled([a, b], ["one", "two", "three"]), 15, "a second shard")
        for u in [u for u, s in owners.items() if s == b.id]:  # moved to b: a newer epoch again
            assert b.claims.owned[u] > first
    on_api(apiserver, lease_rbac, "t-units", body)


async def _is(got: Any, want: set[str]) -> bool:
    return set(got) == want


async def _released(c: Cluster, unit: str) -> bool:
    return not (await c.unit_leases())[unit].get("holderIdentity")


def test_on_change_hears_of_a_release_before_the_lease_is_given_up(apiserver: ApiServer, lease_rbac: str) -> None:
    async def body(c: Cluster) -> None:
        a = await c.shard(UNITS[:3])
        seen: list[tuple[str, str, str, int]] = []  # (acquired|released, unit, holder then, transitions)

        async def check(acquired: dict[str, int], released: set[str]) -> None:
            specs = await c.unit_leases()
            seen.extend(("released", u, specs[u].get("holderIdentity"), 0) for u in sorted(released))
            seen.extend(("acquired", u, specs[u].get("holderIdentity"), specs[u]["leaseTransitions"] - e)
                        for u, e in acquired.items())

        a.claims.on_change = check
        await until(lambda: c.settled([a], UNITS[:3]), 10, "3 units owned")
        a.claims.set_units(UNITS[1:3])
        await until(lambda: _released(c, UNITS[0]), 10, "a removed unit released")
        await a.stop_cleanly()
        # every unit: acquired while the Lease names us with that epoch; released while it
        # still names us (the caller stops using it before anyone else may take it)
        assert sorted(seen) == sorted([("acquired", u, a.id, 0) for u in UNITS[:3]]
                                      + [("released", u, a.id, 0) for u in UNITS[:3]])
        assert next(s[1] for s in seen if s[0] == "released") == UNITS[0]
        assert all(not spec.get("holderIdentity") for spec in (await c.unit_leases()).values())
    on_api(apiserver, lease_rbac, "t-order", body)


def test_a_shard_that_cannot_renew_drops_its_units_before_another_may_take_them(apiserver: ApiServer,
                                                                                lease_rbac: str) -> None:
    async def body(c: Cluster) -> None:
        a, b, _ = await c.two(UNITS)
        theirs = set(b.claims.owned)

        async def hung(*args: Any, **kw: Any) -> None:  # an API server that stopped answering this shard
            await asyncio.sleep(3600)

        answers = b.kube.request
        b.kube.request = hung  # type: ignore[method-assign]
        await until(lambda: c.settled([a], UNITS), 15, "the hung shard's units taken over")
        assert b.claims.owned == {}
        b.kube.request = answers  # type: ignore[method-assign]
        for u in theirs:  # never two shards believing they own a unit
            dropped = max(t for t, _, released in b.heard if u in released)
            taken = max(t for t, acquired, _ in a.heard if u in acquired)
            assert dropped < taken, u
    on_api(apiserver, lease_rbac, "t-deadline", body)


def test_a_shard_whose_own_loop_stalled_past_the_deadline_keeps_its_units_when_it_can_renew(
        apiserver: ApiServer, lease_rbac: str) -> None:
    """A stalled process (its event loop busy for longer than the deadline, as a big list projected
    on a loaded CPU makes it) is not an expired Lease: the watchdog renews late, and nothing moves."""
    async def body(c: Cluster) -> None:
        a, b, owners = await c.two(UNITS)
        before = {s.id: dict(s.claims.owned) for s in (a, b)}
        heard = {s.id: len(s.heard) for s in (a, b)}
        # Stalled just after every Lease was renewed: past the deadline (2 s), short of the
        # duration (3 s), so no Lease expires; a Lease renewed up to `renew` before the stall
        # could expire during it, and a rival take it (a race, not what this test is about).
        locks = [lk for s in (a, b) for lk in (s.claims._me, *s.claims._locks.values()) if lk.held]
        until = time.monotonic() + 10
        while max(time.monotonic() - lk.renewed for lk in locks) > 0.2:
            assert time.monotonic() < until, "the Leases are never renewed together"
            await asyncio.sleep(0.02)
        time.sleep(b.claims.deadline + 0.4)  # both shards' loop (one loop here) stalled past the deadline
        await asyncio.sleep(3 * FAST["retry"])
        assert await c.settled([a, b], UNITS) == owners
        assert {s.id: dict(s.claims.owned) for s in (a, b)} == before  # same epochs: never dropped
        assert [s.heard[heard[s.id]:] for s in (a, b)] == [[], []]  # no shard was told it lost a unit
    on_api(apiserver, lease_rbac, "t-stall", body)


@pytest.mark.parametrize("user,namespace", [("bob", NS), ("service", "claims-read-only")],
                         ids=["no-rights-at-all", "may-list-may-not-write"])
def test_a_shard_without_lease_rights_logs_once_and_owns_nothing(apiserver: ApiServer, lease_rbac: str,
                                                                 caplog: pytest.LogCaptureFixture,
                                                                 user: str, namespace: str) -> None:
    # the service user reads everything cluster-wide and writes Leases nowhere but where a test
    # granted it (the service namespace): a namespace of its own keeps this one true
    Kubectl(apiserver).ensure_namespace(namespace)

    async def run() -> None:
        kube = await Kube.connect(str(apiserver.kubeconfig(user)))
        try:
            s = Shard(kube, "t-norbac", UNITS, namespace=namespace, retry=0.1)
            await asyncio.sleep(1.5)  # about 15 looks
            assert not s.task.done() and s.claims.owned == {} and s.heard == []
            assert s.claims.status()["live"] == []
            await s.stop_cleanly()
        finally:
            await kube.close()

    with caplog.at_level(logging.WARNING, logger="wlmap.claims"):
        asyncio.run(run())
    said = [r.getMessage() for r in caplog.records if r.name == "wlmap.claims"]
    assert said and all("403" in m or "forbidden" in m.lower() for m in said), said
    assert len(said) == len(set(said)), said  # each distinct message once


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    r = RedisServer().start()
    yield r
    r.stop()


def test_a_paused_owner_that_still_believes_it_owns_is_fenced_once_another_took_over(
        apiserver: ApiServer, lease_rbac: str, redis_server: RedisServer) -> None:
    """Why a short Lease is safe: a shard paused past its Lease (a stopped process, a stalled
    loop: its watchdog never ran) still believes it owns its units when another takes them, and
    its writes to the store are refused from the new owner's claim on; the new owner's go in."""
    from app.store.connection import connect
    from app.store.writer import Fenced, Ops, UnitWriter

    async def body(c: Cluster) -> None:
        redis = connect(redis_server.url)
        try:
            # the renewals and looks derived from the duration, as a shard started with --shard-lease 3
            a, b, _ = await c.two(UNITS, renew=None, retry=None)
            assert (b.claims.renew, b.claims.retry, b.claims.deadline) == (0.75, 0.5, 2.0)
            unit, epoch = sorted(b.claims.owned.items())[0]
            old = UnitWriter(redis, unit, unit, b.id, epoch, 1000)
            await old.claim()
            ops = Ops()
            ops.hset("rows", "k", b"before")
            await old.write(ops)
            await b.crash()  # paused: nothing released, nothing dropped
            assert unit in b.claims.owned
            await until(lambda: c.settled([a], UNITS), 3 + 2 * 0.5 + 5, "the paused shard's units taken over")
            new_epoch = a.claims.owned[unit]
            assert new_epoch > epoch
            new = UnitWriter(redis, unit, unit, a.id, new_epoch, 1000)
            await new.claim()  # what a new owner does before reading what the store holds
            late = Ops()
            late.hset("rows", "k", b"from the paused owner")
            with pytest.raises(Fenced):
                await old.write(late)
            with pytest.raises(Fenced):
                await old.claim()  # nor can it claim the unit back with its old epoch
            assert await redis.hget(keys.key(unit, "rows"), "k") == b"before"
            ops = Ops()
            ops.hset("rows", "k", b"after")
            await new.write(ops)
            assert await redis.hget(keys.key(unit, "rows"), "k") == b"after"
        finally:
            await redis.aclose()
    on_api(apiserver, lease_rbac, "t-paused", body)
