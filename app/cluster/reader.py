"""One way to read live workloads, whatever answers: the live model or the API server.

`Reader` holds the lookup rules, written once: which kinds a name may belong to, what the caller
must be allowed before anything is looked up, which candidate wins, and the words of every
refusal.  Its two implementations only say how to list the served kinds and get one object:
`model.live.LiveModel` from memory, `cluster.workloads.Workloads` from the API server,
`store.reads.StoreModel` from the shared store.  What callers may use of any of them is the
`WorkloadReader` protocol; each implements all of it.

Authorization comes first, so an answer never depends on what exists where the caller may not
look: a caller who may not get a kind in a namespace gets the same 403 whether or not an object
of that name is there, a search by name looks only through the kinds the caller may get, and a
409 lists only candidates the caller may see.  Every read takes the caller's `allow` (no
default): the service builds it in one place (service/auth.py); the CLI, which acts as its own
kubeconfig user, passes `allow_all`.
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition, Registry
from .kube import PODS, Resource

Allow = Callable[[str, Resource, "str | None", "str | None"], Awaitable[bool]]


async def allow_all(verb: str, res: Resource, namespace: str | None, name: str | None) -> bool:
    """No authorization: the CLI (the API server checks its user), or a service run with --auth none."""
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


@dataclass
class Found:
    """One object a reader holds: its kind, identity and the reader's own form of it."""

    resource: Resource
    uid: str
    controller_uid: str | None
    namespace: str
    name: str
    item: Any  # a dict (direct reads) or a model record


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
    return LookupFailed(
        403,
        "forbidden",
        f"not allowed to get {res.plural}{'.' + res.group if res.group else ''}"
        f"{' in namespace ' + namespace if namespace else ''}",
    )


def may_not_list_pods(namespace: str | None) -> LookupFailed:
    return LookupFailed(
        403,
        "forbidden",
        f"not allowed to list pods{' in namespace ' + namespace if namespace else ''} "
        "(needed for the live pod view; ask with pods=false to skip it)",
    )


class WorkloadReader(Protocol):
    """Live workloads, whatever answers: what the service and the CLI read through."""

    @property
    def cluster(self) -> str | None:
        """In a fleet: the cluster named first in every answer (None: one cluster, unnamed)."""

    async def locate(
        self,
        namespace: str,
        name: str,
        kind: str | None = None,
        api_version: str | None = None,
        *,
        allow: Allow,
        with_pods: bool = False,
    ) -> Found:
        """The one workload of that name (an exact kind when kind and apiVersion are both given)."""

    async def fetch(
        self, api_version: str, kind: str, namespace: str | None, name: str, *, allow: Allow, with_pods: bool = False
    ) -> Found:
        """One object of an exact kind."""

    async def body(self, found: Found) -> dict[str, Any]:
        """The object found, as the engine reads it."""

    async def object(
        self, api_version: str, kind: str, namespace: str | None, name: str, *, allow: Allow
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A referenced object as it is, and the freshness of the read."""

    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        """As of when, and from where, an answer is."""

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
        """The live interpretation (JSON), with pods placed on the tree and their diagnosis."""

    async def summaries(self, namespace: str | None, kind: str | None = None, *, allow: Allow) -> dict[str, Any]:
        """One row per top-level workload the caller may list."""


def _scope(res: Resource, namespace: str | None) -> str | None:
    return namespace if res.namespaced else None


class Reader(ABC):
    """Live workloads by name: the rules; subclasses say where objects come from."""

    cluster: str | None = None

    # -- what a reader provides ----------------------------------------------------------------
    @abstractmethod
    async def served(self, kind: str | None = None, api_version: str | None = None) -> list[Known]:
        """The kinds with a definition this reader can read (resource set), matching kind/apiVersion."""

    async def resource(self, api_version: str, kind: str) -> Resource | None:
        """The resource of an exact kind (`kind`: a Kind or a plural), None when not served."""
        group, _, version = api_version.rpartition("/")
        known = [k for k in await self.served(kind, api_version) if k.resource is not None]
        exact = next((k for k in known if k.gvk == (group, version, kind)), known[0] if known else None)
        return exact.resource if exact is not None else None

    @abstractmethod
    async def get(self, res: Resource, namespace: str | None, name: str) -> Found | None:
        """One object of that kind (None: there is none); LookupFailed(503) when it cannot be read."""

    @abstractmethod
    def freshness(self, found: Found | None = None) -> dict[str, Any]:
        """As of when, and from where, an answer is."""

    @abstractmethod
    async def body(self, found: Found) -> dict[str, Any]:
        """The object as the engine reads it."""

    # -- the rules ----------------------------------------------------------------------------
    async def fetch(
        self, api_version: str, kind: str, namespace: str | None, name: str, *, allow: Allow, with_pods: bool = False
    ) -> Found:
        """One object of an exact kind (`kind` may be a Kind or a plural): allowed before it is read."""
        res = await self.resource(api_version, kind)
        if res is None:
            raise LookupFailed(404, "kind-not-served", f"{kind} ({api_version}) is not served by this cluster")
        if res.namespaced and not namespace:
            raise LookupFailed(422, "namespace-required", f"{res.kind} is namespaced: give a namespace")
        ns = _scope(res, namespace)
        if not await allow("get", res, ns, name):
            raise may_not_get(res, ns)
        if with_pods and not await allow("list", PODS, ns, None):
            raise may_not_list_pods(ns)
        found = await self.get(res, ns, name)
        if found is None:
            raise LookupFailed(
                404, "workload-not-found", f'{res.kind} "{name}" not found{" in namespace " + ns if ns else ""}'
            )
        return found

    async def find(
        self,
        namespace: str,
        name: str,
        kind: str | None = None,
        api_version: str | None = None,
        *,
        allow: Allow,
        with_pods: bool = False,
    ) -> Found:
        """The one workload of that name among the kinds the caller may get there."""
        kinds = await self.served(kind, api_version)
        if not kinds:
            what = f'"{kind}"' if kind else "any kind"
            raise LookupFailed(404, "workload-not-found", f"no served kind with a definition matches {what}")
        may = await asyncio.gather(
            *(
                allow("get", k.resource, _scope(k.resource, namespace), name)  # type: ignore[arg-type]
                for k in kinds
            )
        )
        readable = [k for k, ok in zip(kinds, may, strict=False) if ok]
        if not readable:
            if len(kinds) == 1:
                raise may_not_get(kinds[0].resource, namespace)  # type: ignore[arg-type]
            raise LookupFailed(
                403,
                "forbidden",
                "not allowed to get any workload kind"
                f"{' named ' + repr(kind) if kind else ''} in namespace {namespace}",
            )
        pods_checked = with_pods and all(k.resource.namespaced for k in readable)  # type: ignore[union-attr]
        if pods_checked and not await allow("list", PODS, namespace, None):
            raise may_not_list_pods(namespace)

        async def get(k: Known) -> Found | None:
            try:
                return await self.get(k.resource, _scope(k.resource, namespace), name)  # type: ignore[arg-type]
            except LookupFailed as e:
                if e.slug == "service-forbidden":  # a kind the service itself may not read: not searched
                    return None
                raise

        got = await asyncio.gather(*(get(k) for k in readable))
        found = _choose([f for f in got if f is not None], namespace, name)
        if with_pods and not pods_checked:
            ns = _scope(found.resource, namespace)
            if not await allow("list", PODS, ns, None):
                raise may_not_list_pods(ns)
        return found

    async def locate(
        self,
        namespace: str,
        name: str,
        kind: str | None = None,
        api_version: str | None = None,
        *,
        allow: Allow,
        with_pods: bool = False,
    ) -> Found:
        """GET /workloads/{namespace}/{name}: an exact kind when both are given, else a search by name."""
        if kind and api_version:
            return await self.fetch(api_version, kind, namespace, name, allow=allow, with_pods=with_pods)
        return await self.find(namespace, name, kind, api_version, allow=allow, with_pods=with_pods)

    async def object(
        self, api_version: str, kind: str, namespace: str | None, name: str, *, allow: Allow
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A referenced object as it is (`ref` of POST /interpret), and the freshness of the read."""
        found = await self.fetch(api_version, kind, namespace, name, allow=allow)
        return await self.body(found), self.freshness(found)

    @abstractmethod
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
        """The live interpretation (JSON), with pods placed on the tree."""

    @abstractmethod
    async def summaries(self, namespace: str | None, kind: str | None = None, *, allow: Allow) -> dict[str, Any]:
        """One row per top-level workload the caller may list."""


def _choose(found: list[Found], namespace: str, name: str) -> Found:
    # One object served at several versions is one workload: keep its best version.
    by_uid: dict[str, Found] = {}
    for f in found:
        prev = by_uid.get(f.uid)
        if prev is None or version_rank(f.resource.version) > version_rank(prev.resource.version):
            by_uid[f.uid] = f
    cands = list(by_uid.values())
    # A candidate controlled by another candidate is part of it (KServe's Deployment of an
    # InferenceService of the same name): the top-level one is the workload.
    cands = [f for f in cands if f.controller_uid not in by_uid] or cands
    if not cands:
        raise LookupFailed(404, "workload-not-found", f'no workload named "{name}" in namespace {namespace}')
    if len(cands) > 1:
        listed = sorted(
            (
                {
                    "apiVersion": f.resource.api_version,
                    "kind": f.resource.kind,
                    "namespace": f.namespace,
                    "name": f.name,
                }
                for f in cands
            ),
            key=lambda r: (r["kind"], r["apiVersion"]),
        )
        raise LookupFailed(
            409,
            "ambiguous-workload",
            f'{len(cands)} workloads are named "{name}" in namespace {namespace}: '
            + ", ".join(f"{c['kind']} ({c['apiVersion']})" for c in listed)
            + "; give kind (and apiVersion) to pick one",
            listed,
        )
    return cands[0]
