"""Record what a real API server sends the live model: the discovery documents, then for every
kind it may watch a full list and the watch events that follow, until `stop()`.

The kinds: Pods, Nodes, Events, ConfigMaps (definition sources), the built-in workload kinds
(Jobs, CronJobs, apps/v1), the CustomResourceDefinitions, every kind a CRD serves (its served
versions), and the kinds the answers' dependency checks look up; those the server serves.  The
replay serves the other kinds of the discovery documents as empty.  Lists are full
objects (the replay serves metadata-only forms from them when a client asks).  One thread per
watch; events are put in resourceVersion order when the recording is taken.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from typing import Any

from tests.cluster.apiserver import TOKENS, ApiServer

from .recording import Recording, Res, key_of, rv_of

CORE = [Res("", "v1", "Pod", "pods", True), Res("", "v1", "Node", "nodes", False),
        Res("", "v1", "Event", "events", True), Res("", "v1", "ConfigMap", "configmaps", True),
        Res("batch", "v1", "Job", "jobs", True), Res("batch", "v1", "CronJob", "cronjobs", True),
        Res("batch", "v1beta1", "CronJob", "cronjobs", True),
        *(Res("apps", "v1", k, k.lower() + "s", True)
          for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")),
        Res("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False),
        # what the answers' dependency checks look up (app/service/dependency_checks.py); Secrets' data is not kept
        Res("", "v1", "Secret", "secrets", True), Res("", "v1", "ServiceAccount", "serviceaccounts", True),
        Res("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
        Res("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False),
        Res("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", True),
        Res("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True)]
SECRET_FIELDS = ("data", "stringData")


class _Conn:
    def __init__(self, server: ApiServer):
        self.host, self.port = "127.0.0.1", server.port
        self.ctx = ssl.create_default_context(cafile=str(server.ca))
        self.headers = {"Authorization": f"Bearer {TOKENS['admin'][0]}", "Accept": "application/json"}
        self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)

    def get(self, path: str) -> Any:
        self.conn.request("GET", path, headers=self.headers)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"GET {path}: HTTP {r.status}: {body[:300]!r}")
        return json.loads(body)


class Recorder:
    def __init__(self, server: ApiServer):
        self.server = server
        self.rec = Recording()
        self.lock = threading.Lock()
        self.max_rv = 0
        self.last_event = time.monotonic()
        self.threads: list[threading.Thread] = []
        self.conns: list[http.client.HTTPSConnection] = []
        self.errors: list[str] = []
        self._stopping = False

    def start(self) -> Recorder:
        c = _Conn(self.server)
        docs = {"/version": c.get("/version"), "/api": c.get("/api"), "/apis": c.get("/apis")}
        docs["/api/v1"] = c.get("/api/v1")
        for g in docs["/apis"]["groups"]:
            for v in g["versions"]:
                docs[f"/apis/{v['groupVersion']}"] = c.get(f"/apis/{v['groupVersion']}")
        self.rec.discovery = docs
        served = {(p, x["name"]) for p, d in docs.items() for x in d.get("resources") or []}
        resources = [r for r in CORE if (r.path().rsplit("/", 1)[0], r.plural) in served]
        for crd in c.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]:
            spec = crd["spec"]
            for v in spec["versions"]:
                if v.get("served"):
                    resources.append(Res(spec["group"], v["name"], spec["names"]["kind"], spec["names"]["plural"],
                                         spec["scope"] == "Namespaced"))
        for res in resources:
            items, rv = self._list(c, res)
            self.rec.resources[key_of(res)] = res
            self.rec.lists[key_of(res)], self.rec.list_rv[key_of(res)] = items, rv
            self.max_rv = max(self.max_rv, int(rv))
            t = threading.Thread(target=self._watch, args=(res, rv), daemon=True, name=f"record-{res.plural}")
            t.start()
            self.threads.append(t)
        c.conn.close()
        return self

    @staticmethod
    def _list(c: _Conn, res: Res) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        cont, rv = "", ""
        while True:
            doc = c.get(f"{key_of(res)}?limit=500" + (f"&continue={cont}" if cont else ""))
            for o in doc["items"]:
                o["apiVersion"], o["kind"] = res.api_version, res.kind
                if res.kind == "Secret":
                    for f in SECRET_FIELDS:
                        o.pop(f, None)
            items += doc["items"]
            rv = rv or doc["metadata"]["resourceVersion"]
            cont = doc["metadata"].get("continue") or ""
            if not cont:
                return items, rv

    def _watch(self, res: Res, rv: str) -> None:
        c = _Conn(self.server)
        self.conns.append(c.conn)
        try:
            c.conn.request("GET", f"{key_of(res)}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
                                  "&timeoutSeconds=3600", headers=c.headers)
            r = c.conn.getresponse()
            if r.status != 200:
                raise RuntimeError(f"watch {key_of(res)}: HTTP {r.status}")
            if c.conn.sock is not None:
                c.conn.sock.settimeout(None)
            while line := r.readline():
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    raise RuntimeError(f"watch {key_of(res)}: {obj.get('message')}")
                with self.lock:
                    self.max_rv = max(self.max_rv, rv_of(obj))
                    self.last_event = time.monotonic()
                    if ev["type"] != "BOOKMARK":
                        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
                        if res.kind == "Secret":
                            for f in SECRET_FIELDS:
                                obj.pop(f, None)
                        self.rec.events.append((key_of(res), ev["type"], obj))
        except Exception as e:
            if not self._stopping:
                self.errors.append(f"{key_of(res)}: {type(e).__name__}: {e}")

    def settle(self, rv: int, quiet: float = 0.5, timeout: float = 30.0) -> None:
        """Wait until the watches delivered resourceVersion `rv` (the last write's) and then were
        quiet for `quiet` s: what other kinds' watches had in flight is in too."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.max_rv >= rv and time.monotonic() - self.last_event >= quiet:
                    return
            time.sleep(0.05)
        raise TimeoutError(f"the watches did not reach resourceVersion {rv} (at {self.max_rv})")

    def stop(self) -> Recording:
        self._stopping = True
        for conn in self.conns:
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(2)
                except OSError:
                    pass
            conn.close()
        for t in self.threads:
            t.join(5)
        if self.errors:
            raise RuntimeError("recording: " + "; ".join(self.errors))
        self.rec.events.sort(key=lambda e: rv_of(e[2]))
        return self.rec

