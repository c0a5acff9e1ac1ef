"""One cluster as the store holds it: the Reader an API replica answers from.

The lookup rules are the Reader's (cluster/reader.py), as for the live model and direct reads;
objects are the rows the hub mirrors (mirror.py), and one workload's answer is read from the
store when asked: the live answer assembled from the parts its shard wrote (answers.py) with the
diagnosis the caller's rights allow, or for `pods=false` the object as the shard keeps it,
interpreted here.  Answers say how fresh they are: `watching` is false while a unit's
owner has not sent a heartbeat for a while (it died, and no other shard has taken it over yet);
rows are then still answered, as last written.

What the store does not hold: objects that are not top-level workloads (a Deployment owned by an
InferenceService) have no row, so asking for one by name answers 404 here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..cluster.kube import Resource
from ..cluster.reader import Allow, Found, Known, LookupFailed, Reader, definition_for
from ..cluster.views import enveloped, events_shown, with_diagnosis
from ..cluster.workloads import now_iso
from ..karta.registry import Registry
from ..model.capacity import CapacityReads
from ..model.events import TokenError
from ..model.kinds import KindWatch
from ..model.live import Interpret, known_kinds, summarize
from ..model.packing import inflate
from ..model.protocol import NotSynced
from . import keys
from .answers import part_field, view
from .capacity import StoreCapacity, merged
from .connection import ERRORS
from .errors import AnswerPending, StoreUnavailable
from .mirror import StoreHub
from .shard import STALE


class StoreModel(CapacityReads, Reader):
    def __init__(
        self,
        hub: StoreHub,
        name: str,
        registry: Callable[[], Registry],
        interpret: Interpret,
        labelled: bool,
        server: str | None = None,
    ):
        self.hub, self.name, self.registry, self.interpret = hub, name, registry, interpret
        self.server = server
        self.cluster = name if labelled else None
        self.units = hub.units(name)
        self.events = hub.log
        self.states: dict[str, Any] = {}  # none: what shards know of workloads is in the store
        self.watchers: dict[tuple[str, str, str, str], set[asyncio.Event]] = {}
        self.started_at = time.time()
        self._kinds: tuple[tuple[str, ...], dict[tuple[str, str], KindWatch]] = ((), {})
        self._capacity: tuple[Any, tuple[StoreCapacity, tuple[str, str | None], str | None]] | None = None
        hub.register(name, self)

    # -- the model's lifecycle, as a fleet member drives it (nothing runs per cluster here) ------
    def start(self, stop: Any) -> None:
        pass

    async def close(self) -> None:
        self.hub.clusters.pop(self.name, None)

    def reconnect_now(self) -> None:
        pass

    def definitions_changed(self) -> None:
        self._kinds = ((), {})

    def changed(self, key: tuple[str, str, str, str]) -> None:
        for ev in self.watchers.get(key, ()):
            ev.set()

    # -- state --------------------------------------------------------------------------------
    def _metas(self) -> list[dict[str, str]]:
        return [self.hub.meta.get(u) or {} for u in self.units]

    @property
    def synced(self) -> bool:
        """Every unit was synced by a shard once (its rows stay answerable while a new owner takes
        over, marked as not watching)."""
        return self.hub.connected and all(m.get("everSynced") == "1" for m in self._metas())

    def _stale(self, m: dict[str, str]) -> bool:
        beat = int(m.get("heartbeat") or 0)
        return not beat or self.hub.now_ms - beat > STALE * 1000

    @property
    def namespaces(self) -> list[str] | None:
        ns = next((m.get("namespaces") for m in self._metas() if m.get("namespaces")), None)
        return orjson.loads(ns) if ns else None

    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        metas = self._metas()
        watching = all(m.get("watching") == "1" and not self._stale(m) for m in metas)
        observed = [m.get("observedAt") or "" for m in metas]
        rvs = [m.get("resourceVersion") or "" for m in metas]
        rv = rvs[0] if len(rvs) == 1 else None
        return {
            "source": "store",
            "resourceVersion": rv or None,
            "observedAt": min(o for o in observed if o) if any(observed) else now_iso(None),
            "watching": watching,
        }

    def error(self) -> str | None:
        if not self.hub.connected:
            return f"the store does not answer ({self.hub.error})"
        for u, m in zip(self.units, self._metas(), strict=False):
            if not m:
                return f"no shard has written {u} yet"
            if self._stale(m):
                return f"the shard owning {u} ({m.get('owner')}) stopped renewing; waiting for another to take over"
            if m.get("error"):
                return m["error"]
        return None

    def refusal(self) -> Exception:
        if not self.hub.connected:
            return StoreUnavailable()
        return NotSynced(f"cluster {self.name}: no shard has synced it into the store yet")

    def status(self) -> dict[str, Any]:
        units = []
        for u, m in zip(self.units, self._metas(), strict=False):
            beat = int(m.get("heartbeat") or 0)
            units.append(
                {
                    "unit": u,
                    "owner": m.get("owner"),
                    "epoch": int(m.get("epoch") or 0),
                    "synced": m.get("synced") == "1",
                    "watching": m.get("watching") == "1",
                    "heartbeatAge": round((self.hub.now_ms - beat) / 1000, 1) if beat else None,
                    "rows": len(self.hub.rows.get(u, {})),
                    "error": m.get("error") or None,
                }
            )
        return {
            "enabled": True,
            "source": "store",
            **({"cluster": self.cluster} if self.cluster else {}),
            "synced": self.synced,
            "server": self.server,
            "storeConnected": self.hub.connected,
            "startedAt": now_iso(self.started_at),
            "pending": 0,
            "units": units,
            "workloads": sum(x["rows"] for x in units),
            "namespaces": self.namespaces,
            "resumeToken": self.events.token(),
            "freshness": self.freshness(),
            "capacity": self._capacity_status(),
        }

    # -- capacity: its shards' inventory, as the store holds it (capacity.py) --------------------
    def _merged(self) -> tuple[StoreCapacity, tuple[str, str | None], str | None]:
        hub = self.hub
        units = [hub.capacity[u] for u in self.units if u in hub.capacity]
        watching = all(c.head.get("watching") for c in units) and not any(self._stale(m) for m in self._metas())
        at = (hub.capacity_gen, watching)
        if self._capacity is None or self._capacity[0] != at:  # rebuilt when a unit's capacity moved
            self._capacity = (at, merged(units, hub.buckets, watching))
        return self._capacity[1]

    @property
    def capacity_inventory(self) -> StoreCapacity:
        return self._merged()[0]

    def capacity_state(self) -> tuple[str, str | None]:
        if not self.hub.connected:
            return "unavailable", f"the store does not answer ({self.hub.error})"
        return self._merged()[1]

    def capacity_partial(self) -> str | None:
        return self._merged()[2]

    def _capacity_status(self) -> dict[str, Any]:
        state, reason = self.capacity_state()
        inv = self.capacity_inventory.inventory
        written = [int(c.head.get("at") or 0) for u in self.units if (c := self.hub.capacity.get(u)) is not None]
        return {
            "state": state,
            "reason": reason,
            "nodes": len(inv.nodes),
            "podsHolding": sum(u.pods for u in inv.usage.values()),
            "writtenAt": now_iso(max(written) / 1000) if written else None,
        }

    # -- what the shards watch ----------------------------------------------------------------
    @property
    def kinds(self) -> dict[tuple[str, str], KindWatch]:
        raw = tuple(m.get("kinds") or "" for m in self._metas())
        if raw != self._kinds[0]:
            reg = self.registry()
            out: dict[tuple[str, str], KindWatch] = {}
            for doc in raw:
                for g, v, k, plural, namespaced, _name in orjson.loads(doc) if doc else []:
                    try:
                        d = definition_for(reg, (g, v, k))
                    except LookupFailed:
                        continue
                    out[(g, k)] = KindWatch(Resource(g, v, k, plural, bool(namespaced)), d, None)
            self._kinds = (raw, out)
        return self._kinds[1]

    def known(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        return known_kinds(self.kinds.values(), kind, api_version)

    def covers_namespace(self, namespace: str | None) -> bool:
        ns = self.namespaces
        return ns is None or (namespace is not None and namespace in ns)

    def answers(self, kind: str | None, api_version: str | None, namespace: str | None) -> bool:
        if not self.synced or (namespace is not None and not self.covers_namespace(namespace)):
            return False
        if api_version:
            g, _, v = api_version.rpartition("/")
            if any(kw.resource.group == g and kw.resource.version != v for kw in self.kinds.values()):
                return False  # a version the shards do not watch: only the API server has it
        return not (kind and api_version and not self.known(kind, api_version))

    def _unit(self, namespace: str) -> str:
        return keys.unit_name(self.name, keys.bucket_of(namespace, self.hub.buckets), self.hub.buckets)

    def rows(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        out = []
        for u in self.units:
            facts = self.hub.facts.get(u, {})
            out += [(row, facts.get(f)) for f, row in self.hub.rows.get(u, {}).items()]
        return out

    # -- the Reader's sources -------------------------------------------------------------------
    async def served(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        return self.known(kind, api_version)

    async def get(self, res: Resource, namespace: str | None, name: str) -> Found | None:
        kw = self.kinds.get((res.group, res.kind))
        if kw is None or kw.resource.version != res.version:
            return None
        ns = namespace or ""
        field = keys.row_field(res.group, res.kind, ns, name)
        unit = self._unit(ns)
        row = self.hub.rows.get(unit, {}).get(field)
        if row is None:
            return None
        return Found(kw.resource, str(row["workload"].get("uid") or ""), None, ns, name, (unit, field))

    async def body(self, found: Found) -> dict[str, Any]:
        """The object as its shard keeps it (what definitions read of it)."""
        (obj,) = await self._hget(found, "obj")
        if obj is None:
            raise _answer_pending(found)
        return orjson.loads(inflate(obj))

    async def _hget(self, found: Found, *fields: str) -> list[bytes | None]:
        unit, field = found.item
        try:
            async with self.hub.redis.pipeline(transaction=False) as p:
                for f in fields:
                    p.hget(keys.key(unit, f), field)
                return list(await p.execute())
        except ERRORS as e:
            raise StoreUnavailable(e) from None

    async def _hmget(self, unit: str, what: str, fields: list[str]) -> list[bytes | None]:
        try:
            return list(await self.hub.redis.hmget(keys.key(unit, what), fields))
        except ERRORS as e:
            raise StoreUnavailable(e) from None

    async def describe(
        self,
        namespace: str,
        name: str,
        kind: str | None = None,
        api_version: str | None = None,
        *,
        with_pods: bool = True,
        allow: Allow,
        freshness: bool = True,
    ) -> bytes:
        found = await self.locate(namespace, name, kind, api_version, allow=allow, with_pods=with_pods)
        if with_pods:
            live, listed, warn = await self._hget(found, "live", "pods", "warn")
            parts: list[bytes | None] = []
            if listed is not None:
                unit, field = found.item
                uids = [part_field(field, uid) for _, uid in orjson.loads(listed)]
                parts = await self._hmget(unit, "parts", uids) if uids else []
            notes: list[str] = []
            events = await events_shown(allow, found.namespace or None, notes)
            got = view(live, parts, warn, events) if live is not None and listed is not None else None
            if got is None:
                raise _answer_pending(found)
            body, entries = got
            if entries is not None:  # the diagnosis the caller's rights allow (with Events or without)
                body = with_diagnosis(body, orjson.dumps(entries), notes)
        else:
            d = definition_for(self.registry(), found.resource.gvk)
            body = orjson.dumps(await self.interpret(d, await self.body(found), None))
        return enveloped(body, self.cluster, self.freshness() if freshness else None)

    async def summaries(self, namespace: str | None, kind: str | None = None, *, allow: Allow) -> dict[str, Any]:
        return await summarize(
            self.kinds.values(),
            (row for row, _ in self.rows()),
            namespace,
            kind,
            allow,
            self.namespaces,
            self.freshness(),
        )

    # -- single-workload stream tokens: stateless, so any replica resumes them ------------------
    def sent_token(self, key: tuple[str, str, str, str], digest: bytes) -> str:
        return f"{self.events.token()}~{_key_hash(key)}{digest.hex()}"

    def resumed(self, token: str, key: tuple[str, str, str, str]) -> bytes | None:
        sid, sep, rest = token.partition("~")
        self.events.parse(sid)
        if not sep or len(rest) < 8 or rest[:8] != _key_hash(key):
            raise TokenError(
                410, "the resume token was issued for another workload (or by another kind of service); read it again"
            )
        try:
            return bytes.fromhex(rest[8:])
        except ValueError:
            raise TokenError(400, f"malformed resume token {token!r}") from None


def _key_hash(key: tuple[str, str, str, str]) -> str:
    import hashlib

    return hashlib.blake2b("|".join(key).encode(), digest_size=4).hexdigest()


def _answer_pending(found: Found) -> AnswerPending:
    return AnswerPending(found.resource.kind, found.namespace, found.name)
