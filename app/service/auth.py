"""Authorization, in one place: who the caller is, what they may read, and what was decided.

The service reads clusters with its own, broader service account, so every read of cluster data
is made with the caller's rights, and those rights can only come from here:

* `authenticate` (the middleware's hook, with --auth kubernetes) turns the bearer token into a
  `Caller` (TokenReview in the home cluster) and opens the request's audit record.
* `rights(state, member)` is the caller's `Allow` in one cluster (SubjectAccessReview there).
  Readers take an `Allow` on every read (cluster/reader.py: no default), so a read cannot be
  written without one.  With auth on, a request state without a caller is refused (401), never
  read with the service's rights: a route that forgets to authenticate fails closed.
* `require_patch` is the right a write needs (suspend, resume, an applied update), asked before
  the object is read.
* `require_path` guards the service's own cluster-wide views (/clusters, /model,
  /metrics/workloads) as non-resource URLs, as kube-rbac-proxy guards metrics.
* "Cannot check" is one answer everywhere: 503 `cluster-unavailable`, never an allow.
* Every decision is recorded on the request; the middleware writes one audit line per request
  that read cluster data (`wlmap.audit`: user, route, clusters, namespaces, decision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..cluster.access import Access, AccessUnavailable, Caller, Unauthenticated
from ..cluster.kube import Resource
from ..cluster.reader import Allow, allow_all
from .problems import ProblemError

if TYPE_CHECKING:
    from ..fleet.member import Member

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="workload-map"'}
AUDIT_KEYS = 64  # distinct decisions recorded per request (a stream re-checks the same few)


def unavailable(e: AccessUnavailable | str) -> ProblemError:
    return ProblemError(503, "cluster-unavailable", "Service unavailable", str(e), headers={"Retry-After": "5"})


def unauthenticated(detail: str) -> ProblemError:
    return ProblemError(401, "unauthenticated", "Unauthorized", detail, headers=CHALLENGE)


def may_not_patch(res: Resource, namespace: str | None) -> ProblemError:
    return ProblemError(
        403,
        "forbidden",
        "Forbidden",
        f"not allowed to patch {res.plural}"
        f"{'.' + res.group if res.group else ''}{' in namespace ' + namespace if namespace else ''}",
    )


def bearer_token(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, rest = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and rest.strip():
                return rest.strip()
    return None


class Authorizer:
    """The service's one authority on callers' rights (`enabled`: --auth kubernetes)."""

    def __init__(self, enabled: bool, home_access: Callable[[], Access | None]):
        self.enabled = enabled
        self._home_access = home_access  # the home cluster's reviews (None until it is connected)

    # -- who ---------------------------------------------------------------------------------
    async def authenticate(self, scope: dict[str, Any]) -> None:
        """Middleware hook: the caller, from the bearer token (401 without a valid one)."""
        access = self._home_access()
        if access is None:
            raise ProblemError(
                503, "not-ready", "Not ready", "the cluster connection is starting", headers={"Retry-After": "2"}
            )
        token = bearer_token(scope)
        if token is None:
            raise unauthenticated("a bearer token is required (Authorization: Bearer <token>)")
        try:
            caller = await access.authenticate(token)
        except Unauthenticated as e:
            raise unauthenticated(str(e)) from None
        except AccessUnavailable as e:
            raise unavailable(e) from None
        scope["state"]["caller"] = caller
        scope["state"]["audit"] = {}

    def caller(self, state: dict[str, Any]) -> Caller | None:
        """The authenticated caller (None only with auth off); 401 when auth is on and there is none."""
        if not self.enabled:
            return None
        caller = state.get("caller")
        if not isinstance(caller, Caller):
            raise unauthenticated("this request carries no authenticated caller")
        return caller

    # -- what they may read ---------------------------------------------------------------------
    def rights(self, state: dict[str, Any], member: Member) -> Allow:
        """The caller's `Allow` in `member`'s cluster (auth off: everything the service can read)."""
        caller = self.caller(state)
        if caller is None:
            return allow_all
        access = member.access
        name = member.name
        record = _recorder(state)

        async def allow(verb: str, res: Resource, namespace: str | None, obj: str | None) -> bool:
            if access is None:
                raise unavailable(f"cluster {name} is connecting; access cannot be checked")
            try:
                ok = await access.allowed(caller, verb, res, namespace, obj)
            except AccessUnavailable as e:
                raise unavailable(e) from None
            record(name, verb, f"{res.plural}{'.' + res.group if res.group else ''}", namespace, ok)
            return ok

        return allow

    async def require_patch(
        self, state: dict[str, Any], member: Member, res: Resource, namespace: str | None, name: str
    ) -> None:
        """A write's right, asked before the object is read (so a refusal says nothing of whether it
        exists): `patch` on that object, in the cluster that holds it.  Recorded in the audit line."""
        if not await self.rights(state, member)("patch", res, namespace, name):
            raise may_not_patch(res, namespace)

    def substate(self, state: dict[str, Any]) -> dict[str, Any]:
        """A state for one part of a request (a batch item): the same caller and audit record."""
        return {k: state[k] for k in ("caller", "audit") if k in state}

    async def require_path(self, state: dict[str, Any], path: str, member: Member | None = None) -> None:
        """`get` on a non-resource URL of the home cluster (or `member`'s): 403 without it."""
        caller = self.caller(state)
        if caller is None:
            return
        access = member.access if member is not None else self._home_access()
        if access is None:
            raise unavailable("the cluster connection is starting; access cannot be checked")
        try:
            ok = await access.allowed_path(caller, "get", path)
        except AccessUnavailable as e:
            raise unavailable(e) from None
        _recorder(state)(member.name if member is not None else "", "get", path, None, ok)
        if not ok:
            raise ProblemError(403, "forbidden", "Forbidden", f"not allowed to get {path}")


def _recorder(state: dict[str, Any]) -> Callable[[str, str, str, str | None, bool], None]:
    audit: dict[tuple[str, str, str, str | None], bool] | None = state.get("audit")

    def record(cluster: str, verb: str, what: str, namespace: str | None, ok: bool) -> None:
        if audit is not None and (len(audit) < AUDIT_KEYS or (cluster, verb, what, namespace) in audit):
            audit[(cluster, verb, what, namespace)] = ok

    return record


def audit_fields(state: dict[str, Any], status: int) -> dict[str, Any] | None:
    """The audit line of a request that read cluster data (None: it read none).  `decision`:
    `deny` (refused), `allow` (every check allowed), `partial` (answered without what the caller
    may not read: kinds or namespaces left out of a list or a search)."""
    audit = state.get("audit")
    caller = state.get("caller")
    if not audit or not isinstance(caller, Caller):
        return None
    results = set(audit.values())
    checks = [
        {"cluster": c or None, "verb": v, "resource": w, "namespace": ns, "allowed": ok}
        for (c, v, w, ns), ok in audit.items()
    ]
    return {
        "user": caller.user,
        "groups": list(caller.groups),
        "decision": "deny" if status == 403 or results == {False} else "allow" if results == {True} else "partial",
        "clusters": sorted({c for c, *_ in audit if c}),
        "namespaces": sorted({ns for *_, ns in audit if ns}),
        "checks": checks,
    }
