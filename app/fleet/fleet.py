"""The fleet: every registered cluster as a Member, kept in step with where clusters come from.

Static clusters (the home cluster, `--cluster`, `--kubeconfig-contexts all`) are registered at
start.  Cluster Secrets (labelled `workload-map.dev/cluster=true` in the service namespace)
are watched on the home cluster like the definition ConfigMaps: a new Secret adds a member, an
edit that changes the connection replaces it (new credentials: a new connection and model),
an edit that does not is ignored, a deletion removes it.  A Secret that cannot be used never
takes a working cluster down: the member keeps its last good connection and shows why.

All members publish into one EventLog, so one resume token covers the whole fleet, and the
fleet itself publishes a `Cluster` event whenever a cluster's /clusters item changes (the fleet
page follows those).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from ..cluster.informer import Informer, cancel_all
from ..cluster.kube import Kube, Resource
from ..cluster.workloads import Interpret
from ..karta.registry import Registry
from ..model.events import EventLog
from ..model.live import row_key
from ..model.protocol import ClusterModel
from .member import Member
from .specs import SECRET_LABEL, ClusterSpec, SpecError, from_secret

log = logging.getLogger("wlmap.fleet")

SECRETS = Resource("", "v1", "Secret", "secrets", True)
CLUSTER_KEY = ("workload-map.dev", "Cluster", "")  # + name: the key of a cluster's events


@dataclass(frozen=True)
class _SecretRecord:
    rv: str
    spec: ClusterSpec | None
    error: str | None
    name: str  # the Secret's name


class _MemberOptions(TypedDict):
    """The keyword arguments every Member is built with (Member's parameters of the same names)."""

    cache: bool
    namespaces: list[str] | None
    auth: bool
    labelled: bool
    probe_interval: float
    model_factory: Callable[[Member], ClusterModel] | None


class Fleet:
    def __init__(
        self,
        registry: Callable[[], Registry],
        interpret: Interpret,
        *,
        cache: bool = True,
        namespaces: list[str] | None = None,
        auth: bool = False,
        labelled: bool = True,
        probe_interval: float = 10.0,
        secret_allow_insecure: bool = False,
        events: EventLog | None = None,
        model_factory: Callable[[Member], ClusterModel] | None = None,
    ):
        self.registry, self.interpret = registry, interpret
        self.options: _MemberOptions = {
            "cache": cache,
            "namespaces": namespaces,
            "auth": auth,
            "labelled": labelled,
            "probe_interval": probe_interval,
            "model_factory": model_factory,
        }
        self.secret_allow_insecure = secret_allow_insecure  # a Secret may skip TLS verification
        self.labelled = labelled  # rows and metrics name their cluster (any fleet option given)
        self.events = events if events is not None else EventLog()  # a store's log behind a store
        self.members: dict[str, Member] = {}
        self.home: Member | None = None
        self.static: set[str] = set()  # names registered by flags (a Secret cannot take them)
        self.secret_problems: dict[str, str] = {}  # Secret name -> why it is not used
        self.secrets: list[Informer] = []
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._reconcile = asyncio.Event()
        self.secrets_namespace: str | None = None
        self._items: dict[str, dict[str, Any]] = {}

    # -- membership -------------------------------------------------------------------------
    def add(self, spec: ClusterSpec, kube: Kube | None = None, *, home: bool = False) -> Member:
        if spec.name in self.members:
            raise SpecError(f"cluster {spec.name!r} is registered twice")
        m = Member(
            spec, registry=self.registry, interpret=self.interpret, events=self.events, kube=kube, **self.options
        )
        self.members[spec.name] = m
        if home:
            self.home = m
        if spec.origin != "secret":
            self.static.add(spec.name)
        if self._stop is not None:
            m.start(self._stop)
        log.info("cluster %s: registered (%s%s)", spec.name, spec.origin, f" {spec.source}" if spec.source else "")
        return m

    async def remove(self, name: str) -> None:
        m = self.members.pop(name, None)
        if m is None:
            return
        rows = m.rows()
        await m.close()
        for row in rows:  # its rows leave every list and stream
            self.events.publish("DELETED", row_key(row), row, ("", ""), name)
        self._publish_cluster(name, None)
        log.info("cluster %s: removed", name)

    def get(self, name: str) -> Member | None:
        return self.members.get(name)

    def definitions_changed(self) -> None:
        for m in self.members.values():
            if m.model is not None:
                m.model.definitions_changed()

    # -- lifecycle --------------------------------------------------------------------------
    def start(
        self,
        stop: asyncio.Event,
        secrets_namespace: str | None = None,
        secrets_selector: str = SECRET_LABEL,
        secret_names: list[str] | None = None,
    ) -> None:
        """`secrets_namespace`: watch cluster Secrets there, by label (`secrets_selector`), or only
        the Secrets named in `secret_names` (one field-selected watch each, which RBAC can grant
        by resourceNames: the service then reads no other Secret)."""
        self._stop = stop
        self.secrets_namespace = secrets_namespace
        for m in self.members.values():
            m.start(stop)
        if secrets_namespace is not None and self.home is not None and self.home.kube is not None:
            selectors = (
                [(None, f"metadata.name={n}") for n in secret_names] if secret_names else [(secrets_selector, None)]
            )
            for label, field in selectors:
                inf = Informer(
                    self.home.kube,
                    SECRETS,
                    self._keep_secret,
                    lambda *_: self._reconcile.set(),
                    namespace=secrets_namespace,
                    label_selector=label,
                    field_selector=field,
                    on_list=self._listed,
                    not_served_retry=10.0,
                    watch_timeout=240,
                    name="cluster-secrets" + (f"/{field.partition('=')[2]}" if field else ""),
                )
                self.secrets.append(inf)
                self._tasks.append(asyncio.create_task(inf.run(stop), name=inf.name))
            self._tasks.append(asyncio.create_task(self._reconcile_loop(), name="cluster-secrets-apply"))
        self._tasks.append(asyncio.create_task(self._status_loop(), name="fleet-status"))

    async def close(self) -> None:
        await cancel_all(self._tasks)
        await asyncio.gather(*(m.close() for m in self.members.values()), return_exceptions=True)

    # -- cluster Secrets --------------------------------------------------------------------
    def _keep_secret(self, obj: dict[str, Any]) -> _SecretRecord:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        try:
            spec, error = from_secret(obj, allow_insecure=self.secret_allow_insecure), None
        except SpecError as e:
            spec, error = None, str(e)
        return _SecretRecord(str(meta.get("resourceVersion") or ""), spec, error, name)

    async def _listed(self) -> None:
        self._reconcile.set()

    async def _reconcile_loop(self) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            await self._reconcile.wait()
            await asyncio.sleep(0.2)  # a burst of Secret edits: one pass
            self._reconcile.clear()
            try:
                await self.apply_secrets()
            except Exception:
                log.exception("applying cluster Secrets failed")

    async def apply_secrets(self) -> None:
        """Make the Secret-registered members match the Secrets held now."""
        if not self.secrets:
            return
        wanted: dict[str, ClusterSpec] = {}
        problems: dict[str, str] = {}
        for rec in (r for inf in self.secrets for r in inf.objects.values()):
            if rec.spec is None:
                problems[rec.name] = rec.error or "unusable"
                continue
            if rec.spec.name in self.static:
                problems[rec.name] = f"cluster name {rec.spec.name!r} is already registered by the service's flags"
                continue
            if rec.spec.name in wanted:
                problems[rec.name] = (
                    f"cluster name {rec.spec.name!r} is also claimed by Secret {wanted[rec.spec.name].source}"
                )
                continue
            wanted[rec.spec.name] = rec.spec
        if problems != self.secret_problems:
            for name, why in problems.items():
                if self.secret_problems.get(name) != why:
                    log.warning("cluster Secret %s: %s", name, why)
        self.secret_problems = problems
        # A Secret edited into something unusable keeps its cluster on the last good connection.
        for m in self.members.values():
            if m.spec.origin == "secret":
                sname = m.spec.source.partition("/")[2]
                m.invalid = problems.get(sname)
                if m.invalid is not None and m.name not in wanted:
                    wanted[m.name] = m.spec
        for name, m in list(self.members.items()):
            if m.spec.origin != "secret":
                continue
            spec = wanted.get(name)
            if spec is None:
                await self.remove(name)
            elif spec.digest != m.spec.digest:
                log.info("cluster %s: its Secret changed the connection; reconnecting", name)
                await self.remove(name)
                self.add(spec)
        for name, spec in wanted.items():
            if name not in self.members:
                self.add(spec)

    # -- status -----------------------------------------------------------------------------
    def items(self) -> list[dict[str, Any]]:
        """GET /clusters: every member, then each cluster Secret that could not be used."""
        out = [m.status() for m in sorted(self.members.values(), key=lambda m: m.name)]
        used = {m.spec.source.partition("/")[2] for m in self.members.values() if m.spec.origin == "secret"}
        for sname, why in sorted(self.secret_problems.items()):
            if sname not in used:
                out.append(
                    {
                        "name": sname,
                        "server": None,
                        "version": None,
                        "synced": False,
                        "available": False,
                        "lastError": why,
                        "workloads": 0,
                        "gpus": 0,
                        "accelerators": {},
                        "phases": {},
                        "origin": "secret",
                        "source": f"{self.secrets_namespace}/{sname}",
                        "context": None,
                        "checkedAt": None,
                        "since": None,
                    }
                )
        return out

    def _publish_cluster(self, name: str, item: dict[str, Any] | None) -> None:
        before = self._items.get(name)
        if item is None:
            if before is not None:
                del self._items[name]
                self.events.publish("DELETED", (*CLUSTER_KEY, name), before, ("", ""), name)
            return
        self._items[name] = item
        self.events.publish("ADDED" if before is None else "MODIFIED", (*CLUSTER_KEY, name), item, ("", ""), name)

    async def _status_loop(self) -> None:
        """A cluster event whenever a /clusters item changes (state, counts, GPUs), at most once a
        second per cluster; the times of the last probe are left out of the comparison."""
        assert self._stop is not None
        available: dict[str, bool] = {}
        while not self._stop.is_set():
            for m in list(self.members.values()):
                was = available.get(m.name)
                available[m.name] = m.available
                if was is not None and was != m.available and self.labelled:
                    # its rows change meaning (as last seen, or current again): fleet streams restate
                    # them (a one-cluster service marks nothing, so it has nothing to restate)
                    for row in m.rows():
                        self.events.publish("MODIFIED", row_key(row), row, ("", ""), m.name)
            items = self.items()
            for item in items:
                before = self._items.get(item["name"])
                if before is None or {**before, "checkedAt": None} != {**item, "checkedAt": None}:
                    self._publish_cluster(item["name"], item)
            present = {i["name"] for i in items}
            for name in [n for n in self._items if n not in present]:
                self._publish_cluster(name, None)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 1.0)
