"""Live workloads: fetch by reference, find by name across every known kind, attribute pods,
and list one summary row per top-level workload.

Shared by the HTTP service and the `wlmap describe/get` commands.  Evaluation is passed in
(`interpret(definition, object, pods)`), so each caller keeps its own isolation and error
mapping; authorization is passed in (`allow(verb, resource, namespace, name)`), so the CLI
(which acts as its kubeconfig user) simply allows everything.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..engine.attribution import pod_ready
from ..engine.interpret import generic_flags
from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition, Registry
from .kube import PODS, Forbidden, Kube, KubeError, NotFound, Resource, Unavailable
from .owners import OwnerIndex, controller_of, owned_by

Interpret = Callable[[Definition, dict[str, Any], "list[dict[str, Any]] | None"], Awaitable[dict[str, Any]]]
Allow = Callable[[str, Resource, "str | None", "str | None"], Awaitable[bool]]


async def allow_all(verb: str, res: Resource, namespace: str | None, name: str | None) -> bool:
    return True


class LookupFailed(Exception):
    """A workload could not be found or read; `status` follows HTTP (404, 403, 409, 503)."""

    def __init__(self, status: int, slug: str, message: str, candidates: list[dict[str, str]] | None = None):
        super().__init__(message)
        self.status, self.slug, self.message, self.candidates = status, slug, message, candidates or []


@dataclass
class Known:
    """A kind the registry has a definition for, as the cluster serves it (resource None: not served)."""

    definition: Definition
    resource: Resource | None

    @property
    def gvk(self) -> tuple[str, str, str]:
        assert self.definition.gvk is not None
        return self.definition.gvk


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_rank(v: str) -> tuple[int, int, int]:
    """Kubernetes version priority: GA > beta > alpha, higher numbers first (larger is better)."""
    m = _VERSION.match(v)
    if not m:
        return (-1, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (stage, int(m.group(1)), int(m.group(3) or 0))


def matches_token(token: str, k: Known) -> bool:
    """kubectl-like type tokens: Kind, plural, or either qualified by group (and version)."""
    t = token.lower()
    group, version, kind = k.gvk
    names = {kind.lower()}
    if k.resource is not None:
        names.add(k.resource.plural)
    quals = set(names)
    for n in names:
        if group:
            quals |= {f"{n}.{group}", f"{n}.{version}.{group}"}
        else:
            quals.add(f"{n}.{version}")
    return t in quals


def describe_ref(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"apiVersion": str(obj.get("apiVersion")), "kind": str(obj.get("kind")),
            "namespace": str(meta.get("namespace") or ""), "name": str(meta.get("name"))}


def definition_for(registry: Registry, gvk: tuple[str, str, str]) -> Definition:
    """The definition serving a GVK, or the lookup failure a caller reports (409 ambiguous, 404 none)."""
    try:
        d = registry.resolve(gvk)
    except AmbiguousDefinition as e:
        raise LookupFailed(409, "ambiguous-definition", str(e)) from None
    if d is None:
        g, v, k = gvk
        raise LookupFailed(404, "no-definition", f"no Karta definition covers {g + '/' if g else ''}{v} {k}")
    return d


def may_not_get(res: Resource, namespace: str | None) -> LookupFailed:
    return LookupFailed(403, "forbidden", f"not allowed to get {res.plural}{'.' + res.group if res.group else ''}"
                                          f"{' in namespace ' + namespace if namespace else ''}")


def may_not_list_pods(namespace: str | None) -> LookupFailed:
    return LookupFailed(403, "forbidden", f"not allowed to list pods{' in namespace ' + namespace if namespace else ''} "
                                          "(needed for the live pod view; ask with pods=false to skip it)")


def now_iso(t: float | None = None) -> str:
    return dt.datetime.fromtimestamp(t if t is not None else time.time(), dt.timezone.utc) \
        .isoformat(timespec="milliseconds").replace("+00:00", "Z")


def direct_freshness(obj: dict[str, Any] | None = None) -> dict[str, Any]:
    """A direct read reflects the API server as of now (and, for one object, its resourceVersion)."""
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return {"source": "direct", "resourceVersion": rv, "observedAt": now_iso(), "watching": False}


def error_row(obj: dict[str, Any], e: Exception, ready: int | None) -> dict[str, Any]:
    """The summary row of a workload that could not be interpreted (one bad object never hides the others)."""
    uid = str((obj.get("metadata") or {}).get("uid"))
    return {"workload": describe_ref(obj) | {"uid": uid}, "phase": None, "pods": {"ready": ready, "desired": None},
            "gpus": None, "error": str(getattr(e, "detail", None) or e)}


def summary_row(obj: dict[str, Any], result: dict[str, Any], ready: int | None) -> dict[str, Any]:
    """One row of GET /workloads: name, kind, phase, pods ready/desired, GPUs.  A partial
    interpretation keeps its phase; counts it cannot vouch for are null."""
    st, totals = result.get("status"), result.get("totals")
    out: dict[str, Any] = {"workload": result["workload"], "phase": st["phase"] if st else None,
                           "matched": st["matched"] if st else None,
                           "pods": {"ready": ready, "desired": totals["pods"] if totals else None},
                           "gpus": totals["gpus"] if totals else None, "definition": result["definition"]["name"],
                           "createdAt": (obj.get("metadata") or {}).get("creationTimestamp"),
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


class Workloads:
    def __init__(self, kube: Kube, registry: Callable[[], Registry], interpret: Interpret, concurrency: int = 16):
        self.kube, self.registry, self.interpret = kube, registry, interpret
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

    def definition_for(self, gvk: tuple[str, str, str]) -> Definition:
        return definition_for(self.registry(), gvk)

    # -- one object -----------------------------------------------------------------------
    async def fetch(self, api_version: str, kind: str, namespace: str | None, name: str,
                    allow: Allow = allow_all) -> tuple[Resource, dict[str, Any]]:
        group, _, version = api_version.rpartition("/")
        res = await self.kube.resource((group, version, kind))
        if res is None:
            raise LookupFailed(404, "kind-not-served", f"{kind} ({api_version}) is not served by this cluster")
        if res.namespaced and not namespace:
            raise LookupFailed(422, "namespace-required", f"{kind} is namespaced: give a namespace")
        ns = namespace if res.namespaced else None
        if not await allow("get", res, ns, name):
            raise may_not_get(res, ns)
        try:
            obj = await self.kube.get(res, ns, name)
        except NotFound:
            where = f" in namespace {ns}" if ns else ""
            raise LookupFailed(404, "workload-not-found", f'{kind} "{name}" not found{where}') from None
        except Forbidden as e:
            raise LookupFailed(503, "service-forbidden", f"the service is not allowed to read {res.plural}: {e}") from None
        except KubeError as e:
            raise LookupFailed(503, "cluster-unavailable", f"cannot read {kind} {name}: {e}") from None
        return res, obj

    async def find(self, namespace: str, name: str, kind: str | None = None, api_version: str | None = None,
                   allow: Allow = allow_all) -> tuple[Known, dict[str, Any]]:
        """The one workload of that name: every matching served kind is tried concurrently."""
        kinds = [k for k in await self.known(kind, api_version) if k.resource is not None]
        if not kinds:
            what = f'"{kind}"' if kind else "any kind"
            raise LookupFailed(404, "workload-not-found", f"no served kind with a definition matches {what}")

        async def one(k: Known) -> tuple[Known, dict[str, Any]] | None:
            assert k.resource is not None
            ns = namespace if k.resource.namespaced else None
            async with self._sem:
                try:
                    return k, await self.kube.get(k.resource, ns, name)
                except (NotFound, Forbidden):
                    return None
                except KubeError as e:
                    raise LookupFailed(503, "cluster-unavailable", f"cannot read {k.gvk[2]} {name}: {e}") from None

        found = [f for f in await asyncio.gather(*(one(k) for k in kinds)) if f is not None]
        # One object served at several versions is one workload: keep its best version.
        by_uid: dict[str, tuple[Known, dict[str, Any]]] = {}
        for k, obj in found:
            uid = (obj.get("metadata") or {}).get("uid") or id(obj)
            prev = by_uid.get(uid)
            if prev is None or version_rank(k.gvk[1]) > version_rank(prev[0].gvk[1]):
                by_uid[uid] = (k, obj)
        cands = list(by_uid.values())
        # A candidate controlled by another candidate is part of it (KServe's Deployment of an
        # InferenceService of the same name): the top-level one is the workload.
        uids = set(by_uid)
        top = [(k, o) for k, o in cands if (controller_of(o.get("metadata") or {}) or {}).get("uid") not in uids]
        cands = top or cands
        if not cands:
            raise LookupFailed(404, "workload-not-found", f'no workload named "{name}" in namespace {namespace}')
        if len(cands) > 1:
            listed = sorted((describe_ref(o) for _, o in cands), key=lambda r: (r["kind"], r["apiVersion"]))
            raise LookupFailed(409, "ambiguous-workload",
                               f'{len(cands)} workloads are named "{name}" in namespace {namespace}: '
                               + ", ".join(f"{c['kind']} ({c['apiVersion']})" for c in listed)
                               + "; give kind (and apiVersion) to pick one", listed)
        k, obj = cands[0]
        assert k.resource is not None
        if not await allow("get", k.resource, namespace if k.resource.namespaced else None, name):
            raise may_not_get(k.resource, namespace)
        return k, obj

    # -- pods -----------------------------------------------------------------------------
    async def pods_of(self, obj: dict[str, Any], res: Resource, allow: Allow = allow_all) -> list[dict[str, Any]]:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") if res.namespaced else None
        if not await allow("list", PODS, ns, None):
            raise may_not_list_pods(ns)
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

    async def describe(self, namespace: str, name: str, kind: str | None = None, api_version: str | None = None,
                       *, with_pods: bool = True, allow: Allow = allow_all) -> dict[str, Any]:
        """The interpretation of a live workload, with its pods placed on the tree."""
        if kind and api_version:  # one exact GVK: a single GET (the kind token may be a plural)
            k0 = await self.known(kind, api_version)
            kind_name = k0[0].gvk[2] if k0 else kind
            res, obj = await self.fetch(api_version, kind_name, namespace, name, allow)
        else:
            known, obj = await self.find(namespace, name, kind, api_version, allow)
            assert known.resource is not None
            res = known.resource
        definition = self.definition_for(res.gvk)
        pods = await self.pods_of(obj, res, allow) if with_pods else None
        out = await self.interpret(definition, obj, pods)
        if pods is not None:
            live = out.setdefault("live", {})
            live.update(generic_flags(obj))  # what status carries too, known even when the status is not
        out["freshness"] = direct_freshness(obj)
        return out

    # -- many -----------------------------------------------------------------------------
    async def summaries(self, namespace: str | None, kind: str | None = None,
                        allow: Allow = allow_all) -> dict[str, Any]:
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
