"""The watch replay (benchmarks/replay/) against the real API server: a recording of JobSets,
kubelet status patches (Ready flips), a pod deleted and re-created and a JobSet status change,
replayed to a second `wlmap serve`, leaves that service with the rows and answers the service
that watched the real API server ended with.  Also: a 410 on resume makes the client list again
and still end equal; bookmarks are taken; the copies of a scaled-up replay are distinct workloads."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.error
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.cluster_fill import (
    UA_JOBSET,
    UA_KCM,
    UA_KUBELET,
    Client,
    FillResult,
    FillSpec,
    fill_one,
    jobset_path,
    jobset_status,
    pods_path,
    ready_patch,
)
from benchmarks.replay.record import Recorder
from benchmarks.replay.recording import Recording, steps
from benchmarks.replay.server import Replay, serve, write_kubeconfig

from ..service.conftest import Server
from .apiserver import ApiServer
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl
from .util import eventually

NS = "replay-it"
FRESHNESS = ("freshness", "observedAt", "resourceVersion", "watching", "source")


class ReplayThread(threading.Thread):
    """The replay server on its own event loop, in this process."""

    def __init__(self, rec: Recording, copies: int = 1, bookmark_every: float = 0.2):
        super().__init__(daemon=True, name="replay-server")
        self.replay = Replay(rec, copies, bookmark_every=bookmark_every)
        self.port = 0
        self.bound = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

    def run(self) -> None:
        self.loop = asyncio.new_event_loop()

        def ready(p: int) -> None:
            self.port = p
            self.bound.set()

        try:
            self.loop.run_until_complete(serve(self.replay, "127.0.0.1", 0, ready))
        except (RuntimeError, asyncio.CancelledError):
            pass  # stopped

    def __enter__(self) -> ReplayThread:
        self.start()
        assert self.bound.wait(30)
        return self

    def __exit__(self, *_: Any) -> None:
        assert self.loop is not None
        for t in asyncio.all_tasks(self.loop):
            self.loop.call_soon_threadsafe(t.cancel)
        self.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def control(self, verb: str, what: str, **q: Any) -> Any:
        r = httpx.request(verb, f"{self.url}/_replay/{what}", params=q, timeout=10)
        r.raise_for_status()
        return r.json()

    def kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.url)

    def play(self, count: int | None = None, rate: float = 2000) -> None:
        self.control("POST", "start", rate=rate, **({"count": count} if count is not None else {}))
        eventually(lambda: not self.control("GET", "stats")["run"].get("running", True), 30, what="replay done")


def service(kubeconfig: Path) -> Server:
    s = Server("--kubeconfig", str(kubeconfig), "--namespace", SERVICE_NS, "--auth", "none", "--cache", "true",
               "--karta-resources", "false", "--log-level", "warning")
    eventually(lambda: httpx.get(s.url + "/model", timeout=5).json().get("synced"), 60, what="model synced")
    return s


@contextlib.contextmanager
def replaying(path: Path, tmp_path: Path, copies: int = 1) -> Iterator[tuple[ReplayThread, Server]]:
    """The recording on a replay server, and a service synced on it."""
    with ReplayThread(Recording.load(path), copies) as rp:
        svc = service(rp.kubeconfig(tmp_path / "kubeconfig"))
        try:
            yield rp, svc
        finally:
            svc.stop()


def strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in FRESHNESS}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def view(s: Server, ns: str = NS) -> dict[str, Any]:
    """Rows of the namespace and each workload's answer, freshness aside."""
    rows = httpx.get(f"{s.url}/workloads", params={"namespace": ns}, timeout=30).json()
    out: dict[str, Any] = {"rows": strip(rows.get("items"))}
    for r in rows.get("items") or []:
        name = r["workload"]["name"]
        out[name] = strip(httpx.get(f"{s.url}/workloads/{ns}/{name}", timeout=30).json())
    return out


def differences(a: Any, b: Any, at: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: {a!r} != {b!r}"]


def same_view(a: Server, b: Server, ns: str = NS) -> dict[str, Any]:
    va, vb = view(a, ns), view(b, ns)
    assert va == vb, differences(va, vb)[:10]
    return va


@pytest.fixture(scope="module")
def recorded(apiserver: ApiServer, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[Path, Server]]:
    """Two JobSets before the recording starts, a third made while it runs, then the changes;
    yields the recording and the service that watched it all happen."""
    kubectl.ensure_namespace(NS)
    made_class = True
    try:
        apiserver.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"},
            "value": 1000})
    except urllib.error.HTTPError as e:
        assert e.code == 409
        made_class = False
    spec = FillSpec(workloads=3, namespaces=1, pods_per_job=2, jobs_per_jobset=2)
    c, res, lock, now = Client(apiserver), FillResult(), threading.Lock(), datetime.now(UTC)
    for name in ("rp-a", "rp-b"):
        fill_one(c, NS, name, spec, now, res, lock)
    live = service(apiserver.kubeconfig("service"))
    recorder = Recorder(apiserver).start()
    try:
        fill_one(c, NS, "rp-c", spec, now, res, lock)
        pods = sorted((p["metadata"]["name"], p) for p in c.call("GET", pods_path(NS))["items"])
        running = [p for _, p in pods if p["status"].get("phase") == "Running"]
        last = None
        for i, p in enumerate(running[:6] + running[:2]):  # two pods flipped back
            ready = i >= 6
            last = c.call("PATCH", f"{pods_path(NS)}/{p['metadata']['name']}/status",
                          ready_patch(ready, datetime.now(UTC)), ctype="application/strategic-merge-patch+json",
                          agent=UA_KUBELET)
        victim = running[-1]
        c.call("DELETE", f"{pods_path(NS)}/{victim['metadata']['name']}?gracePeriodSeconds=0", agent=UA_KCM)
        again = {k: v for k, v in victim.items() if k != "status"}
        again["metadata"] = {k: v for k, v in victim["metadata"].items()
                             if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")}
        made = c.call("POST", pods_path(NS), again, agent=UA_KCM)
        c.call("PATCH", f"{pods_path(NS)}/{made['metadata']['name']}/status",
               {"status": {**victim["status"], "conditions": [
                   {**x, "status": "False"} if x["type"] in ("Ready", "ContainersReady") else x
                   for x in victim["status"]["conditions"]]}},
               ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
        last = c.call("PATCH", jobset_path(NS, "rp-b") + "/status",
                      {"status": jobset_status(1, 2, datetime.now(UTC))}, ctype="application/merge-patch+json",
                      agent=UA_JOBSET)
        assert last is not None
        recorder.settle(int(last["metadata"]["resourceVersion"]))
    finally:
        rec = recorder.stop()
        c.close()
    path = tmp_path_factory.mktemp("replay") / "recording.jsonl.gz"
    rec.save(path)
    yield path, live
    live.stop()
    # the session's API server is shared: leave no workloads behind for tests that list them all
    for collection in (jobset_path(NS), f"/apis/batch/v1/namespaces/{NS}/jobs", pods_path(NS)):
        apiserver.call("DELETE", f"{collection}?gracePeriodSeconds=0")
    if made_class:
        apiserver.call("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/train")


def test_recording_holds_the_changes(recorded: tuple[Path, Server]) -> None:
    rec = Recording.load(recorded[0])
    kinds = {key: sum(1 for e in rec.events if e[0] == key) for key in rec.resources}
    assert kinds["/api/v1/pods"] >= 8 + 2 + 4  # the flips, the delete and re-create with its status, rp-c's pods
    assert kinds["/apis/jobset.x-k8s.io/v1alpha2/jobsets"] >= 2  # rp-c, rp-b's status
    assert {"/api", "/apis", "/api/v1", "/apis/jobset.x-k8s.io/v1alpha2"} <= set(rec.discovery)
    seq = steps(rec)
    flips = [s for s in seq if s.workload == (NS, "rp-a") and s.type == "MODIFIED" and s.res == "/api/v1/pods"]
    assert flips and all(0 <= s.ready <= 4 for s in flips)
    cyc = steps(rec, cycle=True)
    assert len(cyc) == 2 * len(seq)


def test_replay_ends_where_the_api_server_did(recorded: tuple[Path, Server], tmp_path: Path) -> None:
    path, live = recorded
    with replaying(path, tmp_path) as (rp, replayed):
        rp.play(rp.control("GET", "stats")["total"] // 2)
        rp.play()
        final = eventually(lambda: same_view(live, replayed), 30, what="the same rows and answers")[0]
        assert {r["workload"]["name"] for r in final["rows"]} == {"rp-a", "rp-b", "rp-c"}
        stats = rp.control("GET", "stats")
        assert stats["bookmarks"] > 0 and stats["gone"] == 0
        assert not any(k.startswith(("POST", "PUT", "PATCH", "DELETE")) for k in stats["requests"]), stats


def test_410_on_resume_lists_again_and_ends_equal(recorded: tuple[Path, Server], tmp_path: Path) -> None:
    path, live = recorded
    with replaying(path, tmp_path) as (rp, replayed):
        rp.play(rp.control("GET", "stats")["total"] // 2)
        relists = {k["resource"]: k["relists"] for k in httpx.get(replayed.url + "/model").json()["kinds"]}
        rp.control("POST", "drop")  # a watch cut: resumed from its version, no list
        eventually(lambda: rp.control("GET", "stats")["watches"] >= len(relists), 20, what="watches back")
        resumed = {k["resource"]: k["relists"] for k in httpx.get(replayed.url + "/model").json()["kinds"]}
        assert resumed == relists  # resumed from the version last seen (a bookmark's, or an event's)
        rp.control("POST", "compact", drop=1)  # every version gone: 410, list again
        rp.play()
        eventually(lambda: same_view(live, replayed), 30, what="the same rows and answers")
        after = {k["resource"]: k["relists"] for k in httpx.get(replayed.url + "/model").json()["kinds"]}
        assert rp.control("GET", "stats")["gone"] >= len(relists)
        assert all(after[r] > relists[r] for r in relists), (relists, after)


def test_copies_are_distinct_workloads(recorded: tuple[Path, Server], tmp_path: Path) -> None:
    with replaying(recorded[0], tmp_path, copies=3) as (rp, replayed):
        rp.play()
        base = eventually(lambda: same_view(recorded[1], replayed), 30, what="copy 0 as recorded")[0]
        for k in (1, 2):
            copy = view(replayed, f"{NS}-x{k}")
            assert [r["pods"] for r in copy["rows"]] == [r["pods"] for r in base["rows"]]
            assert {r["workload"]["namespace"] for r in copy["rows"]} == {f"{NS}-x{k}"}
        # owner chains stay within their copy: every pod's Job, every Job's JobSet is in its namespace
        def uids(path: str) -> dict[str, str]:
            items = httpx.get(rp.url + path, timeout=10).json()["items"]
            return {o["metadata"]["uid"]: o["metadata"]["namespace"] for o in items}

        jobsets, jobs = uids("/apis/jobset.x-k8s.io/v1alpha2/jobsets"), uids("/apis/batch/v1/jobs")
        for path, owners in (("/api/v1/pods", jobs), ("/apis/batch/v1/jobs", jobsets)):
            for o in httpx.get(rp.url + path, timeout=10).json()["items"]:
                if o["metadata"]["namespace"].startswith(NS):
                    assert owners[o["metadata"]["ownerReferences"][0]["uid"]] == o["metadata"]["namespace"]
        assert sum(ns.startswith(NS) for ns in jobsets.values()) == 9
        log = rp.control("GET", "log")["events"]
        last = {(ns, name): ready for _, _, ns, name, ready in log if name}
        rows = {(r["workload"]["namespace"], r["workload"]["name"]): r["pods"]["ready"]
                for k in (0, 1, 2) for r in view(replayed, f"{NS}-x{k}" if k else NS)["rows"]}
        assert last and all(rows[key] == ready for key, ready in last.items()), (last, rows)


def test_leases_are_writable_with_conflicts(recorded: tuple[Path, Server]) -> None:
    """The store's shards claim namespaces with Leases: the replay keeps them as the API server
    does (create once, replace only from the current version); every other kind is read-only."""
    with ReplayThread(Recording.load(recorded[0])) as rp:
        leases = f"{rp.url}/apis/coordination.k8s.io/v1/namespaces/{SERVICE_NS}/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "shard-0", "labels": {"group": "g"}}, "spec": {"holderIdentity": "a"}}
        made = httpx.post(leases, json=lease)
        assert made.status_code == 201 and httpx.post(leases, json=lease).status_code == 409
        stale = made.json()
        stale["spec"]["holderIdentity"] = "b"
        assert httpx.put(f"{leases}/shard-0", json=stale).status_code == 200
        assert httpx.put(f"{leases}/shard-0", json=stale).status_code == 409  # its version is gone
        listed = httpx.get(leases, params={"labelSelector": "group=g"}).json()["items"]
        assert [x["spec"]["holderIdentity"] for x in listed] == ["b"]
        assert httpx.delete(f"{leases}/shard-0").status_code == 200
        assert httpx.get(f"{leases}/shard-0").status_code == 404
        assert httpx.post(f"{rp.url}/api/v1/namespaces/{NS}/pods", json={"metadata": {"name": "x"}}).status_code == 405
