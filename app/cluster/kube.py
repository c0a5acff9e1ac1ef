"""A small async Kubernetes client: raw JSON in and out, discovery with a negative cache, watch.

kubernetes-asyncio supplies configuration (kubeconfig, in-cluster token refresh), TLS and the
HTTP session; we call `ApiClient.call_api` with `_preload_content=False` and read the body
ourselves (orjson), because the interpreter wants plain dicts, not generated models, and
because every workload kind is a custom resource anyway.

Discovery is ours, not `dynamic.LazyDiscoverer`: that one throws its whole cache away on a
miss, so a request naming an unknown kind would re-discover the cluster each time.  Here one
group-version is fetched at most once per TTL (concurrent callers share the fetch), and misses
are remembered for a shorter TTL.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import yaml

log = logging.getLogger("wlmap.kube")

GVK = tuple[str, str, str]  # (group, version, kind); group "" is the core group


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def in_cluster() -> bool:
    """Running in a pod with a service account token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(f"{SA_DIR}/token")


def pod_namespace() -> str | None:
    try:
        with open(f"{SA_DIR}/namespace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def kubeconfig_namespace(kubeconfig: str | None, context: str | None = None) -> str | None:
    """The namespace of the kubeconfig's context (`context`, else the current one).  Without a
    path, $KUBECONFIG's files or ~/.kube/config, merged as kubectl does: the first to set wins."""
    paths = (
        [kubeconfig]
        if kubeconfig
        else [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p] or [str(Path.home() / ".kube/config")]
    )
    current, contexts = context, {}
    for p in paths:
        try:
            doc = yaml.safe_load(Path(p).read_text())
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(doc, dict):
            continue
        current = current or doc.get("current-context")
        for c in doc.get("contexts") or []:
            if isinstance(c, dict) and c.get("name") not in contexts:
                contexts[c.get("name")] = c.get("context") or {}
    ns = (contexts.get(current) or {}).get("namespace")
    return str(ns) if ns else None


class KubeError(Exception):
    """An API call failed.  `status` is the HTTP status (0: no answer from the server)."""

    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class NotFound(KubeError):
    pass


class Forbidden(KubeError):
    pass


class Gone(KubeError):
    """410: the resourceVersion is too old; list again."""


class Unavailable(KubeError):
    """No answer (connection refused, timeout, 5xx)."""


def _error(status: int, body: bytes | None, what: str) -> KubeError:
    reason, message = "", ""
    if body:
        try:
            st = orjson.loads(body)
            if isinstance(st, dict):
                reason, message = str(st.get("reason") or ""), str(st.get("message") or "")
        except orjson.JSONDecodeError:
            message = body[:200].decode("utf-8", "replace")
    message = message or f"{what}: HTTP {status}"
    cls = {404: NotFound, 403: Forbidden, 410: Gone}.get(status)
    if cls is None:
        cls = Unavailable if status >= 500 or status == 0 else KubeError
    return cls(status, reason, message)


@dataclass(frozen=True)
class Resource:
    """A served resource: where its objects live."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvk(self) -> GVK:
        return (self.group, self.version, self.kind)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        return base


PODS = Resource("", "v1", "Pod", "pods", True)
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
EVENTS = Resource("", "v1", "Event", "events", True)
NODES = Resource("", "v1", "Node", "nodes", False)
KARTAS = Resource("run.ai", "v1alpha1", "Karta", "kartas", False)
CRDS = Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)


@dataclass
class _GroupVersion:
    resources: dict[str, Resource] | None  # kind -> resource; None: the group-version is not served
    expires: float
    fetched: float = 0.0


class Discovery:
    """GVK -> Resource, per group-version, with positive and negative TTLs and single flight."""

    def __init__(self, kube: Kube, ttl: float = 300.0, negative_ttl: float = 30.0):
        self.kube, self.ttl, self.negative_ttl = kube, ttl, negative_ttl
        self._gv: dict[tuple[str, str], _GroupVersion] = {}
        self._inflight: dict[tuple[str, str], asyncio.Future[_GroupVersion]] = {}
        self.fetches = 0  # group-version documents fetched (tests and metrics read it)

    async def resource(self, gvk: GVK) -> Resource | None:
        group, version, kind = gvk
        if not version or not kind:
            return None
        gv = await self._group_version(group, version)
        if gv.resources is not None and kind not in gv.resources and gv.fetched + self.negative_ttl < time.monotonic():
            # A kind missing from a served group-version (a CRD version added since): look again,
            # but no more often than the negative TTL, whatever the request rate.
            self.forget(group, version)
            gv = await self._group_version(group, version)
        if gv.resources is None:
            return None
        return gv.resources.get(kind)

    def forget(self, group: str, version: str) -> None:
        self._gv.pop((group, version), None)

    def forget_group(self, group: str) -> None:
        """A CRD of this group changed: its versions and kinds may have too."""
        for gv in [gv for gv in self._gv if gv[0] == group]:
            del self._gv[gv]

    async def _group_version(self, group: str, version: str) -> _GroupVersion:
        key = (group, version)
        now = time.monotonic()
        cached = self._gv.get(key)
        if cached is not None and cached.expires > now:
            return cached
        fut = self._inflight.get(key)
        if fut is not None:
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            gv = await self._fetch(group, version)
            self._gv[key] = gv
            fut.set_result(gv)
            return gv
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: waiters get it, nobody logs "never retrieved"
            raise
        finally:
            del self._inflight[key]

    async def _fetch(self, group: str, version: str) -> _GroupVersion:
        self.fetches += 1
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = await self.kube.request("GET", path)
        except NotFound:
            return _GroupVersion(None, time.monotonic() + self.negative_ttl, time.monotonic())
        found: dict[str, Resource] = {}
        for r in doc.get("resources") or []:
            name = r.get("name") or ""
            if "/" in name or not r.get("kind"):
                continue  # subresources (status, scale, ...)
            found.setdefault(r["kind"], Resource(group, version, r["kind"], name, bool(r.get("namespaced"))))
        return _GroupVersion(found, time.monotonic() + self.ttl, time.monotonic())


class Kube:
    """One connection to an API server."""

    def __init__(self, api_client: Any, *, request_timeout: float = 30.0):
        self.api = api_client
        self.request_timeout = request_timeout
        self.discovery = Discovery(self)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, request_timeout: float = 30.0
    ) -> Kube:
        """From the operator's kubeconfig file, else the in-cluster service account, else
        ~/.kube/config, with the client library's full kubeconfig support (exec plugins, token
        files...).  Never for a cluster Secret's kubeconfig: that is data (fleet/secret_kubeconfig)."""
        from kubernetes_asyncio import client, config

        cfg = client.Configuration()
        if kubeconfig or context or not in_cluster():
            await config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=cfg, persist_config=False
            )
        else:
            config.load_incluster_config(client_configuration=cfg)
        return cls(client.ApiClient(configuration=cfg), request_timeout=request_timeout)

    async def close(self) -> None:
        await self.api.close()

    # -- raw calls ------------------------------------------------------------------------
    async def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        timeout: Any,
        headers: dict[str, str] | None = None,
    ) -> Any:
        params = [(k, _q(v)) for k, v in (query or {}).items() if v is not None]
        hdrs = {"Accept": "application/json", "Content-Type": "application/json", **(headers or {})}
        try:
            return await self.api.call_api(
                path,
                method,
                query_params=params,
                header_params=hdrs,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout if timeout is not None else self.request_timeout,
            )
        except TimeoutError:
            raise Unavailable(0, "Timeout", f"{method} {path}: the API server did not answer in time") from None
        except OSError as e:  # aiohttp.ClientConnectionError is an OSError
            raise Unavailable(0, "Unreachable", f"{method} {path}: cannot reach the API server: {e}") from None
        except Exception as e:
            import aiohttp

            if isinstance(e, aiohttp.ClientError):
                raise Unavailable(0, "Unreachable", f"{method} {path}: {e}") from None
            raise

    async def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        resp = await self._send(method, path, query, body, timeout, headers)
        try:
            data = await resp.read()
        except TimeoutError:
            raise Unavailable(0, "Timeout", f"{method} {path}: the API server did not answer in time") from None
        finally:
            resp.release()
        if not 200 <= resp.status < 300:
            raise _error(resp.status, data, f"{method} {path}")
        return orjson.loads(data) if data else None

    # -- typed helpers --------------------------------------------------------------------
    async def resource(self, gvk: GVK) -> Resource | None:
        return await self.discovery.resource(gvk)

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return await self.request("GET", res.path(namespace, name))

    async def json_patch(
        self, res: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """An RFC 6902 patch of one object (the object as stored after it)."""
        return await self.request(
            "PATCH", res.path(namespace, name), body=ops, headers={"Content-Type": "application/json-patch+json"}
        )

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int = 500,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """All pages of a list: {"items": [...], "metadata": {"resourceVersion": ...}}."""
        items: list[Any] = []
        rv_out = None
        async for page, rv_out in self.pages(  # noqa: B007 - the last page's version is read after the loop
            res,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            limit=limit,
            headers=headers,
        ):
            items += page
        return {"items": items, "metadata": {"resourceVersion": rv_out}}

    async def pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int = 500,
        headers: dict[str, str] | None = None,
    ) -> AsyncIterator[tuple[builtins.list[Any], str]]:  # the method `list` shadows the type here
        """A list page by page, with the list's resourceVersion: a consumer that keeps a little of
        each object never holds the whole list (8,000 pods are ~70 MB of JSON, ~500 MB as dicts)."""
        cont: str | None = None
        rv_out = ""
        while True:
            q = {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "limit": limit,
                "continue": cont,
                "resourceVersion": resource_version if cont is None else None,
            }
            doc = await self.request("GET", res.path(namespace), q, headers=headers)
            items = doc.get("items") or []
            for item in items:
                # list items carry no apiVersion/kind on the wire; interpretation needs them
                if isinstance(item, dict) and "kind" not in item:
                    item["apiVersion"], item["kind"] = res.api_version, res.kind
            meta = doc.get("metadata") or {}
            rv_out = meta.get("resourceVersion") or rv_out
            cont = meta.get("continue")
            del doc
            yield items, rv_out
            if not cont:
                return

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 240,
        headers: dict[str, str] | None = None,
        on_connected: Callable[[], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Events `{type, object}` until the server ends the watch (timeout_seconds).

        Raises `Gone` on 410 (as an HTTP status or an ERROR event): the caller lists again.
        Reads by chunks and splits lines itself, so an object larger than aiohttp's line
        buffer (ConfigMaps reach 1 MiB) does not break the stream."""
        q = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": timeout_seconds,
        }
        import aiohttp

        resp = await self._send(
            "GET",
            res.path(namespace),
            q,
            None,
            aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_seconds + 30),
            headers,
        )
        try:
            if not 200 <= resp.status < 300:
                raise _error(resp.status, await resp.read(), f"watch {res.path(namespace)}")
            if on_connected is not None:
                on_connected()
            buf = b""
            try:
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    if b"\n" not in chunk:
                        continue
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield _event(line)
            except (TimeoutError, aiohttp.ClientError) as e:
                raise Unavailable(0, "WatchBroken", f"watch {res.path(namespace)} broke: {e}") from None
            if buf.strip():
                yield _event(buf)
        finally:
            resp.release()


def _event(line: bytes) -> dict[str, Any]:
    ev = orjson.loads(line)
    if ev.get("type") == "ERROR":
        st = ev.get("object") or {}
        raise _error(int(st.get("code") or 500), orjson.dumps(st), "watch")
    return ev


def _q(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
