"""Live workloads read straight from the API server: the `Reader` (cluster/reader.py) that
lists kinds by discovery, gets objects with GET, attributes pods by owner chains, and lists one
summary row per top-level workload.

Shared by the HTTP service (until its live model has synced, and with --cache false) and the
`wlmap describe/get` commands.  Evaluation is passed in (`interpret(definition, object, pods)`),
so each caller keeps its own isolation and error mapping; authorization is passed to every read
(`allow(verb, resource, namespace, name)`): the CLI, which acts as its kubeconfig user, passes
`allow_all`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ..engine.attribution import pod_ready
from ..engine.interpret import generic_flags
from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition, Registry
from .diagnosis import (
    WarningEvent,
    context_of,
    explain,
    gang_minimum,
    pod_facts,
    recent,
    row_reason,
    warning_event,
)
from .kube import (
    EVENTS,
    PODS,
    Forbidden,
    Kube,
    KubeError,
    NotFound,
    Resource,
    Unavailable,
)
from .owners import OwnerIndex, controller_of
from .reader import (  # noqa: F401 - the names readers and the service share, importable from here too
    Allow,
    Found,
    Known,
    LookupFailed,
    Reader,
    allow_all,
    definition_for,
    matches_token,
    may_not_get,
    may_not_list_pods,
    version_rank,
)
from .views import ListRules, enveloped, events_shown, namespaces_of, visible_in

Interpret = Callable[[Definition, dict[str, Any], "list[dict[str, Any]] | None"], Awaitable[dict[str, Any]]]


def describe_ref(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": str(obj.get("apiVersion")),
        "kind": str(obj.get("kind")),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name")),
    }


def now_iso(t: float | None = None) -> str:
    return (
        dt.datetime.fromtimestamp(t if t is not None else time.time(), dt.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def direct_freshness(obj: dict[str, Any] | None = None) -> dict[str, Any]:
    """A direct read reflects the API server as of now (and, for one object, its resourceVersion)."""
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return {"source": "direct", "resourceVersion": rv, "observedAt": now_iso(), "watching": False}


def error_row(obj: dict[str, Any], e: Exception, ready: int | None) -> dict[str, Any]:
    """The summary row of a workload that could not be interpreted (one bad object never hides the others)."""
    meta = obj.get("metadata") or {}
    return {
        "workload": describe_ref(obj) | {"uid": str(meta.get("uid"))},
        "phase": None,
        "pods": {"ready": ready, "desired": None},
        "gpus": None,
        "accelerators": None,
        "labels": dict(meta.get("labels") or {}),
        "createdAt": meta.get("creationTimestamp"),
        "components": None,
        "reason": None,
        "error": str(getattr(e, "detail", None) or e),
    }


def components_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every component that runs pods, with the pods it wants (null: that component failed)."""
    out: list[dict[str, Any]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("error") or node.get("podBearing"):
            totals = node.get("totals")
            out.append({"name": node["name"], "pods": totals["pods"] if totals else None})
        for c in node.get("children") or ():
            walk(c)

    if result.get("tree"):
        walk(result["tree"])
    return out


def summary_row(
    obj: dict[str, Any], result: dict[str, Any], ready: int | None, components: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One row of GET /workloads: name, kind, phase, pods ready/desired, GPUs, accelerators,
    labels, age, components.  A partial interpretation keeps its phase; counts it cannot vouch
    for are null.  `components`: already taken from the tree (the live model keeps no tree)."""
    st, totals = result.get("status"), result.get("totals")
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {
        "workload": result["workload"],
        "phase": st["phase"] if st else None,
        "matched": st["matched"] if st else None,
        "pods": {"ready": ready, "desired": totals["pods"] if totals else None},
        "gpus": totals["gpus"] if totals else None,
        "accelerators": totals["accelerators"] if totals else None,
        "definition": result["definition"]["name"],
        "labels": dict(meta.get("labels") or {}),
        "createdAt": meta.get("creationTimestamp"),
        "components": components if components is not None else components_of(result),
        "complete": result["complete"],
        "reason": None,
    }
    if result.get("errors"):
        out["errors"] = result["errors"]
    return out


class Workloads(Reader):
    def __init__(
        self,
        kube: Kube,
        registry: Callable[[], Registry],
        interpret: Interpret,
        concurrency: int = 16,
        cluster: str | None = None,
    ):
        self.kube, self.registry, self.interpret = kube, registry, interpret
        self.cluster = cluster  # in a fleet: named first in every interpretation
        self._sem = asyncio.Semaphore(concurrency)

    # -- kinds ----------------------------------------------------------------------------
    async def known(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        """Every GVK with an active definition (ambiguous GVKs included), as served."""
        reg = self.registry()
        defs: dict[tuple[str, str, str], Definition] = {}
        for d in reg.all():
            if d.valid and d.gvk is not None and d.gvk not in defs:
                try:
                    top = reg.resolve(d.gvk)
                except AmbiguousDefinition:
                    top = d
                if top is not None:
                    defs[d.gvk] = top
        if api_version:
            defs = {g: d for g, d in defs.items() if (f"{g[0]}/{g[1]}" if g[0] else g[1]) == api_version}

        async def one(d: Definition) -> Known:
            assert d.gvk is not None
            try:
                res = await self.kube.resource(d.gvk)
            except Unavailable as e:  # no answer is not "not served": say the cluster is away
                raise LookupFailed(503, "cluster-unavailable", f"cannot reach the API server: {e.message}") from None
            except KubeError:
                res = None
            return Known(d, res)

        out = list(await asyncio.gather(*(one(d) for d in defs.values())))
        if kind:
            out = [k for k in out if matches_token(kind, k)]
        return out

    async def served(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        return [k for k in await self.known(kind, api_version) if k.resource is not None]

    async def resource(self, api_version: str, kind: str) -> Resource | None:
        """A kind with a definition, else any kind discovery knows (a `ref` may come with its own
        definition)."""
        res = await super().resource(api_version, kind)
        if res is not None:
            return res
        group, _, version = api_version.rpartition("/")
        try:
            return await self.kube.resource((group, version, kind))
        except Unavailable as e:
            raise LookupFailed(503, "cluster-unavailable", f"cannot reach the API server: {e.message}") from None

    def definition_for(self, gvk: tuple[str, str, str]) -> Definition:
        return definition_for(self.registry(), gvk)

    # -- one object -----------------------------------------------------------------------
    async def get(self, res: Resource, namespace: str | None, name: str) -> Found | None:
        async with self._sem:
            try:
                obj = await self.kube.get(res, namespace, name)
            except NotFound:
                return None
            except Forbidden as e:
                raise LookupFailed(
                    503, "service-forbidden", f"the service is not allowed to read {res.plural}: {e}"
                ) from None
            except KubeError as e:
                raise LookupFailed(503, "cluster-unavailable", f"cannot read {res.kind} {name}: {e}") from None
        meta = obj.get("metadata") or {}
        return Found(
            res,
            str(meta.get("uid") or id(obj)),
            (controller_of(meta) or {}).get("uid"),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or name),
            obj,
        )

    async def body(self, found: Found) -> dict[str, Any]:
        return found.item

    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        return direct_freshness(found.item if found is not None else None)

    # -- pods -----------------------------------------------------------------------------
    async def pods_of(self, obj: dict[str, Any], res: Resource) -> list[dict[str, Any]]:
        """The pods the object controls (the caller's right to list them was checked by the lookup)."""
        return (await self._pods_and_chains(obj, res))[0]

    async def _pods_and_chains(
        self, obj: dict[str, Any], res: Resource
    ) -> tuple[list[dict[str, Any]], list[set[str]], OwnerIndex]:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") if res.namespaced else None
        try:
            pods = (await self.kube.list(PODS, ns, resource_version="0"))["items"]
        except Forbidden as e:
            raise LookupFailed(503, "service-forbidden", f"the service is not allowed to list pods: {e}") from None
        except KubeError as e:
            raise LookupFailed(503, "cluster-unavailable", f"cannot list pods: {e}") from None
        index = OwnerIndex(self.kube, ns)
        chains = await index.chains([p.get("metadata") or {} for p in pods])
        uid = str(meta.get("uid"))
        # by name: the API server's cache lists in no stable order, and gang rows follow this one
        mine = sorted(
            ((p, c) for p, c in zip(pods, chains, strict=False) if uid in c),
            key=lambda pc: pc[0]["metadata"].get("name", ""),
        )
        return [p for p, _ in mine], [c for _, c in mine], index

    async def warnings_of(self, namespace: str | None, warnings: list[str]) -> list[WarningEvent] | None:
        """The recent Warning Events of a namespace (None: they cannot be read; `warnings` says why)."""
        try:
            items = (await self.kube.list(EVENTS, namespace, field_selector="type=Warning", resource_version="0"))[
                "items"
            ]
        except KubeError as e:
            warnings.append(f"cannot list events, so the diagnosis leaves them out: {e}")
            return None
        return [ev for ev in map(warning_event, items) if ev is not None and recent(ev)]

    async def _related(
        self, events: list[WarningEvent], uid: str, chains: list[set[str]], index: OwnerIndex
    ) -> list[WarningEvent]:
        """The events about the workload, its pods, or an object whose controller chain reaches it
        (a Job that cannot create its pods has none to name it)."""
        known = set().union(*chains) if chains else set()
        known.add(uid)
        # the groups whose objects own pods: as the live model, which watches only these
        owning = {"apps", "batch"} | {d.gvk[0] for d in self.registry().all() if d.valid and d.gvk}
        out = []
        for ev in events:
            if ev.uid in known:
                out.append(ev)
                continue
            group = ev.api_version.rpartition("/")[0]
            if ev.kind in ("Pod", "") or group not in owning:
                continue
            meta = await index.owner({"apiVersion": ev.api_version, "kind": ev.kind, "name": ev.name, "uid": ev.uid})
            if meta is not None and uid in await index.chain(meta):
                out.append(ev)
        return out

    async def interpretation(
        self,
        namespace: str,
        name: str,
        kind: str | None = None,
        api_version: str | None = None,
        *,
        with_pods: bool = True,
        allow: Allow,
    ) -> dict[str, Any]:
        """The interpretation of a live workload, with its pods placed on the tree (as `describe`)."""
        return orjson.loads(
            await self.describe(
                namespace,
                name,
                kind,
                api_version,
                with_pods=with_pods,
                allow=allow,
            )
        )

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
        obj, res = found.item, found.resource
        definition = self.definition_for(res.gvk)
        pods, chains, index = await self._pods_and_chains(obj, res) if with_pods else (None, [], None)
        out = await self.interpret(definition, obj, pods)
        if pods is not None:
            live = out.setdefault("live", {})
            live.update(generic_flags(obj))  # what status carries too, known even when the status is not
            ns = found.namespace or None
            events: list[WarningEvent] = []
            if await events_shown(allow, ns, out.setdefault("warnings", [])):
                listed = await self.warnings_of(ns, out["warnings"])
                events = await self._related(listed or [], found.uid, chains, index) if index else []
            facts = [pod_facts(p, frozenset(c)) for p, c in zip(pods, chains, strict=False)]
            out["diagnosis"] = explain(context_of(out), facts, events)
        return enveloped(orjson.dumps(out), self.cluster, direct_freshness(obj) if freshness else None)

    # -- many -----------------------------------------------------------------------------
    async def summaries(self, namespace: str | None, kind: str | None = None, *, allow: Allow) -> dict[str, Any]:
        """One row per top-level workload of every known kind: name, kind, phase, pods, GPUs."""
        rules = ListRules(allow, namespace, kind)
        every = await self.known()
        covered = {(k.gvk[0], k.gvk[2]) for k in every}

        async def objects(k: Known) -> list[tuple[Known, dict[str, Any]]]:
            assert k.resource is not None
            listable = await rules.listable(k.resource)
            if listable is False:
                return []
            async with self._sem:
                try:
                    items = (await self.kube.list(k.resource, rules.scope(k.resource)))["items"]
                except (NotFound, Forbidden) as e:
                    rules.unlisted(k.gvk[2], e)
                    return []
                except KubeError as e:  # no answer: the list would be a guess, so say the cluster is away
                    raise LookupFailed(503, "cluster-unavailable", f"cannot list {k.gvk[2]}: {e.message}") from None
            if listable is None:  # only the namespaces the caller may list
                items = await rules.visible(k.resource, items)
            return [(k, o) for o in items]

        lists = await asyncio.gather(*(objects(k) for k in rules.kinds(every)))
        found = [x for lst in lists for x in lst]

        indexes: dict[str | None, OwnerIndex] = {}  # owner lists per namespace, shared with the ready counts

        async def top_level(obj: dict[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            if controller_of(meta) is None:
                return True
            ns = meta.get("namespace")
            index = indexes.setdefault(ns, OwnerIndex(self.kube, ns))
            return not await index.nested(meta, covered)

        keep = await asyncio.gather(*(top_level(o) for _, o in found))
        found = [f for f, k in zip(found, keep, strict=False) if k]
        ready, owned = await self._ready_counts([o for _, o in found], namespace, rules, indexes)
        events = await self._list_warnings(namespace, found, owned, rules)

        async def row(k: Known, obj: dict[str, Any]) -> dict[str, Any]:
            meta = obj.get("metadata") or {}
            uid = str(meta.get("uid"))
            try:
                d = self.definition_for(k.gvk)
                result = await self.interpret(d, obj, None)
            except Exception as e:  # one bad object never hides the others
                return error_row(obj, e, ready.get(uid))
            out = summary_row(obj, result, ready.get(uid))
            pods, ns = owned.get(uid), meta.get("namespace")
            if pods is not None and events is not None and visible_in(events[0], ns):
                index = indexes.setdefault(ns, OwnerIndex(self.kube, ns))
                related = await self._related(events[1], uid, [c for _, c in pods], index)
                out["reason"] = row_reason(
                    result,
                    lambda: [pod_facts(p, frozenset(c)) for p, c in pods],
                    lambda: related,
                    ready=ready.get(uid),
                    gang_min=gang_minimum(result),
                )
            return out

        items = list(await asyncio.gather(*(row(k, o) for k, o in found)))
        return rules.result(items, direct_freshness())

    async def _list_warnings(
        self, namespace: str | None, found: list[Any], owned: dict[str, Any], rules: ListRules
    ) -> tuple[bool | set[str], list[WarningEvent]] | None:
        """The Warning Events the rows' reasons read, and where the caller may see them (None: none)."""
        if not owned:
            return None
        vis = await rules.events(namespaces_of(o for _, o in found))
        if vis is False:
            return None
        listed = await self.warnings_of(namespace, rules.warnings)
        return (vis, listed) if listed is not None else None

    async def _ready_counts(
        self, objs: list[dict[str, Any]], namespace: str | None, rules: ListRules, indexes: dict[str | None, OwnerIndex]
    ) -> tuple[dict[str, int], dict[str, list[tuple[dict[str, Any], set[str]]]]]:
        """Ready pods per workload UID, and each workload's pods with their chains (for the reasons)."""
        owned: dict[str, list[tuple[dict[str, Any], set[str]]]] = {}
        if not objs:
            return {}, owned
        vis = await rules.pods(namespaces_of(objs))
        if vis is False:
            return {}, owned
        try:
            pods = (await self.kube.list(PODS, namespace, resource_version="0"))["items"]
        except KubeError as e:
            rules.warnings.append(f"cannot list pods: {e}")
            return {}, owned
        by_ns: dict[str | None, list[dict[str, Any]]] = {}
        for p in pods:
            if not visible_in(vis, (p.get("metadata") or {}).get("namespace")):
                continue
            by_ns.setdefault((p.get("metadata") or {}).get("namespace"), []).append(p)
        counts: dict[str, int] = {
            str((o.get("metadata") or {}).get("uid")): 0
            for o in objs
            if visible_in(vis, (o.get("metadata") or {}).get("namespace"))
        }
        for uid in counts:
            owned[uid] = []
        for ns, ps in by_ns.items():
            index = indexes.setdefault(ns, OwnerIndex(self.kube, ns))
            chains = await index.chains([p.get("metadata") or {} for p in ps])
            for p, chain in zip(ps, chains, strict=False):
                ok = pod_ready(p)
                for uid in chain & counts.keys():
                    owned[uid].append((p, chain))
                    counts[uid] += ok
        return counts, owned
