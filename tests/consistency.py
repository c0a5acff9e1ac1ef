"""Read-your-writes for tests against a service that answers from its live model.

The model follows the API server through watches, so a read right after a write may come a few
milliseconds early.  Every write the tests make through `Kubectl` records the resourceVersion
the API server gave it (`wrote`); before a request, a test client waits until the service's
model has applied at least that version (`settle`).  The model's lag itself is measured
elsewhere (benchmarks/cluster_bench.py, and the stream tests' time bounds).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.cluster.apiserver import TOKENS

# Kinds the model holds (with a definition, pods, owner kinds): writes of other kinds
# (namespaces, RBAC, ConfigMaps, CRDs) never show in its resourceVersion.
_UNWATCHED = {"Namespace", "ConfigMap", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Event",
              "ServiceAccount", "CustomResourceDefinition", "Karta", "Status", "PriorityClass", "Secret",
              "Service", "TokenRequest"}
_last: dict[str, int] = {}  # API server URL -> newest resourceVersion written there


def wrote(obj: Any, server: str) -> None:
    """Note the resourceVersion of an object a write to `server` returned."""
    if not isinstance(obj, dict) or obj.get("kind") in _UNWATCHED:
        return
    rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    if rv.isdigit():
        _last[server] = max(_last.get(server, 0), int(rv))


def settle(url: str, seen: list[int] | None = None, timeout: float = 3.0, token: str | None = None,
           cluster: str | None = None) -> None:
    """Wait until the service at `url` has applied the last write (no-op without a model); with
    `cluster`, that cluster's model (a service reading several)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            r = httpx.get(url + "/model" + (f"?cluster={cluster}" if cluster else ""), timeout=5,
                          headers={"Authorization": token} if token else None)
            if r.status_code == 403:  # a caller without `get /model`: the test's admin waits for it
                token = f"Bearer {TOKENS['admin'][0]}"
                continue
            st = r.json()
        except (httpx.HTTPError, ValueError):
            st = {}
        if not st.get("enabled"):
            return
        target = _last.get(str(st.get("server")), 0)
        if seen is not None and seen[0] >= target:
            return
        rv = (st.get("freshness") or {}).get("resourceVersion") or "0"
        if st.get("synced") and int(rv) >= target and not st.get("pending"):
            if seen is not None:
                seen[0] = target
            return
        time.sleep(0.02)
    # Not caught up (a write of a kind the model does not hold): do not wait for it again; the
    # test's own assertion reports what it sees.
    if seen is not None:
        seen[0] = max(seen[0], max(_last.values(), default=0))


def hook(url: str) -> Any:
    seen = [0]

    def on_request(request: httpx.Request) -> None:
        if request.url.path != "/model":
            settle(url, seen, token=request.headers.get("authorization"))

    return on_request
