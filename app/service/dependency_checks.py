"""`exists` on each dependency of a live answer (docs/api-contract.md, "Dependencies"): whether
the object a workload's pods refer to is in the cluster the workload was read from.

`true` / `false` when the caller may `get` that kind there and the service could look; `null`
when the caller may not (nothing is said of an object they cannot read), when the service's own
account may not (the chart grants Secrets only on request: `rbac.dependencySecrets`), when the
cluster does not serve the kind (no DRA), or when the cluster did not answer.

A look is a metadata-only GET (`PartialObjectMetadata`): a Secret's data never reaches the
service.  Answers are kept for a few seconds per cluster and object, bounded, so a page that
polls one workload costs the API server one GET per dependency per TTL.  A workload's list is
bounded too: past `MAX_CHECKS` entries the rest say `null`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cachetools import TTLCache

from ..cluster.kube import KubeError, NotFound, Resource
from ..cluster.reader import Allow
from ..fleet.member import Member

PARTIAL_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
MAX_CHECKS = 64  # dependencies looked up per answer
CACHE_SIZE, CACHE_TTL = 20_000, 10.0

# kind -> (group, versions in order of preference, namespaced)
KINDS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "ConfigMap": ("", ("v1",), True),
    "Secret": ("", ("v1",), True),
    "PersistentVolumeClaim": ("", ("v1",), True),
    "ServiceAccount": ("", ("v1",), True),
    "PriorityClass": ("scheduling.k8s.io", ("v1",), False),
    "ResourceClaim": ("resource.k8s.io", ("v1", "v1beta2", "v1beta1"), True),
    "ResourceClaimTemplate": ("resource.k8s.io", ("v1", "v1beta2", "v1beta1"), True),
}


class DependencyChecks:
    """The service's one cache of existence answers (per cluster, kind, namespace, name)."""

    def __init__(self, size: int = CACHE_SIZE, ttl: float = CACHE_TTL):
        self._seen: TTLCache[tuple[str, str, str | None, str], bool | None] = TTLCache(size, ttl)

    async def annotate(self, member: Member, namespace: str | None, deps: list[dict[str, Any]], allow: Allow) -> None:
        """Set `exists` on each entry of `deps` (an answer's `dependencies`) in place."""
        for dep in deps[MAX_CHECKS:]:
            dep["exists"] = None
        found = await asyncio.gather(*(self._exists(member, namespace, d, allow) for d in deps[:MAX_CHECKS]))
        for dep, exists in zip(deps, found, strict=False):
            dep["exists"] = exists

    async def _resource(self, member: Member, kind: str) -> Resource | None:
        group, versions, _ = KINDS[kind]
        kube = member.kube
        if kube is None:
            return None
        for v in versions:
            try:
                res = await kube.resource((group, v, kind))
            except KubeError:
                return None
            if res is not None:
                return res
        return None

    async def _exists(self, member: Member, namespace: str | None, dep: dict[str, Any], allow: Allow) -> bool | None:
        kind, name = dep.get("kind"), dep.get("name")
        if kind not in KINDS or not isinstance(name, str):
            return None
        res = await self._resource(member, kind)
        if res is None:
            return None
        ns = namespace if res.namespaced else None
        if res.namespaced and not ns:
            return None
        # The caller's right first, on every answer: the cache holds facts, not permissions.
        if not await allow("get", res, ns, name):
            return None
        key = (member.name, kind, ns, name)
        if key in self._seen:
            return self._seen[key]
        kube = member.kube
        if kube is None:
            return None
        try:
            await kube.request("GET", res.path(ns, name), headers={"Accept": PARTIAL_OBJECT})
            exists: bool | None = True
        except NotFound:
            exists = False
        except KubeError:  # the service may not look (403), or the cluster did not answer
            return None
        self._seen[key] = exists
        return exists
