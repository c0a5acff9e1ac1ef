"""How a read is shown to its caller, written once for every reader (the API server, the live
model, the store): which rows of a list the caller may see, whether a diagnosis shows Warning
Events, and the envelope of one workload's answer (its cluster, how fresh it is).

Readers differ in where rows and answers come from; what the caller is shown of them is decided
here, so the three give the same answer to the same caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .kube import EVENTS, PODS, Resource
from .reader import Allow, Known, matches_token, version_rank

Visible = "bool | set[str]"  # True: everywhere asked; a set: only these namespaces; False: nowhere
# The namespaces that hold objects, or how to find them: a list of every row need not walk the
# rows for them when the caller may list everywhere (the common case)
Present = set[str] | Callable[[], set[str]]


async def visibility(
    allow: Allow, res: Resource, namespace: str | None, present: Present, warnings: list[str], what: str | None = None
) -> bool | set[str]:
    """Where the caller may list `res` for a list of `namespace` (None: all namespaces).  A
    caller without a cluster-wide right still sees the namespaces it may list, as it could by
    listing them one by one itself; `present` are the namespaces that hold objects."""
    ns = namespace if res.namespaced else None
    if await allow("list", res, ns, None):
        return True
    label = what or f"{res.plural}, so the result leaves {res.kind} out"
    if ns is None and res.namespaced:
        held = present() if callable(present) else present
        allowed = {n for n in sorted(held) if n and await allow("list", res, n, None)}
        if allowed:
            warnings.append(
                f"not allowed to list {res.plural} in every namespace, so the result shows "
                f"{'ready counts' if res is PODS else res.kind} only where it is allowed"
            )
            return allowed
    warnings.append(f"not allowed to list {label}")
    return False


def visible_in(vis: bool | set[str], namespace: str | None) -> bool:
    return vis is True or (isinstance(vis, set) and (namespace or "") in vis)


def namespaces_of(rows: Iterable[dict[str, Any]]) -> set[str]:
    """The namespaces of summary rows (or of objects: their metadata's)."""
    return {str((r.get("workload") or r.get("metadata") or {}).get("namespace") or "") for r in rows}


# -- one workload's diagnosis ---------------------------------------------------------------


def not_allowed_events(namespace: str | None) -> str:
    return (
        f"not allowed to list events{' in namespace ' + namespace if namespace else ''}, so the diagnosis "
        "leaves Events out"
    )


async def events_shown(allow: Allow, namespace: str | None, notes: list[str] | None) -> bool:
    """Whether a workload's diagnosis reads its Warning Events: the caller's right to list Events
    where the workload is decides (for every reader, here only).  When it may not, `notes` (the
    answer's warnings) say so; None where no Events are read for anyone."""
    if await allow("list", EVENTS, namespace, None):
        return True
    if notes is not None:
        notes.append(not_allowed_events(namespace))
    return False


def with_diagnosis(body: bytes, entries: bytes, notes: list[str]) -> bytes:
    """A live answer (JSON) with its diagnosis (JSON) added, and the notes `events_shown` made."""
    body = body[:-1] + b',"diagnosis":' + entries + b"}"
    if not notes:
        return body
    out = orjson.loads(body)  # rare: a caller who may read pods but not Events
    out["warnings"] = [*out.get("warnings", []), *notes]
    return orjson.dumps(out)


def enveloped(body: bytes, cluster: str | None, freshness: dict[str, Any] | None) -> bytes:
    """One workload's answer (JSON) as every reader sends it: its cluster first (in a fleet), how
    fresh it is last (None: left out; a stream compares states, and the time of each would make
    every one differ)."""
    if cluster:
        body = b'{"cluster":' + orjson.dumps(cluster) + b"," + body[1:]
    if freshness is not None:
        body = body[:-1] + b',"freshness":' + orjson.dumps(freshness) + b"}"
    return body


# -- lists ----------------------------------------------------------------------------------


def sort_rows(items: list[dict[str, Any]]) -> None:
    items.sort(key=lambda r: (r["workload"].get("namespace") or "", r["workload"]["name"], r["workload"]["kind"]))


async def events_visibility(
    allow: Allow, namespace: str | None, present: Present, warnings: list[str]
) -> bool | set[str]:
    """Where the caller may list the Events the rows' reasons read (as `visibility`), said once."""
    vis = await visibility(allow, EVENTS, namespace, present, [], None)
    if vis is not True:
        warnings.append(
            "not allowed to list events"
            + ("" if vis is False else " in every namespace")
            + ", so reasons are shown only where pods and events may be listed"
        )
    return vis


async def pods_visibility(
    allow: Allow, namespace: str | None, present: Present, warnings: list[str]
) -> bool | set[str]:
    """Where the caller may list the pods the rows' ready counts read (as `visibility`)."""
    return await visibility(allow, PODS, namespace, present, warnings, "pods, so ready counts are left out")


class ListRules:
    """The rules of one list (GET /workloads) for one caller, whatever reader holds the rows:
    which kinds it covers, which rows and parts of rows the caller may see, and the warnings
    that say what was left out.  The direct reader lists the API server and asks these before
    it lists; the model and the store hold rows and filter them with these."""

    def __init__(self, allow: Allow, namespace: str | None, kind: str | None):
        self.allow, self.namespace, self.kind = allow, namespace, kind
        self.warnings: list[str] = []

    def kinds(self, known: Iterable[Known]) -> list[Known]:
        """The served kinds the list covers: those `kind` names (all without it), one per
        group/kind at its best served version."""
        served = [k for k in known if k.resource is not None and (not self.kind or matches_token(self.kind, k))]
        if self.kind and not served:
            self.warnings.append(f'no served kind with a definition matches "{self.kind}"')
        best: dict[tuple[str, str], Known] = {}
        for k in served:
            gk = (k.gvk[0], k.gvk[2])
            if gk not in best or version_rank(k.gvk[1]) > version_rank(best[gk].gvk[1]):
                best[gk] = k
        return list(best.values())

    def scope(self, res: Resource) -> str | None:
        return self.namespace if res.namespaced else None

    def unlisted(self, kind: str, why: object) -> None:
        """A kind the reader itself could not list: the list leaves it out, and says so."""
        self.warnings.append(f"cannot list {kind}: {why}")

    def in_namespace(self, row: dict[str, Any]) -> bool:
        return self.namespace is None or (row["workload"].get("namespace") or None) in (self.namespace, None)

    def of_namespace(self, rows: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        """The rows `in_namespace` (all of them for a list of every namespace, untested)."""
        return rows if self.namespace is None else filter(self.in_namespace, rows)

    async def listable(self, res: Resource) -> bool | None:
        """Before a list of `res`: True, the caller may list it where asked; False, nowhere (the
        warning is said); None, only in some namespaces (`visible` says which, once listed)."""
        if await self.allow("list", res, self.scope(res), None):
            return True
        if self.namespace is not None or not res.namespaced:
            self.warnings.append(f"not allowed to list {res.plural}, so the result leaves {res.kind} out")
            return False
        return None

    async def visible(self, res: Resource, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows (or objects) of kind `res` the caller may list."""
        vis = await visibility(self.allow, res, self.namespace, lambda: namespaces_of(rows), self.warnings)
        if vis is True:
            return rows
        return [r for r in rows if visible_in(vis, (r.get("workload") or r.get("metadata") or {}).get("namespace"))]

    async def pods(self, present: Present) -> bool | set[str]:
        return await pods_visibility(self.allow, self.namespace, present, self.warnings)

    async def events(self, present: Present) -> bool | set[str]:
        return await events_visibility(self.allow, self.namespace, present, self.warnings)

    async def hide_unseen(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows as this caller may see them: the ready count only where it may list pods, the
        reason (read from pods and Events) only where it may list both."""
        if not rows:
            return rows
        held: list[set[str]] = []

        def present() -> set[str]:  # walked once, and only for a caller with rights in some namespaces
            if not held:
                held.append(namespaces_of(rows))
            return held[0]

        pods = await self.pods(present)
        events: bool | set[str] = True
        if any(r.get("reason") for r in rows):
            events = await self.events(present)
        if pods is True and events is True:
            return rows
        out = []
        for r in rows:
            ns = r["workload"].get("namespace")
            if not visible_in(pods, ns):
                r = dict(r, pods=dict(r["pods"], ready=None), reason=None)
            elif r.get("reason") and not visible_in(events, ns):
                r = dict(r, reason=None)
            out.append(r)
        return out

    def result(
        self, items: list[dict[str, Any]], freshness: dict[str, Any], watched: list[str] | None = None
    ) -> dict[str, Any]:
        """The list: rows in order, each warning once; `watched`: the namespaces a model is
        limited to (a list of every namespace says so)."""
        sort_rows(items)
        if watched is not None and self.namespace is None:
            self.warnings.append("this service watches namespaces " + ", ".join(watched) + " only")
        return {"items": items, "warnings": sorted(set(self.warnings)), "freshness": freshness}
