"""`POST /interpret/update`: a workload with labels, a scheduler, tolerations... written into every
pod of its chosen components, and the JSON patch that makes it (app/engine/update.py).

The object comes as `POST /interpret` takes it (sent, or read by `ref` with the caller's
rights; from the API server, never the live model, which keeps only what definitions read), and is interpreted
before and after the rewrite (through the evaluator: a definition
that is not built in runs in a worker, under the deadline).  A rewrite whose interpretation
differs from the original's other than by the set fields is refused: nothing is returned that
would not read back.  With `apply=true` (a `ref`, --actions true) the patch is then applied as
suspend's is (actions.py: the caller's `patch` right asked before the read, 409 on a conflict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.replicas import Revised, revise
from ..engine.restart import NotRestartable, restart_set
from ..engine.update import UpdateError
from ..karta.load import Definition
from . import actions
from .models import UpdateRequest
from .problems import ProblemError, envelope
from .service import Read, Service

if TYPE_CHECKING:  # the service calls these: a type only
    from .service import Service

MAX_NAMED = 5  # differences named in a read-back refusal's detail (all are in `errors`)


def _refused(e: UpdateError) -> ProblemError:
    return ProblemError(422, "update-refused", "Update refused", e.message, [e.as_error()])


def not_read_back(moved: list[str]) -> ProblemError:
    return ProblemError(
        422,
        "update-does-not-read-back",
        "Update does not read back",
        "the rewritten object would not read back as set (nothing was written): its interpretation also "
        f"changes at {', '.join(moved[:MAX_NAMED])}"
        + (f" and {len(moved) - MAX_NAMED} more" if len(moved) > MAX_NAMED else "")
        + '; a location shared with another component? name them all in "components" (a count: '
        "one that other components' counts are computed from)",
        [{"path": p, "message": "differs after the rewrite"} for p in moved],
    )


async def revision(
    service: Service,
    d: Definition,
    obj: dict[str, Any],
    set_: dict[str, Any] | None,
    components: list[str] | None,
    replicas: dict[str, int] | None,
) -> tuple[dict[str, Any], Revised]:
    """The interpretation of `obj` and its revision (engine/replicas.revise) that reads back; 422
    when refused or when it would not read back."""
    before = await service.evaluate(d, obj, None)
    try:
        done = await revise(d, obj, before, set_, components, replicas, lambda o: service.evaluate(d, o, None))
    except UpdateError as e:
        raise _refused(e) from None
    if done.moved:
        raise not_read_back(done.moved)
    return before, done


def scaling(service: Service, replicas: dict[str, int]) -> actions.Compute:
    """POST .../scale: the counts written through each component's replicasPath, refused as
    `POST /interpret/update`'s `replicas` are."""

    async def compute(d: Definition, obj: dict[str, Any]) -> dict[str, Any]:
        return (await revision(service, d, obj, None, None, replicas))[1].rewrite.object

    return compute


def restarting(service: Service) -> actions.Compute:
    """POST .../restart: `kubectl.kubernetes.io/restartedAt` written into every pod template, for
    the kinds whose controller rolls pods on a template change (engine/restart.py)."""

    async def compute(d: Definition, obj: dict[str, Any]) -> dict[str, Any]:
        try:
            set_ = restart_set(d)
        except NotRestartable as e:
            raise ProblemError(422, "restart-not-supported", "Restart not supported", str(e)) from None
        return (await revision(service, d, obj, set_, None, None))[1].rewrite.object

    return compute


async def update_doc(service: Service, doc: Any, request_state: dict[str, Any], apply: bool = False) -> dict[str, Any]:
    env = envelope(
        UpdateRequest, doc, 'expected an object {"object" | "ref", "definition"?, "set" | "replicas", "components"?}'
    )
    if env.set_ is None and env.replicas is None:
        raise ProblemError(
            422,
            "invalid-request",
            "Invalid request",
            'nothing to write: give "set", "replicas" or both',
            [{"path": "set", "message": "give set or replicas"}],
        )
    set_ = env.set_.model_dump(exclude_none=True) if env.set_ is not None else None
    target = None
    if apply:
        actions.need_actions(service)
        if env.ref is None:
            raise ProblemError(
                422,
                "nothing-to-apply",
                "Nothing to apply to",
                'apply=true writes to a live object: give "ref", not "object"',
            )
        target = await actions.authorize_apply(service, request_state, env.ref.model_dump())  # before the read
    read = Read()  # (its freshness is now: read from the API server just now)
    obj, d = await service.subject(
        env,
        request_state,
        read,
        whole=True,  # a rewrite of a projection would lose fields
        member=target[0] if target else None,
    )
    cluster = read.cluster
    before, done = await revision(service, d, obj, set_, env.components, env.replicas)
    rw = done.rewrite
    out = {
        "object": rw.object,
        "patch": rw.patch,
        "changed": rw.changed,
        "components": rw.components,
        "writes": rw.writes,
        "definition": before["definition"],
        "totals": done.after.get("totals"),
    }
    if target is not None:
        member, res = target
        ref = env.ref
        applied = bool(rw.patch)
        if applied:  # the patch as returned: led by the test of the resourceVersion read
            out["object"] = await actions.patch_object(
                member, res, ref.namespace if res.namespaced else None, ref.name, obj, rw.patch
            )
        out["applied"] = applied
    return {"cluster": cluster, **out} if cluster is not None else out
