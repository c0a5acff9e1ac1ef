"""The live model of one cluster: informers -> objects and owner index -> interpretations -> rows.

Data flow:

* **what to watch** (`_plan`): every served kind that has a definition (at its best served
  version, objects projected to what its definition and the engine read), pods (projected to
  what the live view and every definition's pod expressions read), the owner kinds that owner
  chains pass through without a definition (Jobs of a JobSet and ReplicaSets of a Deployment
  are covered, the PodCliques of a PodCliqueSet are not: metadata only), and
  CustomResourceDefinitions (metadata only) so kinds come and go without a restart.
  Re-planned when definitions change or a CRD does.
* **events** (`_handler`): each informer event updates the owner graph, which says which
  workloads' pods or nesting changed; those workloads are marked dirty.
* **interpretations** (`_process`): a dirty top-level workload is re-interpreted only when its
  object (resourceVersion) or its definition (digest) changed; its summary row (with the ready
  count from the owner index) is compared with the one last published, and a change becomes an
  ADDED / MODIFIED / DELETED event for the streams.
* **capacity** (model/capacity.py): Nodes are watched too, and every pod event (of any pod,
  workload's or not) hands what the old and the new record hold on their node to the
  inventory; `capacity` and `nodes` read it, and say when it is withheld (no right to list
  nodes) or partial (`--namespaces`).
* **reads** (`describe`, `summaries`, `fetch`): from memory, with the same rules and
  messages as a direct read (cluster/workloads.py), which the service falls back to until the
  model is synced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from cachetools import LRUCache

from ..cluster.diagnosis import (
    Context,
    PodFacts,
    context_of,
    explain,
    gang_minimum,
    row_reason,
)
from ..cluster.informer import Backoff, Informer, cancel_all, sleep_or_stop
from ..cluster.kube import CRDS, EVENTS, NODES, PODS, Kube, KubeError, Resource
from ..cluster.reader import Found, Reader
from ..cluster.views import ListRules, enveloped, events_shown, with_diagnosis
from ..cluster.workloads import (
    Allow,
    Known,
    components_of,
    definition_for,
    error_row,
    matches_token,
    now_iso,
    summary_row,
    version_rank,
)
from ..engine.interpret import generic_flags
from ..engine.pool import BACKGROUND  # this model's loops evaluate for no caller
from ..jqlang.inputs import exact
from ..jqlang.paths import Tree, merge
from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition, Registry
from .answers import Answers, Export, PartsEngine
from .capacity import CapacityReads, ClusterCapacity
from .events import EventLog, TokenError
from .kinds import GK, KindWatch
from .owners import OwnerGraph
from .packing import Packer, deflate, inflate
from .protocol import NotSynced
from .records import (
    POD_BASE,
    Obj,
    covers,
    pod_expression_projection,
    record,
    workload_projection,
)
from .warnings import WarningEvents

log = logging.getLogger("wlmap.model")

Interpret = Callable[[Definition, dict[str, Any], "list[dict[str, Any]] | None"], Awaitable[dict[str, Any]]]
RETRY_BUSY = 1.0  # seconds before a workload whose evaluation found every worker busy (503) is tried again


@dataclass(frozen=True)
class _Crd:
    rv: str
    name: str


@dataclass
class WorkloadState:
    """What the model knows of one workload object beyond the object itself."""

    rv: str = ""  # of the object last interpreted
    digest: str = ""  # of the definition last interpreted with
    facts: dict[str, Any] | None = None  # what rows and metrics read of its interpretation
    error: Exception | None = None
    row: dict[str, Any] | None = None  # last published summary row (None: not published)
    labels: dict[str, str] | None = None  # the object's, as last interpreted (rows and labelSelector)


def _rv_int(rv: str) -> int:
    return int(rv) if rv.isascii() and rv.isdigit() else 0


class LiveModel(CapacityReads, Reader):
    def __init__(
        self,
        kube: Kube,
        registry: Callable[[], Registry],
        interpret: Interpret,
        *,
        namespaces: list[str] | None = None,
        history: int = 20000,
        cluster: str | None = None,
        events: EventLog | None = None,
        warning_events: int = 10000,
    ):
        self.kube, self.registry, self.interpret = kube, registry, interpret
        # In a fleet: the cluster's name, on every row, interpretation and event; the event log
        # is the fleet's (one sequence, so one resume token covers every cluster).
        self.cluster = cluster
        self.namespaces = sorted(set(namespaces or [])) or None  # None: every namespace
        self.kinds: dict[GK, KindWatch] = {}
        self.owner_kinds: dict[GK, str] = {}  # owner kinds met on chains -> the version their refs name
        self.unserved: set[GK] = set()  # owner kinds the cluster does not serve (chains stop there too)
        self.graph = OwnerGraph(self._covered, self._wanted)
        self.states: dict[str, WorkloadState] = {}  # workload uid -> state
        self.events = events if events is not None else EventLog(history=history)
        self.started_at = time.time()
        self.synced_at: float | None = None
        self._covered_gk: set[GK] = set()
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._replan = asyncio.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._crd: KindWatch | None = None
        self._planning = True
        # the latest live interpretation per workload uid (deflated), with what it was computed from
        self._live: LRUCache[str, tuple[tuple[Any, ...], bytes, Context | None]] = LRUCache(maxsize=2048)
        # Definitions evaluated in this process: answers assembled from a base per object version
        # and a part per pod (answers.py), so a pod event costs no evaluation until a read.
        self.answer_parts = Answers(interpret) if isinstance(interpret, PartsEngine) else None
        # single-workload streams: (group, kind, namespace, name) -> their wake-ups, and what each
        # token they were sent stands for (for resumes)
        self.watchers: dict[tuple[str, str, str, str], set[asyncio.Event]] = {}
        self.sent: LRUCache[int, tuple[tuple[str, str, str, str], bytes]] = LRUCache(maxsize=50000)
        self.interpretations = 0  # tests and metrics read these
        self.replan_every = 60.0
        self.max_rv = 0
        # Warning Events, for the diagnosis (0: not watched); not part of `synced`: a cluster
        # whose Events the service may not read still answers, without them
        self.warnings = WarningEvents(max_events=warning_events, forget=self._forget_event)
        self._event_informers: list[Informer] = []
        self.warning_events = warning_events
        # diagnoses as last computed: (the live answer's signature, the workload's Events version,
        # Events shown) -> the entries as JSON; the version moves whenever an Event under it does
        self._events_version: dict[str, int] = {}
        self._diagnoses: LRUCache[str, tuple[tuple[Any, ...], bytes]] = LRUCache(maxsize=2048)
        # A shard's share of the cluster (app/store): objects of other namespaces are not kept,
        # and each top-level workload refreshed is handed to the exporter, which writes its
        # answer to the store.  Both None: the model of one process, as always.
        self.namespace_filter: Callable[[str], bool] | None = None
        self.exporter: Callable[[str], None] | None = None
        # Nodes and what every watched pod holds on its node (model/capacity.py); not part of
        # `synced`: a cluster whose Nodes the service may not list still serves its workloads
        self.capacity_inventory = ClusterCapacity()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, stop: asyncio.Event) -> None:
        self._stop = stop
        self._tasks.append(asyncio.create_task(self._plan_loop(), name="model-plan"))
        self._tasks.append(asyncio.create_task(self._process_loop(), name="model-process"))
        if self.warning_events > 0:
            for ns in self.namespaces or (None,):
                inf = Informer(
                    self.kube,
                    EVENTS,
                    self._keep_warning,
                    self._on_warning,
                    namespace=ns,
                    field_selector="type=Warning",
                    scope=self.cluster,
                )
                self._event_informers.append(inf)
                self._tasks.append(asyncio.create_task(inf.run(stop), name=f"informer-{inf.name}"))
            self._tasks.append(asyncio.create_task(self._prune_loop(), name="model-prune-events"))
        nodes = Informer(
            self.kube,
            NODES,
            self.capacity_inventory.keep_node,
            self.capacity_inventory.on_node,
            scope=self.cluster,
        )
        self.capacity_inventory.informer = nodes
        self._tasks.append(asyncio.create_task(nodes.run(stop), name=f"informer-{nodes.name}"))

    async def close(self) -> None:
        for kw in list(self.kinds.values()) + ([self._crd] if self._crd else []):
            self._stop_kind(kw)
        await cancel_all(self._tasks)

    def reconnect_now(self) -> None:
        """The API server answers again: every informer waiting out a backoff retries now (the
        model watches again within moments of the cluster showing as available)."""
        for kw in list(self.kinds.values()) + ([self._crd] if self._crd else []):
            for inf in kw.informers:
                inf.poke()
        if self.capacity_inventory.informer is not None:
            self.capacity_inventory.informer.poke()
        self._replan.set()

    def definitions_changed(self) -> None:
        """The registry changed (a definition added, edited, removed): plan again."""
        self._replan.set()

    @property
    def who(self) -> str:
        """How log lines name this model."""
        return f"model {self.cluster}" if self.cluster else "model"

    # -- sync state -------------------------------------------------------------------------
    @property
    def synced(self) -> bool:
        """The first sync is done (every informer listed, every object interpreted), and every
        kind planned since has listed too (or met a state a direct read would meet as well).
        Changes arriving after that are applied as they come: reads do not wait for them."""
        listed = all(kw.terminal for kw in self.kinds.values())
        if self.synced_at is None:
            return listed and not self._planning and not self._dirty and not self._replan.is_set()
        return listed

    @property
    def lists(self) -> int:
        """Lists its informers have completed, first ones and relists (the collector policy,
        app/service/gc_policy.py, settles after them)."""
        return sum(i.relists for kw in self.kinds.values() for i in kw.informers)

    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        informers = [i for kw in self.kinds.values() for i in kw.informers]
        live = all(i.connected for i in informers)
        contact = min((i.last_contact for i in informers), default=time.time())
        return {
            "source": "model",
            "resourceVersion": str(self.max_rv) if self.max_rv else None,
            "observedAt": now_iso(None if live else contact),
            "watching": live,
        }

    @property
    def applied_rv(self) -> int | None:
        """The newest resourceVersion whose changes every row and answer reflect (None: some wait)."""
        return None if self._dirty or self._planning else self.max_rv

    def refusal(self) -> Exception:
        who = f"cluster {self.cluster}" if self.cluster else "the cluster"
        return NotSynced(f"{who} is connecting; its live model has not finished its first sync")

    def error(self) -> str | None:
        """Why part of the cluster cannot be watched now (None: nothing stands in the way)."""
        return next(
            (
                i.error
                for kw in self.kinds.values()
                for i in kw.informers
                if i.error and i.state in ("unavailable", "forbidden")
            ),
            None,
        )

    def status(self) -> dict[str, Any]:
        kinds = [
            i.status() | {"definition": kw.definition.name if kw.definition else None}
            for kw in sorted(self.kinds.values(), key=lambda k: k.gk)
            for i in kw.informers
        ]
        top = [u for u, st in self.states.items() if st.row is not None]
        return {
            "enabled": True,
            **({"cluster": self.cluster} if self.cluster else {}),
            "synced": self.synced,
            "server": self.kube.host,
            "startedAt": now_iso(self.started_at),
            "syncedAt": now_iso(self.synced_at) if self.synced_at else None,
            "namespaces": self.namespaces,
            "kinds": kinds,
            "notServed": sorted(f"{k}.{g}" if g else k for g, k in self.unserved),
            "objects": len(self.graph.by_uid),
            "pods": len(self.graph.pods),
            "workloads": len(top),
            "pending": len(self._dirty),
            "interpretations": self.interpretations,
            "answersReady": len(self._live),
            "answerParts": {
                "bases": len(self.answer_parts.entries),
                "evaluationsKept": len(self.answer_parts.hot),
                "basesComputed": self.answer_parts.bases_computed,
                "podPartsComputed": self.answer_parts.parts_computed,
            }
            if self.answer_parts is not None
            else None,
            "warningEvents": {
                "kept": len(self.warnings),
                "evicted": self.warnings.evictions,
                "informers": [i.status() for i in self._event_informers],
            },
            "capacity": self._capacity_status(),
            "resumeToken": self.events.token(),
            "freshness": self.freshness(),
        }

    # -- planning ---------------------------------------------------------------------------
    def _covered(self, group: str, kind: str) -> bool:
        return (group, kind) in self._covered_gk

    def _wanted(self, group: str, version: str, kind: str) -> None:
        gk = (group, kind)
        if gk in self.kinds or gk in self.unserved or gk in self.owner_kinds:
            return
        self.owner_kinds[gk] = version
        self._replan.set()

    async def _plan_loop(self) -> None:
        assert self._stop is not None
        self._replan.set()
        retry = Backoff(base=1.0, cap=10.0)  # a cluster that is away is asked less and less often
        while not self._stop.is_set():
            # Planned again on every definition or CRD change, and now and then regardless (a
            # cluster whose CRDs the service may not watch still gets its new kinds).
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._replan.wait(), self.replan_every)
            await asyncio.sleep(0.05)  # a burst of definition edits or owner kinds: one plan
            self._replan.clear()
            self._planning = True
            try:
                await self._plan()
                retry.reset()
            except KubeError as e:  # keep watching what we have; plan again once it answers
                log.warning("%s: cannot plan now (%s); retrying", self.who, e.message)
                await sleep_or_stop(self._stop, retry.next())
                self._replan.set()
            except Exception:
                log.exception("%s: planning failed; retrying", self.who)
                await asyncio.sleep(2.0)
                self._replan.set()
            finally:
                self._planning = False
                self._wake.set()

    async def _plan(self) -> None:
        """Discovery says None only when the cluster does not serve a kind; any other failure (no
        answer, or a 403 while a restarted API server's authorizer warms up) raises out of the
        plan, which is retried: a plan made on it would drop kinds that are there."""
        reg = self.registry()
        by_gk: dict[GK, list[Definition]] = {}
        for defn in reg.all():
            if defn.valid and defn.gvk is not None:
                by_gk.setdefault((defn.gvk[0], defn.gvk[2]), []).append(defn)
        want: dict[GK, tuple[Resource, Definition | None]] = {}
        # Kinds with a definition, each at its best served version (as a direct list reads them).
        for gk, defs in by_gk.items():
            versions = sorted({d.gvk[1] for d in defs if d.gvk}, key=version_rank, reverse=True)
            for v in versions:
                res = await self.kube.resource((gk[0], v, gk[1]))
                if res is not None:
                    try:
                        d = reg.resolve((gk[0], v, gk[1]))
                    except AmbiguousDefinition:
                        d = next(x for x in defs if x.gvk and x.gvk[1] == v)
                    if d is not None:
                        want[gk] = (res, d)
                    break
        if ("", "Pod") not in want:
            want[("", "Pod")] = (PODS, None)
        # Owner kinds without a definition that chains pass through: metadata only.
        for gk, version in list(self.owner_kinds.items()):
            if gk in want:
                continue
            res = await self.kube.resource((gk[0], version, gk[1]))
            if res is None:
                self.unserved.add(gk)
                del self.owner_kinds[gk]
                continue
            want[gk] = (res, None)

        pod_proj = merge(POD_BASE, pod_expression_projection([d for d in reg.active()]))
        pod_def = want[("", "Pod")][1]
        if pod_def is not None:
            pod_proj = merge(pod_proj, workload_projection([pod_def]))

        covered_changed = set(by_gk) != self._covered_gk
        self._covered_gk = set(by_gk)
        for gk in list(self.kinds):
            if gk not in want or (gk not in by_gk and gk not in self.owner_kinds and gk != ("", "Pod")):
                self._drop_kind(self.kinds.pop(gk))
        for gk, (res, d) in want.items():
            is_pod = gk == ("", "Pod")
            proj: Tree | bool | None = pod_proj if is_pod else (workload_projection([d]) if d else None)
            cur = self.kinds.get(gk)
            if cur is not None and cur.resource == res and covers(cur.projection, proj):
                if (cur.definition.digest if cur.definition else None) != (d.digest if d else None):
                    cur.definition = d
                    self._dirty.update(o.uid for i in cur.informers for o in i.objects.values())
                continue
            self._start_kind(KindWatch(res, d, proj, is_pod=is_pod), cur)
        if covered_changed:
            self._dirty |= self.graph.rewalk_all()
        if self._crd is None:
            self._crd = KindWatch(CRDS, None, None)
            self._start_kind(self._crd, None, crd=True)

    def _start_kind(self, kw: KindWatch, previous: KindWatch | None, crd: bool = False) -> None:
        assert self._stop is not None
        spaces: list[str | None] = list(self.namespaces) if (self.namespaces and kw.resource.namespaced) else [None]
        if previous is not None:
            self._stop_kind(previous)
        for ns in spaces:
            if crd:
                inf = Informer(
                    self.kube, kw.resource, self._keep_crd, self._on_crd, metadata_only=True, scope=self.cluster
                )
            else:
                inf = Informer(
                    self.kube,
                    kw.resource,
                    self._keeper(kw),
                    self._handler(kw),
                    namespace=ns,
                    metadata_only=kw.projection is None,
                    scope=self.cluster,
                )
            if previous is not None:  # the new list diffs against what we hold: no repeats, no misses
                for old in previous.informers:
                    if old.namespace == inf.namespace:
                        inf.objects = old.objects
            kw.informers.append(inf)
            kw.tasks.append(asyncio.create_task(inf.run(self._stop), name=f"informer-{inf.name}"))
        if not crd:
            self.kinds[kw.gk] = kw
        log.info(
            "%s: watching %s (%s)",
            self.who,
            kw.resource.plural + "." + (kw.resource.group or "core"),
            "metadata" if kw.projection is None else "full",
        )

    def _stop_kind(self, kw: KindWatch) -> None:
        for t in kw.tasks:
            t.cancel()
        kw.tasks.clear()

    def _drop_kind(self, kw: KindWatch) -> None:
        self._stop_kind(kw)
        for inf in kw.informers:
            for o in inf.objects.values():
                self._dirty |= self.graph.drop(o.uid)
        kw.informers.clear()
        self._wake.set()

    def _keeper(self, kw: KindWatch) -> Callable[[dict[str, Any]], Obj | None]:
        group, kind = kw.gk
        packer = Packer()  # this kind's bodies share one dictionary

        mine = self.namespace_filter if kw.resource.namespaced else None

        def keep(obj: dict[str, Any]) -> Obj | None:
            if mine is not None and not mine(str((obj.get("metadata") or {}).get("namespace") or "")):
                return None  # another shard's bucket
            if "apiVersion" not in obj or obj.get("kind") != kind:
                obj["apiVersion"], obj["kind"] = kw.resource.api_version, kind
            return record(obj, group, kind, kw.projection, kw.is_pod, packer)

        return keep

    def _handler(self, kw: KindWatch) -> Callable[[str, Any, Any, Any], None]:
        workload, is_pod = kw.definition is not None, kw.is_pod

        def on_event(type_: str, key: Any, old: Obj | None, new: Obj | None) -> None:
            if is_pod:  # every pod, of a workload or not: what it holds on its node
                self.capacity_inventory.on_pod(old.held if old else None, new.held if new else None)
            if new is not None:
                if old is not None and old.uid != new.uid:
                    self._dirty |= self.graph.drop(old.uid)
                self.max_rv = max(self.max_rv, _rv_int(new.rv))
                self._dirty |= self.graph.put(new, pod=kw.is_pod, workload=workload)
                if old is None and self.warnings.about(new.uid):  # events that came before it
                    self._dirty.update(self.graph.ancestors(new.uid))
                if workload:
                    self._dirty.add(new.uid)
            elif old is not None:
                self._dirty |= self.graph.drop(old.uid)
            self._wake.set()

        return on_event

    @staticmethod
    def _keep_crd(obj: dict[str, Any]) -> _Crd:
        meta = obj.get("metadata") or {}
        return _Crd(str(meta.get("resourceVersion") or ""), str(meta.get("name") or ""))

    def _on_crd(self, type_: str, key: Any, old: Any, new: Any) -> None:
        # a CRD came, changed or went: forget what discovery knows of its group, plan again
        name = (new or old).name
        group = name.partition(".")[2]
        self.kube.discovery.forget_group(group)
        self.unserved = {gk for gk in self.unserved if gk[0] != group}
        for kw in self.kinds.values():
            if kw.resource.group == group:
                for inf in kw.informers:
                    inf.poke()
        if self._crd is not None and all(i.synced_once.is_set() for i in self._crd.informers):
            self._replan.set()

    # -- Warning Events (diagnosis) ---------------------------------------------------------
    def _keep_warning(self, obj: dict[str, Any]) -> Any:
        mine = self.namespace_filter
        if mine is not None and not mine(str((obj.get("metadata") or {}).get("namespace") or "")):
            return None
        return self.warnings.keep(obj)

    def _on_warning(self, type_: str, key: Any, old: Any, new: Any) -> None:
        for uid in self.warnings.on_event(type_, key, old, new):
            self._events_changed(uid)
        if new is not None and new.event.uid not in self.graph.by_uid:
            self._want_owner_of(new.event)
        self._wake.set()

    def _events_changed(self, uid: str) -> None:
        """The workloads above `uid` read its events: their rows and answers are due again."""
        for u in self.graph.ancestors(uid):
            if u in self.states or u in self.graph.workloads:
                self._dirty.add(u)
                self._events_version[u] = self._events_version.get(u, 0) + 1

    def _want_owner_of(self, ev: Any) -> None:
        """An event about an object the model does not hold: an intermediate owner (a Job or a
        ReplicaSet failing to create its pods: no pod names it yet) is watched, metadata only,
        when its group is one whose objects own pods (apps, batch, the definitions' groups)."""
        group, _, version = ev.api_version.rpartition("/")
        if ev.kind in ("Pod", "") or not version:
            return
        if group in ("apps", "batch") or group in {g for g, _ in self._covered_gk}:
            self._wanted(group, version, ev.kind)

    def _forget_event(self, key: Any) -> None:
        for inf in self._event_informers:
            inf.forget(key)

    async def _prune_loop(self) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            await sleep_or_stop(self._stop, 60.0)
            for uid in self.warnings.prune():
                self._events_changed(uid)
            self._wake.set()

    def pod_facts(self, uid: str) -> list[PodFacts]:
        return [
            PodFacts(p.uid, p.name, None, p.symptoms, p.scheduled, self.graph.chain(p.uid))
            for p in self.graph.pods_of(uid)
        ]

    def warnings_of(self, uid: str) -> list[Any]:
        if not self.warnings:  # none kept (most of the time): no walk down the workload
            return []
        return self.warnings.of({uid} | self.graph.descendants(uid))

    def _reason(self, uid: str, state: WorkloadState, ready: int | None) -> str | None:
        """The row's reason: the top diagnosis entry, without placing pods on components."""
        if state.facts is None:
            return None
        return row_reason(
            state.facts["result"],
            lambda: self.pod_facts(uid),
            lambda: self.warnings_of(uid),
            ready=ready,
            gang_min=state.facts.get("gangMin"),
        )

    # -- interpretation ---------------------------------------------------------------------
    async def _process_loop(self) -> None:
        assert self._stop is not None
        BACKGROUND.set(True)  # this task's context only
        while not self._stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            self._wake.clear()
            if self.synced_at is None and (self._planning or not all(kw.terminal for kw in self.kinds.values())):
                continue  # the first pass waits for every first list: owners before the pods they own
            try:
                await self._process()
            except Exception:
                log.exception("%s: processing changes failed", self.who)
            if self.synced and self.synced_at is None:
                self.synced_at = time.time()
                log.info(
                    "%s: synced in %.2f s: %d objects, %d workloads",
                    self.who,
                    self.synced_at - self.started_at,
                    len(self.graph.by_uid),
                    sum(1 for s in self.states.values() if s.row is not None),
                )

    async def _process(self) -> None:
        n = 0
        while self._dirty:
            uid = self._dirty.pop()
            seq = self.events.seq
            await self._refresh(uid)
            n += 1
            if n % 25 == 0 or (seq != self.events.seq and self.events.subscribers):
                await asyncio.sleep(0)  # requests keep being answered, streams keep up with a burst
        if n > 64:
            # A set keeps the table of its largest size, and each pop scans it from the start for
            # an entry: after a sync's thousands, every later pop paid ~18 µs.  A fresh one is small.
            self._dirty = set()

    def _kind_of(self, obj: Obj) -> KindWatch | None:
        return self.kinds.get((obj.group, obj.kind))

    async def _refresh(self, uid: str) -> None:
        obj = self.graph.by_uid.get(uid)
        kw = self._kind_of(obj) if obj is not None else None
        state = self.states.get(uid)
        if self.watchers:
            key = (
                (obj.group, obj.kind, obj.namespace, obj.name)
                if obj is not None
                else (row_key(state.row) if state is not None and state.row is not None else None)
            )
            for ev in self.watchers.get(key, ()) if key else ():
                ev.set()
        top = (
            obj is not None
            and kw is not None
            and kw.definition is not None
            and uid in self.graph.workloads
            and not self.graph.nested.get(uid, False)
        )
        if not top:
            if state is not None and state.row is not None:
                self.events.publish("DELETED", row_key(state.row), state.row, self._res(state.row), self.cluster)
            if obj is None or kw is None or kw.definition is None:
                self.states.pop(uid, None)
                self._events_version.pop(uid, None)
            elif state is not None:
                state.row = None
            return
        assert obj is not None and kw is not None and kw.definition is not None
        state = state or self.states.setdefault(uid, WorkloadState())
        await self._interpret(obj, kw.definition, state)
        ready = self.graph.ready_count(uid)
        row = self._row(obj, state, ready)
        row["reason"] = self._reason(uid, state, ready)
        if row != state.row:
            self.events.publish(
                "ADDED" if state.row is None else "MODIFIED",
                row_key(row),
                row,
                (kw.resource.group, kw.resource.plural),
                self.cluster,
            )
            state.row = row
        if self.exporter is not None:
            self.exporter(uid)

    async def _interpret(self, obj: Obj, d: Definition, state: WorkloadState) -> None:
        if state.rv == obj.rv and state.digest == d.digest and (state.facts is not None or state.error):
            return
        state.rv, state.digest = obj.rv, d.digest
        self.interpretations += 1
        body = obj.object()
        state.labels = (body.get("metadata") or {}).get("labels") or None
        try:
            got = self.answer_parts.evaluated(obj, d, body) if self.answer_parts is not None else None
            result = got[1] if got is not None else await self.interpret(d, body, None)
        except Exception as e:
            if getattr(e, "status", None) == 503:  # no evaluation worker was free: not an answer, ask again
                state.rv = ""  # the last answer stands until then (the first time, the row says why it has none)
                if state.facts is None and state.error is None:
                    state.error = e
                asyncio.get_running_loop().call_later(RETRY_BUSY, self._again, obj.uid)
                return
            state.facts, state.error = None, e
            return
        state.facts, state.error = _facts(result), None

    def _again(self, uid: str) -> None:
        if self._stop is not None and not self._stop.is_set():
            self._dirty.add(uid)
            self._wake.set()

    def _res(self, row: dict[str, Any]) -> tuple[str, str]:
        g, k, _, _ = row_key(row)
        kw = self.kinds.get((g, k))
        return (g, kw.resource.plural) if kw else (g, k.lower() + "s")

    def _row(self, obj: Obj, state: WorkloadState, ready: int | None) -> dict[str, Any]:
        meta = {
            "metadata": {
                "uid": obj.uid,
                "name": obj.name,
                "namespace": obj.namespace or None,
                "creationTimestamp": obj.created,
                "labels": state.labels,
            },
            "apiVersion": self._api_version(obj),
            "kind": obj.kind,
        }
        if state.error is not None or state.facts is None:
            row = error_row(meta, state.error or Exception("not interpreted"), ready)
        else:
            row = summary_row(meta, state.facts["result"], ready, state.facts["components"])
        return {"cluster": self.cluster, **row} if self.cluster else row

    def _api_version(self, obj: Obj) -> str:
        kw = self._kind_of(obj)
        return kw.resource.api_version if kw else obj.group

    # -- reads ------------------------------------------------------------------------------
    def covers_namespace(self, namespace: str | None) -> bool:
        return self.namespaces is None or (namespace is not None and namespace in self.namespaces)

    def known(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        return known_kinds(self.kinds.values(), kind, api_version)

    def answers(self, kind: str | None, api_version: str | None, namespace: str | None) -> bool:
        """Whether this read can come from memory (else the caller reads the API server): the
        model is synced, covers the namespace, and watches the version asked for."""
        if not self.synced or (namespace is not None and not self.covers_namespace(namespace)):
            return False
        if api_version:
            for d in self.registry().all():
                if not d.valid or d.gvk is None:
                    continue
                g, v, k = d.gvk
                if (f"{g}/{v}" if g else v) != api_version:
                    continue
                kw = self.kinds.get((g, k))
                if kw is not None and kw.resource.version != v:
                    return False  # a version we do not watch: read it as asked
        if kind and api_version and not self.known(kind, api_version):
            return False  # a kind without a definition (a `ref` with its own): the API server has it
        return True

    def _lookup(self, kw: KindWatch, namespace: str, name: str) -> Obj | None:
        ns = namespace if kw.resource.namespaced else ""
        for inf in kw.informers:
            if inf.namespace in (None, ns):
                o = inf.objects.get((ns, name))
                if o is not None:
                    return o
        return None

    # The Reader's sources (the rules are cluster/reader.py's, shared with direct reads).
    async def served(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        return self.known(kind, api_version)

    async def get(self, res: Resource, namespace: str | None, name: str) -> Found | None:
        kw = self.kinds.get((res.group, res.kind))
        if kw is None or kw.definition is None or kw.resource.version != res.version:
            return None
        o = self._lookup(kw, namespace or "", name)
        if o is None:
            return None
        return Found(kw.resource, o.uid, (o.controller or ("", "", "", None))[3], o.namespace, o.name, o)

    async def body(self, found: Found) -> dict[str, Any]:
        return found.item.object()

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
        """GET /workloads/{ns}/{name} from memory, as JSON bytes (with `freshness` unless told not to:
        a stream compares states, and the time of each answer would make every one differ)."""
        found = await self.locate(namespace, name, kind, api_version, allow=allow, with_pods=with_pods)
        kw = self.kinds[(found.resource.group, found.resource.kind)]
        d = self.definition_for(found.resource.gvk)
        body, ctx = await self.live_answer(kw, found.item, d, with_pods)
        if ctx is not None:  # per read: what Events show depends on the caller
            body = await self._with_diagnosis(body, ctx, found, allow)
        return enveloped(body, self.cluster, self.freshness() if freshness else None)

    async def live_result(self, kw: KindWatch, obj: Obj, d: Definition, with_pods: bool) -> bytes:
        return (await self.live_answer(kw, obj, d, with_pods))[0]

    async def live_answer(
        self, kw: KindWatch, obj: Obj, d: Definition, with_pods: bool
    ) -> tuple[bytes, Context | None]:
        """The live interpretation as JSON, and (with pods) what its diagnosis needs of it."""
        pods = sorted(self.graph.pods_of(obj.uid), key=lambda p: p.name) if with_pods else None
        sig = (obj.rv, d.digest, None if pods is None else tuple((p.uid, p.rv) for p in pods))
        hit = self._live.get(obj.uid)
        if hit is not None and hit[0] == sig:
            return inflate(hit[1]), hit[2]
        result = None
        if self.answer_parts is not None:
            result = self.answer_parts.answer(obj, d, pods) if pods is not None else self.answer_parts.result(obj, d)
        if result is None:
            body = obj.object()
            result = await self.interpret(d, body, [p.object() for p in pods] if pods is not None else None)
            if pods is not None:
                result.setdefault("live", {}).update(generic_flags(body))
        ctx = context_of(result) if pods is not None else None
        out = orjson.dumps(result)
        self._live[obj.uid] = (sig, deflate(out), ctx)  # kept deflated: a fifth of the size
        return out, ctx

    async def _with_diagnosis(self, body: bytes, ctx: Context, found: Found, allow: Allow) -> bytes:
        ns = found.namespace or None
        notes: list[str] = []
        events = await events_shown(allow, ns, notes if self.warning_events > 0 else None)
        hit = self._live.get(found.uid)
        key = (hit[0] if hit else None, self._events_version.get(found.uid, 0), events)
        known = self._diagnoses.get(found.uid)
        if known is not None and known[0] == key and key[0] is not None:
            entries = known[1]
        else:
            entries = exact(
                orjson.dumps(explain(ctx, self.pod_facts(found.uid), self.warnings_of(found.uid) if events else []))
            )
            self._diagnoses[found.uid] = (key, entries)
        return with_diagnosis(body, entries, notes)

    def definition_for(self, gvk: tuple[str, str, str]) -> Definition:
        return definition_for(self.registry(), gvk)

    # -- single-workload stream tokens: a sequence number of this process, and what it stood for
    def sent_token(self, key: tuple[str, str, str, str], digest: bytes) -> str:
        seq = self.events.next_seq()
        self.sent[seq] = (key, digest)
        return self.events.token(seq)

    def resumed(self, token: str, key: tuple[str, str, str, str]) -> bytes | None:
        """The digest of the state sent with `token` for this workload (TokenError: unknown here)."""
        seen = self.sent.get(self.events.parse(token))
        if seen is None or seen[0] != key:
            raise TokenError(
                410, "the resume token is too old for this workload (or was issued for another one); read it again"
            )
        return seen[1]

    async def export(self, uid: str, held_rv: str | None = None) -> Export | None:
        """What the store keeps of a published workload (None: it has no row now), so an API replica
        answers any caller as this model would: its row, the object as kept (None when the store
        holds it at `held_rv` already), and its live answer in parts (answers.py `Export`)."""
        obj = self.graph.by_uid.get(uid)
        kw = self._kind_of(obj) if obj is not None else None
        state = self.states.get(uid)
        if obj is None or kw is None or kw.definition is None or state is None or state.row is None:
            return None
        d = self.definition_for(kw.resource.gvk)
        kept = None if held_rv == obj.rv else exact(orjson.dumps(obj.object()))
        pods = sorted(self.graph.pods_of(uid), key=lambda p: p.name)
        got = self.answer_parts.current(obj, d, pods) if self.answer_parts is not None else None
        if got is not None:
            entry, parts = got
            return Export(
                state.row, obj.rv, kept, entry, list(zip(pods, parts, strict=True)), self.warnings_of(uid), self.graph
            )
        body, ctx = await self.live_answer(kw, obj, d, True)  # evaluated out of process: the answer whole
        diag = None
        if ctx is not None:
            facts = self.pod_facts(uid)
            diag = {"events": explain(ctx, facts, self.warnings_of(uid)), "pods": explain(ctx, facts, [])}
        return Export(state.row, obj.rv, kept, None, [], [], self.graph, whole=(body, orjson.dumps(diag)))

    async def summaries(self, namespace: str | None, kind: str | None = None, *, allow: Allow) -> dict[str, Any]:
        """GET /workloads from memory (the rules of Workloads.summaries)."""
        return await summarize(
            self.kinds.values(),
            (st.row for st in self.states.values() if st.row is not None),
            namespace,
            kind,
            allow,
            self.namespaces,
            self.freshness(),
        )

    # -- capacity ---------------------------------------------------------------------------
    def capacity_state(self) -> tuple[str, str | None]:
        """(state, why not "ready") of the capacity inventory (see `capacity`)."""
        kw = self.kinds.get(("", "Pod"))
        return self.capacity_inventory.state(kw.informers if kw is not None else None)

    def capacity_partial(self) -> str | None:
        """Why some bound pods are not counted (None: every pod of the cluster is)."""
        if self.namespaces is not None:
            return (
                f"pods are counted in the watched namespaces only ({', '.join(self.namespaces)}); "
                "pods of other namespaces hold capacity that is not subtracted"
            )
        if self.namespace_filter is not None:
            return "pods are counted in this shard's namespaces only"
        return None

    def _capacity_status(self) -> dict[str, Any]:
        state, reason = self.capacity_state()
        inv = self.capacity_inventory.inventory
        inf = self.capacity_inventory.informer
        return {
            "state": state,
            "reason": reason,
            "nodes": len(inv.nodes),
            "podsHolding": sum(u.pods for u in inv.usage.values()),
            "informer": inf.status() if inf is not None else None,
        }

    def rows(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Every published row with the facts behind it (for the workload metrics)."""
        return [(st.row, st.facts) for st in self.states.values() if st.row is not None]


def known_kinds(kinds: Any, kind: str | None, api_version: str | None) -> list[Known]:
    """The watched kinds with a definition that match `kind` and `apiVersion` (a Reader's `served`)."""
    out = [Known(kw.definition, kw.resource) for kw in kinds if kw.definition is not None]
    if api_version:
        out = [k for k in out if k.resource is not None and k.resource.api_version == api_version]
    if kind:
        out = [k for k in out if matches_token(kind, k)]
    return out


async def summarize(
    kinds: Any,
    rows: Any,
    namespace: str | None,
    kind: str | None,
    allow: Allow,
    namespaces: list[str] | None,
    freshness: dict[str, Any],
) -> dict[str, Any]:
    """The rows of a list held in memory (this model's, or the store's mirror of a shard's), as
    the caller may see them: the list rules (cluster/views.py) the direct reader lists with."""
    rules = ListRules(allow, namespace, kind)
    watched = {kw.gk: kw for kw in kinds if kw.definition is not None}
    by_kind: dict[GK, list[dict[str, Any]]] = {}
    for row in rules.of_namespace(rows):
        w = row["workload"]
        gk = (str(w.get("apiVersion") or "").rpartition("/")[0], str(w.get("kind")))  # row_key's first two
        if (group := by_kind.get(gk)) is None:
            group = by_kind[gk] = []
        group.append(row)
    out: list[dict[str, Any]] = []
    for k in rules.kinds(Known(kw.definition, kw.resource) for kw in watched.values()):
        kw = watched[(k.gvk[0], k.gvk[2])]
        refused = next((i for i in kw.informers if i.state == "forbidden"), None)
        if refused is not None:  # the service itself may not list it: as a direct read says
            rules.unlisted(kw.resource.kind, refused.error)
            continue
        out += await rules.visible(kw.resource, by_kind.get(kw.gk, []))
    return rules.result(await rules.hide_unseen(out), freshness, namespaces)


def row_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of a summary row: how events and streams name a workload."""
    w = row["workload"]
    return (
        str(w.get("apiVersion") or "").rpartition("/")[0],
        str(w.get("kind")),
        str(w.get("namespace") or ""),
        str(w.get("name")),
    )


def _facts(result: dict[str, Any]) -> dict[str, Any]:
    """What rows and metrics need of an interpretation, kept small (the full result is not kept:
    a read of one workload interprets it again, with its pods)."""
    slim = {
        "workload": result["workload"],
        "definition": result["definition"],
        "complete": result["complete"],
        "status": {"phase": result["status"]["phase"], "matched": result["status"]["matched"]}
        if result.get("status")
        else None,
        "totals": result.get("totals"),
        "errors": result.get("errors"),
    }
    return {"result": slim, "gangMin": gang_minimum(result), "components": components_of(result)}
