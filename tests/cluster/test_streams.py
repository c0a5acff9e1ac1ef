"""Push: ?watch=true streams on a real API server and a real service: initial state, changes within
a second, SSE resume tokens, 410s, resyncs after 410 and API server restarts without repeats or
gaps, per-caller filtering, and slow clients cut off with bounded memory."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import token
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl, reader_rbac, running
from .test_workloads import _jobset_with_pods
from .util import eventually, fixture_object

NS = "stream-a"
NS2 = "stream-b"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
NOT_READY = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}


class Stream:
    """A stream read in a thread: NDJSON lines, or SSE events (with their ids)."""

    def __init__(self, url: str, params: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                 sse: bool = False):
        self.events: list[dict[str, Any]] = []
        self.status: int | None = None
        self.body = b""
        self.done = threading.Event()
        self.sse = sse
        self._lock = threading.Lock()
        hdrs = dict(headers or {})
        if sse:
            hdrs["Accept"] = "text/event-stream"
        self._client = httpx.Client(timeout=httpx.Timeout(60, read=120))
        self._thread = threading.Thread(target=self._run, args=(url, params or {}, hdrs), daemon=True)
        self._thread.start()

    def _run(self, url: str, params: dict[str, str], headers: dict[str, str]) -> None:
        try:
            with self._client.stream("GET", url, params=dict(params, watch="true"), headers=headers) as r:
                self.status = r.status_code
                self.content_type = r.headers.get("content-type", "")
                if r.status_code != 200:
                    self.body = r.read()
                    return
                pending: dict[str, str] = {}
                for line in r.iter_lines():
                    if self.sse:
                        if not line:
                            if "data" in pending:
                                ev = json.loads(pending["data"])
                                ev["id"] = pending.get("id")
                                self._add(ev)
                            pending = {}
                        elif not line.startswith(":"):
                            k, _, v = line.partition(":")
                            pending[k] = v[1:] if v.startswith(" ") else v
                    elif line.strip():
                        self._add(json.loads(line))
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self.done.set()

    def _add(self, ev: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(ev)

    def close(self) -> None:
        self._client.close()

    def changes(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["type"] != "BOOKMARK"]

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 5.0, after: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for e in self.events[after:]:
                    if pred(e):
                        return e
            if self.done.is_set() and self.status != 200:
                break
            time.sleep(0.01)
        raise AssertionError(f"no matching event within {timeout} s; got {[(e['type'], _name(e)) for e in self.events]}")

    def synced(self, timeout: float = 10.0) -> int:
        """Wait for the end of the initial state; returns how many events came before it."""
        self.wait(lambda e: e["type"] == "BOOKMARK" and e.get("initialEventsEnd"), timeout)
        with self._lock:
            return next(i for i, e in enumerate(self.events) if e.get("initialEventsEnd")) + 1


def _name(e: dict[str, Any]) -> str | None:
    obj = e.get("object") or {}
    return (obj.get("workload") or {}).get("name")


def _ready(e: dict[str, Any]) -> int | None:
    obj = e.get("object") or {}
    return (obj.get("pods") or {}).get("ready") if "pods" in obj else (obj.get("live") or {}).get("ready")


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> dict[str, Any]:
    for ns in (NS, NS2):
        kubectl.ensure_namespace(ns)
    return {"a": _jobset_with_pods(kubectl, NS, "job-a"), "b": _jobset_with_pods(kubectl, NS2, "job-b")}


def _flip(kubectl: Kubectl, ns: str, pod_name: str, ready: bool) -> None:
    kubectl.set_status(kubectl.get("v1", "Pod", ns, pod_name), running("n") if ready else NOT_READY)


def test_list_stream_initial_state_then_changes(service: Server, kubectl: Kubectl, world: dict) -> None:
    with service.client() as c:
        c.get("/healthz")  # settled on the world
    s = Stream(service.url + "/workloads", {"namespace": NS})
    try:
        n = s.synced()
        assert s.status == 200 and s.content_type.startswith("application/json;stream=watch")
        first = s.events[:n - 1]
        assert {(_name(e), e["type"]) for e in first} >= {("job-a", "ADDED")}
        assert all(e["type"] == "ADDED" and e["id"] for e in first)
        row = next(e["object"] for e in first if _name(e) == "job-a")
        assert row["pods"] == {"ready": 4, "desired": 7} and row["phase"] == "Running"
        assert not any(e["object"]["workload"]["namespace"] == NS2 for e in first)  # the filter holds

        start = time.monotonic()
        _flip(kubectl, NS, "job-a-trainer-0-0", False)
        ev = s.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "job-a" and _ready(e) == 3, timeout=2)
        took = time.monotonic() - start
        _flip(kubectl, NS, "job-a-trainer-0-0", True)
        s.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "job-a" and _ready(e) == 4, timeout=2)

        obj, status = fixture_object(JOBSET, NS, "late-comer")
        js = kubectl.set_status(kubectl.apply(obj), status)
        s.wait(lambda e: e["type"] == "ADDED" and _name(e) == "late-comer", timeout=2)
        kubectl.delete("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "late-comer")
        gone = s.wait(lambda e: e["type"] == "DELETED" and _name(e) == "late-comer", timeout=2)
        assert gone["object"]["workload"]["uid"] == js["metadata"]["uid"]
        # a change that leaves the row as it was sends nothing (a label nobody reads)
        count = len(s.changes())
        kubectl.patch(kubectl.get("v1", "Pod", NS, "job-a-trainer-0-1"), {"metadata": {"labels": {"x": "y"}}})
        time.sleep(0.5)
        assert len(s.changes()) == count, s.changes()[count:]
        print(f"pod change visible on the list stream after {took:.3f} s; event id {ev['id']}")
    finally:
        s.close()


def test_sse_ids_resume_exactly_and_old_tokens_get_410(service: Server, kubectl: Kubectl, world: dict) -> None:
    s = Stream(service.url + "/workloads", {"namespace": NS}, sse=True)
    try:
        s.synced()
        assert s.content_type.startswith("text/event-stream")
        _flip(kubectl, NS, "job-a-coordinator-0-0", False)
        ev = s.wait(lambda e: e["type"] == "MODIFIED" and _ready(e) == 3, timeout=2)
        last_seen = ev["id"]
    finally:
        s.close()
    # while no one listens: two changes
    _flip(kubectl, NS, "job-a-coordinator-0-0", True)
    _flip(kubectl, NS, "job-a-trainer-1-0", False)
    with service.client() as c:
        eventually(lambda: next(r for r in c.get("/workloads", params={"namespace": NS}).json()["items"]
                                if r["workload"]["name"] == "job-a")["pods"]["ready"] == 3, timeout=5)
    s = Stream(service.url + "/workloads", {"namespace": NS}, headers={"Last-Event-ID": last_seen}, sse=True)
    try:
        n = s.synced()
        missed = [e for e in s.events[:n - 1]]
        # exactly what changed since the token: no initial state again, nothing twice
        assert [(e["type"], _name(e), _ready(e)) for e in missed] == [("MODIFIED", "job-a", 4), ("MODIFIED", "job-a", 3)]
    finally:
        s.close()
    _flip(kubectl, NS, "job-a-trainer-1-0", True)
    epoch = last_seen.split(".")[0]
    for bad, status in ((f"{'0' * len(epoch)}.1", 410), (f"{epoch}.999999999", 410), ("garbage", 400)):
        r = httpx.get(service.url + "/workloads", params={"watch": "true", "namespace": NS},
                      headers={"Last-Event-ID": bad, "Accept": "text/event-stream"}, timeout=10)
        assert r.status_code == status and r.headers["content-type"] == "application/problem+json", (bad, r.text)
        assert r.json()["status"] == status


def test_workload_stream_carries_the_full_interpretation(service: Server, kubectl: Kubectl, world: dict) -> None:
    with service.client() as c:
        c.get("/healthz")
    s = Stream(service.url + f"/workloads/{NS2}/job-b")
    try:
        s.synced()
        first = s.events[0]
        assert first["type"] == "ADDED" and first["object"]["live"]["ready"] == 4
        assert first["object"]["tree"]["name"] and first["object"]["totals"]["gpus"] == 12
        start = time.monotonic()
        _flip(kubectl, NS2, "job-b-trainer-0-1", False)
        ev = s.wait(lambda e: e["type"] == "MODIFIED" and _ready(e) == 3, timeout=2)
        took = time.monotonic() - start
        pods = {p["name"]: p for p in ev["object"]["live"]["pods"]}
        assert pods["job-b-trainer-0-1"]["ready"] is False and pods["job-b-trainer-0-1"]["reason"] == "ContainersNotReady"
        token_after = ev["id"]
        _flip(kubectl, NS2, "job-b-trainer-0-1", True)
        s.wait(lambda e: e["type"] == "MODIFIED" and _ready(e) == 4, timeout=2)
        print(f"pod change visible on the workload stream after {took:.3f} s")
    finally:
        s.close()
    # resume: the state changed since that token, so one MODIFIED with the current state
    s = Stream(service.url + f"/workloads/{NS2}/job-b", headers={"Last-Event-ID": token_after})
    try:
        n = s.synced()
        assert [(e["type"], _ready(e)) for e in s.events[:n - 1]] == [("MODIFIED", 4)]
    finally:
        s.close()
    r = httpx.get(service.url + f"/workloads/{NS2}/nope", params={"watch": "true"}, timeout=10)
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"


def test_streams_need_the_model(apiserver: ApiServer) -> None:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--cache", "false")
    try:
        r = httpx.get(s.url + "/workloads", params={"watch": "true"}, timeout=10)
        assert r.status_code == 400 and r.json()["type"].endswith("streams-need-the-model")
    finally:
        s.stop()


def _relists(s: Server) -> int:
    return sum(k["relists"] for k in httpx.get(s.url + "/model", timeout=10).json()["kinds"])


def test_resync_after_410_and_restart_emits_only_the_differences(service: Server, kubectl: Kubectl,
                                                                  apiserver: ApiServer, world: dict) -> None:
    with service.client() as c:
        c.get("/healthz")
    lst = Stream(service.url + "/workloads")
    one = Stream(service.url + f"/workloads/{NS}/job-a")
    try:
        lst.synced(), one.synced()
        before_list, before_one = len(lst.changes()), len(one.changes())
        relists = _relists(service)
        # The API server goes away; etcd is compacted, so no watch can resume from where it was (410).
        apiserver.stop_apiserver()
        apiserver.compact()
        apiserver.start_apiserver()
        _flip(kubectl, NS, "job-a-trainer-1-0", False)  # a change while the model is (re)connecting
        lst.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "job-a" and _ready(e) == 3, timeout=30,
                 after=before_list)
        one.wait(lambda e: e["type"] == "MODIFIED" and _ready(e) == 3, timeout=30, after=before_one)
        eventually(lambda: _relists(service) > relists, timeout=30, what="a relist after the 410")
        time.sleep(1.0)  # anything else the resync would (wrongly) send
        assert lst.status == 200 and not lst.done.is_set(), "the stream survived the restart"
        extra = [(e["type"], _name(e)) for e in lst.changes()[before_list:]]
        assert extra == [("MODIFIED", "job-a")], extra  # only the difference: no repeats of unchanged rows
        assert [e["type"] for e in one.changes()[before_one:]] == ["MODIFIED"]
        _flip(kubectl, NS, "job-a-trainer-1-0", True)
        lst.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "job-a" and _ready(e) == 4, timeout=5,
                 after=before_list)
    finally:
        lst.close()
        one.close()


def test_callers_see_only_what_they_may_list(secured: Server, kubectl: Kubectl, world: dict) -> None:
    """Two users against the same model: alice may list JobSets and pods in one namespace, carol in the
    other; an all-namespace list (and stream) shows each their own namespace only."""
    for user, ns in (("alice", NS), ("carol", NS2)):
        for doc in reader_rbac(user, ns, [("jobset.x-k8s.io", "jobsets")]):
            kubectl.apply(doc)

    def rows(user: str, **params: str) -> dict[str, Any]:
        with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token(user)}"}, timeout=30) as c:
            return c.get("/workloads", params=params).json()

    def names(body: dict[str, Any]) -> set[tuple[str, str]]:
        return {(r["workload"]["namespace"], r["workload"]["name"]) for r in body["items"]}

    # (a service just started answers directly until its model has synced: wait for the model)
    alice = eventually(lambda: (b := rows("alice")) and (NS, "job-a") in names(b)
                       and b["freshness"]["source"] == "model" and b, timeout=20)[0]
    carol = eventually(lambda: (b := rows("carol")) and (NS2, "job-b") in names(b)
                       and b["freshness"]["source"] == "model" and b, timeout=20)[0]
    assert alice["freshness"]["source"] == carol["freshness"]["source"] == "model"
    # (other tests may grant them other namespaces, never each other's)
    assert NS in {ns for ns, _ in names(alice)} and NS2 not in {ns for ns, _ in names(alice)}
    assert NS2 in {ns for ns, _ in names(carol)} and NS not in {ns for ns, _ in names(carol)}
    assert any("only where it is allowed" in w for w in alice["warnings"])
    assert rows("alice", namespace=NS2)["items"] == [] and rows("carol", namespace=NS)["items"] == []
    job_a = next(r for r in alice["items"] if r["workload"]["name"] == "job-a")
    assert job_a["pods"]["ready"] == 4  # pods listable in her namespace: counts shown
    assert not {ns for ns, _ in names(rows("bob"))} & {NS, NS2}  # no rights in either
    s = Stream(secured.url + "/workloads", headers={"Authorization": f"Bearer {token('alice')}"})
    try:
        n = s.synced()
        seen = {e["object"]["workload"]["namespace"] for e in s.events[:n - 1]}
        assert NS in seen and NS2 not in seen
        _flip(kubectl, NS2, "job-b-trainer-0-0", False)
        _flip(kubectl, NS, "job-a-trainer-0-0", False)
        s.wait(lambda e: e["type"] == "MODIFIED" and _name(e) == "job-a", timeout=3)
        assert not any(_name(e) == "job-b" for e in s.changes())
    finally:
        s.close()
        _flip(kubectl, NS, "job-a-trainer-0-0", True)
        _flip(kubectl, NS2, "job-b-trainer-0-0", True)
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token('carol')}"}, timeout=30) as c:
        r = c.get(f"/workloads/{NS}/job-a")
        assert r.status_code == 403
        r = c.get(f"/workloads/{NS2}/job-b")
        assert r.status_code == 200 and r.json()["freshness"]["source"] == "model"
        assert c.get("/metrics/workloads").status_code == 403  # needs get on the URL /metrics/workloads


@pytest.fixture(scope="module")
def tight(apiserver: ApiServer) -> Iterator[Server]:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--stream-buffer", "5", "--stream-write-timeout", "2", "--watch-namespace", NS3)
    yield s
    s.stop()


NS3 = "stream-slow"


def _big_jobset(kubectl: Kubectl, pods: int) -> None:
    """One JobSet with one Job of many pods: every state of it is a large interpretation."""
    from .kubeobjects import owner_ref, pod

    kubectl.ensure_namespace(NS3)
    obj, status = fixture_object(JOBSET, NS3, "big")
    js = kubectl.set_status(kubectl.apply(obj), status)
    job = kubectl.apply({"apiVersion": "batch/v1", "kind": "Job",
                         "metadata": {"name": "big-trainer-0", "namespace": NS3, "ownerReferences": [owner_ref(js)]},
                         "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                        "containers": [{"name": "c", "image": "x"}]}}}})
    for i in range(pods):
        p = kubectl.apply(pod(NS3, f"big-trainer-0-{i}", job, gpus=1, node=f"node-{i}",
                              labels={"jobset.sigs.k8s.io/replicatedjob-name": "trainer",
                                      "jobset.sigs.k8s.io/job-index": "0"}))
        kubectl.set_status(p, running(f"node-{i}"))


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


def _streams(s: Server) -> dict[str, int]:
    return httpx.get(s.url + "/model", timeout=10).json()["streams"]


def test_a_slow_client_is_cut_off_and_memory_stays_flat(tight: Server, kubectl: Kubectl) -> None:
    """A client that stops reading fills the buffers between us (the kernel's, per connection, up
    to a few MB; then the server's, 64 KB); its next write then blocks, and after
    --stream-write-timeout it is disconnected, while a client that reads goes on."""
    _big_jobset(kubectl, 40)
    eventually(lambda: httpx.get(tight.url + "/model").json()["synced"], timeout=20)
    eventually(lambda: httpx.get(tight.url + f"/workloads/{NS3}/big").status_code == 200, timeout=10)
    ok = Stream(tight.url + f"/workloads/{NS3}/big")
    ok.synced()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # a tiny window, and it never reads
    sock.connect(("127.0.0.1", tight.port))
    sock.sendall(f"GET /workloads/{NS3}/big?watch=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    try:
        eventually(lambda: _streams(tight)["workload"] == 2, timeout=5)
        rss = _rss(tight.proc.pid)
        start, flips = time.monotonic(), 0
        # Changes until the slow client is cut off (how many fill the buffers depends on how fast
        # the API server takes them and the kernel drains): bounded in count and time.
        while flips < 2000 and time.monotonic() - start < 90 and _streams(tight)["workload"] == 2:
            for _ in range(10):
                _flip(kubectl, NS3, "big-trainer-0-0", flips % 2 == 1)
                flips += 1
        _, took = eventually(lambda: _streams(tight)["workload"] == 1, timeout=10, what="the slow client cut off")
        took = time.monotonic() - start
        grown = _rss(tight.proc.pid) - rss
        assert grown < 30 * 2**20, grown
        n = len(ok.changes())
        _flip(kubectl, NS3, "big-trainer-0-0", flips % 2 == 1)
        ok.wait(lambda e: e["type"] == "MODIFIED", timeout=5, after=n)  # the reading client is still served
        assert not ok.done.is_set()
        # what the slow client finds when it finally reads: a stream the server has closed
        sock.settimeout(10)
        data = b""
        while chunk := sock.recv(1 << 20):  # socket.timeout here would mean the server kept it open
            data += chunk
        assert data.startswith(b"HTTP/1.1 200")
        print(f"slow client cut off after {took:.2f} s and {flips} changes ({len(data)} bytes had been sent); "
              f"server RSS grew {grown / 2**20:.1f} MB")
    finally:
        ok.close()
        sock.close()
