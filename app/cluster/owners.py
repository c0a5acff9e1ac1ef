"""Which pods belong to which workload: the controller owner-reference chain (docs/karta-semantics.md).

A pod belongs to a workload iff, walking its controller chain, some level's owner references
(any of them) carry the workload's UID.  The walk follows only `controller: true` references,
checks the UID at every hop (a re-created owner of the same name is another object), and gives
up after 6 hops or when an owner cannot be read.  Labels never decide membership.

Owners are read with one metadata-only list per (resource, namespace), shared by every pod of
the namespace, so attributing N pods costs a handful of calls, not N walks of GETs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .kube import Kube, KubeError

MAX_HOPS = 6
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


def _gvk_of(ref: dict[str, Any]) -> tuple[str, str, str]:
    api = str(ref.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    return group, version, str(ref.get("kind") or "")


def controller_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


class OwnerIndex:
    """Owner metadata of one namespace, read lazily and cached for one request (failures too)."""

    def __init__(self, kube: Kube, namespace: str | None):
        self.kube, self.namespace = kube, namespace
        self._lists: dict[tuple[str, str, str], asyncio.Future[dict[str, dict[str, Any]] | None]] = {}

    async def _owners(self, gvk: tuple[str, str, str]) -> dict[str, dict[str, Any]] | None:
        fut = self._lists.get(gvk)
        if fut is None:
            fut = asyncio.ensure_future(self._read(gvk))
            self._lists[gvk] = fut
        return await fut

    async def _read(self, gvk: tuple[str, str, str]) -> dict[str, dict[str, Any]] | None:
        try:
            res = await self.kube.resource(gvk)
            if res is None:
                return None
            lst = await self.kube.list(
                res, self.namespace if res.namespaced else None, headers={"Accept": PARTIAL_LIST}
            )
        except KubeError:
            return None  # read failures count as "not owned" (reference rule)
        owners: dict[str, dict[str, Any]] = {}
        for o in lst["items"]:
            meta = o.get("metadata") or {}
            if meta.get("name") is not None:  # every object has one; a reference could not name one without
                owners[meta["name"]] = meta
        return owners

    async def owner(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        """The owner's metadata, if it exists with the UID the reference names (not a re-created one)."""
        owners = await self._owners(_gvk_of(ref))
        name = ref.get("name")
        owner = (owners or {}).get(name) if name is not None else None  # a reference without a name has none
        return owner if owner is not None and owner.get("uid") == ref.get("uid") else None

    async def chain(self, meta: dict[str, Any]) -> set[str]:
        """Its own UID (a bare Pod is its own workload) and every UID named by any owner
        reference along the controller chain of `meta`."""
        uids: set[str] = {str(meta["uid"])} if meta.get("uid") else set()
        level = meta
        for _ in range(MAX_HOPS + 1):
            refs = [r for r in level.get("ownerReferences") or [] if isinstance(r, dict)]
            uids.update(str(r.get("uid")) for r in refs if r.get("uid"))
            ctrl = controller_of(level)
            owner = await self.owner(ctrl) if ctrl else None
            if owner is None:
                return uids
            level = owner
        return uids  # chain longer than 6 links: stop here

    async def nested(self, meta: dict[str, Any], covered: set[tuple[str, str]]) -> bool:
        """Whether some level of the controller chain is a kind with a definition (then the
        object is part of that workload, not a workload of its own).  A covered controller is
        recognised from the reference alone; uncovered owners (a ReplicaSet) are read."""
        level = meta
        for _ in range(MAX_HOPS):
            ctrl = controller_of(level)
            if ctrl is None:
                return False
            group, _, kind = _gvk_of(ctrl)
            if (group, kind) in covered:
                return True
            owner = await self.owner(ctrl)
            if owner is None:
                return False
            level = owner
        return False

    async def chains(self, metas: list[dict[str, Any]]) -> list[set[str]]:
        return list(await asyncio.gather(*(self.chain(m) for m in metas)))
