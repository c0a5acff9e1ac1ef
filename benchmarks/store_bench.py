"""Sharded mode (issue 24) against the single process, side by side in one run: three real
kube-apiservers (clusters a, b, c) filled with JobSets, a real Redis, two shards
(`--role shard`) and two API replicas (`--role api`) over it, and the single-process fleet
service (no store) over the same three clusters.

1. fill: each API server holds N JobSets with their Jobs and pods (benchmarks/cluster_fill.py);
   `--reuse-dir DIR` keeps the three fills (DIR/a, DIR/b, DIR/c) for the next run;
2. start Redis, the shards, the API replicas and the single process; wait until every cluster
   is synced and watched;
3. measure (httpx keep-alive, one client): the aggregate list and GET one from an API replica
   and from the single process, each in a window in which the API servers' own request counters
   are read (background from a quiet window subtracted); a list stream's token resumed on the
   other API replica after N changes; Redis memory; RSS of every process; then a shard killed
   (SIGKILL): how long until its clusters are watched again and a change made after the kill is
   visible, and how many reads failed meanwhile.

    python benchmarks/store_bench.py [--workloads 300] [--reuse-dir DIR] [--requests 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cluster_bench import (
    ApiCounter,
    finite,
    fmt_ms,
    pct,
    stop_tree,
    vmrss_mb,
)
from benchmarks.cluster_fill import (
    SERVICE_NS,
    SERVICE_USER,
    UA_KUBELET,
    Client,
    FillSpec,
    fill,
    pods_path,
    read_marker,
    ready_patch,
    write_marker,
)
from benchmarks.http_bench import free_port
from benchmarks.soak import tree_rss_mb
from tests.cluster.apiserver import ApiServer
from tests.cluster.kubeobjects import Kubectl, shard_lease_rbac
from tests.store.redis_server import RedisServer

WLMAP = Path(sys.executable).parent / "wlmap"
CLUSTERS = ("a", "b", "c")
# What the API servers and the shards do on their own (their controllers, the Leases' renewals):
# a request on any other resource during a read window is one a read may have caused.
BACKGROUND = {"leases.coordination.k8s.io", "namespaces", "services", "endpoints",
              "flowschemas.flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io"}
TARGETS = {"list_p50_ms": 50.0, "get_p50_ms": 5.0, "api_per_read": 0.0, "takeover_s": 30.0}


# -- the processes ------------------------------------------------------------------------------

class Proc:
    """One `wlmap serve` over the three clusters (a is the home cluster)."""

    def __init__(self, name: str, servers: dict[str, ApiServer], log_dir: Path, extra: list[str],
                 env: dict[str, str] | None = None, code: Path | None = None):
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        a, b, c = (servers[n] for n in CLUSTERS)
        # `code`: the service from another checkout (a baseline), with this environment's packages
        run = "import sys; from app.cli.main import main; sys.argv[0] = 'wlmap'; sys.exit(main())"
        cmd = [sys.executable, "-c", run] if code else [str(WLMAP)]
        args = [*cmd, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--kubeconfig", str(a.kubeconfig("service")), "--cluster-name", "a", "--namespace", SERVICE_NS,
                "--cluster", f"b={b.kubeconfig('service')}", "--cluster", f"c={c.kubeconfig('service')}",
                "--karta-resources", "false", "--auth", "none", "--log-level", "warning", *extra]
        penv = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
        penv.update(env or {})
        if code:
            penv["PYTHONPATH"] = str(code)
        self.log_path = log_dir / f"{name}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - the process writes it until stop()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=penv, cwd=code)
        self.pod = (env or {}).get("POD_NAME", "")

    def output(self, n: int = 3000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            stop_tree(self.proc, 10)
        self.log.close()


def _get_json(url: str, timeout: float = 10) -> Any:
    try:
        r = httpx.get(url, timeout=timeout)
        return r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def wait_ready(p: Proc, store: bool, timeout: float = 600) -> float:
    """Seconds from start until every cluster is synced (and, from a store, watched)."""
    deadline = p.started + timeout
    while time.monotonic() < deadline:
        if not p.alive():
            raise RuntimeError(f"{p.name} exited {p.proc.returncode}:\n{p.output()}")
        doc = _get_json(p.url + "/clusters")
        items = {i["name"]: i for i in (doc or {}).get("items", [])}
        if all(items.get(c, {}).get("synced") and items[c].get("available") for c in CLUSTERS) and \
                (not store or all(watching(p, c) for c in CLUSTERS)):
            return time.monotonic() - p.started
        time.sleep(0.2)
    raise RuntimeError(f"{p.name}: not synced after {timeout:.0f} s:\n{p.output()}")


def watching(p: Proc, cluster: str) -> bool:
    doc = _get_json(p.url + f"/model?cluster={cluster}")
    return bool(doc and (doc.get("freshness") or {}).get("watching"))


def owners(api: Proc) -> dict[str, str]:
    out = {}
    for c in CLUSTERS:
        doc = _get_json(api.url + f"/model?cluster={c}") or {}
        out[c] = ((doc.get("units") or [{}])[0]).get("owner") or ""
    return out


def lease_rbac(server: ApiServer) -> None:
    """What the chart grants shards: Leases in the service namespace of the home cluster."""
    k = Kubectl(server)
    for doc in shard_lease_rbac(SERVICE_USER, SERVICE_NS):
        k.apply(doc)


# -- fill -----------------------------------------------------------------------------------------

def start_and_fill(root: Path, spec: FillSpec, threads: int) -> tuple[dict[str, ApiServer], dict[str, Any]]:
    servers = {c: ApiServer(root / c) for c in CLUSTERS}
    info: dict[str, Any] = {}
    for c, s in servers.items():
        (root / c).mkdir(parents=True, exist_ok=True)
        marker = read_marker(root / c)
        if marker and marker.get("complete") and \
                {k: v for k, v in marker.items() if k in spec.as_dict()} != spec.as_dict():
            raise SystemExit(f"{root / c} holds another fill ({marker}); use another --reuse-dir")
        s.start()
    errors: list[str] = []

    def one(c: str) -> None:
        marker = read_marker(root / c)
        if marker and marker.get("complete"):
            info[c] = {"reused": True, **marker}
            return
        write_marker(root / c, spec, complete=False)
        fr = fill(servers[c], spec, threads, progress=lambda m: print(f"  [{c}] {m.strip()}", flush=True))
        if fr.errors:
            errors.append(f"{c}: {len(fr.errors)} JobSets failed, first: {fr.errors[0]}")
            return
        write_marker(root / c, spec, complete=True, result=fr)
        info[c] = {"reused": False, "seconds": round(fr.seconds, 1), "writes": fr.writes,
                   "writes_per_s": round(fr.writes / fr.seconds, 1)}
        print(f"fill {c}: {fr.writes} writes in {fr.seconds:.0f} s ({fr.writes / fr.seconds:.0f}/s)", flush=True)

    ts = [threading.Thread(target=one, args=(c,)) for c in CLUSTERS]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise SystemExit("; ".join(errors))
    return servers, info


# -- the benchmark --------------------------------------------------------------------------------

class Bench:
    def __init__(self, args: argparse.Namespace, servers: dict[str, ApiServer], spec: FillSpec, log_dir: Path):
        self.a, self.servers, self.spec, self.log_dir = args, servers, spec, log_dir
        self.counters = {c: ApiCounter(s) for c, s in servers.items()}
        self.admin = {c: Client(s) for c, s in servers.items()}
        self.rng = random.Random(args.seed)
        self.refs = [(c, ns, name) for c in CLUSTERS for ns, name in spec.workload_refs()]
        self.redis: RedisServer | None = None
        self.shards: list[Proc] = []
        self.apis: list[Proc] = []
        self.single: Proc | None = None
        self.res: dict[str, Any] = {"errors": [], "reads": {}, "api": {}, "startup_s": {}}
        self.background = 0.0
        self.background_resources = set(BACKGROUND)
        self.flipped: list[tuple[str, str, str]] = []  # pods set not ready, put back at the end

    # -- processes ------------------------------------------------------------------------------
    def start(self) -> None:
        lease_rbac(self.servers["a"])
        self.redis = RedisServer().start()
        self.redis_started = time.monotonic()
        self.res["redis_empty_bytes"] = self.redis_info()["used_memory"]
        store = ["--store", self.redis.url]
        for i in (1, 2):
            self.shards.append(Proc(f"shard-{i}", self.servers, self.log_dir, [*store, "--role", "shard"],
                                    {"POD_NAME": f"shard-{i}"}))
        self.apis = [Proc(f"api-{i}", self.servers, self.log_dir, [*store, "--role", "api"]) for i in (1, 2)]
        self.single = Proc("single", self.servers, self.log_dir, [])
        for p in [*self.apis, self.single]:
            t = wait_ready(p, store=p is not self.single)
            self.res["startup_s"][p.name] = round(t, 1)
            print(f"   {p.name}: synced{' and watched' if p is not self.single else ''} {t:.1f} s after its start",
                  flush=True)
        t = self.wait_answers()
        print(f"   every live answer in the store {t:.1f} s after the shards started", flush=True)
        self.res["startup_s"]["answers_in_store"] = round(t, 1)
        own = owners(self.apis[0])
        self.res["owners_at_start"] = own
        print(f"   owners: {own}", flush=True)

    def wait_answers(self, timeout: float = 600) -> float:
        """Until the shards hold every cluster with no live answer left to compute (GET one answers
        503 answer-pending before)."""
        deadline = self.shards[0].started + timeout
        while time.monotonic() < deadline:
            parts: dict[str, Any] = {}
            for s in self.shards:
                doc = _get_json(s.url + "/model") or {}
                parts.update(((doc.get("store") or {}).get("shard") or {}).get("clusters") or {})
            if sorted(parts) == list(CLUSTERS) and all(p["synced"] and p["pendingAnswers"] == 0
                                                       for p in parts.values()):
                return time.monotonic() - self.shards[0].started
            time.sleep(0.5)
        raise RuntimeError(f"the shards did not export every answer within {timeout:.0f} s")

    def stop(self) -> None:
        for p in [*self.shards, *self.apis, *([self.single] if self.single else [])]:
            p.stop()
        if self.redis is not None:
            self.redis.stop()
        for c, ns, pod in self.flipped:  # leave the fill as it was (for --reuse-dir)
            self.set_ready(c, ns, pod, True)

    def redis_info(self, section: str = "memory") -> dict[str, Any]:
        import redis

        assert self.redis is not None
        r = redis.Redis.from_url(self.redis.url)
        try:
            return dict(r.info(section))
        finally:
            r.close()

    # -- the API servers' request counters --------------------------------------------------------
    def scrape(self) -> dict[str, dict[tuple[str, str], float]]:
        return {c: k.scrape() for c, k in self.counters.items()}

    def counted(self, before: dict[str, Any], after: dict[str, Any]) -> tuple[float, dict[str, float]]:
        n, detail = 0.0, {}
        for c in CLUSTERS:
            d = ApiCounter.delta(before[c], after[c])
            n += ApiCounter.counted(d)
            detail.update({f"{c}: {v} {r}": x for (v, r), x in d.items()})
        return n, detail

    def quiet_window(self, seconds: float) -> None:
        before = self.scrape()
        t0 = time.monotonic()
        time.sleep(seconds)
        dt = time.monotonic() - t0
        n, detail = self.counted(before, self.scrape())
        self.background = n / dt
        self.background_resources = {k.split(" ", 2)[2] for k in detail} | BACKGROUND
        self.res["quiet"] = {"seconds": round(dt, 1), "counted": n, "rate_per_s": self.background,
                             "detail": detail}
        print(f"   quiet window {dt:.1f} s: {n:.0f} API requests (non-watch) on the three servers = background "
              f"{self.background:.2f}/s ({', '.join(f'{k} {v:.0f}' for k, v in sorted(detail.items()))})", flush=True)

    # -- reads -----------------------------------------------------------------------------------
    def reads(self, target: Proc, key: str, paths: list[str], want_rows: int | None = None) -> None:
        errors = 0
        with httpx.Client(base_url=target.url, timeout=60) as http:
            for p in paths[:3]:  # warm the connection and first-request paths
                http.get(p)
            lat: list[float] = []
            before = self.scrape()
            t0 = time.monotonic()
            for p in paths:
                t = time.perf_counter()
                r = http.get(p)
                body = r.content
                lat.append(time.perf_counter() - t)
                if r.status_code != 200:
                    errors += 1
                    if errors <= 3:
                        self.res["errors"].append(f"{target.name} {p}: HTTP {r.status_code} {body[:200]!r}")
                elif want_rows is not None and len(lat) == 1:
                    got = len(json.loads(body)["items"])
                    if got != want_rows:
                        self.res["errors"].append(f"{target.name} {p}: {got} rows, want {want_rows}")
            window = time.monotonic() - t0
        n, detail = self.counted(before, self.scrape())
        per_read = max(0.0, n - self.background * window) / len(paths)
        foreign = sum(v for k, v in detail.items() if k.split(" ", 2)[2] not in self.background_resources)
        self.res["reads"].setdefault(target.name, {})[key] = {
            "n": len(lat), "p50_ms": pct(lat, 50) * 1000, "p99_ms": pct(lat, 99) * 1000,
            "max_ms": max(lat) * 1000, "errors": errors, "bytes": len(body)}
        self.res["api"].setdefault(target.name, {})[key] = {"window_s": window, "counted": n, "per_read": per_read,
                                                          "not_background": foreign, "detail": detail}
        print(f"   {target.name:7s} {key:5s} n={len(lat):4d}  p50 {fmt_ms(pct(lat, 50)):>9s}  p99 "
              f"{fmt_ms(pct(lat, 99)):>9s}  max {fmt_ms(max(lat)):>9s}  {len(body) / 1e3:.0f} kB  "
              f"API requests/read {per_read:.3f} ({n:.0f} counted in {window:.1f} s, {foreign:.0f} on resources "
              f"the background does not touch)  errors {errors}", flush=True)

    def measure_reads(self) -> None:
        n = self.a.requests
        lists = ["/workloads"] * n
        gets = [f"/clusters/{c}/workloads/{ns}/{name}" for c, ns, name in
                (self.rng.choice(self.refs) for _ in range(n))]
        assert self.single is not None
        want = len(self.refs)
        for target in (self.apis[0], self.single, self.apis[1]):  # the second replica too: the same figures?
            self.reads(target, "list", lists, want)
            self.reads(target, "get", gets)

    def profile(self, out: Path, n: int = 1000) -> None:
        """py-spy (raw collapsed stacks) on an API replica and the single process while they answer
        n more lists and n GETs: where a read's time goes (self time per function, top entries)."""
        import shutil

        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        out.mkdir(parents=True, exist_ok=True)
        assert self.single is not None
        gets = [f"/clusters/{c}/workloads/{ns}/{name}" for c, ns, name in
                (self.rng.choice(self.refs) for _ in range(n))]
        prof: dict[str, Any] = {}
        for target in (self.apis[0], self.single):
            for key, paths in (("list", ["/workloads"] * (n // 4)), ("get", gets)):
                f = out / f"{target.name}-{key}.txt"
                spyp = subprocess.Popen([spy, "record", "--pid", str(target.proc.pid), "--rate", "500", "--format",
                                         "raw", "--output", str(f), "--nonblocking"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
                with httpx.Client(base_url=target.url, timeout=60) as http:
                    for p in paths:
                        http.get(p)
                spyp.send_signal(signal.SIGINT)
                spyp.wait(30)
                prof[f"{target.name} {key}"] = top_frames(f)
                print(f"   profile {target.name} {key}: " + "; ".join(f"{fn} {share:.0%}" for fn, share in
                                                                    prof[f"{target.name} {key}"][:8]), flush=True)
        self.res["profile"] = prof

    # -- changes on the API servers -------------------------------------------------------------
    def ready_pod(self, c: str, ns: str, name: str) -> str | None:
        pods = self.admin[c].call("GET", f"{pods_path(ns)}?labelSelector=jobset.sigs.k8s.io/jobset-name%3D{name}")
        ready = [p["metadata"]["name"] for p in pods["items"]
                 if any(x.get("type") == "Ready" and x.get("status") == "True"
                        for x in (p.get("status") or {}).get("conditions") or [])]
        return min(ready) if ready else None

    def set_ready(self, c: str, ns: str, pod: str, ready: bool) -> None:
        self.admin[c].call("PATCH", f"{pods_path(ns)}/{pod}/status", ready_patch(ready, datetime.now(UTC)),
                           ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
        if not ready:
            self.flipped.append((c, ns, pod))
        else:
            self.flipped = [f for f in self.flipped if f != (c, ns, pod)]

    def ready_counts(self, p: Proc) -> dict[tuple[str, str, str], int]:
        doc = _get_json(p.url + "/workloads", timeout=60) or {}
        return {(r["cluster"], r["workload"]["namespace"], r["workload"]["name"]): r["pods"]["ready"]
                for r in doc.get("items", [])}

    def pick(self, n: int, clusters: tuple[str, ...] = CLUSTERS) -> list[tuple[str, str, str, str]]:
        """n distinct workloads with a ready pod: (cluster, namespace, name, pod)."""
        out: list[tuple[str, str, str, str]] = []
        seen: set[tuple[str, str, str]] = set()
        while len(out) < n:
            ref = self.rng.choice([r for r in self.refs if r[0] in clusters])
            if ref in seen:
                continue
            seen.add(ref)
            pod = self.ready_pod(*ref)
            if pod:
                out.append((*ref, pod))
        return out

    # -- a stream resumed on the other replica -------------------------------------------------------
    def resume(self) -> None:
        from tests.cluster.test_streams import Stream, _name, _ready

        a1, a2 = self.apis
        n = self.a.changes
        base = self.ready_counts(a1)
        chosen = self.pick(n)
        s1 = Stream(a1.url + "/workloads")
        try:
            k = s1.synced(60)
            token = s1.events[k - 1]["id"]
        finally:
            s1.close()
        want: dict[tuple[str, str], int] = {}
        for c, ns, name, pod in chosen:
            self.set_ready(c, ns, pod, False)
            want[(c, name)] = base[(c, ns, name)] - 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # every change is in the store (the replica has read it)
            now = self.ready_counts(a2)
            if all(now.get((c, ns, name)) == want[(c, name)] for c, ns, name, _ in chosen):
                break
            time.sleep(0.2)
        s2 = Stream(a2.url + "/workloads", headers={"Last-Event-ID": token})
        got: list[tuple[str, str, int | None]] = []
        try:
            try:
                s2.synced(30)
            except AssertionError:
                pass
            status = s2.status
            if status == 200:
                got = [(e["object"].get("cluster"), _name(e), _ready(e)) for e in s2.changes()
                       if e["type"] != "ERROR"]
        finally:
            s2.close()
        seen: dict[tuple[str, str], list[int | None]] = {}
        for c, name, r in got:
            seen.setdefault((c, name), []).append(r)
        missed = sum(1 for key, r in want.items() if r not in seen.get(key, []))
        dup = sum(max(0, len(v) - 1) for v in seen.values())
        other = sum(len(v) for key, v in seen.items() if key not in want)
        self.res["resume"] = {"changes": n, "status": status, "events": len(got), "missed": missed,
                              "duplicated": dup, "unexpected": other, "token": token}
        print(f"   stream: token {token} from {a1.name}, {n} changes, resumed on {a2.name}: HTTP {status}, "
              f"{len(got)} events, missed {missed}, duplicated {dup}, unexpected {other}", flush=True)
        for c, ns, name, pod in chosen:
            self.set_ready(c, ns, pod, True)

    # -- memory -----------------------------------------------------------------------------------
    def memory(self) -> None:
        import redis

        assert self.redis is not None and self.single is not None
        info = self.redis_info()
        r = redis.Redis.from_url(self.redis.url)
        try:
            xlen = int(r.xlen("wlmap:events"))
            stream_bytes = int(r.memory_usage("wlmap:events", samples=0) or 0)
            by_field: dict[str, int] = {}
            for c in CLUSTERS:
                for f in ("rows", "facts", "obj", "live", "diag", "sig", "meta"):
                    by_field[f] = by_field.get(f, 0) + int(r.memory_usage(f"wlmap:u:{{{c}}}:{f}", samples=0) or 0)
        finally:
            r.close()
        rows = len(self.refs)
        used = int(info["used_memory"]) - int(self.res["redis_empty_bytes"])
        self.res["redis"] = {"used_memory": info["used_memory"], "empty": self.res["redis_empty_bytes"],
                             "used_memory_rss": info.get("used_memory_rss"), "workloads": rows,
                             "per_workload_bytes": (used - stream_bytes) / rows, "stream_entries": xlen,
                             "stream_bytes": stream_bytes, "per_entry_bytes": stream_bytes / max(1, xlen),
                             "hash_bytes_per_workload": {f: v / rows for f, v in by_field.items()}}
        cpu, stats = self.redis_info("cpu"), self.redis_info("stats")
        self.res["redis"]["cpu_s"] = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        self.res["redis"]["commands"] = int(stats["total_commands_processed"])
        self.res["redis"]["uptime_s"] = time.monotonic() - self.redis_started
        m = self.res["redis"]
        print(f"   redis: {m['cpu_s']:.1f} s of CPU and {m['commands']} commands in its {m['uptime_s']:.0f} s "
              f"(the shards' sync of every cluster, the reads, the stream above)", flush=True)
        print(f"   redis: used_memory {info['used_memory'] / 1e6:.1f} MB (empty {m['empty'] / 1e6:.1f} MB); "
              f"stream {xlen} entries, {stream_bytes / 1e6:.1f} MB = {m['per_entry_bytes']:.0f} B/entry; "
              f"the rest {m['per_workload_bytes'] / 1e3:.1f} kB per workload ("
              + ", ".join(f"{f} {v / 1e3:.2f} kB" for f, v in m["hash_bytes_per_workload"].items()) + ")",
              flush=True)
        self.res["rss_mb"] = {p.name: {"process": vmrss_mb(p.proc.pid), "tree": tree_rss_mb(p.proc.pid)}
                              for p in [*self.shards, *self.apis, self.single]}
        print("   RSS: " + ", ".join(f"{k} {v['process']:.0f} MB (tree {v['tree']:.0f})"
                                     for k, v in self.res["rss_mb"].items()), flush=True)

    # -- a shard killed ---------------------------------------------------------------------------
    def kill_shard(self, label: str = "kill") -> None:
        from benchmarks.http_bench import process_tree

        api = self.apis[0]
        own = owners(api)
        count = {s.pod: sum(1 for o in own.values() if o.startswith(s.pod + "_")) for s in self.shards}
        victim = max(self.shards, key=lambda s: count[s.pod])  # the one owning more clusters
        lost = tuple(c for c, o in own.items() if o.startswith(victim.pod + "_"))
        (c0, ns0, name0, pod0), = self.pick(1, lost[:1])
        base = self.ready_counts(api)[(c0, ns0, name0)]
        probes = {c: f"/clusters/{c}/workloads/{ns}/{name}" for c, ns, name, _ in
                  [(c0, ns0, name0, pod0), *[(c, *self.rng.choice(self.spec.workload_refs()), "") for c in lost[1:]]]}
        tree = process_tree(victim.proc.pid)
        reads = failed = 0
        first_fail = ""
        t_unwatched = t_visible = t_fresh = t_owned = None
        with httpx.Client(base_url=api.url, timeout=15) as http:
            t0 = time.monotonic()
            for pid in tree:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            victim.proc.wait(10)
            self.set_ready(c0, ns0, pod0, False)  # a change while nobody watches the cluster
            t_change = time.monotonic() - t0
            while time.monotonic() - t0 < self.a.takeover_timeout:
                for c, path in probes.items():
                    reads += 1
                    try:
                        r = http.get(path)
                        ok = r.status_code == 200
                        if ok and c == c0 and t_visible is None and \
                                ((r.json().get("live") or {}).get("ready")) == base - 1:
                            t_visible = time.monotonic() - t0
                    except httpx.HTTPError as e:
                        ok, r = False, None
                        first_fail = first_fail or f"{path}: {type(e).__name__}"
                    if not ok:
                        failed += 1
                        first_fail = first_fail or f"{path}: HTTP {r.status_code if r is not None else '-'} " \
                                                   f"{r.text[:200] if r is not None else ''}"
                    reads += 1
                    try:
                        rl = http.get(f"/clusters/{c}/workloads")
                        rows = len(rl.json().get("items") or []) if rl.status_code == 200 else -1
                        if rows != self.spec.workloads:  # an error, or a list that lost rows
                            failed += 1
                            first_fail = first_fail or f"list {c}: HTTP {rl.status_code}, {rows} rows " \
                                                       f"{rl.text[:200] if rows < 0 else ''}"
                    except httpx.HTTPError as e:
                        failed += 1
                        first_fail = first_fail or f"list {c}: {type(e).__name__}"
                if t_owned is None:
                    now = owners(api)
                    if all(now[c] and not now[c].startswith(victim.pod + "_") for c in lost):
                        t_owned = time.monotonic() - t0
                w = {c: watching(api, c) for c in lost}
                if t_unwatched is None and not all(w.values()):
                    t_unwatched = time.monotonic() - t0
                if t_visible is not None and all(w.values()) and t_unwatched is not None:
                    now = owners(api)
                    if all(now[c] and not now[c].startswith(victim.pod + "_") for c in lost):
                        t_fresh = time.monotonic() - t0
                        break
                time.sleep(0.2)
        self.shards.remove(victim)
        victim.stop()
        self.res[label] = {"victim": victim.pod, "clusters": list(lost), "change_made_s": t_change,
                            "unwatched_after_s": t_unwatched, "claimed_by_other_s": t_owned, "change_visible_s": t_visible,
                            "fresh_again_s": t_fresh, "reads": reads, "failed_reads": failed,
                            "first_failure": first_fail, "owners_after": owners(api)}
        print(f"   [{label}] shard killed: {victim.pod} owned {', '.join(lost)}; watching false after "
              f"{t_unwatched if t_unwatched is None else round(t_unwatched, 1)} s; claimed by the other shard after "
              f"{t_owned if t_owned is None else round(t_owned, 1)} s; change visible after "
              f"{t_visible if t_visible is None else round(t_visible, 1)} s; fresh again (watching, owned by the "
              f"other shard) after {t_fresh if t_fresh is None else round(t_fresh, 1)} s; {reads} reads, "
              f"{failed} failed{' (' + first_fail + ')' if first_fail else ''}", flush=True)
        self.set_ready(c0, ns0, pod0, True)

    def baseline_shards(self, code: Path) -> None:
        """Both shards replaced by two running the baseline's code (the API replicas stay)."""
        assert self.redis is not None
        for s in self.shards:
            s.stop()
        self.shards = [Proc(f"base-shard-{i}", self.servers, self.log_dir, ["--store", self.redis.url, "--role",
                                                                             "shard"], {"POD_NAME": f"base-{i}"},
                            code=code) for i in (1, 2)]
        t0 = time.monotonic()
        for c in CLUSTERS:  # owned by the baseline shards and watched
            while not (watching(self.apis[0], c) and owners(self.apis[0])[c].startswith("base-")):
                if time.monotonic() - t0 > 300:
                    raise RuntimeError(f"baseline shards did not take {c} over")
                time.sleep(0.5)
        while len({o.split("_")[0] for o in owners(self.apis[0]).values()}) < 2 and time.monotonic() - t0 < 120:
            time.sleep(0.5)  # both shards own clusters before one is killed
        self.wait_answers()
        print(f"   baseline shards ({code}) own every cluster after {time.monotonic() - t0:.1f} s: "
              f"{owners(self.apis[0])}", flush=True)


def top_frames(path: Path, n: int = 15) -> list[tuple[str, float]]:
    """Self time per function from py-spy's raw output (`frame;frame;... count`), busy samples only."""
    own: dict[str, int] = {}
    total = 0
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        if any(w in leaf for w in ("select (selectors", "_run_once (asyncio", "poll (", "epoll", "wait (threading")):
            continue  # idle: waiting for the next request
        own[leaf] = own.get(leaf, 0) + int(count)
        total += int(count)
    return [(k, v / total) for k, v in sorted(own.items(), key=lambda kv: -kv[1])[:n]] if total else []


# -- report ---------------------------------------------------------------------------------------

def table(res: dict[str, Any], spec: FillSpec) -> str:
    rows: list[tuple[str, str, str, str, str, str]] = []

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("MET" if ok else "NOT MET")

    rd = res["reads"]
    for key, label, tgt in (("list", f"aggregate list of {3 * spec.workloads} rows", TARGETS["list_p50_ms"]),
                            ("get", "GET one", TARGETS["get_p50_ms"])):
        for q in ("p50", "p99"):
            a = rd["api-1"][key][f"{q}_ms"]
            a2 = rd["api-2"][key][f"{q}_ms"]
            s = rd["single"][key][f"{q}_ms"]
            rows.append((f"{label} {q}", f"{a:.1f} ms (replica 2: {a2:.1f} ms)", f"{s:.1f} ms", f"{a / s:.2f}x",
                         f"<= {tgt:g} ms" if q == "p50" else "", verdict(a <= tgt) if q == "p50" else ""))
    api = res["api"]
    per = max(api[n][k]["per_read"] for n in ("api-1", "api-2") for k in ("list", "get"))
    sper = max(api["single"][k]["per_read"] for k in ("list", "get"))
    foreign = sum(api[n][k]["not_background"] for n in ("api-1", "api-2") for k in ("list", "get"))
    sforeign = sum(api["single"][k]["not_background"] for k in ("list", "get"))
    nreads = sum(res["reads"][n][k]["n"] for n in ("api-1", "api-2") for k in ("list", "get"))
    rows.append(("API-server requests caused by reads (on workload resources)",
                 f"{foreign:.0f} in {nreads} reads", f"{sforeign:.0f} in {nreads // 2} reads", "", "0",
                 verdict(foreign == 0)))
    rows.append(("  all non-watch requests net of the background rate, per read (max)", f"{per:.3f}",
                 f"{sper:.3f}", "", "", ""))
    k = res.get("kill") or {}
    fresh = k.get("fresh_again_s")
    rows.append(("shard killed: its clusters fresh again (watching, change visible)",
                 f"{fresh:.1f} s" if fresh is not None else "not within the timeout", "n/a", "", "<= 30 s",
                 verdict(fresh is not None and fresh <= TARGETS["takeover_s"])))
    rows.append(("  failed reads meanwhile", f"{k.get('failed_reads')} of {k.get('reads')}", "", "", "0",
                 verdict(k.get("failed_reads") == 0)))
    kb = res.get("kill_baseline")
    if kb:
        fb = kb.get("fresh_again_s")
        rows.append(("  the same with the baseline's shards: fresh again; failed reads",
                     f"{fb:.1f} s" if fb is not None else "not within the timeout", "", "", "",
                     f"{kb.get('failed_reads')} of {kb.get('reads')} failed"))
    rs = res.get("resume") or {}
    rows.append((f"stream resumed on the other replica after {rs.get('changes')} changes",
                 (f"HTTP {rs.get('status')}, {rs.get('events')} events, missed {rs.get('missed')}, "
                  f"duplicated {rs.get('duplicated')}"), "n/a", "", "no 410, 0 missed, 0 dup",
                 verdict(rs.get("status") == 200 and rs.get("missed") == 0 and rs.get("duplicated") == 0
                         and rs.get("unexpected") == 0)))
    m = res["redis"]
    rows.append(("Redis used_memory (whole store)", f"{m['used_memory'] / 1e6:.1f} MB", "", "", "measured", ""))
    rows.append(("  per workload (hashes: row, answers with pods, ...)", f"{m['per_workload_bytes'] / 1e3:.1f} kB",
                 "", "", "measured", ""))
    rows.append(("  per stream entry", f"{m['per_entry_bytes']:.0f} B ({m['stream_entries']} entries)", "", "",
                 "measured", ""))
    rss = res["rss_mb"]
    for name in sorted(rss):
        if name == "single":
            continue
        rows.append((f"RSS {name}", f"{rss[name]['process']:.0f} MB (tree {rss[name]['tree']:.0f} MB)", "", "",
                     "measured", ""))
    rows.append(("RSS single process", "", f"{rss['single']['process']:.0f} MB (tree {rss['single']['tree']:.0f} MB)",
                 "", "measured", ""))
    shard_sum = sum(v["process"] for n, v in rss.items() if n.startswith("shard"))
    rows.append(("  shards together / single", f"{shard_sum:.0f} MB", f"{rss['single']['process']:.0f} MB",
                 f"{shard_sum / rss['single']['process']:.2f}x", "", ""))
    head = ("measure", "sharded (API replica 1)", "single process", "ratio", "target", "verdict")
    w = [max(len(r[i]) for r in [head, *rows]) for i in range(6)]
    lines = ["  ".join(h.ljust(w[i]) for i, h in enumerate(head))]
    lines += ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=300, help="JobSets per cluster (default 300)")
    ap.add_argument("--namespaces", type=int, default=10)
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--jobs-per-jobset", type=int, default=2)
    ap.add_argument("--fill-threads", type=int, default=8, help="per API server (the three fill at once)")
    ap.add_argument("--reuse-dir", type=Path, help="the three fills here (DIR/a, DIR/b, DIR/c), kept for later runs")
    ap.add_argument("--requests", type=int, default=200, help="reads per measure and target (default 200)")
    ap.add_argument("--changes", type=int, default=20, help="changes made before a stream is resumed")
    ap.add_argument("--quiet", type=float, default=10.0, help="seconds of the quiet window (background rate)")
    ap.add_argument("--takeover-timeout", type=float, default=60.0)
    ap.add_argument("--no-kill", action="store_true", help="skip the shard kill")
    ap.add_argument("--profile", type=Path, help="py-spy the API replica and the single process here (raw stacks)")
    ap.add_argument("--baseline", type=Path, help="a checkout of the code before a fix (git worktree): kill a "
                                                  "shard running it too, after the first kill")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    spec = FillSpec(args.workloads, args.namespaces, args.pods_per_job, args.jobs_per_jobset)
    root = args.reuse_dir.resolve() if args.reuse_dir else Path(tempfile.mkdtemp(prefix="wlmap-store-bench-"))

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    servers: dict[str, ApiServer] = {}
    bench: Bench | None = None
    figures: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load": os.getloadavg()},
                               "fill": spec.as_dict(), "started": datetime.now(UTC).isoformat()}
    try:
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; fill: 3 clusters x "
              f"{spec.workloads} JobSets x {spec.jobs_per_jobset} Jobs x {spec.pods_per_job} pods ({root})",
              flush=True)
        servers, info = start_and_fill(root, spec, args.fill_threads)
        figures["fill_result"] = info
        log_dir = root / "logs"
        log_dir.mkdir(exist_ok=True)
        bench = Bench(args, servers, spec, log_dir)
        bench.start()
        bench.quiet_window(args.quiet)
        bench.measure_reads()
        if args.profile:
            bench.profile(args.profile)
        bench.resume()
        bench.memory()
        if not args.no_kill:
            bench.kill_shard()
            if args.baseline:
                bench.baseline_shards(args.baseline.resolve())
                bench.kill_shard("kill_baseline")
        figures["results"] = bench.res
        figures["machine"]["load_end"] = os.getloadavg()
        print()
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
        for e in bench.res["errors"]:
            print(f"   error: {e}")
        print(table(bench.res, spec))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if bench is not None:
            bench.stop()
        for s in servers.values():
            s.stop(keep_data=args.reuse_dir is not None)
        if args.json:
            args.json.write_text(json.dumps(finite(figures), indent=1, default=str))
            print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
