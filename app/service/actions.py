"""Acting on workloads (with --actions true): suspend, resume, scale, restart (their new objects:
`suspending` here, updates.scaling / updates.restarting), and applying an update's patch.

Every write follows the same steps:

1. the caller's `patch` right on the object, in the cluster that holds it, is asked before the
   object is read (auth.require_patch), so a refusal is the same whether or not it exists;
2. the object is read from the API server (never the live model, which keeps only what
   definitions read) with the caller's `get` right;
3. the new object is computed (engine/suspend.py, engine/replicas.py, engine/restart.py) and the difference sent as
   ONE JSON patch led by a test of the resourceVersion read (cluster/writes.py): a concurrent
   change is a 409 and nothing is written.

The audit line of the request lists the `patch` check with the caller's name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..cluster.kube import Resource
from ..cluster.reader import Allow, LookupFailed
from ..cluster.workloads import Workloads
from ..cluster.writes import WriteFailed, guard, guarded_patch
from ..engine.suspend import ActionError, NoSuspendDefinition, apply_actions
from ..engine.update import make_patch
from ..fleet.member import Member
from ..karta.load import Definition
from . import fleet_reads
from .auth import may_not_patch
from .problems import ProblemError
from .service import Service

if TYPE_CHECKING:  # the service calls these: a type only
    from .service import Service

OFF = "actions are off (--actions): this service does not write to workloads"


def need_actions(service: Service) -> None:
    """403 unless the service was started with --actions true."""
    if not service.settings.actions:
        raise ProblemError(403, "actions-disabled", "Actions are disabled", OFF)


def direct(service: Service, member: Member) -> Workloads:
    """The member's API-server reader (writes read what is stored, not the model's projection)."""
    reader = service.reader(member, whole=True)
    assert isinstance(reader, Workloads)
    return reader


def write_problem(e: WriteFailed) -> ProblemError:
    if e.status == 403:  # the caller may patch, the service's own account may not: a deployment problem
        return ProblemError(
            503,
            "service-forbidden",
            "Service unavailable",
            f"the service account is {e.message[0].lower()}{e.message[1:]} (the chart grants "
            "`patch` on the catalog's kinds with config.actions: true)",
        )
    titles = {409: "Conflict", 404: "Workload not found", 422: "Patch refused", 503: "Service unavailable"}
    return ProblemError(e.status, e.slug, titles.get(e.status, "Error"), e.message)


async def patch_object(
    member: Member, res: Resource, namespace: str | None, name: str, old: dict[str, Any], ops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Send `ops` guarded by `old`'s resourceVersion; the object as stored after (409 on a conflict)."""
    rv = (old.get("metadata") or {}).get("resourceVersion")
    if not isinstance(rv, str) or not rv:
        raise ProblemError(422, "unguarded-patch", "Patch refused", "the object read has no resourceVersion")
    assert member.kube is not None
    try:
        return await guarded_patch(member.kube, res, namespace, name, guard(ops, rv))
    except WriteFailed as e:
        raise write_problem(e) from None


async def _member(
    service: Service,
    state: dict[str, Any],
    cluster: str | None,
    namespace: str,
    name: str,
    kind: str | None,
    api_version: str | None,
) -> Member:
    if cluster is None and service.fleet_mode:  # the one cluster holding it, as GET finds it
        return await fleet_reads.find_in_fleet(
            service.members(None),
            namespace,
            name,
            kind,
            api_version,
            lambda m: service.auth.rights(state, m),
            lambda m: service.reader(m, kind, api_version, namespace),
        )
    return service.member(cluster)


async def _patchable(
    reader: Workloads, allow: Allow, namespace: str, name: str, kind: str | None, api_version: str | None
) -> tuple[list[Resource], list[Resource]]:
    """The kinds the name may belong to, and those the caller may patch it in (asked before any read)."""
    if kind and api_version:
        res = await reader.resource(api_version, kind)
        kinds = [res] if res is not None else []
    else:
        kinds = [k.resource for k in await reader.served(kind, api_version) if k.resource is not None]
    may = await asyncio.gather(*(allow("patch", r, namespace if r.namespaced else None, name) for r in kinds))
    return kinds, [r for r, ok in zip(kinds, may, strict=False) if ok]


def _may_not_patch(kinds: list[Resource], namespace: str, kind: str | None) -> ProblemError:
    if len(kinds) == 1:
        return may_not_patch(kinds[0], namespace if kinds[0].namespaced else None)
    return ProblemError(
        403,
        "forbidden",
        "Forbidden",
        f"not allowed to patch any workload kind{' named ' + repr(kind) if kind else ''} in namespace {namespace}",
    )


Compute = Callable[[Definition, dict[str, Any]], Awaitable[dict[str, Any]]]  # the object after the action


async def act(
    service: Service,
    state: dict[str, Any],
    which: str,
    cluster: str | None,
    namespace: str,
    name: str,
    kind: str | None,
    api_version: str | None,
    pods: bool,
    compute: Compute,
) -> bytes:
    """POST .../workloads/{ns}/{name}/<which>: the object `compute` makes of the one stored, as one
    guarded patch; the live interpretation read after it."""
    need_actions(service)
    service.need_cluster("live workloads")
    member = await _member(service, state, cluster, namespace, name, kind, api_version)
    allow = service.auth.rights(state, member)
    try:
        reader = direct(service, member)
        kinds, patchable = await _patchable(reader, allow, namespace, name, kind, api_version)
        if kinds and not patchable:
            raise _may_not_patch(kinds, namespace, kind)

        async def allow_read(verb: str, res: Resource, ns: str | None, obj: str | None) -> bool:
            # look only where the caller may patch: a name is never found in a kind they may not change
            return (verb != "get" or res in patchable) and await allow(verb, res, ns, obj)

        found = await reader.locate(namespace, name, kind, api_version, allow=allow_read, with_pods=pods)
        d = reader.definition_for(found.resource.gvk)
    except LookupFailed as e:
        raise service.explained(e, namespace, name, kind) from None
    obj = await reader.body(found)
    state["definition"] = d.name
    new = await compute(d, obj)
    res, ns = found.resource, found.namespace or None
    ops = make_patch(obj, new)
    if ops:  # already suspended (resumed, at that scale): nothing to write
        await patch_object(member, res, ns, name, obj, ops)
    try:
        body = await reader.describe(namespace, name, res.kind, res.api_version, with_pods=pods, allow=allow)
    except LookupFailed as e:
        raise service.explained(e, namespace, name, kind) from None
    out = orjson.loads(body)
    out["action"] = {"name": which, "changed": bool(ops)}
    return orjson.dumps(out)


def suspending(which: str) -> Compute:
    """The definition's suspendDefinition actions (suspend | resume)."""

    async def compute(d: Definition, obj: dict[str, Any]) -> dict[str, Any]:
        try:
            return apply_actions(d, obj, which)
        except NoSuspendDefinition as e:
            raise ProblemError(422, "no-suspend-definition", "No suspendDefinition", str(e)) from None
        except ActionError as e:
            raise ProblemError(
                422,
                "invalid-suspend-action",
                "Invalid suspend action",
                f"the definition {d.name}: {e}",
                [{"path": e.field, "message": e.message}],
            ) from None

    return compute


async def authorize_apply(service: Service, state: dict[str, Any], ref: dict[str, Any]) -> tuple[Member, Resource]:
    """`/interpret/update?apply=true`: the cluster and kind of the ref, and the caller's `patch`
    right there, asked before the object is read."""
    need_actions(service)
    member = await service.ref_member(ref, state)
    reader = direct(service, member)
    ns = ref.get("namespace")
    try:
        res = await reader.resource(ref["apiVersion"], ref["kind"])
    except LookupFailed as e:
        raise service.explained(e, ns or "", ref["name"], ref["kind"]) from None
    if res is None:
        raise ProblemError(
            404, "kind-not-served", "Not found", f"{ref['kind']} ({ref['apiVersion']}) is not served by this cluster"
        )
    await service.auth.require_patch(state, member, res, ns if res.namespaced else None, ref["name"])
    return member, res
