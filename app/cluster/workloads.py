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
from .kube import PODS, Forbidden, Kube, KubeError, NotFound, Resource, Unavailable
from .owners import OwnerIndex, controller_of, owned_by
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

Interpret = Callable[[Definition, dict[str, Any], "list[dict[str, Any]] | None"], Awaitable[dict[str, Any]]]


def describe_ref(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"apiVersion": str(obj.get("apiVersion")), "kind": str(obj.get("kind")),
            "namespace": str(meta.get("namespace") or ""), "name": str(meta.get("name"))}


def now_iso(t: float | None = None) -> str:
    return dt.datetime.fromtimestamp(t if t is not None else time.time(), dt.timezone.utc) \
        .isoformat(timespec="milliseconds").replace("+00:00", "Z")


def direct_freshness(obj: dict[str, Any] | None = None) -> dict[str, Any]:
    """A direct read reflects the API server as of now (and, for one object, its resourceVersion)."""
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return {"source": "direct", "resourceVersion": rv, "observedAt": now_iso(), "watching": False}


def error_row(obj: dict[str, Any], e: Exception, ready: int | None) -> dict[str, Any]:
    """The summary row of a workload that could not be interpreted (one bad object never hides the others)."""
    meta = obj.get("metadata") or {}
    return {"workload": describe_ref(obj) | {"uid": str(meta.get("uid"))}, "phase": None,
            "pods": {"ready": ready, "desired": None}, "gpus": None, "accelerators": None,
            "labels": dict(meta.get("labels") or {}), "createdAt": meta.get("creationTimestamp"), "components": None,
            "error": str(getattr(e, "detail", None) or e)}


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


def summary_row(obj: dict[str, Any], result: dict[str, Any], ready: int | None,
                components: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One row of GET /workloads: name, kind, phase, pods ready/desired, GPUs, accelerators,
    labels, age, components.  A partial interpretation keeps its phase; counts it cannot vouch
    for are null.  `components`: already taken from the tree (the live model keeps no tree)."""
    st, totals = result.get("status"), result.get("totals")
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {"workload": result["workload"], "phase": st["phase"] if st else None,
                           "matched": st["matched"] if st else None,
                           "pods": {"ready": ready, "desired": totals["pods"] if totals else None},
                           "gpus": totals["gpus"] if totals else None,
                           "accelerators": totals["accelerators"] if totals else None,
                           "definition": result["definition"]["name"],
                           "labels": dict(meta.get("labels") or {}), "createdAt": meta.get("creationTimestamp"),
                           "components": components if components is not None else components_of(result),
                           "complete": result["complete"]}
    if result.get("errors"):
        out["errors"] = result["errors"]
    return out


Visible = "bool | set[str]"  # True: everywhere asked; a set: only these namespaces; False: nowhere


async def visibility(allow: Allow, res: Resource, namespace: str | None, present: set[str],
                     warnings: list[str], what: str | None = None) -> bool | set[str]:
    """Where the caller may list `res` for a list of `namespace` (None: all namespaces).  A
    caller without a cluster-wide right still sees the namespaces it may list, as it could by
    listing them one by one itself; `present` are the namespaces that hold objects."""
    ns = namespace if res.namespaced else None
    if await allow("list", res, ns, None):
        return True
    label = what or f"{res.plural}, so the result leaves {res.kind} out"
    if ns is None and res.namespaced:
        allowed = {n for n in sorted(present) if n and await allow("list", res, n, None)}
        if allowed:
            warnings.append(f"not allowed to list {res.plural} in every namespace, so the result shows "
                            f"{'ready counts' if res is PODS else res.kind} only where it is allowed")
            return allowed
    warnings.append(f"not allowed to list {label}")
    return False


def visible_in(vis: bool | set[str], namespace: str | None) -> bool:
    return vis is True or (isinstance(vis, set) and (namespace or "") in vis)


def sort_rows(items: list[dict[str, Any]]) -> None:
    items.sort(key=lambda r: (r["workload"].get("namespace") or "", r["workload"]["name"], r["workload"]["kind"]))


class Workloads(Reader):
    def __init__(self, kube: Kube, registry: Callable[[], Registry], interpret: Interpret, concurrency: int = 16,
                 cluster: str | None = None):
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
                raise LookupFailed(503, "service-forbidden",
                                   f"the service is not allowed to read {res.plural}: {e}") from None
            except KubeError as e:
                raise LookupFailed(503, "cluster-unavailable", f"cannot read {res.kind} {name}: {e}") from None
        meta = obj.get("metadata") or {}
        return Found(res, str(meta.get("uid") or id(obj)), (controller_of(meta) or {}).get("uid"),
                     str(meta.get("namespace") or ""), str(meta.get("name") or name), obj)

    def body(self, found: Found) -> dict[str, Any]:
        return found.item  # type: ignore[no-any-return]

    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        return direct_freshness(found.item if found is not None else None)

    # -- pods -----------------------------------------------------------------------------
    async def pods_of(self, obj: dict[str, Any], res: Resource) -> list[dict[str, Any]]:
        """The pods the object controls (the caller's right to list them was checked by the lookup)."""
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
        # by name: the API server's cache lists in no stable order, and gang rows follow this one
        return sorted(owned_by(str(meta.get("uid")), pods, chains), key=lambda p: p["metadata"].get("name", ""))

    async def interpretation(self, namespace: str, name: str, kind: str | None = None,
                             api_version: str | None = None, *, with_pods: bool = True,
                             allow: Allow) -> dict[str, Any]:
        """The interpretation of a live workload, with its pods placed on the tree."""
        found = await self.locate(namespace, name, kind, api_version, allow=allow, with_pods=with_pods)
        obj, res = found.item, found.resource
        definition = self.definition_for(res.gvk)
        pods = await self.pods_of(obj, res) if with_pods else None
        out = await self.interpret(definition, obj, pods)
        if pods is not None:
            live = out.setdefault("live", {})
            live.update(generic_flags(obj))  # what status carries too, known even when the status is not
        out["freshness"] = direct_freshness(obj)
        return {"cluster": self.cluster, **out} if self.cluster else out

    async def describe(self, namespace: str, name: str, kind: str | None = None, api_version: str | None = None,
                       *, with_pods: bool = True, allow: Allow, freshness: bool = True) -> bytes:
        out = await self.interpretation(namespace, name, kind, api_version, with_pods=with_pods, allow=allow)
        if not freshness:
            out.pop("freshness", None)
        return orjson.dumps(out)

    # -- many -----------------------------------------------------------------------------
    async def summaries(self, namespace: str | None, kind: str | None = None, *,
                        allow: Allow) -> dict[str, Any]:
        """One row per top-level workload of every known kind: name, kind, phase, pods, GPUs."""
        warnings: list[str] = []
        every = await self.known()
        served = [k for k in every if k.resource is not None and (not kind or matches_token(kind, k))]
        if kind and not served:
            warnings.append(f'no served kind with a definition matches "{kind}"')
        # One list per group/kind, at its best served version.
        best: dict[tuple[str, str], Known] = {}
        for k in served:
            gk = (k.gvk[0], k.gvk[2])
            if gk not in best or version_rank(k.gvk[1]) > version_rank(best[gk].gvk[1]):
                best[gk] = k
        covered = {(k.gvk[0], k.gvk[2]) for k in every}

        async def objects(k: Known) -> list[tuple[Known, dict[str, Any]]]:
            assert k.resource is not None
            ns = namespace if k.resource.namespaced else None
            everywhere = await allow("list", k.resource, ns, None)
            if not everywhere and (ns is not None or not k.resource.namespaced):
                warnings.append(f"not allowed to list {k.resource.plural}, so the result leaves {k.gvk[2]} out")
                return []
            async with self._sem:
                try:
                    items = (await self.kube.list(k.resource, ns))["items"]
                except (NotFound, Forbidden) as e:
                    warnings.append(f"cannot list {k.gvk[2]}: {e}")
                    return []
                except KubeError as e:  # no answer: the list would be a guess, so say the cluster is away
                    raise LookupFailed(503, "cluster-unavailable", f"cannot list {k.gvk[2]}: {e.message}") from None
            if not everywhere:  # only the namespaces the caller may list
                present = {str((o.get("metadata") or {}).get("namespace") or "") for o in items}
                vis = await visibility(allow, k.resource, None, present, warnings)
                items = [o for o in items if visible_in(vis, (o.get("metadata") or {}).get("namespace"))]
            return [(k, o) for o in items]

        lists = await asyncio.gather(*(objects(k) for k in best.values()))
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
        found = [f for f, k in zip(found, keep) if k]
        ready = await self._ready_counts([o for _, o in found], namespace, allow, warnings, indexes)

        async def row(k: Known, obj: dict[str, Any]) -> dict[str, Any]:
            uid = str((obj.get("metadata") or {}).get("uid"))
            try:
                d = self.definition_for(k.gvk)
                result = await self.interpret(d, obj, None)
            except Exception as e:  # one bad object never hides the others
                return error_row(obj, e, ready.get(uid))
            return summary_row(obj, result, ready.get(uid))

        items = list(await asyncio.gather(*(row(k, o) for k, o in found)))
        sort_rows(items)
        return {"items": items, "warnings": sorted(set(warnings)), "freshness": direct_freshness()}

    async def _ready_counts(self, objs: list[dict[str, Any]], namespace: str | None, allow: Allow,
                            warnings: list[str], indexes: dict[str | None, OwnerIndex]) -> dict[str, int]:
        if not objs:
            return {}
        present = {str((o.get("metadata") or {}).get("namespace") or "") for o in objs}
        vis = await visibility(allow, PODS, namespace, present, warnings, "pods, so ready counts are left out")
        if vis is False:
            return {}
        try:
            pods = (await self.kube.list(PODS, namespace, resource_version="0"))["items"]
        except KubeError as e:
            warnings.append(f"cannot list pods: {e}")
            return {}
        by_ns: dict[str | None, list[dict[str, Any]]] = {}
        for p in pods:
            if not visible_in(vis, (p.get("metadata") or {}).get("namespace")):
                continue
            by_ns.setdefault((p.get("metadata") or {}).get("namespace"), []).append(p)
        counts: dict[str, int] = {str((o.get("metadata") or {}).get("uid")): 0 for o in objs
                                  if visible_in(vis, (o.get("metadata") or {}).get("namespace"))}
        for ns, ps in by_ns.items():
            index = indexes.setdefault(ns, OwnerIndex(self.kube, ns))
            chains = await index.chains([p.get("metadata") or {} for p in ps])
            for p, chain in zip(ps, chains):
                if pod_ready(p):
                    for uid in chain & counts.keys():
                        counts[uid] += 1
        return counts
