"""Churn: how many pod events per second one `wlmap serve` process (what one shard runs) absorbs
before changes arrive late (issue 24, item 3).

1. fill: a real etcd + kube-apiserver v1.20.2 holding N JobSets with their Jobs and pods
   (benchmarks/cluster_fill.py; `--reuse-dir` keeps a fill for the next run); one
   `wlmap serve --cache true` on it, synced.
2. per target rate (25, 50, 100, ... events/s, `--seconds` each): the driver patches pods'
   status as a kubelet does (`PATCH pods/status`, strategic merge, Ready / ContainersReady
   flipped) over `--connections` keep-alive HTTPS connections, open loop (patch i is due at
   t0 + i/rate).  Every patch changes its workload's ready count, so every patch is one row
   change.  A workload gets its next patch only once its last change was seen on the stream
   (a row's ready count then names one patch: no two patches coalesce into one state); with
   enough workloads (rate x latency < workloads) that never holds the driver back, and when it
   does the step says so (`starved`).
3. measured per rate: the rate the API server accepted (2xx answers per second over the step);
   change-visible latency, from the patch's response to the change showing,
   * on a list stream: `GET /workloads?watch=true`, the row event with the new ready count
     (every patch);
   * on GET one: `GET /workloads/{ns}/{name}` polled every `--poll` s until `live.ready` shows it,
     for a sample of the patches (one each `--sample-every` s: modest load);
   and, to tell the API server's share from the service's, when the API server's own pod watch
   (a second client, all namespaces) delivered each patch, and the service's own time from that
   delivery to the row event;
   the service process's CPU % and RSS, the model's `pending` (changes received, not applied)
   from GET /model (max over the step), and the machine's load (other processes share it).
4. stops when the API server no longer accepts the target rate (achieved < 90 %), or the
   stream's p99 passes 1 s, or `--max-minutes` of stepping are up; prints the table and the
   verdict: the highest rate with change-visible p99 <= 1 s against the highest rate the API
   server accepted.

    python benchmarks/churn_bench.py [--workloads 300] [--namespaces 10] [--rates 25,50,100,...]
        [--seconds 20] [--connections 32] [--reuse-dir DIR | --keep] [--json out.json]
        [--profile SECONDS --profile-rates 200,400]   (py-spy: `.venv/bin/pip install py-spy`)

Driver, stream reader and GET pollers share one process (threads); its CPU % is reported too,
so a saturated driver is not mistaken for the API server.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import math
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cluster_bench import (
    Service,
    cache_flag_supported,
    cut,
    finite,
    pct,
    vmrss_mb,
    wait_for_binaries,
)
from benchmarks.cluster_fill import (
    SERVICE_NS,
    UA_KUBELET,
    Client,
    FillSpec,
    compact,
    fill,
    pods_path,
    ready_patch,
    run_dir,
    write_marker,
)
from benchmarks.http_bench import _tree_cpu_seconds
from tests.cluster.apiserver import ApiServer

Key = tuple[str, str]  # (namespace, JobSet name)
RATES = "25,50,100,200,400,800,1600,3200"
VISIBLE_P99_S = 1.0


# -- one patch and what became of it -------------------------------------------------------------

@dataclass
class Change:
    key: Key
    pod: str
    want: int  # the ready count the row shows once this patch is applied
    sampled: bool  # GET one is polled for it too
    sent: float = 0.0
    answered: float | None = None  # the patch's response (None: not yet, or it failed)
    failed: bool = False
    on_stream: float | None = None  # when the list stream showed `want`
    on_get: float | None = None  # when GET one showed it (sampled changes)
    on_api_watch: float | None = None  # when the API server's own pod watch delivered it
    get_done: bool = False  # the poller gave up or saw it

    def stream_s(self) -> float | None:
        if self.on_stream is None or self.answered is None:
            return None
        return max(0.0, self.on_stream - self.answered)  # the watch event may beat the response home

    def service_s(self) -> float | None:
        """From the API server's watch event to the row event: what the service itself adds."""
        if self.on_stream is None or self.on_api_watch is None:
            return None
        return max(0.0, self.on_stream - self.on_api_watch)

    def get_s(self) -> float | None:
        if self.on_get is None or self.answered is None:
            return None
        return max(0.0, self.on_get - self.answered)


@dataclass
class Workload:
    key: Key
    ready: int  # the ready count with no driver-unready pod
    pods: list[str]  # its pods that were Ready when the run began
    down: str | None = None  # the pod the driver holds not-ready now


@dataclass
class Step:
    rate: float
    changes: list[Change] = field(default_factory=list)
    starved: int = 0  # patches that waited for a workload whose last change was not yet seen
    seconds: float = 0.0
    pending_max: int = 0
    pending_samples: list[int] = field(default_factory=list)
    service_cpu_pct: float = 0.0
    apiserver_cpu_pct: float = 0.0
    etcd_cpu_pct: float = 0.0
    driver_cpu_pct: float = 0.0
    machine_busy_pct: float = 0.0
    load1: float = 0.0
    rss_mb: float = 0.0

    def summary(self) -> dict[str, Any]:
        ok = [c for c in self.changes if not c.failed and c.answered is not None]
        stream = [s for c in ok if (s := c.stream_s()) is not None]
        gets = [s for c in ok if c.sampled and (s := c.get_s()) is not None]
        never_stream = sum(1 for c in ok if c.on_stream is None)
        # the same, from the patch's request (API server time included), and how often the row
        # event came home before the patch's own response
        sent = [c.on_stream - c.sent for c in ok if c.on_stream is not None]
        answer = [c.answered - c.sent for c in ok if c.answered is not None]
        api_watch = [max(0.0, c.on_api_watch - c.answered) for c in ok
                     if c.on_api_watch is not None and c.answered is not None]
        added = [x for c in ok if (x := c.service_s()) is not None]
        early = sum(1 for c in ok if c.on_stream is not None and c.answered is not None and c.on_stream < c.answered)
        never_get = sum(1 for c in ok if c.sampled and c.on_get is None)
        # a change never seen counts as later than any seen (p99 over every accepted change)
        stream_all = stream + [float("inf")] * never_stream
        get_all = gets + [float("inf")] * never_get
        return {"target_per_s": self.rate, "patches": len(self.changes), "accepted": len(ok),
                "failed": sum(c.failed for c in self.changes), "seconds": self.seconds,
                "achieved_per_s": len(ok) / self.seconds if self.seconds else 0.0, "starved": self.starved,
                "stream_p50_s": pct(stream_all, 50), "stream_p99_s": pct(stream_all, 99),
                "stream_max_s": max(stream_all, default=float("nan")), "stream_never": never_stream,
                "stream_from_request_p50_s": pct(sent, 50), "stream_from_request_p99_s": pct(sent, 99),
                "stream_before_response": early,
                "patch_p50_s": pct(answer, 50), "patch_p99_s": pct(answer, 99),
                "api_watch_n": len(api_watch), "api_watch_p50_s": pct(api_watch, 50),
                "api_watch_p99_s": pct(api_watch, 99),
                "service_added_p50_s": pct(added, 50), "service_added_p99_s": pct(added, 99),
                "service_cpu_ms_per_event": self.service_cpu_pct * 10 / (len(ok) / self.seconds) if ok else 0.0,
                "get_n": len(get_all), "get_p50_s": pct(get_all, 50), "get_p99_s": pct(get_all, 99),
                "get_never": never_get, "pending_max": self.pending_max,
                "pending_p50": pct([float(p) for p in self.pending_samples], 50),
                "service_cpu_pct": self.service_cpu_pct, "rss_mb": self.rss_mb,
                "apiserver_cpu_pct": self.apiserver_cpu_pct, "etcd_cpu_pct": self.etcd_cpu_pct,
                "driver_cpu_pct": self.driver_cpu_pct, "machine_busy_pct": self.machine_busy_pct,
                "load1": self.load1}


# -- the shared bookkeeping between the driver and the readers --------------------------------

class Ledger:
    """Which change each workload waits for; the readers mark them seen, the driver takes free
    workloads.  One lock: the stream thread, the pollers and the driver all touch it."""

    def __init__(self, workloads: list[Workload], rng: random.Random):
        self.lock = threading.Lock()
        self.by_key = {w.key: w for w in workloads}
        self.open: dict[Key, Change] = {}  # the change each busy workload waits for
        self.free: collections.deque[Key] = collections.deque(rng.sample(list(self.by_key), len(self.by_key)))
        self.freed = threading.Event()
        self.by_pod: dict[Key, collections.deque[Change]] = {}  # (namespace, pod) -> its latest changes

    def take(self) -> Workload | None:
        with self.lock:
            return self.by_key[self.free.popleft()] if self.free else None

    def begin(self, w: Workload, sampled: bool) -> tuple[Change, bool]:
        """The next patch for `w`: which pod, whether it becomes ready, and the change to expect."""
        with self.lock:
            if w.down is not None:
                pod, ready, w.down = w.down, True, None
                want = w.ready
            else:
                pod, ready = random.choice(w.pods), False
                w.down, want = pod, w.ready - 1
            ch = Change(w.key, pod, want, sampled, sent=time.perf_counter())
            self.open[w.key] = ch
            self.by_pod.setdefault((w.key[0], pod), collections.deque(maxlen=4)).append(ch)
            return ch, ready

    def _release(self, ch: Change) -> None:
        """Caller holds the lock: the workload is free for its next patch once every reader that
        waits for this change has seen it (or given up)."""
        if self.open.get(ch.key) is ch and ch.on_stream is not None and (ch.get_done or not ch.sampled):
            del self.open[ch.key]
            self.free.append(ch.key)
            self.freed.set()

    def seen_on_stream(self, key: Key, ready: int, t: float) -> None:
        with self.lock:
            ch = self.open.get(key)
            if ch is not None and ch.on_stream is None and ready == ch.want:
                ch.on_stream = t
                self._release(ch)

    def seen_on_api_watch(self, pod: Key, ready: bool, t: float) -> None:
        """The API server's watch sent `pod` with Ready `ready`: the oldest change of that pod
        not yet matched that makes it so (a later patch may already be out)."""
        with self.lock:
            for ch in self.by_pod.get(pod, ()):
                if ch.on_api_watch is None and (ch.want == self.by_key[ch.key].ready) == ready:
                    ch.on_api_watch = t
                    return

    def seen_on_get(self, ch: Change, t: float | None) -> None:
        with self.lock:
            ch.on_get, ch.get_done = t, True
            self._release(ch)

    def failed(self, ch: Change, w: Workload) -> None:
        """The API server refused the patch: the pod is as it was; the workload is free again."""
        with self.lock:
            ch.failed = True
            w.down = ch.pod if ch.want == w.ready else None  # a failed "ready again" leaves it down
            if self.open.get(ch.key) is ch:
                del self.open[ch.key]
                self.free.append(ch.key)

    def give_up(self) -> int:
        """After a step's drain: changes never seen are left as never seen; their workloads free."""
        with self.lock:
            n = len(self.open)
            for ch in self.open.values():
                ch.get_done = True
                self.free.append(ch.key)
            self.open.clear()
            return n


# -- readers ---------------------------------------------------------------------------------

class ListStream(threading.Thread):
    """`GET /workloads?watch=true` (newline-delimited JSON): every row event, timestamped on
    arrival, handed to the ledger."""

    def __init__(self, port: int, ledger: Ledger):
        super().__init__(daemon=True, name="list-stream")
        self.port, self.ledger = port, ledger
        self.initial_end = threading.Event()
        self.events = 0
        self.error = ""
        self.conn: http.client.HTTPConnection | None = None

    def run(self) -> None:
        try:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conn.request("GET", "/workloads?watch=true")
            r = self.conn.getresponse()
            if r.status != 200:
                self.error = f"HTTP {r.status}: {r.read()[:300]!r}"
                return
            if self.conn.sock is not None:
                self.conn.sock.settimeout(None)
            while line := r.readline():
                t = time.perf_counter()
                if not line.strip():
                    continue
                ev = json.loads(line)
                if ev.get("type") == "BOOKMARK":
                    self.initial_end.set()
                    continue
                obj = ev.get("object") or {}
                ref, pods = obj.get("workload") or {}, obj.get("pods") or {}
                self.events += 1
                if isinstance(pods.get("ready"), int):
                    self.ledger.seen_on_stream((ref.get("namespace"), ref.get("name")), pods["ready"], t)
        except Exception as e:  # noqa: BLE001 - reported; also the error close() causes
            self.error = self.error or f"{type(e).__name__}: {e}"
        finally:
            self.initial_end.set()

    def close(self) -> None:
        cut(self.conn)
        self.join(5)


class ApiWatch(threading.Thread):
    """The API server's own pod watch (all namespaces, from now), as any client gets it: when it
    delivers each patch, so the service's share of the latency can be told from the API
    server's."""

    def __init__(self, server: ApiServer, ledger: Ledger):
        super().__init__(daemon=True, name="api-watch")
        self.client, self.ledger = Client(server), ledger
        self.started = threading.Event()
        self.error = ""

    def run(self) -> None:
        c = self.client
        try:
            rv = c.call("GET", "/api/v1/pods?limit=1")["metadata"]["resourceVersion"]
            c.conn = http.client.HTTPSConnection(c.host, c.port, context=c.ctx, timeout=60)
            c.conn.request("GET", f"/api/v1/pods?watch=true&resourceVersion={rv}",
                           headers={"Authorization": f"Bearer {c.token}", "Accept": "application/json"})
            r = c.conn.getresponse()
            if r.status != 200:
                self.error = f"HTTP {r.status}: {r.read()[:300]!r}"
                return
            if c.conn.sock is not None:
                c.conn.sock.settimeout(None)
            self.started.set()
            while line := r.readline():
                t = time.perf_counter()
                ev = json.loads(line)
                if ev.get("type") != "MODIFIED":
                    continue
                obj = ev["object"]
                ready = any(x.get("type") == "Ready" and x.get("status") == "True"
                            for x in (obj.get("status") or {}).get("conditions") or [])
                self.ledger.seen_on_api_watch((obj["metadata"]["namespace"], obj["metadata"]["name"]), ready, t)
        except Exception as e:  # noqa: BLE001 - reported; also the error close() causes
            self.error = self.error or f"{type(e).__name__}: {e}"
        finally:
            self.started.set()

    def close(self) -> None:
        cut(self.client.conn)
        self.join(5)


class GetPoller(threading.Thread):
    """Polls GET one for sampled changes until `live.ready` shows them (or `timeout`)."""

    def __init__(self, port: int, ledger: Ledger, every: float, timeout: float):
        super().__init__(daemon=True, name="get-poller")
        self.port, self.ledger, self.every, self.timeout = port, ledger, every, timeout
        self.todo: collections.deque[Change] = collections.deque()
        self.wake = threading.Event()
        self.stop = False
        self.gets = 0
        self.errors = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop:
            self.wake.wait(0.2)
            self.wake.clear()
            while not self.stop:
                try:
                    ch = self.todo.popleft()  # shared with the other pollers
                except IndexError:
                    break
                seen = None
                while ch.answered is None and not ch.failed and time.perf_counter() - ch.sent < self.timeout:
                    time.sleep(0.002)
                while not ch.failed and time.perf_counter() - ch.sent < self.timeout:
                    t_req = time.perf_counter()
                    try:
                        conn.request("GET", f"/workloads/{ch.key[0]}/{ch.key[1]}")
                        r = conn.getresponse()
                        body = r.read()
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                        self.errors += 1
                        continue
                    self.gets += 1
                    t = time.perf_counter()
                    if r.status == 200 and (json.loads(body).get("live") or {}).get("ready") == ch.want:
                        seen = t
                        break
                    time.sleep(max(0.0, self.every - (t - t_req)))
                self.ledger.seen_on_get(ch, seen)
        conn.close()


class ModelSampler(threading.Thread):
    """GET /model twice a second while a step runs: the model's `pending`."""

    def __init__(self, port: int):
        super().__init__(daemon=True, name="model-sampler")
        self.port = port
        self.samples: list[int] = []
        self.running = threading.Event()
        self.stop = False

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop:
            if not self.running.wait(0.2):
                continue
            try:
                conn.request("GET", "/model")
                r = conn.getresponse()
                body = r.read()
                if r.status == 200:
                    self.samples.append(int(json.loads(body).get("pending") or 0))
            except (OSError, http.client.HTTPException, ValueError):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            time.sleep(0.5)
        conn.close()


# -- CPU accounting --------------------------------------------------------------------------

def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine (/proc/stat)."""
    parts = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return sum(parts) - idle, sum(parts)


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


class Cpu:
    """CPU % (of one core) of each named process tree (the service, the API server, etcd...) and
    of this driver over a window."""

    def __init__(self, **pids: int):
        self.pids = pids

    def read(self) -> dict[str, float]:
        out = {k: _tree_cpu_seconds(p) for k, p in self.pids.items()}
        out["driver"] = own_cpu()
        busy, total = machine_ticks()
        out["_busy"], out["_total"] = busy, total
        out["_t"] = time.perf_counter()
        return out

    @staticmethod
    def pct(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        dt = b["_t"] - a["_t"]
        out = {k: (b[k] - a[k]) / dt * 100 for k in a if not k.startswith("_")}
        out["machine_busy"] = (b["_busy"] - a["_busy"]) / max(1.0, b["_total"] - a["_total"]) * 100
        return out


# -- the driver ------------------------------------------------------------------------------

class Driver:
    """`connections` threads, each with one keep-alive HTTPS connection (http.client: ~0.7 ms of
    CPU per patch, against ~4 ms for httpx's async client, which would make the driver the
    limit on these 2 cores); a dispatcher hands them patches on schedule."""

    def __init__(self, server: ApiServer, ledger: Ledger, connections: int, pollers: list[GetPoller],
                 sample_every: float):
        self.server, self.ledger, self.pollers = server, ledger, pollers
        self.connections, self.sample_every = connections, sample_every
        self.work: queue.Queue[tuple[Workload, Change, bool] | None] = queue.Queue()
        self.idle = threading.Semaphore(connections)
        self.threads = [threading.Thread(target=self._worker, daemon=True, name=f"patch-{i}")
                        for i in range(connections)]
        for t in self.threads:
            t.start()

    def _worker(self) -> None:
        c = Client(self.server)
        while (job := self.work.get()) is not None:
            w, ch, ready = job
            try:
                status, _ = c.raw("PATCH", f"{pods_path(w.key[0])}/{ch.pod}/status",
                                  compact(ready_patch(ready, datetime.now(UTC))).encode(),
                                  ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
                if status >= 300:
                    self.ledger.failed(ch, w)
                else:
                    ch.answered = time.perf_counter()
            except (OSError, http.client.HTTPException):
                self.ledger.failed(ch, w)
            finally:
                self.idle.release()
        c.close()

    def close(self) -> None:
        for _ in self.threads:
            self.work.put(None)
        for t in self.threads:
            t.join(30)

    def step(self, st: Step, seconds: float) -> None:
        """Patches at `st.rate` for `seconds`, open loop: patch i due at t0 + i/rate; every
        connection busy, or no free workload, delays the next patch (the achieved rate shows it)."""
        n = int(st.rate * seconds)
        every = max(1, round(st.rate * self.sample_every))
        t0 = time.perf_counter()
        for i in range(n):
            delay = t0 + i / st.rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.idle.acquire()
            w = self.ledger.take()
            if w is None:
                st.starved += 1
                while (w := self.ledger.take()) is None:
                    self.ledger.freed.wait(0.05)
                    self.ledger.freed.clear()
            ch, ready = self.ledger.begin(w, sampled=i % every == 0)
            st.changes.append(ch)
            if ch.sampled:
                self.pollers[0].todo.append(ch)
                for pl in self.pollers:
                    pl.wake.set()
            self.work.put((w, ch, ready))
        for _ in range(self.connections):  # every patch answered
            self.idle.acquire()
        for _ in range(self.connections):
            self.idle.release()
        answered = [c.answered for c in st.changes if c.answered is not None]
        st.seconds = (max(answered) if answered else time.perf_counter()) - t0


# -- setup -----------------------------------------------------------------------------------

def workloads_of(server: ApiServer, svc: Service, spec: FillSpec) -> list[Workload]:
    """Each JobSet with its Ready pods (the driver flips those) and its ready count as served."""
    status, body, _ = svc.get("/workloads")
    if status != 200:
        raise RuntimeError(f"GET /workloads: HTTP {status}: {body[:300]!r}")
    served = {(r["workload"]["namespace"], r["workload"]["name"]): (r.get("pods") or {}).get("ready")
              for r in json.loads(body)["items"]}
    c = Client(server)
    ready_pods: dict[Key, list[str]] = collections.defaultdict(list)
    for ns in spec.namespaces_list():
        for p in c.call("GET", pods_path(ns))["items"]:
            name = (p["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
            if name and any(x.get("type") == "Ready" and x.get("status") == "True"
                            for x in (p.get("status") or {}).get("conditions") or []):
                ready_pods[(ns, name)].append(p["metadata"]["name"])
    c.close()
    out = [Workload(k, served[k], sorted(pods)) for k, pods in ready_pods.items()
           if isinstance(served.get(k), int) and served[k] == len(pods)]
    if not out:
        raise RuntimeError("no workload whose served ready count matches its Ready pods")
    return out


def restore(server: ApiServer, ledger: Ledger) -> int:
    """Every pod the driver left not-ready becomes ready again (the fill as it was)."""
    c = Client(server)
    n = 0
    for w in ledger.by_key.values():
        if w.down is not None:
            c.call("PATCH", f"{pods_path(w.key[0])}/{w.down}/status", ready_patch(True, datetime.now(UTC)),
                   ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
            w.down = None
            n += 1
    c.close()
    return n


# where the service's time goes: a frame on the stack -> what it stands for
PROFILE_PARTS = [("LiveModel._warm_loop", "live answers computed ahead of reads (warm-ahead)"),
                 ("Obj.object", "  of which unpacking kept objects"),
                 ("Informer.run", "reading watch events (decode, project, pack)"),
                 ("LiveModel._process_loop", "changes into rows and events"),
                 ("LiveModel._reason", "  of which the row's diagnosis reason"),
                 ("_SelectorSocketTransport.write", "writing to sockets (streams, answers)"),
                 ("RequestResponseCycle.run_asgi", "request handling (GET polls, /model)")]


def profile(pid: int, seconds: float, out: Path) -> dict[str, Any]:
    """py-spy over a window of the service (`raw`: collapsed stacks, kept in `out`), and the share
    of its samples under each of PROFILE_PARTS.  Empty when py-spy is not installed
    (`.venv/bin/pip install py-spy`)."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return {"error": "py-spy is not installed"}
    r = subprocess.run([str(spy), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--format", "raw",
                        "--output", str(out), "--nonblocking"], capture_output=True, text=True, check=False)
    if r.returncode:
        return {"error": r.stderr[-2000:]}
    total, under = 0, dict.fromkeys([label for _, label in PROFILE_PARTS], 0)
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        total += int(n)
        for frame, label in PROFILE_PARTS:
            if frame + " (" in stack:
                under[label] += int(n)
    return {"file": str(out), "samples": total,
            "shares": {k: round(v / total * 100, 1) if total else 0.0 for k, v in under.items()}}


# -- main ------------------------------------------------------------------------------------

def fmt(x: float) -> str:
    if math.isnan(x):
        return "-"
    if x == float("inf"):
        return "never"
    if x < 0.01:
        return f"{x * 1000:.1f} ms"
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("target/s", "achieved/s", "patch p50", "stream p50", "stream p99", "GET p50", "GET p99 (n)",
            "API watch p99", "svc added p99", "svc CPU",
            "ms/event", "RSS", "pending max", "apiserver+etcd CPU", "driver CPU", "machine busy", "starved")
    lines = [head]
    for r in rows:
        lines.append((f"{r['target_per_s']:g}", f"{r['achieved_per_s']:.0f}", fmt(r["patch_p50_s"]),
                      fmt(r["stream_p50_s"]),
                      fmt(r["stream_p99_s"]), fmt(r["get_p50_s"]), f"{fmt(r['get_p99_s'])} ({r['get_n']})",
                      fmt(r["api_watch_p99_s"]), fmt(r["service_added_p99_s"]),
                      f"{r['service_cpu_pct']:.0f} %", f"{r['service_cpu_ms_per_event']:.2f}", f"{r['rss_mb']:.0f} MB", str(r["pending_max"]),
                      f"{r['apiserver_cpu_pct'] + r['etcd_cpu_pct']:.0f} %", f"{r['driver_cpu_pct']:.0f} %",
                      f"{r['machine_busy_pct']:.0f} %", str(r["starved"])))
    w = [max(len(x[i]) for x in lines) for i in range(len(head))]
    print()
    for ln in lines:
        print("  ".join(c.rjust(w[i]) for i, c in enumerate(ln)))


def run_steps(args: argparse.Namespace, server: ApiServer, svc: Service, ledger: Ledger,
              figures: dict[str, Any], log_dir: Path) -> list[dict[str, Any]]:
    assert server.apiserver is not None and server.etcd is not None
    pollers = [GetPoller(svc.port, ledger, args.poll, args.visible_timeout) for _ in range(args.pollers)]
    for pl in pollers[1:]:
        pl.todo = pollers[0].todo  # one queue, several pollers: a slow change does not hold up the next
    for pl in pollers:
        pl.start()
    sampler = ModelSampler(svc.port)
    sampler.start()
    driver = Driver(server, ledger, args.connections, pollers, args.sample_every)
    cpu = Cpu(service=svc.proc.pid, apiserver=server.apiserver.pid, etcd=server.etcd.pid)
    rows: list[dict[str, Any]] = []
    deadline = time.perf_counter() + args.max_minutes * 60
    try:
        for rate in [float(x) for x in args.rates.split(",")]:
            if time.perf_counter() > deadline:
                print(f"stop: --max-minutes {args.max_minutes:g} used up before {rate:g}/s", flush=True)
                figures["stopped"] = "time"
                break
            st = Step(rate)
            sampler.samples = []
            sampler.running.set()
            prof = None
            if args.profile and rate in args.profile_rates:
                def spy(r: float = rate) -> None:
                    figures.setdefault("profiles", {})[f"{r:g}"] = profile(
                        svc.proc.pid, min(args.profile, args.seconds), log_dir / f"py-spy-{r:g}.txt")
                prof = threading.Thread(target=spy, daemon=True)
                prof.start()
            a = cpu.read()
            driver.step(st, args.seconds)
            b = cpu.read()
            # the last changes through the service (not counted in the CPU window: no new patches)
            drain_until = time.perf_counter() + args.visible_timeout
            while ledger.open and time.perf_counter() < drain_until:
                time.sleep(0.05)
            never = ledger.give_up()
            sampler.running.clear()
            if prof is not None:
                prof.join()
            p = Cpu.pct(a, b)
            st.service_cpu_pct, st.apiserver_cpu_pct, st.etcd_cpu_pct = p["service"], p["apiserver"], p["etcd"]
            st.driver_cpu_pct, st.machine_busy_pct = p["driver"], p["machine_busy"]
            st.load1, st.rss_mb = os.getloadavg()[0], vmrss_mb(svc.proc.pid)
            st.pending_samples = list(sampler.samples)
            st.pending_max = max(st.pending_samples, default=0)
            r = st.summary()
            r["left_unseen"] = never
            rows.append(r)
            print(f"  {rate:6g}/s: achieved {r['achieved_per_s']:6.0f}/s ({r['failed']} failed, starved {r['starved']}, "
                  f"patch p50 {fmt(r['patch_p50_s'])} p99 {fmt(r['patch_p99_s'])}); "
                  f"stream p50 {fmt(r['stream_p50_s'])} p99 {fmt(r['stream_p99_s'])} ({r['stream_never']} never); "
                  f"GET p50 {fmt(r['get_p50_s'])} p99 {fmt(r['get_p99_s'])} (n={r['get_n']}); "
                  f"API server's watch p50 {fmt(r['api_watch_p50_s'])} p99 {fmt(r['api_watch_p99_s'])} "
                  f"(n={r['api_watch_n']}), service's own p50 {fmt(r['service_added_p50_s'])} "
                  f"p99 {fmt(r['service_added_p99_s'])}; "
                  f"service CPU {r['service_cpu_pct']:.0f} % RSS {r['rss_mb']:.0f} MB pending max {r['pending_max']}; "
                  f"apiserver {r['apiserver_cpu_pct']:.0f} % etcd {r['etcd_cpu_pct']:.0f} % "
                  f"driver {r['driver_cpu_pct']:.0f} %; machine busy {r['machine_busy_pct']:.0f} % "
                  f"load {r['load1']:.1f}", flush=True)
            for label, share in (figures.get("profiles", {}).get(f"{rate:g}", {}).get("shares") or {}).items():
                print(f"           py-spy: {share:5.1f} % {label}", flush=True)
            if r["achieved_per_s"] < 0.9 * rate:
                print(f"stop: the API server accepted {r['achieved_per_s']:.0f}/s of {rate:g}/s", flush=True)
                figures["stopped"] = "api server rate"
                break
            if r["stream_p99_s"] > VISIBLE_P99_S:
                print(f"stop: stream p99 {fmt(r['stream_p99_s'])} > {VISIBLE_P99_S:g} s", flush=True)
                figures["stopped"] = "latency"
                break
            time.sleep(args.pause)
    finally:
        driver.close()
        sampler.stop = True
        sampler.running.set()
        for pl in pollers:
            pl.stop = True
            pl.wake.set()
        for pl in pollers:
            pl.join(args.visible_timeout + 5)
        sampler.join(5)
    figures["get_polls"] = sum(pl.gets for pl in pollers)
    return rows


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r["stream_p99_s"] <= VISIBLE_P99_S and r["get_p99_s"] <= VISIBLE_P99_S
          and r["stream_never"] == 0]
    best = max(ok, key=lambda r: r["achieved_per_s"], default=None)
    api_max = max((r["achieved_per_s"] for r in rows), default=0.0)
    return {"absorbed_per_s": best["achieved_per_s"] if best else 0.0,
            "absorbed_target_per_s": best["target_per_s"] if best else 0.0,
            "api_server_max_per_s": api_max,
            "met": bool(best) and best["achieved_per_s"] >= 0.95 * api_max}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=300, help="JobSets to fill (default 300)")
    ap.add_argument("--namespaces", type=int, default=10)
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--jobs-per-jobset", type=int, default=2)
    ap.add_argument("--fill-threads", type=int, default=16)
    ap.add_argument("--reuse-dir", type=Path, help="etcd data here; filled once, reused by later runs (kept)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory for a later --reuse-dir")
    ap.add_argument("--rates", default=RATES, help=f"target pod events per second, in order (default {RATES})")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds of patching per rate (default 20)")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between rates")
    ap.add_argument("--connections", type=int, default=32,
                    help="keep-alive connections to the API server, a thread each (default 32)")
    ap.add_argument("--sample-every", type=float, default=0.25, help="seconds between changes GET one is polled for")
    ap.add_argument("--pollers", type=int, default=3, help="threads polling GET one (one queue)")
    ap.add_argument("--poll", type=float, default=0.02, help="GET one poll interval (s)")
    ap.add_argument("--visible-timeout", type=float, default=10.0, help="a change not seen by then: never")
    ap.add_argument("--max-minutes", type=float, default=8.0, help="no new rate after this many minutes of stepping")
    ap.add_argument("--profile", type=float, default=0.0, help="py-spy the service this many seconds of a rate")
    ap.add_argument("--profile-rates", type=lambda s: {float(x) for x in s.split(",")}, default=set(),
                    help="the rates to profile at (with --profile)")
    ap.add_argument("--store", action="store_true",
                    help="run the service as `--role all` on a real Redis (redis-server): a shard writing the store "
                         "and an API replica answering from it, in one process; changes are then seen through the store")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    random.seed(args.seed)

    wait_for_binaries(30)
    if not cache_flag_supported():
        raise SystemExit("`wlmap serve` has no --cache: no live model to measure")
    spec = FillSpec(args.workloads, args.namespaces, args.pods_per_job, args.jobs_per_jobset)
    keep = args.keep or args.reuse_dir is not None
    run, marker = run_dir(args.reuse_dir, spec, "wlmap-churn-bench-")

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    server = ApiServer(run)
    log_dir = run / "logs"
    log_dir.mkdir(exist_ok=True)
    figures: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load_at_start": os.getloadavg()},
                               "fill": spec.as_dict(), "args": {k: str(v) for k, v in vars(args).items()},
                               "started": datetime.now(UTC).isoformat()}
    svc: Service | None = None
    redis: Any = None
    stream: ListStream | None = None
    api_watch: ApiWatch | None = None
    ledger: Ledger | None = None
    try:
        server.start()
        if marker and marker.get("complete"):
            print(f"fill: reused ({marker.get('workloads')} JobSets)", flush=True)
        else:
            write_marker(run, spec, complete=False)
            print(f"fill: {spec.workloads} JobSets x {spec.jobs_per_jobset * spec.pods_per_job} pods ...", flush=True)
            fr = fill(server, spec, args.fill_threads)
            if fr.errors:
                raise SystemExit(f"fill: {len(fr.errors)} JobSets failed, first: {fr.errors[0]}")
            write_marker(run, spec, complete=True, result=fr)
            print(f"fill: {fr.writes} writes in {fr.seconds:.0f} s", flush=True)
        extra: list[str] = []
        if args.store:  # the shard's path: model -> store (Redis) -> the reads and streams
            from tests.cluster.kubeobjects import Kubectl, shard_lease_rbac
            from tests.store.redis_server import RedisServer

            redis = RedisServer().start()
            for doc in shard_lease_rbac("wlmap-service", SERVICE_NS):  # the namespace cluster_bench serves in
                Kubectl(server).apply(doc)
            extra = ["--store", redis.url, "--role", "all"]
            figures["store"] = True
        svc = Service("model", server.kubeconfig("service"), True, log_dir, extra)
        print(f"wlmap serve synced in {svc.wait_synced():.1f} s", flush=True)
        ledger = Ledger(workloads_of(server, svc, spec), random.Random(args.seed))
        api_watch = ApiWatch(server, ledger)
        api_watch.start()
        if not api_watch.started.wait(30) or api_watch.error:
            raise RuntimeError(f"the API server's pod watch: {api_watch.error or 'not open in 30 s'}")
        stream = ListStream(svc.port, ledger)
        stream.start()
        if not stream.initial_end.wait(60) or stream.error:
            raise RuntimeError(f"list stream: {stream.error or 'no initial BOOKMARK in 60 s'}")
        print(f"{len(ledger.by_key)} workloads driven ({sum(len(w.pods) for w in ledger.by_key.values())} ready pods); "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start", flush=True)
        rows = run_steps(args, server, svc, ledger, figures, log_dir)
        figures["steps"] = rows
        figures["stream_events"] = stream.events
        figures["stream_error"] = stream.error
        figures["api_watch_error"] = api_watch.error
        v = verdict(rows)
        figures["verdict"] = v
        print_table(rows)
        print()
        print(f"highest rate with change-visible p99 <= 1 s (stream and GET): {v['absorbed_per_s']:.0f} events/s "
              f"(target {v['absorbed_target_per_s']:g}/s); the API server on this machine accepted at most "
              f"{v['api_server_max_per_s']:.0f}/s -> {'MET' if v['met'] else 'NOT MET'}"
              + (f"; stopped on: {figures.get('stopped')}" if figures.get("stopped") else ""))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if ledger is not None and server.apiserver is not None:
            try:
                figures["restored"] = restore(server, ledger)
                print(f"restored {figures['restored']} pods to Ready", flush=True)
            except Exception as e:  # noqa: BLE001 - the fill may be left changed; say so
                print(f"restore failed: {e}", file=sys.stderr)
        if stream is not None:
            stream.close()
        if api_watch is not None:
            api_watch.close()
        if svc is not None:
            svc.stop()
        if redis is not None:
            redis.stop()
        server.stop(keep_data=keep)
        if keep:
            print(f"data kept in {run} (next run: --reuse-dir {run})")
        if args.json:
            args.json.write_text(json.dumps(finite(figures), indent=1, default=str))
            print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
