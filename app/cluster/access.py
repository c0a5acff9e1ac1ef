"""Who is calling, and may they read this: TokenReview and SubjectAccessReview.

The service reads the cluster with its own service account, so it must not become a way
around RBAC: each caller's bearer token is checked by the API server (TokenReview), and each
read is allowed only if the caller could do it themselves (SubjectAccessReview).  Answers are
cached briefly (30 s; denials 5 s), keyed by a hash of the token, so a UI polling every second costs the API
server a review per half minute, not per request; tokens themselves are never stored or logged.
With audiences (--token-audience) the TokenReview asks for them and only a token issued for one
of them is accepted, so a token minted for another service cannot be replayed here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache

from .kube import Kube, KubeError, Resource


class Unauthenticated(Exception):
    pass


class AccessUnavailable(Exception):
    """The API server could not answer a review (the request fails closed, 503)."""


@dataclass(frozen=True)
class Caller:
    user: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


class Access:
    def __init__(
        self,
        kube: Kube,
        ttl: float = 30.0,
        deny_ttl: float = 5.0,
        size: int = 4096,
        audiences: list[str] | tuple[str, ...] = (),
    ):
        self.kube = kube
        # --token-audience: tokens must have been issued for one of these (empty: the API server's own).
        self.audiences = list(audiences)
        self._tokens: TTLCache[str, Caller | None] = TTLCache(size, ttl)
        # Allows are kept longer than denials, so a permission just granted works within seconds.
        self._allowed: TTLCache[tuple[Any, ...], bool] = TTLCache(size * 4, ttl)
        self._denied: TTLCache[tuple[Any, ...], bool] = TTLCache(size * 4, deny_ttl)
        self.reviews = 0  # reviews sent to the API server (tests read it)

    async def authenticate(self, token: str) -> Caller:
        key = hashlib.sha256(token.encode()).hexdigest()
        if key in self._tokens:
            caller = self._tokens[key]
        else:
            self.reviews += 1
            spec: dict[str, Any] = {"token": token}
            if self.audiences:
                spec["audiences"] = self.audiences
            try:
                review = await self.kube.request(
                    "POST",
                    "/apis/authentication.k8s.io/v1/tokenreviews",
                    body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec},
                )
            except KubeError as e:
                raise AccessUnavailable(f"cannot check the token with the API server: {e.message}") from None
            st = review.get("status") or {}
            caller = None
            # With audiences asked for, the answer must name one of them (an authenticator that
            # ignores audiences answers without, and its yes is not one for us).
            bound = not self.audiences or set(st.get("audiences") or ()) & set(self.audiences)
            if st.get("authenticated") and bound:
                u = st.get("user") or {}
                caller = Caller(
                    str(u.get("username") or ""),
                    str(u.get("uid") or ""),
                    tuple(u.get("groups") or ()),
                    tuple(sorted((k, tuple(v)) for k, v in (u.get("extra") or {}).items())),
                )
            self._tokens[key] = caller
        if caller is None:
            raise Unauthenticated("the bearer token is not valid")
        return caller

    async def allowed(
        self, caller: Caller, verb: str, res: Resource, namespace: str | None, name: str | None = None
    ) -> bool:
        attrs: dict[str, Any] = {"verb": verb, "group": res.group, "version": res.version, "resource": res.plural}
        if namespace:
            attrs["namespace"] = namespace
        if name:
            attrs["name"] = name
        return await self._review(
            caller, (caller, verb, res.group, res.plural, namespace, name), {"resourceAttributes": attrs}
        )

    async def allowed_path(self, caller: Caller, verb: str, path: str) -> bool:
        """A non-resource URL (as kube-rbac-proxy authorizes metrics scrapes)."""
        return await self._review(
            caller, (caller, verb, "nonResource", path), {"nonResourceAttributes": {"verb": verb, "path": path}}
        )

    async def _review(self, caller: Caller, key: tuple[Any, ...], attributes: dict[str, Any]) -> bool:
        if key in self._allowed:
            return True
        if key in self._denied:
            return False
        spec: dict[str, Any] = {"user": caller.user, "groups": list(caller.groups), **attributes}
        if caller.uid:
            spec["uid"] = caller.uid
        if caller.extra:
            spec["extra"] = {k: list(v) for k, v in caller.extra}
        self.reviews += 1
        try:
            review = await self.kube.request(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body={"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
            )
        except KubeError as e:
            raise AccessUnavailable(f"cannot check permissions with the API server: {e.message}") from None
        ok = bool((review.get("status") or {}).get("allowed"))
        (self._allowed if ok else self._denied)[key] = True
        return ok
