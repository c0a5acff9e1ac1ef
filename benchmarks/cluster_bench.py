"""The service against a real kube-apiserver filled to a realistic size, both read paths side by
side in one run:

* **model**: `wlmap serve --cache true` (live reads answered from a watch-maintained model);
* **direct**: `wlmap serve --cache false` (every live read goes to the API server).

1. fill: an etcd + kube-apiserver v1.20.2 (tests/cluster/apiserver.py) holding N JobSets, each
   with the Jobs and pods a JobSet controller, the Job controller and kubelets leave
   (benchmarks/cluster_fill.py); `--reuse-dir` keeps a fill for the next run;
2. per round (modes interleaved, order alternating): start -> synced; GET one workload (with and
   without kind), a namespace list, the full list, each in its own window in which the API
   server's own request counters are read before and after (background rate from a quiet window
   subtracted); RSS; change -> visible on GET and on a watch stream.
3. a table: figures, model/direct ratios, the targets (at 1,000 workloads) MET / NOT MET.

    python benchmarks/cluster_bench.py [--workloads 1000] [--namespaces 20] [--rounds 3]
        [--reuse-dir DIR | --keep] [--only model|direct] [--json out.json]

Develop with small fills (`--workloads 30 --namespaces 3`): a 1,000-JobSet fill is ~22,000
writes (minutes at the ~60-70 writes/s this API server takes on 2 cores).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cluster_fill import (
    SERVICE_NS,
    UA_KUBELET,
    Client,
    FillSpec,
    fill,
    object_sizes,
    pods_path,
    ready_patch,
    run_dir,
    write_marker,
)
from benchmarks.http_bench import _tree_cpu_seconds, free_port, process_tree
from benchmarks.soak import tree_rss_mb
from tests.cluster.apiserver import BUILD, KUBE_DIR, ApiServer, binaries_present

WLMAP = Path(sys.executable).parent / "wlmap"
KIND_Q = "kind=JobSet&apiVersion=jobset.x-k8s.io/v1alpha2"
EXCLUDED_VERBS = {"WATCH", "CONNECT"}
MODES = ("model", "direct")
# with --compare DIR: the live model of another checkout ("before") in the second column instead
# of direct reads, so a change to the single process is measured against the code before it


def is_model(mode: str) -> bool:
    return mode in ("model", "before")

# (key, label, target p50 in ms or None)
READS = [("get", "GET /workloads/{ns}/{name}", 5.0),
         ("get_kind", "GET /workloads/{ns}/{name}?kind=&apiVersion=", 5.0),
         ("ns_list", "GET /workloads?namespace=", 30.0),
         ("full_list", "GET /workloads (all)", 300.0)]
TARGETS = {"startup_s": 15.0, "rss_mb": 300.0, "visible_s": 1.0, "api_per_read": 0.0}


# -- small helpers ----------------------------------------------------------------------------

def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


def known(x: float) -> bool:
    return not math.isnan(x)


def fmt_ms(x: float) -> str:
    if not known(x):
        return "-"
    return f"{x * 1000:.1f} ms" if x < 10 else f"{x:.2f} s"


def finite(x: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def vmrss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cache_flag_supported() -> bool:
    out = subprocess.run([str(WLMAP), "serve", "--help"], capture_output=True, text=True, timeout=60,
                         check=False).stdout
    return re.search(r"(?<![\w-])--cache\b", out) is not None


def build_running() -> bool:
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if b"kube-apiserver/build.sh" in Path(f"/proc/{d}/cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


def wait_for_binaries(max_minutes: float) -> None:
    deadline = time.monotonic() + max_minutes * 60
    while not binaries_present():
        if not build_running() or time.monotonic() > deadline:
            raise SystemExit(f"kube-apiserver and etcd are not in {KUBE_DIR}: run `bash {BUILD}` (once, ~4 min)")
        print(f"waiting for the kube-apiserver build ({KUBE_DIR}) ...", flush=True)
        time.sleep(30)


# -- the API server's own request counters ----------------------------------------------------

_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\}\s+([0-9.eE+-]+)$', re.MULTILINE)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class ApiCounter:
    """Reads `apiserver_request_total` from the API server's /metrics (admin token)."""

    def __init__(self, server: ApiServer):
        self.client = Client(server)

    def scrape(self) -> dict[tuple[str, str], float]:
        status, body = self.client.raw("GET", "/metrics", accept="text/plain")
        if status != 200:
            raise RuntimeError(f"GET /metrics: HTTP {status}")
        out: dict[tuple[str, str], float] = {}
        for m in _SAMPLE.finditer(body.decode()):
            labels = dict(_LABEL.findall(m.group(1)))
            res = labels.get("resource", "")
            res = (f"{res}.{labels['group']}" if labels.get("group") else res) or "(non-resource)"
            if labels.get("subresource"):
                res += "/" + labels["subresource"]
            key = (labels.get("verb", ""), res)
            out[key] = out.get(key, 0.0) + float(m.group(2))
        return out

    @staticmethod
    def delta(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
        return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}

    @staticmethod
    def counted(d: dict[tuple[str, str], float]) -> float:
        return sum(v for (verb, _), v in d.items() if verb not in EXCLUDED_VERBS)


# -- a wlmap serve process ---------------------------------------------------------------------

class Service:
    def __init__(self, mode: str, kubeconfig: Path, cache_flag: bool, log_dir: Path, extra: list[str] | None = None):
        self.mode = mode
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [str(WLMAP), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--kubeconfig", str(kubeconfig),
                "--namespace", SERVICE_NS, "--auth", "none", "--log-level", "warning"]
        if cache_flag:
            args += ["--cache", "true" if mode == "model" else "false"]
        args += extra or []
        env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
        self.log_path = log_dir / f"wlmap-{mode}-{self.port}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process writes it until stop()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.conn: http.client.HTTPConnection | None = None
        self.model_info: dict[str, Any] | None = None
        self.synced_via = ""

    def output(self, n: int = 3000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def get(self, path: str, timeout: float = 300) -> tuple[int, bytes, float]:
        """GET over a keep-alive connection; (status, body, seconds)."""
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            t = time.perf_counter()
            try:
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                body = r.read()
                return r.status, body, time.perf_counter() - t
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError

    def _probe(self, path: str) -> tuple[int, bytes]:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def wait_synced(self, timeout: float = 600) -> float:
        """Seconds from process start until /model says synced (model mode; /readyz 200 when there
        is no /model, and for the direct mode)."""
        use_model = self.mode == "model"
        deadline = self.started + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wlmap serve ({self.mode}) exited {self.proc.returncode}:\n{self.output()}")
            try:
                if use_model:
                    status, body = self._probe("/model")
                    if status == 404:
                        use_model = False
                        continue
                    if status == 200:
                        info = json.loads(body)
                        if info.get("synced") is True:
                            self.model_info = info
                            self.synced_via = "/model synced"
                            return time.perf_counter() - self.started
                else:
                    status, _ = self._probe("/readyz")
                    if status == 200:
                        self.synced_via = "/readyz 200"
                        return time.perf_counter() - self.started
            except (OSError, http.client.HTTPException, ValueError):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"wlmap serve ({self.mode}) not synced after {timeout:.0f} s:\n{self.output()}")

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        stop_tree(self.proc, 10)
        self.log.close()


def stop_tree(proc: subprocess.Popen[bytes], wait: float) -> None:
    """Stop a service process, then the evaluation workers it may leave behind (its own children only)."""
    try:
        tree = process_tree(proc.pid)
    except OSError:
        tree = [proc.pid]
    proc.terminate()
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pid in tree[1:]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Stream(threading.Thread):
    """A client of `GET /workloads/{ns}/{name}?watch=true`: newline-delimited JSON events."""

    def __init__(self, port: int, path: str):
        super().__init__(daemon=True)
        self.port, self.path = port, path
        self.events: list[tuple[float, str, Any]] = []
        self.cond = threading.Condition()
        self.status: int | None = None
        self.error = ""
        self.conn: http.client.HTTPConnection | None = None
        self.opened = threading.Event()

    def run(self) -> None:
        try:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.conn.request("GET", self.path)
            r = self.conn.getresponse()
            self.status = r.status
            if r.status != 200:
                self.error = r.read()[:400].decode(errors="replace")
                return
            if self.conn.sock is not None:
                self.conn.sock.settimeout(None)
            self.opened.set()
            while True:
                line = r.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                t = time.perf_counter()
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                ready = ((ev.get("object") or {}).get("live") or {}).get("ready")
                with self.cond:
                    self.events.append((t, str(ev.get("type")), ready))
                    self.cond.notify_all()
        except Exception as e:  # noqa: BLE001 - also http.client's own errors when close() cuts the stream
            if not self.error:
                self.error = f"{type(e).__name__}: {e}"
        finally:
            self.opened.set()
            with self.cond:
                self.cond.notify_all()

    def wait_for(self, since: float, ready: int, timeout: float) -> float | None:
        deadline = time.perf_counter() + timeout
        with self.cond:
            while True:
                for t, typ, r in self.events:
                    if t >= since and typ == "MODIFIED" and r == ready:
                        return t
                left = deadline - time.perf_counter()
                if left <= 0 or not self.is_alive():
                    return None
                self.cond.wait(left)

    def close(self) -> None:
        cut(self.conn)
        self.join(5)


def cut(conn: http.client.HTTPConnection | None) -> None:
    """Ends a stream's connection from outside (its reader's blocking read returns)."""
    if conn is not None and conn.sock is not None:
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()


# -- the benchmark ------------------------------------------------------------------------------

class Bench:
    def __init__(self, args: argparse.Namespace, server: ApiServer, spec: FillSpec, modes: list[str],
                 cache_flag: bool, log_dir: Path):
        self.a, self.server, self.spec, self.modes = args, server, spec, modes
        self.cache_flag, self.log_dir = cache_flag, log_dir
        self.api = ApiCounter(server)
        self.admin = Client(server)
        self.rng = random.Random(args.seed)
        self.refs = spec.workload_refs()
        self.services: dict[str, Service] = {}
        self.res: dict[str, dict[str, Any]] = {m: {"startup_s": [], "reads": {k: [] for k, _, _ in READS},
                                                   "api": {k: [] for k, _, _ in READS},
                                                   "cpu_ms": {k: [] for k, _, _ in READS},
                                                   "errors": [], "rss_mb": [], "tree_rss_mb": [],
                                                   "visible_get_s": [], "visible_stream_s": [],
                                                   "not_visible_get": 0, "not_visible_stream": 0,
                                                   "stream": None, "checks": [], "synced_via": "",
                                                   "model_info": None, "scrape_warm": [], "scrape_cold": [],
                                                   "series": 0}
                                               for m in modes}
        self.quiet: list[dict[str, Any]] = []
        self.verbs_seen: set[str] = set()

    def counts(self, mode: str) -> dict[str, int]:
        a, r = self.a, self.a.rounds
        totals = ({"get": a.gets, "get_kind": a.gets, "ns_list": a.ns_lists, "full_list": a.full_lists}
                  if is_model(mode) else
                  {"get": a.direct_gets, "get_kind": a.direct_gets, "ns_list": a.direct_ns_lists,
                   "full_list": a.direct_full_lists})
        return {k: max(1, math.ceil(v / r)) for k, v in totals.items()}

    def stop_services(self) -> None:
        for s in self.services.values():
            s.stop()
        self.services.clear()

    # -- one round ---------------------------------------------------------------------------
    def round(self, r: int) -> None:
        order = self.modes if r % 2 == 0 else self.modes[::-1]
        self.stop_services()
        print(f"-- round {r + 1}/{self.a.rounds}: {' then '.join(order)}", flush=True)
        for mode in order:
            s = Checkout(self.a.compare, self.server.kubeconfig("service"), self.log_dir) if mode == "before" else \
                Service(mode, self.server.kubeconfig("service"), self.cache_flag, self.log_dir)
            self.services[mode] = s
            t = s.wait_synced()
            res = self.res[mode]
            res["startup_s"].append(t)
            res["synced_via"] = s.synced_via
            if s.model_info is not None:
                res["model_info"] = s.model_info
            print(f"   {mode:6s} start -> synced ({s.synced_via}): {t:.2f} s", flush=True)
            if mode == "direct" and r == 0:
                try:
                    st, body = s._probe("/model")
                    if st == 200 and json.loads(body).get("enabled"):
                        print("   WARNING: the direct service reports an enabled model (GET /model): its figures "
                              "are not direct reads", flush=True)
                        res["errors"].append("direct service has an enabled model")
                except (OSError, http.client.HTTPException, ValueError):
                    pass
        self.quiet_window(self.a.quiet)
        for mode in order:
            self.reads(mode)
            self.scrapes(mode)
            s = self.services[mode]
            rss, tree = vmrss_mb(s.proc.pid), tree_rss_mb(s.proc.pid)
            self.res[mode]["rss_mb"].append(rss)
            self.res[mode]["tree_rss_mb"].append(tree)
            print(f"   {mode:6s} RSS after the reads: server {rss:.0f} MB, process tree {tree:.0f} MB", flush=True)
        for mode in order:
            self.changes(mode, r)

    def quiet_window(self, seconds: float) -> None:
        before = self.api.scrape()
        t0 = time.perf_counter()
        time.sleep(seconds)
        dt = time.perf_counter() - t0
        d = ApiCounter.delta(before, self.api.scrape())
        n = ApiCounter.counted(d)
        rate = n / dt  # (this server does not count non-resource requests such as GET /metrics)
        self.quiet.append({"seconds": dt, "counted": n, "rate_per_s": rate,
                           "detail": {f"{v} {res}": c for (v, res), c in d.items()}})
        self.verbs_seen |= {v for v, _ in d}
        print(f"   quiet window {dt:.1f} s: {n:.0f} API requests counted = background "
              f"{rate:.2f}/s", flush=True)

    def background_rate(self) -> float:
        return self.quiet[-1]["rate_per_s"] if self.quiet else 0.0

    def paths(self, key: str, n: int) -> list[str]:
        if key == "full_list":
            return ["/workloads"] * n
        if key == "ns_list":
            nss = self.spec.namespaces_list()
            return [f"/workloads?namespace={self.rng.choice(nss)}" for _ in range(n)]
        q = "?" + KIND_Q if key == "get_kind" else ""
        return [f"/workloads/{ns}/{name}{q}" for ns, name in (self.rng.choice(self.refs) for _ in range(n))]

    def check(self, mode: str, key: str, path: str, status: int, body: bytes) -> None:
        res = self.res[mode]
        if status != 200:
            res["errors"].append(f"{key} {path}: HTTP {status}: {body[:200]!r}")
            return
        if res["checks"] and any(c.startswith(key + ":") for c in res["checks"]):
            return
        doc = json.loads(body)
        want_pods = self.spec.pods_per_job * self.spec.jobs_per_jobset
        if key in ("get", "get_kind"):
            live = doc.get("live") or {}
            ok = live.get("current") == want_pods and (doc.get("status") or {}).get("phase") == "Running"
            res["checks"].append(f"{key}: phase {(doc.get('status') or {}).get('phase')}, live {live.get('ready')}/"
                                 f"{live.get('current')} ready/current (want {want_pods} current) "
                                 f"{'ok' if ok else 'UNEXPECTED'}")
        else:
            ns = path.split("namespace=", 1)[1] if "namespace=" in path else None
            want = sum(1 for n, _ in self.refs if ns is None or n == ns)
            got = len(doc.get("items") or [])
            res["checks"].append(f"{key}: {got} rows (want {want}) {'ok' if got == want else 'UNEXPECTED'}")

    def scrapes(self, mode: str) -> None:
        """GET /metrics/workloads of an unchanged model (the exposition is cached per model change)."""
        s, res = self.services[mode], self.res[mode]
        if not is_model(mode):
            return
        lat = []
        for _ in range(20):
            status, body, dt = s.get("/metrics/workloads")
            if status != 200:
                res["errors"].append(f"GET /metrics/workloads: HTTP {status}")
                return
            lat.append(dt)
        res["scrape_warm"] += lat
        res["series"] = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        print(f"   {mode:6s} {'GET /metrics/workloads, model unchanged':48s} n={len(lat):4d}  p50 "
              f"{fmt_ms(pct(lat, 50)):>10s}  p99 {fmt_ms(pct(lat, 99)):>10s}  {res['series']} series, "
              f"{len(body) / 1e6:.1f} MB", flush=True)

    def reads(self, mode: str) -> None:
        s, res = self.services[mode], self.res[mode]
        for p in self.paths("get", 3):  # warm the connection and the first-request paths
            s.get(p)
        for key, label, _ in READS:
            paths = self.paths(key, self.counts(mode)[key])
            cpu0 = _tree_cpu_seconds(s.proc.pid)
            before = self.api.scrape()
            t0 = time.perf_counter()
            lat = []
            for p in paths:
                status, body, dt = s.get(p)
                lat.append(dt)
                self.check(mode, key, p, status, body)
            window = time.perf_counter() - t0
            d = ApiCounter.delta(before, self.api.scrape())
            cpu = _tree_cpu_seconds(s.proc.pid) - cpu0
            self.verbs_seen |= {v for v, _ in d}
            n = ApiCounter.counted(d)
            per_read = max(0.0, n - self.background_rate() * window) / len(paths)
            res["reads"][key] += lat
            res["api"][key].append({"reads": len(paths), "window_s": window, "counted": n,
                                    "per_read": per_read,
                                    "detail": {f"{v} {r}": c for (v, r), c in sorted(d.items())}})
            res["cpu_ms"][key].append(cpu * 1000 / len(paths))
            print(f"   {mode:6s} {label:48s} n={len(paths):4d}  p50 {fmt_ms(pct(lat, 50)):>10s}  "
                  f"p99 {fmt_ms(pct(lat, 99)):>10s}  API requests/read {per_read:7.2f}  "
                  f"server CPU {cpu * 1000 / len(paths):7.1f} ms/read", flush=True)

    # -- change -> visible -------------------------------------------------------------------
    def pick_pod(self) -> tuple[str, str, str]:
        for _ in range(50):
            ns, name = self.rng.choice(self.refs)
            pods = self.admin.call("GET", f"{pods_path(ns)}?labelSelector=jobset.sigs.k8s.io/jobset-name%3D{name}")
            ready = [p for p in pods["items"]
                     if any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in (p.get("status") or {}).get("conditions") or [])]
            if ready:
                return ns, name, self.rng.choice(ready)["metadata"]["name"]
        raise RuntimeError("no ready pod found")

    def live_ready(self, s: Service, path: str) -> tuple[int | None, float]:
        status, body, _ = s.get(path)
        if status != 200:
            return None, time.perf_counter()
        return (json.loads(body).get("live") or {}).get("ready"), time.perf_counter()

    def changes(self, mode: str, r: int) -> None:
        s, res = self.services[mode], self.res[mode]
        per_round = max(2, 2 * math.ceil(self.a.changes / self.a.rounds / 2))
        ns, name, pod = self.pick_pod()
        path = f"/workloads/{ns}/{name}"
        base, _ = self.live_ready(s, path)
        if base is None:
            res["errors"].append(f"change: GET {path} failed")
            return
        stream = Stream(s.port, path + "?watch=true")
        stream.start()
        stream.opened.wait(10)
        if stream.status != 200:
            try:
                slug = str(json.loads(stream.error).get("type", "")).rsplit(":", 1)[-1]
            except ValueError:
                slug = stream.error[:100]
            res["stream"] = f"HTTP {stream.status} {slug}" if stream.status else stream.error[:200]
            stream.close()
            stream = None
        else:
            res["stream"] = "ok"
            time.sleep(0.2)  # the initial ADDED event
        timeout = self.a.change_timeout
        ready_now = True
        n_get, n_stream = len(res["visible_get_s"]), len(res["visible_stream_s"])
        try:
            for _ in range(per_round):
                ready_now = not ready_now
                want = base if ready_now else base - 1
                patch = ready_patch(ready_now, datetime.now(UTC))
                t0 = time.perf_counter()
                self.admin.call("PATCH", f"{pods_path(ns)}/{pod}/status", patch,
                                ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
                seen_get = None
                while time.perf_counter() - t0 < timeout:
                    t_req = time.perf_counter()
                    got, t_done = self.live_ready(s, path)
                    if got == want:
                        seen_get = t_done - t0
                        break
                    time.sleep(max(0.0, 0.02 - (time.perf_counter() - t_req)))
                if seen_get is None:
                    res["not_visible_get"] += 1
                else:
                    res["visible_get_s"].append(seen_get)
                if stream is not None:
                    t_ev = stream.wait_for(t0, want, max(0.0, timeout - (time.perf_counter() - t0)))
                    if t_ev is None:
                        res["not_visible_stream"] += 1
                    else:
                        res["visible_stream_s"].append(t_ev - t0)
                if is_model(mode):  # the first scrape after a change renders the exposition again
                    status, _, dt = s.get("/metrics/workloads")
                    if status == 200:
                        res["scrape_cold"].append(dt)
                time.sleep(0.1)
        finally:
            if not ready_now:  # leave the fill as it was
                self.admin.call("PATCH", f"{pods_path(ns)}/{pod}/status", ready_patch(True, datetime.now(UTC)),
                                ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
            if stream is not None:
                stream.close()
        g, st = res["visible_get_s"][n_get:], res["visible_stream_s"][n_stream:]
        print(f"   {mode:6s} change -> visible ({per_round} flips of {ns}/{pod} Ready): GET p50 {fmt_ms(pct(g, 50))} "
              f"max {fmt_ms(max(g) if g else float('nan'))}"
              + (f"; stream p50 {fmt_ms(pct(st, 50))} max {fmt_ms(max(st) if st else float('nan'))}"
                 if stream is not None or st else f"; stream: {res['stream']}")
              + (f"; not visible within {timeout:.0f} s: GET {res['not_visible_get']}, stream {res['not_visible_stream']}"
                 if res["not_visible_get"] or res["not_visible_stream"] else ""), flush=True)

    # -- summary -----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for m, res in self.res.items():
            api_all = [w for k in res["api"] for w in res["api"][k]]
            out[m] = {
                "startup_s": {"p50": pct(res["startup_s"], 50), "max": max(res["startup_s"] or [float("nan")]),
                              "samples": res["startup_s"], "via": res["synced_via"]},
                "reads": {k: {"n": len(v), "p50_ms": pct(v, 50) * 1000, "p99_ms": pct(v, 99) * 1000,
                              "max_ms": max(v or [float("nan")]) * 1000} for k, v in res["reads"].items()},
                "api_per_read": {k: (sum(w["per_read"] * w["reads"] for w in ws) / sum(w["reads"] for w in ws)
                                     if ws else float("nan")) for k, ws in res["api"].items()},
                "api_per_read_all": (sum(w["per_read"] * w["reads"] for w in api_all) / sum(w["reads"] for w in api_all)
                                     if api_all else float("nan")),
                "api_windows": res["api"],
                "server_cpu_ms_per_read": {k: pct(v, 50) for k, v in res["cpu_ms"].items()},
                "rss_mb": {"server_last": (res["rss_mb"] or [float("nan")])[-1],
                           "server_max": max(res["rss_mb"] or [float("nan")]),
                           "tree_last": (res["tree_rss_mb"] or [float("nan")])[-1],
                           "tree_max": max(res["tree_rss_mb"] or [float("nan")])},
                "visible_get_s": {"p50": pct(res["visible_get_s"], 50), "max": max(res["visible_get_s"] or [float("nan")]),
                                  "n": len(res["visible_get_s"]), "not_visible": res["not_visible_get"]},
                "visible_stream_s": {"p50": pct(res["visible_stream_s"], 50),
                                     "max": max(res["visible_stream_s"] or [float("nan")]),
                                     "n": len(res["visible_stream_s"]), "not_visible": res["not_visible_stream"],
                                     "stream": res["stream"]},
                "scrape_ms": {"warm_p50": pct(res["scrape_warm"], 50) * 1000,
                              "cold_p50": pct(res["scrape_cold"], 50) * 1000,
                              "cold_max": max(res["scrape_cold"] or [float("nan")]) * 1000, "series": res["series"]},
                "errors": res["errors"], "checks": res["checks"], "model_info": res["model_info"],
            }
        return out


def print_table(summ: dict[str, Any], modes: list[str], spec: FillSpec) -> None:
    model, direct = summ.get("model"), summ.get("direct") or summ.get("before")
    other = "before" if "before" in summ else "direct"

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("MET" if ok else "NOT MET")

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.3f}x" if known(a) and known(b) and b > 0 else "-"

    rows: list[tuple[str, str, str, str, str, str]] = []
    for key, label, target in READS:
        for q in ("p50", "p99"):
            mv = model["reads"][key][f"{q}_ms"] if model else float("nan")
            dv = direct["reads"][key][f"{q}_ms"] if direct else float("nan")
            ok = (mv <= target if known(mv) else None) if q == "p50" and model else None
            rows.append((f"{label} {q}", fmt_ms(mv / 1000), fmt_ms(dv / 1000), ratio(mv, dv),
                         f"<= {target:g} ms" if q == "p50" else "", verdict(ok) if q == "p50" else ""))
    mv = model["api_per_read_all"] if model else float("nan")
    dv = direct["api_per_read_all"] if direct else float("nan")
    rows.append(("API-server requests per read (all reads)", f"{mv:.2f}" if known(mv) else "-",
                 f"{dv:.2f}" if known(dv) else "-", ratio(mv, dv) if mv > 0 else "-", "= 0",
                 verdict(abs(mv) < 0.01) if model else ""))
    for key, label, _ in READS:
        mk = model["api_per_read"][key] if model else float("nan")
        dk = direct["api_per_read"][key] if direct else float("nan")
        rows.append((f"  of which {label}", f"{mk:.2f}" if known(mk) else "-", f"{dk:.2f}" if known(dk) else "-",
                     "", "", ""))
    for name, k in (("change -> visible on GET", "visible_get_s"), ("change -> visible on a stream", "visible_stream_s")):
        for q in ("p50", "max"):
            mv = model[k][q] if model else float("nan")
            dv = direct[k][q] if direct else float("nan")
            nv = model[k]["not_visible"] if model else 0
            ok = None
            if model and q == "max":
                ok = (mv <= TARGETS["visible_s"] and nv == 0) if known(mv) else False
            dtxt = fmt_ms(dv) if known(dv) else ("n/a (" + str(direct[k].get("stream") or "") + ")"
                                                if direct and k == "visible_stream_s" else "-")
            rows.append((f"{name} {q}", fmt_ms(mv) + (f" ({nv} never)" if nv and q == "max" else ""), dtxt[:40],
                         ratio(mv, dv), "<= 1 s" if q == "max" else "", verdict(ok) if q == "max" else ""))
    if model:
        sc = model["scrape_ms"]
        rows.append(("scrape /metrics/workloads, after a change p50", fmt_ms(sc["cold_p50"] / 1000), "n/a", "",
                     "< 100 ms", verdict(sc["cold_p50"] < 100) if known(sc["cold_p50"]) else "-"))
        rows.append(("scrape /metrics/workloads, after a change max", fmt_ms(sc["cold_max"] / 1000), "", "", "", ""))
        rows.append(("scrape /metrics/workloads, unchanged p50", fmt_ms(sc["warm_p50"] / 1000), "", "", "", ""))
    mv = model["startup_s"]["max"] if model else float("nan")
    dv = direct["startup_s"]["max"] if direct else float("nan")
    rows.append(("start -> synced (max of rounds)", f"{mv:.2f} s" if known(mv) else "-", f"{dv:.2f} s" if known(dv) else "-",
                 ratio(mv, dv), "<= 15 s", verdict(mv <= TARGETS["startup_s"]) if model else ""))
    for k, label in (("server_max", "RSS, server process (max)"), ("tree_max", "RSS, process tree (max)")):
        mv = model["rss_mb"][k] if model else float("nan")
        dv = direct["rss_mb"][k] if direct else float("nan")
        rows.append((label, f"{mv:.0f} MB" if known(mv) else "-", f"{dv:.0f} MB" if known(dv) else "-", ratio(mv, dv),
                     "<= 300 MB" if k == "tree_max" else "",
                     verdict(mv <= TARGETS["rss_mb"]) if model and k == "tree_max" else ""))
    for key, label, _ in READS:
        mv = model["server_cpu_ms_per_read"][key] if model else float("nan")
        dv = direct["server_cpu_ms_per_read"][key] if direct else float("nan")
        rows.append((f"server CPU per read, {label}", f"{mv:.2f} ms" if known(mv) else "-",
                     f"{dv:.2f} ms" if known(dv) else "-", ratio(mv, dv), "", ""))
    w = [max(len(r[i]) for r in rows) for i in range(6)]
    head = ("measure", "model", other, f"model/{other}", "target", "model")
    w = [max(w[i], len(head[i])) for i in range(6)]
    print()
    print(f"targets are for 1,000 workloads / 8,000 pods; this fill: {spec.workloads} workloads / "
          f"{spec.workloads * spec.jobs_per_jobset * spec.pods_per_job} pods")
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    for r in rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())


class Checkout(Service):
    """A `wlmap serve --cache true` of another checkout (PYTHONPATH), on the same API server."""

    def __init__(self, repo: Path, kubeconfig: Path, log_dir: Path, extra: list[str] | None = None):
        self.mode = "model"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
        env["PYTHONPATH"] = str(repo)
        self.log_path = log_dir / f"wlmap-compare-{self.port}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process writes it until stop()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from app.cli.main import main; main()", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--kubeconfig", str(kubeconfig), "--namespace", "wlmap-system",
             "--auth", "none", "--log-level", "warning", "--cache", "true", *(extra or [])],
            cwd=repo, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.conn: http.client.HTTPConnection | None = None
        self.model_info: dict[str, Any] | None = None
        self.synced_via = ""



# -- main ----------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=1000, help="JobSets to fill (default 1000)")
    ap.add_argument("--namespaces", type=int, default=20, help="namespaces they are spread over (default 20)")
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--jobs-per-jobset", type=int, default=2)
    ap.add_argument("--fill-threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--reuse-dir", type=Path, help="etcd data etc. here; filled once, reused by later runs with the "
                                                    "same fill options (kept)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (printed) for a later --reuse-dir; "
                                                         "etcd and the API server are stopped either way")
    ap.add_argument("--only", choices=MODES, help="measure one mode only")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--gets", type=int, default=200, help="GET one, model mode, per variant (default 200)")
    ap.add_argument("--direct-gets", type=int, default=40)
    ap.add_argument("--ns-lists", type=int, default=50)
    ap.add_argument("--direct-ns-lists", type=int, default=10)
    ap.add_argument("--full-lists", type=int, default=20)
    ap.add_argument("--direct-full-lists", type=int, default=3)
    ap.add_argument("--changes", type=int, default=10, help="Ready flips per mode (spread over rounds, even per round)")
    ap.add_argument("--change-timeout", type=float, default=10.0)
    ap.add_argument("--quiet", type=float, default=10.0, help="seconds of the quiet window per round (background rate)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait-build", type=float, default=30.0, help="minutes to wait for a running build.sh")
    ap.add_argument("--compare", type=Path, help="another checkout: its live model in place of direct reads, "
                                                 "side by side with this one's (the single process before a change)")
    args = ap.parse_args()

    wait_for_binaries(args.wait_build)
    cache_flag = cache_flag_supported()
    modes = [m for m in MODES if args.only in (None, m)]
    if args.compare is not None:
        modes = ["model", "before"]
    if not cache_flag:
        print("model mode: not available in this build (`wlmap serve` has no --cache); measuring direct reads only")
        modes = [m for m in modes if m == "direct"]
        if not modes:
            return 2
    spec = FillSpec(args.workloads, args.namespaces, args.pods_per_job, args.jobs_per_jobset)
    keep = args.keep or args.reuse_dir is not None
    run, marker = run_dir(args.reuse_dir, spec, "wlmap-cluster-bench-")

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    server = ApiServer(run)
    bench: Bench | None = None
    figures: dict[str, Any] = {"machine": {"cores": os.cpu_count()}, "fill": spec.as_dict(), "modes": modes,
                               "started": datetime.now(UTC).isoformat()}
    log_dir = run / "logs"
    log_dir.mkdir(exist_ok=True)
    try:
        t = time.perf_counter()
        server.start()
        print(f"machine: {os.cpu_count()} cores; kube-apiserver v1.20.2 on {server.url} ({run}), "
              f"ready in {time.perf_counter() - t:.1f} s")
        if marker and marker.get("complete"):
            print(f"fill: reused ({marker.get('workloads')} JobSets, filled in {marker.get('seconds')} s earlier)")
            figures["fill_result"] = {"reused": True, **marker}
        else:
            write_marker(run, spec, complete=False)
            n_obj = spec.workloads * (1 + spec.jobs_per_jobset * (1 + spec.pods_per_job))
            print(f"fill: {spec.workloads} JobSets x {spec.jobs_per_jobset} Jobs x {spec.pods_per_job} pods = "
                  f"{n_obj} objects (+ a status write each) in {spec.namespaces} namespaces, "
                  f"{args.fill_threads} threads ...", flush=True)
            fr = fill(server, spec, args.fill_threads)
            if fr.errors:
                print(f"fill: {len(fr.errors)} JobSets failed, first: {fr.errors[0]}")
                raise SystemExit(1)
            write_marker(run, spec, complete=True, result=fr)
            objs = fr.creates + fr.existing
            print(f"fill: {objs} objects ({fr.creates} created, {fr.existing} existed), {fr.status_writes} status "
                  f"writes, {fr.requests} requests in {fr.seconds:.1f} s = {objs / fr.seconds:.1f} objects/s, "
                  f"{fr.writes / fr.seconds:.1f} writes/s; {fr.pods_not_ready} pods not ready")
            figures["fill_result"] = {"reused": False, "seconds": fr.seconds, "objects": objs, "creates": fr.creates,
                                      "status_writes": fr.status_writes, "requests": fr.requests,
                                      "objects_per_s": objs / fr.seconds, "writes_per_s": fr.writes / fr.seconds,
                                      "pods_not_ready": fr.pods_not_ready}
        sizes = object_sizes(server, spec)
        figures["object_bytes"] = sizes
        print("object sizes (compact JSON as the API server returns them, with managedFields): "
              + ", ".join(f"{k} {v['mean']:.0f} B" for k, v in sizes.items()))
        bench = Bench(args, server, spec, modes, cache_flag, log_dir)
        for r in range(args.rounds):
            bench.round(r)
        bench.stop_services()
        summ = bench.summary()
        figures["results"] = summ
        figures["quiet_windows"] = bench.quiet
        counted = sorted(v for v in bench.verbs_seen if v not in EXCLUDED_VERBS)
        figures["verbs_counted"] = counted
        print()
        print(f"API-server requests counted: apiserver_request_total of verbs {', '.join(counted) or '-'} "
              f"(excluded: {', '.join(sorted(EXCLUDED_VERBS))}), minus the background rate of the quiet window; "
              f"v1.20 counts resource requests only (not discovery or /metrics)")
        for m in modes:
            for c in summ[m]["checks"]:
                print(f"   {m:6s} check {c}")
            if summ[m]["errors"]:
                print(f"   {m:6s} {len(summ[m]['errors'])} failed reads, first: {summ[m]['errors'][0]}")
            if summ[m]["model_info"]:
                print(f"   {m:6s} /model: {json.dumps(summ[m]['model_info'])[:400]}")
            ws = [w for k in summ[m]["api_windows"] for w in summ[m]["api_windows"][k]]
            calls: dict[str, float] = {}
            for w in ws:
                for k, v in w["detail"].items():
                    calls[k] = calls.get(k, 0) + v
            top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
            print(f"   {m:6s} API requests during its read windows: " + ", ".join(f"{k} {v:.0f}" for k, v in top))
        if "model" not in modes:
            print("model mode: not available in this build" if not cache_flag else "model mode: not measured (--only)")
        print_table(summ, modes, spec)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if bench is not None:
            bench.stop_services()
        if keep:
            server.stop(keep_data=True)
            print(f"data kept in {run} (next run: --reuse-dir {run})")
        else:
            server.stop()
        if args.json:
            args.json.write_text(json.dumps(finite(figures), indent=1, default=str))
            print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
