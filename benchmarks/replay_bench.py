"""Churn past the API server's ceiling (issue 33): one `wlmap serve` process on the watch replay
(benchmarks/replay/), stepped through pod event rates a kube-apiserver on this machine cannot
produce.

1. recording (once, `--recording` keeps it): a real etcd + kube-apiserver with 10 JobSets of
   2 Jobs x 4 pods (benchmarks/cluster_fill.py); the recorder takes the lists, then every
   running pod is made not-ready and ready again as a kubelet does, round-robin over the
   JobSets (a workload's next event is 10 events later), so every event changes a ready count.
2. the replay server (its own process) serves `--pods` pods: the recording's namespaced objects
   copied K times (distinct namespaces and uids), the events cycled (forward, then undone) and
   interleaved over the copies; `wlmap serve --cache true` (or `--store`: `--role all` on a real
   Redis) syncs on it.
3. per rate (`--rates`, `--seconds` each), open loop: the server writes event i at t0 + i/rate
   and logs when it wrote it and the ready count it leads to; change-visible latency is from
   that write to the row showing that count (or a later one of the same workload: coalesced
   changes count as seen when a later state shows), on `GET /workloads?watch=true` (every
   event) and on GET one (`--pollers` threads polling a workload each for `--sample` s).
   Also: the service's CPU per event (/proc), RSS, the model's `pending`, and whether the
   server kept its rate (achieved, lag behind schedule).

    python benchmarks/replay_bench.py [--pods 2400 | --pods 90000] [--rates 500,1000,...]
        [--seconds 10] [--store] [--recording rec.jsonl.gz] [--json out.json]
    python benchmarks/replay_bench.py --server-only [--rates 5000,10000,20000,40000]
        (the replay server alone, one raw pod watch reading it: the rates it sustains)
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import re
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

from benchmarks.churn_bench import Cpu, ListStream, ModelSampler, fmt  # noqa: E402
from benchmarks.cluster_bench import (  # noqa: E402
    Checkout,
    Service,
    finite,
    pct,
    stop_tree,
    vmrss_mb,
    wait_for_binaries,
)
from benchmarks.cluster_fill import (  # noqa: E402
    SERVICE_NS,
    UA_KUBELET,
    Client,
    FillSpec,
    fill,
    pods_path,
    ready_patch,
)
from benchmarks.replay.record import Recorder  # noqa: E402
from benchmarks.replay.recording import Recording, copy_namespace, steps  # noqa: E402
from benchmarks.replay.server import write_kubeconfig  # noqa: E402
from tests.cluster.apiserver import ApiServer  # noqa: E402

RATES = "500,1000,2000,3000,5000,10000"
Key = tuple[str, str]


# -- the recording ---------------------------------------------------------------------------

def make_recording(path: Path, workloads: int) -> Recording:
    """Fill a real API server, record every running pod made not-ready then ready again."""
    wait_for_binaries(30)
    server = ApiServer()
    try:
        server.start()
        spec = FillSpec(workloads, 1, 4, 2)
        fr = fill(server, spec, 4, progress=None)
        if fr.errors:
            raise SystemExit(f"fill: {fr.errors[0]}")
        c = Client(server)
        pods = c.call("GET", pods_path(spec.namespace(0)))["items"]
        by_js: dict[str, list[str]] = collections.defaultdict(list)
        for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
            if p["status"].get("phase") == "Running":
                by_js[p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]].append(p["metadata"]["name"])
        recorder = Recorder(server).start()
        last: dict[str, Any] = {}
        for ready in (False, True):
            for k in range(max(len(v) for v in by_js.values())):
                for names in by_js.values():
                    if k < len(names):
                        last = c.call("PATCH", f"{pods_path(spec.namespace(0))}/{names[k]}/status",
                                      ready_patch(ready, datetime.now(UTC)),
                                      ctype="application/strategic-merge-patch+json", agent=UA_KUBELET)
        recorder.settle(int(last["metadata"]["resourceVersion"]))
        rec = recorder.stop()
        c.close()
        rec.save(path)
        return rec
    finally:
        server.stop()


class ReplayProcess:
    def __init__(self, recording: Path, copies: int, log_dir: Path):
        self.log = open(log_dir / "replay-server.log", "w+")  # noqa: SIM115 - the process writes it until stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.replay.server", "--recording", str(recording),
                                      "--copies", str(copies), "--cycle"], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        assert self.proc.stdout is not None
        self.loaded = ""
        while line := self.proc.stdout.readline():
            if m := re.match(r"port (\d+)", line):
                self.port = int(m.group(1))
                break
            self.loaded = line.strip()
        else:
            raise RuntimeError(f"the replay server did not start: {self.output()}")
        self.url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def call(self, method: str, what: str, **q: Any) -> Any:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            c.request(method, f"/_replay/{what}?" + "&".join(f"{k}={v}" for k, v in q.items()))
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"{method} /_replay/{what}: {r.status} {body[:300]!r}")
            return json.loads(body)
        finally:
            c.close()

    def kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.url)

    def run(self, rate: float, seconds: float, schedule: Schedule | None = None) -> dict[str, Any]:
        """Emit rate x seconds events; the run's stats once the last is written."""
        started = self.call("POST", "start", rate=rate, count=int(rate * seconds))
        while True:
            time.sleep(0.05)
            run = self.call("GET", "stats")["run"]
            if schedule is not None and schedule.run is None and run.get("t0") is not None:
                schedule.run = (run["t0"], started["first"], started["first"] + started["count"], rate)
            if run.get("running") is False:
                if schedule is not None:
                    schedule.run = None
                return run

    def stop(self) -> None:
        stop_tree(self.proc, 5)  # type: ignore[arg-type]
        self.log.close()


# -- what the readers saw, matched with what the server wrote ----------------------------------

class Seen:
    """Observations (time, ready) per workload: the list stream's, and GET one's."""

    def __init__(self) -> None:
        self.stream: dict[Key, list[tuple[float, int]]] = collections.defaultdict(list)
        self.get: dict[Key, list[tuple[float, int]]] = collections.defaultdict(list)

    def seen_on_stream(self, key: Key, ready: int, t: float) -> None:  # ListStream's ledger
        self.stream[key].append((t, ready))


def visible(events: list[tuple[int, float, int]], seen: list[tuple[float, int]], until: float | None = None
            ) -> tuple[list[float], int, int]:
    """Latencies of one workload's events (i, written, want) from its observations (t, ready): an
    observation of `ready` at t is the latest event written by t that leads to it, and shows
    every earlier event of the workload too (the service coalesces what arrives together).
    `until`: observations stop then (GET one's sample window); later events are not counted.
    Returns the latencies, how many events were never seen, and how many were not seen but end
    where the row already stood (a pod flipped and flipped back before the service applied
    either: no row change to see)."""
    lat: dict[int, float] = {}
    j = hi = 0  # events before j are marked; events before hi were written by the observation
    for t, r in seen:
        while hi < len(events) and events[hi][1] <= t:
            hi += 1
        m = next((x for x in range(hi - 1, j - 1, -1) if events[x][2] == r), None)
        if m is None:
            continue
        for x in range(j, m + 1):
            lat[x] = max(0.0, t - events[x][1])
        j = m + 1
    counted = [e for e in range(len(events)) if until is None or events[e][1] <= until]
    unseen = [e for e in counted if e not in lat]
    unchanged = len(unseen) if unseen and seen and events[unseen[-1]][2] == seen[-1][1] else 0
    return [lat[e] for e in counted if e in lat], len(unseen) - unchanged, unchanged


class Schedule:
    """Which workload event i changes and when it is due, for the run under way: the GET one
    pollers go where the next events go (90,000 pods' workloads get one each ~10 s at 1,000/s)."""

    def __init__(self, rec: Recording, copies: int):
        self.steps = [s.workload for s in steps(rec, cycle=True)]
        self.copies = copies
        self.run: tuple[float, int, int, float] | None = None  # (t0, first, end, rate)

    def target(self, ahead: float, rng: random.Random) -> tuple[Key, float] | None:
        """A workload with an event due `ahead` s (up to twice that) from now, and when."""
        if self.run is None:
            return None
        t0, first, end, rate = self.run
        start = first + int((time.perf_counter() + ahead * (1 + rng.random()) - t0) * rate)
        for i in range(start, min(end, start + 10 * self.copies)):
            wl = self.steps[(i // self.copies) % len(self.steps)]
            if wl is not None:
                return (copy_namespace(wl[0], i % self.copies), wl[1]), t0 + (i - first) / rate
        return None


class Poller(threading.Thread):
    """GET one: the workload of an event due shortly, polled every `every` s from now until
    `sample` s after the event is due; (t, ready) kept."""

    def __init__(self, port: int, schedule: Schedule, seen: Seen, every: float, sample: float,
                 rng: random.Random):
        super().__init__(daemon=True, name="get-poller")
        self.port, self.schedule, self.seen = port, schedule, seen
        self.every, self.sample, self.rng = every, sample, rng
        self.windows: list[tuple[Key, float, float]] = []
        self.running = threading.Event()
        self.stop = False
        self.gets = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop:
            if not self.running.wait(0.2):
                continue
            target = self.schedule.target(0.3, self.rng)
            if target is None:
                time.sleep(0.05)
                continue
            key, due = target
            t0 = time.perf_counter()
            while self.running.is_set() and time.perf_counter() < due + self.sample:
                t_req = time.perf_counter()
                try:
                    conn.request("GET", f"/workloads/{key[0]}/{key[1]}")
                    r = conn.getresponse()
                    body = r.read()
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                    continue
                t = time.perf_counter()
                self.gets += 1
                if r.status == 200 and isinstance(ready := (json.loads(body).get("live") or {}).get("ready"), int):
                    self.seen.get[key].append((t, ready))
                time.sleep(max(0.0, self.every - (t - t_req)))
            self.windows.append((key, t0, time.perf_counter()))
        conn.close()


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b and b == b and a == a and b != float("inf") and a != float("inf") else "-"


# -- the server alone --------------------------------------------------------------------------

def server_only(args: argparse.Namespace, rp: ReplayProcess) -> list[dict[str, Any]]:
    """One raw pod watch reading as fast as it can (discarding); the rates the server sustains."""
    sock = socket.create_connection(("127.0.0.1", rp.port))
    sock.sendall(b"GET /api/v1/pods?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n")
    got = [0]

    def read() -> None:
        while data := sock.recv(1 << 20):
            got[0] += data.count(b"\n")

    threading.Thread(target=read, daemon=True).start()
    cpu = Cpu(server=rp.proc.pid)
    rows = []
    for rate in [float(x) for x in args.rates.split(",")]:
        before, a = got[0], cpu.read()
        run = rp.run(rate, args.seconds)
        b = cpu.read()
        time.sleep(0.5)
        row = {"target_per_s": rate, "achieved_per_s": run["achieved_per_s"], "max_lag_s": run["max_lag"],
               "lines_read": got[0] - before, "server_cpu_pct": Cpu.pct(a, b)["server"]}
        rows.append(row)
        print(f"  {rate:7g}/s: achieved {row['achieved_per_s']:8.0f}/s, max lag {fmt(row['max_lag_s'])}, "
              f"{row['lines_read']} lines read, server CPU {row['server_cpu_pct']:.0f} %", flush=True)
    sock.close()
    return rows


# -- one service on its own replay server -----------------------------------------------------

class Side:
    """`wlmap serve` (this checkout's, or `checkout`'s) on its own replay server, with its list
    stream, GET one pollers and model sampler: sides of a comparison take turns, so the one
    not stepping receives no events."""

    def __init__(self, label: str, args: argparse.Namespace, rec_path: Path, copies: int, log_dir: Path,
                 checkout: Path | None = None):
        self.label, self.args, self.copies = label, args, copies
        self.dir = log_dir / label
        self.dir.mkdir(exist_ok=True)
        t = time.perf_counter()
        self.rp = ReplayProcess(rec_path, copies, self.dir)
        print(f"[{label}] replay server: {self.rp.loaded} up in {time.perf_counter() - t:.1f} s", flush=True)
        self.redis: Any = None
        self.svc: Service | None = None
        self.stream: ListStream | None = None
        self.pollers: list[Poller] = []
        self.sampler: ModelSampler | None = None
        self.seen = Seen()

    def start(self, rec: Recording) -> float:
        args = self.args
        extra: list[str] = []
        if args.store:
            from tests.store.redis_server import RedisServer

            self.redis = RedisServer().start()
            extra = ["--store", self.redis.url, "--role", "all"]
        extra += ["--karta-resources", "false"]  # no Karta leader election against a read-only server
        kubeconfig = self.rp.kubeconfig(self.dir / "kubeconfig")
        checkout = args.compare if self.label == "compare" else None
        self.svc = (Checkout(checkout, kubeconfig, self.dir, extra) if checkout is not None
                    else Service("model", kubeconfig, True, self.dir, extra))
        synced = self.svc.wait_synced()
        print(f"[{self.label}] wlmap serve synced in {synced:.1f} s ({SERVICE_NS})", flush=True)
        self.stream = ListStream(self.svc.port, self.seen)  # type: ignore[arg-type]  # a ledger: seen_on_stream
        self.stream.start()
        if not self.stream.initial_end.wait(300) or self.stream.error:
            raise RuntimeError(f"list stream: {self.stream.error or 'no initial BOOKMARK'}")
        self.schedule = Schedule(rec, self.copies)
        rng = random.Random(args.seed)
        self.pollers = [Poller(self.svc.port, self.schedule, self.seen, args.poll, args.sample, rng)
                        for _ in range(args.pollers)]
        for pl in self.pollers:
            pl.start()
        self.sampler = ModelSampler(self.svc.port)
        self.sampler.start()
        self.cpu = Cpu(service=self.svc.proc.pid, server=self.rp.proc.pid)
        return synced

    def step(self, rate: float) -> dict[str, Any]:
        args, rp, svc, seen, sampler = self.args, self.rp, self.svc, self.seen, self.sampler
        assert svc is not None and sampler is not None
        first = rp.call("GET", "stats")["next"]
        sampler.samples = []
        sampler.running.set()
        for pl in self.pollers:
            pl.windows = []
            pl.running.set()
        seen.stream.clear()
        seen.get.clear()
        a = self.cpu.read()
        run = rp.run(rate, args.seconds, self.schedule)
        b = self.cpu.read()
        time.sleep(args.drain)  # the last events through the service
        for pl in self.pollers:
            pl.running.clear()
        sampler.running.clear()
        log = rp.call("GET", "log", since=first)["events"]
        by_key: dict[Key, list[tuple[int, float, int]]] = collections.defaultdict(list)
        for i, t, ns, name, ready in log:
            if name:
                by_key[(ns, name)].append((i, t, ready))
        stream, never, unchanged = [], 0, 0
        for key, evs in by_key.items():
            lat, n, u = visible(evs, sorted(seen.stream.get(key, [])))
            stream += lat
            never += n
            unchanged += u
        gets, get_never = [], 0
        for pl in self.pollers:
            for key, t0, t1 in pl.windows:
                evs = [e for e in by_key.get(key, []) if e[1] >= t0]
                lat, n, _ = visible(evs, sorted(o for o in seen.get.get(key, []) if t0 <= o[0] <= t1),
                                    until=t1 - 1.0)
                gets += lat
                get_never += n
        p = Cpu.pct(a, b)
        events = len(log)
        svc_cpu_s = p["service"] / 100 * (b["_t"] - a["_t"])
        stream_all = stream + [float("inf")] * never
        get_all = gets + [float("inf")] * get_never
        row = {"side": self.label, "target_per_s": rate, "events": events,
               "server_achieved_per_s": run["achieved_per_s"], "server_max_lag_s": run["max_lag"],
               "stream_n": len(stream), "stream_never": never, "stream_unchanged": unchanged,
               "stream_p50_s": pct(stream_all, 50), "stream_p99_s": pct(stream_all, 99),
               "get_n": len(gets), "get_never": get_never, "get_p50_s": pct(get_all, 50), "get_p99_s": pct(get_all, 99),
               "service_cpu_pct": p["service"],
               "service_cpu_ms_per_event": svc_cpu_s * 1000 / events if events else 0.0,
               "server_cpu_pct": p["server"], "driver_cpu_pct": p["driver"], "machine_busy_pct": p["machine_busy"],
               "rss_mb": vmrss_mb(svc.proc.pid), "pending_max": max(sampler.samples, default=0),
               "load1": os.getloadavg()[0]}
        print(f"  [{self.label}] {rate:6g}/s: server {row['server_achieved_per_s']:6.0f}/s "
              f"(lag {fmt(row['server_max_lag_s'])}); stream p50 {fmt(row['stream_p50_s'])} "
              f"p99 {fmt(row['stream_p99_s'])} ({never} never, {unchanged} flipped back unseen, "
              f"of {events}); GET p50 {fmt(row['get_p50_s'])} "
              f"p99 {fmt(row['get_p99_s'])} (n={len(gets)}, {get_never} never); service CPU "
              f"{row['service_cpu_pct']:.0f} % = {row['service_cpu_ms_per_event']:.3f} ms/event, RSS "
              f"{row['rss_mb']:.0f} MB, pending max {row['pending_max']}; server CPU {row['server_cpu_pct']:.0f} %, "
              f"machine busy {row['machine_busy_pct']:.0f} %, load {row['load1']:.1f}", flush=True)
        return row

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
        for pl in self.pollers:
            pl.stop = True
            pl.running.set()
        if self.sampler is not None:
            self.sampler.stop = True
            self.sampler.running.set()
        if self.svc is not None:
            self.svc.stop()
        if self.redis is not None:
            self.redis.stop()
        self.rp.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=2400, help="pods the replay serves (the recording's, copied)")
    ap.add_argument("--workloads", type=int, default=10, help="JobSets in the recording (8 pods each)")
    ap.add_argument("--recording", type=Path, help="made here when missing, reused when present")
    ap.add_argument("--rates", default=RATES)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--drain", type=float, default=3.0, help="seconds after a step for its last events")
    ap.add_argument("--pollers", type=int, default=2)
    ap.add_argument("--poll", type=float, default=0.02, help="GET one poll interval (s)")
    ap.add_argument("--sample", type=float, default=2.0,
                    help="seconds a GET one poller stays on a workload after its event is due")
    ap.add_argument("--stop-p99", type=float, default=5.0, help="stop after a step whose stream p99 passes this")
    ap.add_argument("--store", action="store_true", help="`--role all` on a real Redis (as churn_bench --store)")
    ap.add_argument("--compare", type=Path, help="another checkout's service too, each on its own replay server, "
                    "rates interleaved (ratios printed)")
    ap.add_argument("--server-only", action="store_true", help="measure the replay server alone")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    log_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"wlmap-replay-bench-{os.getpid()}"
    log_dir.mkdir(parents=True, exist_ok=True)
    rec_path = args.recording or log_dir / "recording.jsonl.gz"
    if rec_path.exists():
        rec = Recording.load(rec_path)
    else:
        t = time.perf_counter()
        rec = make_recording(rec_path, args.workloads)
        print(f"recorded {len(rec.events)} events in {time.perf_counter() - t:.0f} s -> {rec_path}", flush=True)
    base_pods = len(rec.lists["/api/v1/pods"])
    copies = max(1, round(args.pods / base_pods))
    figures: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load_at_start": os.getloadavg()},
                               "args": {k: str(v) for k, v in vars(args).items()}, "copies": copies,
                               "pods": base_pods * copies, "recorded_events": len(rec.events)}
    sides: list[Side] = []
    try:
        if args.server_only:
            sides.append(Side("server", args, rec_path, copies, log_dir))
            figures["server_only"] = server_only(args, sides[0].rp)
            return 0
        for label in ("this", *(["compare"] if args.compare else [])):
            sides.append(Side(label, args, rec_path, copies, log_dir))
            figures.setdefault("sync_s", {})[label] = sides[-1].start(rec)
        rows: list[dict[str, Any]] = []
        for rate in [float(x) for x in args.rates.split(",")]:
            done = [s.step(rate) for s in sides]  # interleaved: one rate on each side in turn
            rows += done
            if len(done) == 2:
                a, b = done
                print(f"  {rate:6g}/s compare/this: stream p50 {ratio(b['stream_p50_s'], a['stream_p50_s'])} "
                      f"p99 {ratio(b['stream_p99_s'], a['stream_p99_s'])}, GET p50 "
                      f"{ratio(b['get_p50_s'], a['get_p50_s'])}, CPU per event "
                      f"{ratio(b['service_cpu_ms_per_event'], a['service_cpu_ms_per_event'])}", flush=True)
            if all(r["stream_p99_s"] > args.stop_p99 for r in done):
                print(f"stop: stream p99 > {args.stop_p99:g} s", flush=True)
                break
        figures["steps"] = rows
        figures["server_requests"] = sides[0].rp.call("GET", "stats")["requests"]  # what the service asked
        for s in sides:
            ok = [r for r in rows if r["side"] == s.label and r["stream_p99_s"] <= 1.0 and r["get_p99_s"] <= 1.0
                  and r["stream_never"] == 0]
            best = max((r["server_achieved_per_s"] for r in ok), default=0.0)
            figures.setdefault("absorbed_per_s", {})[s.label] = best
            print(f"[{s.label}] highest rate with change-visible p99 <= 1 s (stream and GET one): "
                  f"{best:.0f} events/s on {base_pods * copies} pods")
    finally:
        for s in sides:
            s.close()
        if args.json:
            args.json.write_text(json.dumps(finite(figures), indent=1, default=str))
            print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
