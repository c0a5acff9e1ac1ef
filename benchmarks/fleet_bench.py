"""One `wlmap serve` over three real kube-apiservers, each filled to a realistic size: the fleet
read paths, normal and with one API server stopped, side by side in one run.

1. fill: three etcd + kube-apiserver v1.20.2 pairs (tests/cluster/apiserver.py), clusters `a`
   (the service's home), `b` and `c`, each holding N JobSets with the Jobs and pods the
   controllers and kubelets leave (benchmarks/cluster_fill.py, the shape cluster_bench.py uses);
   `--reuse-dir` keeps the fills for the next run;
2. per round: `wlmap serve --kubeconfig A --cluster-name a --cluster b=B --cluster c=C --auth none`
   as the `wlmap-service` user -> all synced (/clusters and /model?cluster=);
   * normal: a quiet window (each API server's background request rate, and the service's
     `GET /version` probes counted from /clusters `checkedAt`), then `GET /workloads` (every
     cluster, every namespace) and `GET /clusters/{c}/workloads/{ns}/{name}` of random workloads
     of each cluster (first read, then the same again), each in its own window in which every
     API server's `apiserver_request_total` is read before and after (resource requests only:
     not WATCH/CONNECT, not non-resource URLs, not the API server's own bootstrap controllers);
   * stopped: one API server stopped (`--stop`, etcd kept) -> /clusters says unavailable; the
     same reads of the other clusters (the aggregate list then marks the stopped cluster's rows
     `unavailable`), and `GET /clusters/{stopped}/workloads[/{ns}/{name}]` -> 503;
   * restart: that API server started again -> its cluster available, its model watching again;
   while it goes down and while it comes back, a reader keeps reading one workload of another
   cluster (what a cluster's outage and resync cost the others);
3. a table: figures normal / stopped and their ratio, targets PASS / FAIL (exit 1 on a FAIL).

    python benchmarks/fleet_bench.py [--workloads 300] [--namespaces 20] [--rounds 3]
        [--stop b] [--reuse-dir DIR | --keep] [--json out.json]

Develop with small fills (`--workloads 20 --namespaces 3 --rounds 1`): 3 x 300 JobSets are
~20,000 writes (a few minutes on 2 cores; `--reuse-dir` fills once).  API-server v1.20 does not count non-resource
requests (`/version`, `/metrics`, discovery) in apiserver_request_total, so the probes are
counted on the service's side: each probe sets the cluster's `checkedAt` (ms resolution).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cluster_bench import (
    EXCLUDED_VERBS,
    WLMAP,
    ApiCounter,
    finite,
    fmt_ms,
    known,
    pct,
    stop_tree,
    vmrss_mb,
    wait_for_binaries,
)
from benchmarks.cluster_fill import (
    SERVICE_NS,
    FillSpec,
    fill,
    object_sizes,
    read_marker,
    write_marker,
)
from benchmarks.http_bench import _tree_cpu_seconds, free_port
from benchmarks.soak import tree_rss_mb
from tests.cluster.apiserver import ApiServer

NAMES = ("a", "b", "c")  # a: the service's home cluster (--kubeconfig), b and c: --cluster
PHASES = ("normal", "stopped")
TARGETS = {"list_p50_ms": 200.0, "get_p50_ms": 5.0, "api_per_read": 0.0,
           "unavailable_p50_ms": 5.0}  # the last: the benchmark's own bound (a 503 is a lookup)
NAN = float("nan")


class Abort(Exception):
    """Ends a wait at once (a helper thread failed)."""


def now() -> float:
    return time.perf_counter()


def parse_iso(s: str | None) -> float:
    if not s:
        return NAN
    try:
        return datetime.fromisoformat(s).timestamp()
    except ValueError:
        return NAN


# The API server's own requests, seen on a server nobody else talks to: its bootstrap
# controllers read the `default` namespace and the `kubernetes` service every 10 s, the four
# system namespaces every minute, and the API Priority and Fairness configuration now and then.
# The service reads none of these (it lists and watches workload kinds and pods).
OWN = {("GET", "namespaces"), ("GET", "services"), ("GET", "flowschemas.flowcontrol.apiserver.k8s.io"),
       ("GET", "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io")}


def counted(verb: str, res: str) -> bool:
    return verb not in EXCLUDED_VERBS and not res.startswith("(non-resource)")


def resource_requests(d: dict[tuple[str, str], float]) -> tuple[float, float]:
    """What reads cost an API server: resource requests, not watches, not non-resource URLs;
    and, apart, the API server's own (OWN)."""
    total = own = 0.0
    for (verb, res), v in d.items():
        if counted(verb, res):
            if (verb, res) in OWN:
                own += v
            else:
                total += v
    return total, own


# -- the service ---------------------------------------------------------------------------------

class Service:
    """`wlmap serve` over the three clusters, and a keep-alive client of it."""

    def __init__(self, servers: dict[str, ApiServer], probe_interval: float, log_dir: Path, extra: list[str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home, *others = NAMES
        args = [str(WLMAP), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--kubeconfig", str(servers[home].kubeconfig("service")), "--cluster-name", home,
                "--namespace", SERVICE_NS]
        for n in others:
            args += ["--cluster", f"{n}={servers[n].kubeconfig('service')}"]
        args += ["--auth", "none", "--cluster-probe-interval", f"{probe_interval:g}", "--log-level", "warning", *extra]
        self.args = args
        env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
        self.log_path = log_dir / f"wlmap-fleet-{self.port}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process writes it until stop()
        self.started = now()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.conn: http.client.HTTPConnection | None = None
        self.milestones: dict[str, float] = {}  # seconds from the process start until each first held

    def _mark(self, what: str, ok: bool) -> bool:
        if ok and what not in self.milestones:
            self.milestones[what] = now() - self.started
        return ok

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self, n: int = 3000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def get(self, path: str, timeout: float = 120) -> tuple[int, bytes, float, str]:
        """GET over a keep-alive connection: (status, body, seconds, content type)."""
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            t = now()
            try:
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                body = r.read()
                dt = now() - t
                if r.getheader("connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, body, dt, r.getheader("content-type", "")
            except (OSError, http.client.HTTPException):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError

    def probe(self, path: str, timeout: float = 5) -> tuple[int, Any]:
        """GET on a connection of its own (status polling, never the measured connection)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            try:
                return r.status, json.loads(body)
            except ValueError:
                return r.status, None
        finally:
            c.close()

    def clusters(self) -> dict[str, dict[str, Any]]:
        status, doc = self.probe("/clusters")
        if status != 200 or not isinstance(doc, dict):
            raise RuntimeError(f"GET /clusters: HTTP {status}")
        return {i["name"]: i for i in doc.get("items") or []}

    def model(self, name: str) -> dict[str, Any]:
        status, doc = self.probe(f"/model?cluster={name}")
        if status != 200 or not isinstance(doc, dict):
            raise RuntimeError(f"GET /model?cluster={name}: HTTP {status}")
        return doc

    def wait(self, what: str, cond: Callable[[], bool], timeout: float, since: float | None = None) -> float:
        """Seconds from `since` (default: now) until cond() holds, polled every 20 ms."""
        t0 = now() if since is None else since
        deadline = now() + timeout
        last_error = ""
        while now() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wlmap serve exited {self.proc.returncode} while waiting for {what}:\n"
                                   f"{self.output()}")
            try:
                if cond():
                    return now() - t0
            except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError) as e:
                last_error = f"{type(e).__name__}: {e}"
            time.sleep(0.02)
        raise RuntimeError(f"{what}: not within {timeout:.0f} s ({last_error or 'condition false'});\n"
                           f"/clusters: {self._safe_clusters()}\n{self.output()}")

    def _safe_clusters(self) -> str:
        try:
            return json.dumps(self.clusters())[:1500]
        except Exception as e:  # noqa: BLE001
            return f"({e})"

    def all_synced(self) -> bool:
        items = self.clusters()
        self._mark("answers", True)
        for n in NAMES:
            self._mark(f"{n} available", bool(items.get(n, {}).get("available")))
            self._mark(f"{n} synced", bool(items.get(n, {}).get("synced")))
        if not all(items.get(n, {}).get("synced") and items[n].get("available") for n in NAMES):
            return False
        return self._mark("definitions synced", all(m.get("definitionsSynced", True)
                                                    for m in (self.model(n) for n in NAMES)))

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc.poll() is None:
            stop_tree(self.proc, 15)
        if not self.log.closed:
            self.log.close()


def model_watching(doc: dict[str, Any]) -> bool:
    """Every informer of a model has listed again and has its watch open, and every change the
    lists brought is applied (no interpretation pending)."""
    kinds = doc.get("kinds") or []
    return bool(doc.get("synced")) and bool((doc.get("freshness") or {}).get("watching")) and \
        all(k.get("state") in ("synced", "not-served") for k in kinds) and not doc.get("pending")


class ProbeCounter(threading.Thread):
    """Counts each cluster's probes of its API server (GET /version) as the service reports them:
    every probe sets the cluster's `checkedAt` on /clusters."""

    def __init__(self, svc: Service, every: float):
        super().__init__(daemon=True)
        self.svc, self.every = svc, every
        self.seen: dict[str, set[str]] = {n: set() for n in NAMES}
        self.stop_ev = threading.Event()
        self.errors = 0

    def run(self) -> None:
        while not self.stop_ev.is_set():
            try:
                for n, item in self.svc.clusters().items():
                    if n in self.seen and item.get("checkedAt"):
                        self.seen[n].add(item["checkedAt"])
            except Exception:  # noqa: BLE001 - counted; the window goes on
                self.errors += 1
            self.stop_ev.wait(self.every)

    def finish(self) -> dict[str, int]:
        self.stop_ev.set()
        self.join(10)
        # the first value seen may be a probe from before the window
        return {n: max(0, len(v) - 1) for n, v in self.seen.items()}


class Reader(threading.Thread):
    """Reads of a live cluster's workloads, one after another on a connection of their own, while
    another cluster goes down or comes back: what that costs the clusters that keep working."""

    def __init__(self, port: int, paths: list[str], pause: float = 0.01):
        super().__init__(daemon=True)
        self.port, self.paths, self.pause = port, paths, pause
        self.samples: list[tuple[float, float, int]] = []  # (start, seconds, status)
        self.stop_ev = threading.Event()
        self.error = ""

    def run(self) -> None:
        conn: http.client.HTTPConnection | None = None
        i = 0
        while not self.stop_ev.is_set():
            path = self.paths[i % len(self.paths)]
            i += 1
            t = now()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                conn.request("GET", path)
                r = conn.getresponse()
                r.read()
                self.samples.append((t, now() - t, r.status))
            except (OSError, http.client.HTTPException) as e:
                self.error = f"{type(e).__name__}: {e}"
                self.samples.append((t, now() - t, 0))
                if conn is not None:
                    conn.close()
                conn = None
            self.stop_ev.wait(self.pause)
        if conn is not None:
            conn.close()

    def finish(self) -> None:
        self.stop_ev.set()
        self.join(70)

    def slowest(self, t0: float) -> tuple[float, float]:
        """(seconds after t0 the slowest read since t0 began, its latency)."""
        xs = [(dt, t) for t, dt, _ in self.samples if t >= t0]
        if not xs:
            return NAN, NAN
        dt, t = max(xs)
        return t - t0, dt

    def between(self, t0: float, t1: float = math.inf) -> tuple[list[float], int]:
        """Latencies of the reads that started in [t0, t1], and how many did not answer 200."""
        xs = [(dt, st) for t, dt, st in self.samples if t0 <= t <= t1]
        return [dt for dt, _ in xs], sum(1 for _, st in xs if st != 200)


# -- the benchmark -------------------------------------------------------------------------------

def new_phase() -> dict[str, Any]:
    return {"list": [], "list_first": [], "get_first": {n: [] for n in NAMES}, "get_repeat": {n: [] for n in NAMES},
            "unavail_list": [], "unavail_get": [],
            "api": {n: {"requests": 0.0, "own": 0.0, "background": 0.0, "reads": 0, "window_s": 0.0, "detail": {}} for n in NAMES},
            "cpu_ms": {"list": [], "get_first": [], "get_repeat": [], "unavail": []},
            "quiet": {n: [] for n in NAMES}, "probes": {n: [] for n in NAMES},
            "checks": {}, "errors": []}


class Bench:
    def __init__(self, args: argparse.Namespace, servers: dict[str, ApiServer], spec: FillSpec, log_dir: Path):
        self.a, self.servers, self.spec, self.log_dir = args, servers, spec, log_dir
        self.counters = {n: ApiCounter(s) for n, s in servers.items()}
        self.rng = random.Random(args.seed)
        self.refs = spec.workload_refs()
        self.svc: Service | None = None
        self.res: dict[str, Any] = {p: new_phase() for p in PHASES}
        self.res.update({"startup_s": [], "cluster_sync_s": {n: [] for n in NAMES}, "rss_mb": [], "tree_rss_mb": [],
                         "rss_after_sync_mb": [], "stop_s": [], "to_unavailable_s": [], "apiserver_start_s": [],
                         "to_available_s": [], "to_watching_s": [], "after_restart": [], "model_after_restart": None,
                         "reads_going_down": [], "reads_going_down_failed": 0, "reads_coming_back": [],
                         "reads_coming_back_failed": 0, "reads_resync": [], "reads_resync_failed": 0,
                         "milestones": []})
        self.bg: dict[str, dict[str, float]] = {p: {} for p in PHASES}

    # -- helpers ---------------------------------------------------------------------------
    def stop_service(self) -> None:
        if self.svc is not None:
            self.svc.stop()
            self.svc = None

    def check(self, phase: str, key: str, ok: bool, text: str) -> None:
        """A correctness check: the first result of each kind is kept, a failure always."""
        checks = self.res[phase]["checks"]
        if key not in checks or (not ok and checks[key][0]):
            checks[key] = (ok, text)

    def rss(self, when: str) -> None:
        assert self.svc is not None
        rss, tree = vmrss_mb(self.svc.pid), tree_rss_mb(self.svc.pid)
        self.res["rss_mb"].append(rss)
        self.res["tree_rss_mb"].append(tree)
        if when == "after sync":
            self.res["rss_after_sync_mb"].append(rss)
        print(f"   RSS {when}: service {rss:.0f} MB (VmRSS), process tree {tree:.0f} MB", flush=True)

    def quiet_window(self, phase: str, live: list[str]) -> None:
        """Background request rate of each live API server, and the probes of every cluster."""
        assert self.svc is not None
        probes = ProbeCounter(self.svc, min(0.1, self.a.probe_interval / 5))
        probes.start()
        before = {n: self.counters[n].scrape() for n in live}
        t0 = now()
        time.sleep(self.a.quiet)
        dt = now() - t0
        after = {n: self.counters[n].scrape() for n in live}
        seen = probes.finish()
        res = self.res[phase]
        parts = []
        for n in NAMES:
            res["probes"][n].append(seen[n] / dt)
            if n in live:
                d = ApiCounter.delta(before[n], after[n])
                c, own = resource_requests(d)
                self.bg[phase][n] = c / dt
                res["quiet"][n].append(c / dt)
                detail = ", ".join(f"{v} {r} {x:.0f}" for (v, r), x in sorted(d.items()) if counted(v, r))
                parts.append(f"{n}: {c:.0f} requests, {own:.0f} the API server's own"
                             f"{f' ({detail})' if detail else ''}, {seen[n]} probes")
            else:
                parts.append(f"{n}: (stopped) {seen[n]} probes")
        print(f"   quiet window {dt:.1f} s: " + "; ".join(parts), flush=True)

    def window(self, phase: str, label: str, paths: list[str], live: list[str],
               check: Callable[[str, int, bytes, str], None], sink: list[float], cpu_key: str) -> list[float]:
        """Reads in one window, every live API server's request counters read before and after."""
        assert self.svc is not None
        svc = self.svc
        cpu0 = _tree_cpu_seconds(svc.pid)
        before = {n: self.counters[n].scrape() for n in live}
        t0 = now()
        lat: list[float] = []
        for p in paths:
            status, body, dt, ctype = svc.get(p)
            lat.append(dt)
            check(p, status, body, ctype)
        win = now() - t0
        after = {n: self.counters[n].scrape() for n in live}
        cpu = _tree_cpu_seconds(svc.pid) - cpu0
        res = self.res[phase]
        extra = []
        for n in live:
            d = ApiCounter.delta(before[n], after[n])
            c, own = resource_requests(d)
            acc = res["api"][n]
            acc["requests"] += c
            acc["own"] += own
            acc["background"] += self.bg[phase].get(n, 0.0) * win
            acc["reads"] += len(paths)
            acc["window_s"] += win
            for (v, r), x in d.items():
                if counted(v, r):
                    acc["detail"][f"{v} {r}"] = acc["detail"].get(f"{v} {r}", 0.0) + x
            if c or own:
                extra.append(f"{n} {c:.0f}" + (f" (+{own:.0f} its own)" if own else ""))
        sink += lat
        res["cpu_ms"][cpu_key].append(cpu * 1000 / max(1, len(paths)))
        print(f"   {phase:7s} {label:52s} n={len(paths):4d}  p50 {fmt_ms(pct(lat, 50)):>9s}  p95 "
              f"{fmt_ms(pct(lat, 95)):>9s}  max {fmt_ms(max(lat) if lat else NAN):>9s}  API requests "
              f"{', '.join(extra) if extra else '0'}  CPU {cpu * 1000 / max(1, len(paths)):.1f} ms/read", flush=True)
        return lat

    # -- checks of answers -----------------------------------------------------------------
    def list_check(self, phase: str, stopped: str | None) -> Callable[[str, int, bytes, str], None]:
        n_each = self.spec.workloads

        def check(path: str, status: int, body: bytes, ctype: str) -> None:
            if status != 200:
                self.res[phase]["errors"].append(f"GET {path}: HTTP {status}: {body[:200]!r}")
                self.check(phase, "list", False, f"GET {path}: HTTP {status}")
                return
            if "list" in self.res[phase]["checks"] and self.res[phase]["checks"]["list"][0]:
                return  # the first answer of the phase is checked in full (the same model answers the rest)
            doc = json.loads(body)
            items = doc.get("items") or []
            per: dict[str, int] = {}
            unavail: dict[str, int] = {}
            for r in items:
                c = str(r.get("cluster"))
                per[c] = per.get(c, 0) + 1
                if r.get("unavailable"):
                    unavail[c] = unavail.get(c, 0) + 1
            want_unavail = {stopped: n_each} if stopped else {}
            warned = any(stopped in w for w in doc.get("warnings") or []) if stopped else True
            ok = per == {n: n_each for n in NAMES} and unavail == want_unavail and warned
            self.check(phase, "list", ok,
                       f"GET /workloads: {len(items)} rows, per cluster {per} (want {n_each} each), marked unavailable "
                       f"{unavail or 'none'} (want {want_unavail or 'none'})"
                       + (f", warning naming {stopped}: {'yes' if warned else 'NO'}" if stopped else ""))
        return check

    def get_check(self, phase: str, cluster: str) -> Callable[[str, int, bytes, str], None]:
        want_pods = self.spec.pods_per_job * self.spec.jobs_per_jobset

        def check(path: str, status: int, body: bytes, ctype: str) -> None:
            key = f"get {cluster}"
            if status != 200:
                self.res[phase]["errors"].append(f"GET {path}: HTTP {status}: {body[:200]!r}")
                self.check(phase, key, False, f"GET {path}: HTTP {status}")
                return
            if key in self.res[phase]["checks"] and self.res[phase]["checks"][key][0]:
                return
            doc = json.loads(body)
            live = doc.get("live") or {}
            name = path.rsplit("/", 1)[1]
            ok = doc.get("cluster") == cluster and (doc.get("workload") or {}).get("name") == name \
                and live.get("current") == want_pods
            self.check(phase, key, ok, f"GET {path}: cluster {doc.get('cluster')}, phase "
                                       f"{(doc.get('status') or {}).get('phase')}, live {live.get('ready')}/"
                                       f"{live.get('current')} ready/current (want {want_pods} current), "
                                       f"freshness {json.dumps(doc.get('freshness'))}")
        return check

    def unavailable_check(self, phase: str, key: str) -> Callable[[str, int, bytes, str], None]:
        def check(path: str, status: int, body: bytes, ctype: str) -> None:
            try:
                typ = str(json.loads(body).get("type", ""))
            except ValueError:
                typ = ""
            ok = status == 503 and ctype.startswith("application/problem+json") and typ.endswith("cluster-unavailable")
            if not ok:
                self.res[phase]["errors"].append(f"GET {path}: HTTP {status} {ctype} {body[:200]!r} (want 503 "
                                                 f"cluster-unavailable)")
            if key not in self.res[phase]["checks"] or not ok:
                self.check(phase, key, ok, f"GET {path}: HTTP {status} {typ.rsplit('/', 1)[-1] or ctype}")
        return check

    # -- the reads of one phase ------------------------------------------------------------
    def reads(self, phase: str, live: list[str], stopped: str | None, samples: dict[str, list[tuple[str, str]]]) -> None:
        assert self.svc is not None
        res = self.res[phase]
        self.svc.get("/clusters")  # the connection
        self.window(phase, "GET /workloads (first after the phase began)", ["/workloads"], live,
                    self.list_check(phase, stopped), res["list_first"], "list")
        self.window(phase, f"GET /workloads (all clusters, {len(NAMES) * self.spec.workloads} rows)",
                    ["/workloads"] * self.a.lists, live, self.list_check(phase, stopped), res["list"], "list")
        for c in live:
            refs = samples[c]
            paths = [f"/clusters/{c}/workloads/{ns}/{name}" for ns, name in refs]
            self.window(phase, f"GET /clusters/{c}/workloads/{{ns}}/{{name}} first read", paths, live,
                        self.get_check(phase, c), res["get_first"][c], "get_first")
            again = paths[:]
            self.rng.shuffle(again)
            self.window(phase, f"GET /clusters/{c}/workloads/{{ns}}/{{name}} repeated", again, live,
                        self.get_check(phase, c), res["get_repeat"][c], "get_repeat")
        if stopped is not None:
            n = self.a.unavailable_reads
            self.window(phase, f"GET /clusters/{stopped}/workloads -> 503", [f"/clusters/{stopped}/workloads"] * n,
                        live, self.unavailable_check(phase, "503 list"), res["unavail_list"], "unavail")
            paths = [f"/clusters/{stopped}/workloads/{ns}/{name}" for ns, name in
                     (self.rng.choice(self.refs) for _ in range(n))]
            self.window(phase, f"GET /clusters/{stopped}/workloads/{{ns}}/{{name}} -> 503", paths, live,
                        self.unavailable_check(phase, "503 one"), res["unavail_get"], "unavail")

    def samples(self) -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
        """Per cluster, the workloads the normal phase reads and others for the stopped phase (so
        that the stopped phase's first reads are first reads too, when the fill is large enough)."""
        n = max(1, min(self.a.gets, len(self.refs)))
        if 2 * n > len(self.refs):
            print(f"   note: {len(self.refs)} workloads per cluster are too few for {n} + {n} distinct reads: some of "
                  f"the stopped phase's 'first reads' read a workload again (--gets {len(self.refs) // 2} avoids it)",
                  flush=True)
        normal, stopped = {}, {}
        for c in NAMES:
            refs = self.refs[:]
            self.rng.shuffle(refs)
            normal[c] = refs[:n]
            rest = refs[n:] or refs
            stopped[c] = (rest * math.ceil(n / len(rest)))[:n]
        return normal, stopped

    # -- one round -------------------------------------------------------------------------
    def round(self, r: int) -> None:
        a = self.a
        stopped = a.stop
        print(f"-- round {r + 1}/{a.rounds}", flush=True)
        self.stop_service()
        self.svc = svc = Service(self.servers, a.probe_interval, self.log_dir, a.service_arg or [])
        if r == 0:
            print("   " + " ".join(svc.args[1:]), flush=True)
        t = svc.wait("all clusters synced", svc.all_synced, a.sync_timeout, since=svc.started)
        self.res["startup_s"].append(t)
        per = []
        for n in NAMES:
            m = svc.model(n)
            s = parse_iso(m.get("syncedAt")) - parse_iso(m.get("startedAt"))
            self.res["cluster_sync_s"][n].append(s)
            per.append(f"{n} {s:.2f} s ({m.get('objects')} objects, {m.get('workloads')} workloads)")
        print(f"   start -> all synced: {t:.2f} s; each model's own sync: {', '.join(per)}", flush=True)
        print("   from the process start: " + ", ".join(f"{k} {v:.2f} s" for k, v in
                                                      sorted(svc.milestones.items(), key=lambda kv: kv[1])), flush=True)
        self.res["milestones"].append(svc.milestones)
        items = svc.clusters()
        counts = {n: items[n].get("workloads") for n in NAMES}
        self.check("normal", "clusters", counts == {n: self.spec.workloads for n in NAMES},
                   f"/clusters workloads {counts} (want {self.spec.workloads} each)")
        self.rss("after sync")
        normal, later = self.samples()

        # -- normal --------------------------------------------------------------------------
        self.quiet_window("normal", list(NAMES))
        self.reads("normal", list(NAMES), None, normal)
        self.rss("after the normal reads")

        # -- one API server stopped ------------------------------------------------------------
        live = [n for n in NAMES if n != stopped]
        watch_paths = [f"/clusters/{live[0]}/workloads/{ns}/{name}" for ns, name in normal[live[0]]]
        reader = Reader(svc.port, watch_paths)
        reader.start()
        time.sleep(0.5)
        stop_err: list[BaseException] = []
        gone_at: list[float] = []

        def stop_it() -> None:
            try:
                self.servers[stopped].stop_apiserver()  # SIGTERM, 3 s for the open watches, then SIGKILL
                gone_at.append(now())
            except BaseException as e:  # noqa: BLE001 - raised below
                stop_err.append(e)

        stopper = threading.Thread(target=stop_it, daemon=True)
        t0 = now()
        stopper.start()
        try:
            def stop_failed() -> bool:
                if stop_err:
                    raise Abort(f"API server {stopped} did not stop: {stop_err[0]}")
                return False

            t_down = svc.wait(f"cluster {stopped} unavailable",
                              lambda: stop_failed() or svc.clusters()[stopped]["available"] is False,
                              a.probe_interval + 60, since=t0)
        finally:
            stopper.join(30)
        if stop_err:
            raise stop_err[0]
        t_stop = (gone_at[0] if gone_at else now()) - t0
        time.sleep(1.0)
        reader.finish()
        during, bad = reader.between(t0)
        self.res["reads_going_down"] += during
        self.res["reads_going_down_failed"] += bad
        self.res["stop_s"].append(t_stop)
        self.res["to_unavailable_s"].append(t_down)
        item = svc.clusters()[stopped]
        print(f"   API server {stopped} stopped (SIGTERM; gone {t_stop:.2f} s later, etcd kept) -> /clusters says "
              f"unavailable {t_down:.2f} s after the SIGTERM (probe every {a.probe_interval:g} s); lastError: "
              f"{item.get('lastError')}", flush=True)
        at, worst = reader.slowest(t0)
        print(f"   meanwhile GET /clusters/{live[0]}/workloads/{{ns}}/{{name}} (repeated), {len(during)} reads: p50 "
              f"{fmt_ms(pct(during, 50))}, max {fmt_ms(worst)} (begun {at:.2f} s after the SIGTERM), {bad} not 200",
              flush=True)
        self.check("stopped", "clusters", item.get("available") is False and all(
            svc.clusters()[n]["available"] for n in live), f"/clusters: {stopped} available "
                   f"{item.get('available')}, synced {item.get('synced')}; others available")
        self.quiet_window("stopped", live)
        self.reads("stopped", live, stopped, later)
        self.rss("after the reads with one cluster stopped")

        # -- restarted --------------------------------------------------------------------------
        reader = Reader(svc.port, watch_paths)
        reader.start()
        time.sleep(0.5)
        start_err: list[BaseException] = []
        ready_at: list[float] = []

        def start_it() -> None:
            try:
                self.servers[stopped].start_apiserver()  # returns once its /readyz says ok
                ready_at.append(now())
            except BaseException as e:  # noqa: BLE001 - raised below
                start_err.append(e)

        starter = threading.Thread(target=start_it, daemon=True)
        t0 = now()
        starter.start()
        try:
            def failed() -> bool:
                if start_err:
                    raise Abort(f"API server {stopped} did not start again: {start_err[0]}")
                return False

            t_avail = svc.wait(f"cluster {stopped} available again",
                               lambda: failed() or bool(svc.clusters()[stopped]["available"]), a.sync_timeout, since=t0)
            t_watch = svc.wait(f"cluster {stopped} model watching again",
                               lambda: failed() or model_watching(svc.model(stopped)), a.sync_timeout, since=t0)
        finally:
            starter.join(120)
        if start_err:
            raise start_err[0]
        t_ready_at = ready_at[0] if ready_at else now()
        t_ready = t_ready_at - t0
        time.sleep(1.0)
        reader.finish()
        during, bad = reader.between(t0)
        self.res["reads_coming_back"] += during
        self.res["reads_coming_back_failed"] += bad
        resync, resync_bad = reader.between(t0 + t_avail)  # the service's own part: reconnect, resume or relist
        self.res["reads_resync"] += resync
        self.res["reads_resync_failed"] += resync_bad
        self.res["apiserver_start_s"].append(t_ready)
        self.res["to_available_s"].append(t_avail)
        self.res["to_watching_s"].append(t_watch)
        m = svc.model(stopped)
        self.res["model_after_restart"] = {"kinds": [{k: x.get(k) for k in ("kind", "state", "relists", "reconnects",
                                                                             "objects")} for x in m.get("kinds") or []],
                                           "freshness": m.get("freshness"), "interpretations": m.get("interpretations")}
        kinds = ", ".join(f"{x.get('kind')} {x.get('state')} relists {x.get('relists')} reconnects "
                          f"{x.get('reconnects')}" for x in m.get("kinds") or [])
        print(f"   API server {stopped} started again: its /readyz ok {t_ready:.2f} s, cluster available "
              f"{t_avail:.2f} s, model synced and watching again {t_watch:.2f} s after the start ({kinds})", flush=True)
        at, worst = reader.slowest(t0)
        print(f"   meanwhile GET /clusters/{live[0]}/workloads/{{ns}}/{{name}} (repeated), "
              f"{len(during)} reads: p50 {fmt_ms(pct(during, 50))}, max {fmt_ms(worst)} (begun {at:.2f} s after the "
              f"start), {bad} not 200; from the cluster available on: {len(resync)} reads, p50 "
              f"{fmt_ms(pct(resync, 50))}, max {fmt_ms(max(resync) if resync else NAN)}", flush=True)
        status, body, dt, _ = svc.get("/workloads")
        doc = json.loads(body) if status == 200 else {}
        rows = doc.get("items") or []
        marked = sum(1 for x in rows if x.get("unavailable"))
        self.res["after_restart"].append(dt)
        self.check("stopped", "after restart", status == 200 and len(rows) == len(NAMES) * self.spec.workloads
                   and marked == 0, f"GET /workloads after the restart: HTTP {status}, {len(rows)} rows, "
                                    f"{marked} marked unavailable ({fmt_ms(dt)})")
        self.rss("after the restart")
        self.stop_service()

    # -- summary ---------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def stats(xs: list[float]) -> dict[str, float]:
            return {"n": len(xs), "p50_ms": pct(xs, 50) * 1000, "p95_ms": pct(xs, 95) * 1000,
                    "max_ms": (max(xs) if xs else NAN) * 1000}

        for p in PHASES:
            res = self.res[p]
            api = {}
            for n, acc in res["api"].items():
                if not acc["reads"]:
                    api[n] = None
                    continue
                api[n] = {"reads": acc["reads"], "requests": acc["requests"], "own": acc["own"],
                          "background": acc["background"],
                          "per_read": max(0.0, acc["requests"] - acc["background"]) / acc["reads"],
                          "raw_per_read": acc["requests"] / acc["reads"], "window_s": acc["window_s"],
                          "detail": acc["detail"]}
            out[p] = {
                "list": stats(res["list"]), "list_first": stats(res["list_first"]),
                "get_first": stats([x for v in res["get_first"].values() for x in v]),
                "get_repeat": stats([x for v in res["get_repeat"].values() for x in v]),
                "get_first_by_cluster": {n: stats(v) for n, v in res["get_first"].items() if v},
                "get_repeat_by_cluster": {n: stats(v) for n, v in res["get_repeat"].items() if v},
                "unavail_list": stats(res["unavail_list"]), "unavail_get": stats(res["unavail_get"]),
                "api": api,
                "quiet_rate": {n: (sum(v) / len(v) if v else NAN) for n, v in res["quiet"].items()},
                "probes_per_s": {n: (sum(v) / len(v) if v else NAN) for n, v in res["probes"].items()},
                "cpu_ms": {k: pct(v, 50) for k, v in res["cpu_ms"].items()},
                "checks": {k: {"ok": ok, "text": t} for k, (ok, t) in res["checks"].items()},
                "errors": res["errors"],
            }
        r = self.res
        out["startup_s"] = {"samples": r["startup_s"], "max": max(r["startup_s"] or [NAN])}
        out["cluster_sync_s"] = r["cluster_sync_s"]
        out["rss_mb"] = {"after_sync": max(r["rss_after_sync_mb"] or [NAN]), "max": max(r["rss_mb"] or [NAN]),
                         "tree_max": max(r["tree_rss_mb"] or [NAN])}
        for k in ("stop_s", "to_unavailable_s", "apiserver_start_s", "to_available_s", "to_watching_s", "after_restart"):
            out[k] = {"samples": r[k], "max": max(r[k] or [NAN])}
        out["model_after_restart"] = r["model_after_restart"]
        out["start_milestones"] = r["milestones"]
        for k in ("reads_going_down", "reads_coming_back", "reads_resync"):
            out[k] = {**stats(r[k]), "failed": r[k + "_failed"]}
        return out


# -- the table -----------------------------------------------------------------------------------

def print_table(summ: dict[str, Any], args: argparse.Namespace, spec: FillSpec) -> bool:
    """Print the figures; True when every target and check passed."""
    nm, st = summ["normal"], summ["stopped"]
    stopped = args.stop
    live = [n for n in NAMES if n != stopped]
    rows: list[tuple[str, str, str, str, str, str]] = []
    all_ok = True

    def verdict(oks: list[bool | None]) -> str:
        nonlocal all_ok
        oks2 = [o for o in oks if o is not None]
        if not oks2:
            return "-"
        if all(oks2):
            return "PASS"
        all_ok = False
        return "FAIL"

    def ratio(x: float, y: float) -> str:
        return f"{x / y:.2f}x" if known(x) and known(y) and y > 0 else "-"

    def ms(x: float) -> str:
        return fmt_ms(x / 1000) if known(x) else "-"

    def lat_rows(label: str, key: str, target: float | None) -> None:
        for q in ("p50", "p95"):
            x, y = nm[key][f"{q}_ms"], st[key][f"{q}_ms"]
            ok = None
            if target is not None and q == "p50":
                ok = [x <= target if known(x) else False, y <= target if known(y) else False]
            rows.append((f"{label} {q}", ms(x), ms(y), ratio(y, x),
                         f"p50 <= {target:g} ms" if target is not None and q == "p50" else "",
                         verdict(ok) if ok is not None else ""))

    n_rows = len(NAMES) * spec.workloads
    lat_rows(f"GET /workloads, {len(NAMES)} clusters, {n_rows} rows", "list", TARGETS["list_p50_ms"])
    x, y = nm["list_first"]["p50_ms"], st["list_first"]["p50_ms"]
    rows.append(("  the first GET /workloads of the phase", ms(x), ms(y), ratio(y, x), "", ""))
    lat_rows("GET /clusters/{c}/workloads/{ns}/{name}, first read", "get_first", TARGETS["get_p50_ms"])
    lat_rows("GET /clusters/{c}/workloads/{ns}/{name}, repeated", "get_repeat", TARGETS["get_p50_ms"])
    for n in NAMES:
        for key, what in (("get_first_by_cluster", "first"), ("get_repeat_by_cluster", "repeated")):
            x = nm[key].get(n, {}).get("p50_ms", NAN)
            y = st[key].get(n, {}).get("p50_ms", NAN) if n in live else NAN
            rows.append((f"  of which cluster {n}, {what} p50", ms(x), ms(y) if n in live else "(stopped)",
                         ratio(y, x), "", ""))
    for n in NAMES:
        x, y = nm["api"].get(n), st["api"].get(n)
        ok = [abs(x["per_read"]) < 0.01 if x else None, abs(y["per_read"]) < 0.01 if y else None]
        rows.append((f"API-server requests per read, server {n}", f"{x['per_read']:.2f}" if x else "-",
                     f"{y['per_read']:.2f}" if y else "(stopped)", "", "= 0", verdict(ok)))
        rows.append((f"  requests in its read windows / reads (+ its own), server {n}",
                     f"{x['requests']:.0f} / {x['reads']} (+{x['own']:.0f})" if x else "-",
                     f"{y['requests']:.0f} / {y['reads']} (+{y['own']:.0f})" if y else "(stopped)", "", "", ""))
    for n in NAMES:
        x, y = nm["quiet_rate"][n], st["quiet_rate"][n]
        rows.append((f"API-server requests/s in the quiet window, server {n}", f"{x:.2f}" if known(x) else "-",
                     f"{y:.2f}" if known(y) else "(stopped)", "", "", ""))
    for n in NAMES:
        x, y = nm["probes_per_s"][n], st["probes_per_s"][n]
        rows.append((f"probes GET /version per s, cluster {n}", f"{x:.2f}" if known(x) else "-",
                     f"{y:.2f}" if known(y) else "-", ratio(y, x),
                     f"every {args.probe_interval:g} s" if n == NAMES[0] else "", ""))
    for key, label in (("unavail_list", f"GET /clusters/{stopped}/workloads -> 503"),
                       ("unavail_get", f"GET /clusters/{stopped}/workloads/{{ns}}/{{name}} -> 503")):
        for q in ("p50", "p95"):
            y = st[key][f"{q}_ms"]
            ok = [y <= TARGETS["unavailable_p50_ms"] if known(y) else False] if q == "p50" else None
            rows.append((f"{label} {q}", "n/a", ms(y), "", f"p50 <= {TARGETS['unavailable_p50_ms']:g} ms *"
                         if q == "p50" else "", verdict(ok) if ok is not None else ""))
    for key, label in (("list", "list"), ("get_first", "one workload, first"), ("get_repeat", "one workload, repeated"),
                       ("unavail", "503 answer")):
        x, y = nm["cpu_ms"][key], st["cpu_ms"][key]
        rows.append((f"service CPU per read, {label}", f"{x:.2f} ms" if known(x) else "-",
                     f"{y:.2f} ms" if known(y) else "-", ratio(y, x), "", ""))
    checks = [(p, k, c) for p in PHASES for k, c in summ[p]["checks"].items()]
    errors = len(nm["errors"]) + len(st["errors"])
    rows.append(("answers as expected (rows, cluster, unavailable marks, 503s)",
                 f"{sum(c['ok'] for p, _, c in checks if p == 'normal')}/{sum(1 for p, _, _ in checks if p == 'normal')}",
                 (f"{sum(c['ok'] for p, _, c in checks if p == 'stopped')}/"
                  f"{sum(1 for p, _, _ in checks if p == 'stopped')}"),
                 "", "all", verdict([c["ok"] for _, _, c in checks])))
    rows.append(("failed reads", str(len(nm["errors"])), str(len(st["errors"])), "", "0", verdict([errors == 0])))
    s = summ

    def reads_during(key: str, label: str) -> None:
        x = s[key]
        rows.append((f"  meanwhile GET /clusters/{live[0]}/workloads/{{ns}}/{{name}} p50 / max, {label}", "",
                     f"{ms(x['p50_ms'])} / {ms(x['max_ms'])}", "", "", ""))
        rows.append((f"  meanwhile reads not answered 200 ({x['n']} reads {label})", "", str(x["failed"]), "", "0",
                     verdict([x["failed"] == 0])))

    rows.append((f"stop API server {stopped} (SIGTERM) -> /clusters unavailable", "",
                 f"{s['to_unavailable_s']['max']:.2f} s", "", "", ""))
    reads_during("reads_going_down", "from the SIGTERM")
    rows.append((f"start API server {stopped} again -> its /readyz ok", "", f"{s['apiserver_start_s']['max']:.2f} s",
                 "", "", ""))
    rows.append(("  start -> cluster available (/clusters)", "", f"{s['to_available_s']['max']:.2f} s", "", "", ""))
    rows.append(("  start -> its model synced and watching again", "", f"{s['to_watching_s']['max']:.2f} s", "", "", ""))
    reads_during("reads_coming_back", "from the start")
    reads_during("reads_resync", "from available on")
    rows.append(("  then the first GET /workloads", "", ms(max(s["after_restart"]["samples"] or [NAN]) * 1000), "", "",
                 ""))
    rows.append((f"start -> all {len(NAMES)} clusters synced (max of rounds)", f"{s['startup_s']['max']:.2f} s", "", "",
                 "", ""))
    answers = [m["answers"] for m in s["start_milestones"] if "answers" in m]
    rows.append(("  of which: start -> the service answers HTTP (max)", f"{max(answers or [NAN]):.2f} s", "", "", "",
                 ""))
    for n in NAMES:
        v = s["cluster_sync_s"][n]
        rows.append((f"  model {n}: its own start -> synced (max)", f"{max(v or [NAN]):.2f} s", "", "", "", ""))
    rows.append(("RSS, service (VmRSS) after sync", f"{s['rss_mb']['after_sync']:.0f} MB", "", "", "", ""))
    rows.append(("RSS, service (VmRSS) max", f"{s['rss_mb']['max']:.0f} MB", "", "", "", ""))
    rows.append(("RSS, process tree max", f"{s['rss_mb']['tree_max']:.0f} MB", "", "", "", ""))

    head = ("measure", "normal", f"{stopped} stopped", "stopped/normal", "target", "result")
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(6)]
    print()
    print(f"fleet of {len(NAMES)} clusters x {spec.workloads} workloads ({spec.workloads * spec.jobs_per_jobset} Jobs, "
          f"{spec.workloads * spec.jobs_per_jobset * spec.pods_per_job} pods each), {args.rounds} round(s); "
          f"'{stopped} stopped': reads of the clusters {', '.join(live)} while API server {stopped} is down")
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    for r in rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
    print(f"* the benchmark's own bound. API-server requests: apiserver_request_total, verbs other than "
          f"{'/'.join(sorted(EXCLUDED_VERBS))}, resource requests only, minus the quiet window's rate, not counting the "
          f"API server's own\n  (GET of namespaces, services, flowschemas, prioritylevelconfigurations: its bootstrap "
          f"controllers); probes are counted from /clusters checkedAt (v1.20 does not count /version).")
    return all_ok


# -- main ----------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=300, help="JobSets per cluster (default 300)")
    ap.add_argument("--namespaces", type=int, default=20, help="namespaces they are spread over (default 20)")
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--jobs-per-jobset", type=int, default=2)
    ap.add_argument("--fill-threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each with a new service (default 3)")
    ap.add_argument("--reuse-dir", type=Path, help="etcd data etc. here (a/, b/, c/); filled once, reused by later "
                                                    "runs with the same fill options (kept)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (printed) for a later --reuse-dir; "
                                                         "every process is stopped either way")
    ap.add_argument("--stop", choices=NAMES, default="b", help="the cluster whose API server is stopped (default b; "
                                                               "a is the service's home cluster)")
    ap.add_argument("--lists", type=int, default=20, help="GET /workloads per phase per round (default 20)")
    ap.add_argument("--gets", type=int, default=100, help="workloads read per cluster per phase per round, each "
                                                          "read twice (first, repeated; default 100)")
    ap.add_argument("--unavailable-reads", type=int, default=50, help="503 reads of each kind per round (default 50)")
    ap.add_argument("--quiet", type=float, default=10.0, help="seconds of each quiet window (default 10)")
    ap.add_argument("--probe-interval", type=float, default=2.0, help="--cluster-probe-interval (default 2)")
    ap.add_argument("--sync-timeout", type=float, default=600.0)
    ap.add_argument("--service-arg", action="append", metavar="ARG", help="one more `wlmap serve` argument "
                                                                          "(repeatable; --service-arg=--flag)")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait-build", type=float, default=30.0, help="minutes to wait for a running build.sh")
    args = ap.parse_args()

    wait_for_binaries(args.wait_build)
    spec = FillSpec(args.workloads, args.namespaces, args.pods_per_job, args.jobs_per_jobset)
    keep = args.keep or args.reuse_dir is not None
    run = args.reuse_dir.resolve() if args.reuse_dir else Path(tempfile.mkdtemp(prefix="wlmap-fleet-bench-"))
    run.mkdir(parents=True, exist_ok=True)
    markers = {n: read_marker(run / n) for n in NAMES}
    for n, marker in markers.items():
        if marker and marker.get("complete") and \
                {k: v for k, v in marker.items() if k in spec.as_dict()} != spec.as_dict():
            raise SystemExit(f"{run / n} holds another fill ({marker}); use a different --reuse-dir or the same "
                             f"fill options")

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored (`cmd &`)
    servers = {n: ApiServer(run / n) for n in NAMES}
    starters: list[threading.Thread] = []
    bench: Bench | None = None
    figures: dict[str, Any] = {"machine": {"cores": os.cpu_count()}, "fill": spec.as_dict(), "clusters": list(NAMES),
                               "stop": args.stop, "probe_interval": args.probe_interval,
                               "started": datetime.now(UTC).isoformat()}
    log_dir = run / "logs"
    log_dir.mkdir(exist_ok=True)
    failed = False
    try:
        t = now()
        errors: dict[str, BaseException] = {}

        def start(n: str) -> None:
            try:
                servers[n].start()
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors[n] = e

        starters = [threading.Thread(target=start, args=(n,), daemon=True) for n in NAMES]
        for th in starters:
            th.start()
        for th in starters:
            th.join()
        if errors:
            raise RuntimeError(f"API servers did not start: {errors}")
        print(f"machine: {os.cpu_count()} cores; {len(NAMES)} kube-apiserver v1.20.2 + etcd: "
              + ", ".join(f"{n} {s.url}" for n, s in servers.items()) + f" ({run}), ready in {now() - t:.1f} s",
              flush=True)
        figures["fill_result"] = {}
        for n, srv in servers.items():
            marker = markers[n]
            if marker and marker.get("complete"):
                print(f"fill {n}: reused ({marker.get('workloads')} JobSets, filled in {marker.get('seconds')} s "
                      f"earlier)", flush=True)
                figures["fill_result"][n] = {"reused": True, **marker}
                continue
            write_marker(run / n, spec, complete=False)
            n_obj = spec.workloads * (1 + spec.jobs_per_jobset * (1 + spec.pods_per_job))
            print(f"fill {n}: {spec.workloads} JobSets x {spec.jobs_per_jobset} Jobs x {spec.pods_per_job} pods = "
                  f"{n_obj} objects (+ a status write each) in {spec.namespaces} namespaces ...", flush=True)
            fr = fill(srv, spec, args.fill_threads, progress=lambda m, n=n: print(f"[{n}] {m.strip()}", flush=True))
            if fr.errors:
                print(f"fill {n}: {len(fr.errors)} JobSets failed, first: {fr.errors[0]}")
                return 1
            write_marker(run / n, spec, complete=True, result=fr)
            objs = fr.creates + fr.existing
            print(f"fill {n}: {objs} objects, {fr.status_writes} status writes in {fr.seconds:.1f} s "
                  f"({fr.writes / fr.seconds:.0f} writes/s); {fr.pods_not_ready} pods not ready", flush=True)
            figures["fill_result"][n] = {"reused": False, "seconds": fr.seconds, "objects": objs,
                                         "writes_per_s": fr.writes / fr.seconds, "pods_not_ready": fr.pods_not_ready}
        sizes = object_sizes(servers[NAMES[0]], spec)
        figures["object_bytes"] = sizes
        print("object sizes (JSON, with managedFields): " + ", ".join(f"{k} {v['mean']:.0f} B" for k, v in sizes.items()))
        bench = Bench(args, servers, spec, log_dir)
        for r in range(args.rounds):
            bench.round(r)
        bench.stop_service()
        summ = bench.summary()
        figures["results"] = summ
        print()
        for p in PHASES:
            for k, c in summ[p]["checks"].items():
                print(f"   {p:7s} check {k}: {'ok' if c['ok'] else 'FAILED'}: {c['text'][:300]}")
            if summ[p]["errors"]:
                print(f"   {p:7s} {len(summ[p]['errors'])} failed reads, first: {summ[p]['errors'][0][:300]}")
            for n, acc in summ[p]["api"].items():
                if acc and acc["detail"]:
                    top = sorted(acc["detail"].items(), key=lambda kv: -kv[1])[:6]
                    print(f"   {p:7s} server {n}: requests during its read windows: "
                          + ", ".join(f"{k} {v:.0f}" for k, v in top))
        if summ["model_after_restart"]:
            print(f"   model {args.stop} after the restart: {json.dumps(summ['model_after_restart'])[:400]}")
        failed = not print_table(summ, args, spec)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        if bench is not None and bench.svc is not None:
            print(f"service log (tail):\n{bench.svc.output()}", file=sys.stderr)
        raise
    finally:
        for th in starters:  # a start still running would leave processes behind
            th.join(120)
        if bench is not None:
            bench.stop_service()
        for srv in servers.values():
            srv.stop(keep_data=True)
        if keep:
            print(f"data kept in {run} (next run: --reuse-dir {run})")
        else:
            shutil.rmtree(run, ignore_errors=True)
        if args.json:
            args.json.write_text(json.dumps(finite(figures), indent=1, default=str))
            print(f"figures written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
