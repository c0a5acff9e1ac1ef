"""What lists a UI pages through and the diagnosis cost, at the benchmark cluster's size, side by
side in one run (issue 22's targets):

1. **a filtered, sorted first page**: `GET /workloads?phase=Running&labelSelector=…&minGpus=…&sort=-gpus&limit=50`
   against the whole list, from the live model (p50, p90);
2. **diagnosis on GET one**: `GET /workloads/{ns}/{name}` of this checkout against the same read
   of `--compare PATH` (another checkout, e.g. `git worktree add /tmp/base <rev>`, run by this
   venv with PYTHONPATH=PATH), both services on the same API server, reads interleaved;
   the workloads read include ones the fill left with an unschedulable or not-ready pod (they
   have a diagnosis to compute);
3. **a Warning Event storm**: `--event-rate` Events per second for `--event-seconds` about the
   fill's pods and Jobs (distinct Events, as a storm of distinct failures makes them), while
   GET one and the list are read; the server's RSS before and after, the Events the model kept,
   the API server's own request counters over the reads (the background rate of a quiet
   window subtracted), and whether the storm's Events show in the answers.

    python benchmarks/diagnosis_bench.py --compare /tmp/base [--workloads 1000] [--namespaces 20]
        [--reuse-dir DIR | --keep] [--reads 300] [--event-rate 50] [--event-seconds 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cluster_bench import (
    ApiCounter,
    Checkout,
    Service,
    fmt_ms,
    pct,
    vmrss_mb,
)
from benchmarks.cluster_fill import (
    Client,
    FillSpec,
    fill,
    jobs_path,
    pods_path,
    read_marker,
    write_marker,
)
from tests.cluster.apiserver import ApiServer

PAGE = "/workloads?phase=Running&labelSelector=app.kubernetes.io%2Fname&minGpus=1&sort=-gpus&limit=50"
FULL = "/workloads"


def timed(s: Service, path: str) -> tuple[float, bytes]:
    status, body, t = s.get(path)
    if status != 200:
        raise RuntimeError(f"{path}: HTTP {status}: {body[:300]!r}")
    return t, body


def window(api: ApiCounter, fn: Any) -> tuple[Any, float]:
    """fn()'s result and the API requests counted while it ran, but the storm's own Event creates."""
    before = api.scrape()
    out = fn()
    d = ApiCounter.delta(before, api.scrape())
    d.pop(("POST", "events"), None)
    return out, ApiCounter.counted(d)


def quiet_rate(api: ApiCounter, seconds: float) -> float:
    before, t = api.scrape(), time.perf_counter()
    time.sleep(seconds)
    return ApiCounter.counted(ApiCounter.delta(before, api.scrape())) / (time.perf_counter() - t)


def warm(s: Service, refs: list[tuple[str, str]]) -> None:
    """Every workload read once, so both services answer from their caches as in steady use."""
    for ns, name in refs:
        timed(s, f"/workloads/{ns}/{name}")


def event_body(i: int, ns: str, about: dict[str, Any], kind: str) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = about["metadata"]
    reason, message = (("FailedCreate", f'Error creating: pods "{meta["name"]}-{i}" is forbidden: exceeded quota: '
                                        "gpu-quota, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/"
                                        "gpu=64, limited: requests.nvidia.com/gpu=64")
                       if kind == "Job" else
                       ("Unhealthy", f"Readiness probe failed: Get \"http://10.0.{i % 250}.{i % 200}:8000/health\": "
                                     "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"))
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.storm-{i}", "namespace": ns},
            "involvedObject": {"apiVersion": "v1" if kind == "Pod" else "batch/v1", "kind": kind, "name": meta["name"],
                               "namespace": ns, "uid": meta["uid"]},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "storm"}}


class Storm(threading.Thread):
    """Creates `rate` distinct Warning Events per second, round-robin over the given objects."""

    def __init__(self, server: ApiServer, targets: list[tuple[str, dict[str, Any], str]], rate: float,
                 seconds: float):
        super().__init__(daemon=True)
        self.client, self.targets, self.rate, self.seconds = Client(server), targets, rate, seconds
        self.created = self.failed = 0
        self.achieved = 0.0

    def run(self) -> None:
        t0 = time.perf_counter()
        i = 0
        while (elapsed := time.perf_counter() - t0) < self.seconds:
            due = int(elapsed * self.rate) + 1
            while i < due:
                ns, obj, kind = self.targets[i % len(self.targets)]
                status, _ = self.client.raw("POST", f"/api/v1/namespaces/{ns}/events",
                                            event_body(i, ns, obj, kind))
                self.created += status == 201
                self.failed += status != 201
                i += 1
            time.sleep(max(0.0, (i / self.rate) - (time.perf_counter() - t0)))
        self.achieved = self.created / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, required=True, help="another checkout to read GET one from side by side")
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--jobs-per-jobset", type=int, default=2)
    ap.add_argument("--reuse-dir", type=Path)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reads", type=int, default=300, help="reads per measure and service (default 300)")
    ap.add_argument("--event-rate", type=float, default=50.0)
    ap.add_argument("--event-seconds", type=float, default=60.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    spec = FillSpec(args.workloads, args.namespaces, args.pods_per_job, args.jobs_per_jobset)
    run = args.reuse_dir.resolve() if args.reuse_dir else Path(tempfile.mkdtemp(prefix="wlmap-diag-bench-"))
    run.mkdir(parents=True, exist_ok=True)
    marker = read_marker(run)
    server = ApiServer(run)
    log_dir = run / "logs"
    log_dir.mkdir(exist_ok=True)
    figures: dict[str, Any] = {"fill": spec.as_dict(), "compare": str(args.compare),
                               "started": datetime.now(UTC).isoformat()}
    services: list[Service] = []
    try:
        server.start()
        if not (marker and marker.get("complete")):
            write_marker(run, spec, complete=False)
            print(f"fill: {spec.workloads} JobSets ...", flush=True)
            fr = fill(server, spec, 16)
            write_marker(run, spec, complete=True, result=fr)
        api = ApiCounter(server)
        now = Service("model", server.kubeconfig("service"), True, log_dir)
        services.append(now)
        base = Checkout(args.compare, server.kubeconfig("service"), log_dir)
        services.append(base)
        for s in (now, base):
            print(f"synced in {s.wait_synced():.1f} s", flush=True)
        refs = spec.workload_refs()

        # -- 1. the first page of a filtered, sorted list, against the whole list --------------
        _, body = timed(now, PAGE)
        page = json.loads(body)
        more = (page.get("metadata") or {}).get("continue") is not None
        assert len(page["items"]) == 50 or not more, "a page short of its limit must be the last"
        figures["page_rows"] = len(page["items"])
        lists: dict[str, list[float]] = {"page": [], "full": []}
        for _ in range(args.reads // 3):
            for key, path in (("page", PAGE), ("full", FULL)):
                lists[key].append(timed(now, path)[0])
        figures["lists"] = {k: {"p50_ms": pct(v, 50) * 1000, "p90_ms": pct(v, 90) * 1000, "n": len(v)}
                            for k, v in lists.items()}

        # -- 2. GET one: this checkout (with the diagnosis) against the other ------------------
        warm(now, refs)
        warm(base, refs)
        sample = [rng.choice(refs) for _ in range(args.reads)]
        gets: dict[str, list[float]] = {"now": [], "base": [], "now_diagnosed": [], "base_diagnosed": []}
        for i, (ns, name) in enumerate(sample):
            pair = ((now, "now"), (base, "base")) if i % 2 == 0 else ((base, "base"), (now, "now"))
            took: dict[str, float] = {}
            for s, key in pair:
                t, body = timed(s, f"/workloads/{ns}/{name}")
                gets[key].append(t)
                took[key] = t
                if key == "now":
                    diagnosed = bool(json.loads(body).get("diagnosis"))
            if diagnosed:  # the reads that had a diagnosis to compute, both services
                gets["now_diagnosed"].append(took["now"])
                gets["base_diagnosed"].append(took["base"])
        figures["get_one"] = {k: {"p50_ms": pct(v, 50) * 1000 if v else None,
                                  "p90_ms": pct(v, 90) * 1000 if v else None, "n": len(v)} for k, v in gets.items()}

        # -- 3. a Warning Event storm -------------------------------------------------------
        rate0 = quiet_rate(api, 10.0)
        rss0 = vmrss_mb(now.proc.pid)
        admin = Client(server)
        targets: list[tuple[str, dict[str, Any], str]] = []
        for ns in spec.namespaces_list()[:4]:
            targets += [(ns, p, "Pod") for p in admin.call("GET", pods_path(ns))["items"][:50]]
            targets += [(ns, j, "Job") for j in admin.call("GET", jobs_path(ns))["items"][:25]]
        rng.shuffle(targets)
        storm = Storm(server, targets, args.event_rate, args.event_seconds)
        t0 = time.perf_counter()
        storm.start()
        reads = 0

        def read_during() -> None:
            nonlocal reads
            while storm.is_alive():
                ns, name = rng.choice(refs)
                timed(now, f"/workloads/{ns}/{name}")
                timed(now, PAGE)
                reads += 2
                time.sleep(0.05)

        _, counted = window(api, read_during)
        storm.join()
        seconds = time.perf_counter() - t0
        time.sleep(3)  # the last Events through the watch
        model = json.loads(timed(now, "/model")[1])
        rss1 = vmrss_mb(now.proc.pid)
        figures["storm"] = {"events_created": storm.created, "failed": storm.failed, "rate_per_s": storm.achieved,
                            "seconds": seconds, "rss_before_mb": rss0, "rss_after_mb": rss1,
                            "rss_added_mb": rss1 - rss0, "kept": model.get("warningEvents", {}).get("kept"),
                            "evicted": model.get("warningEvents", {}).get("evicted"), "reads": reads,
                            "api_requests": counted, "background_per_s": rate0,
                            "api_per_read": max(0.0, counted - rate0 * seconds) / max(reads, 1)}

        lp, lf = figures["lists"]["page"], figures["lists"]["full"]
        g = figures["get_one"]
        gn, gb = g["now"], g["base"]
        st = figures["storm"]
        added = (gn["p50_ms"] / gb["p50_ms"] - 1) * 100
        added_d = (g["now_diagnosed"]["p50_ms"] / g["base_diagnosed"]["p50_ms"] - 1) * 100 \
            if g["now_diagnosed"]["n"] else float("nan")
        print()
        print(f"{spec.workloads} JobSets, {spec.workloads * spec.jobs_per_jobset * spec.pods_per_job} pods; "
              f"{os.cpu_count()} cores; reads over loopback HTTP, keep-alive")
        print(f"{'measure':58s} {'figure':>14s} {'vs':>16s} {'target':>10s}")
        print(f"{'filtered, sorted first page of 50, p50 (p90)':58s} {fmt_ms(lp['p50_ms'] / 1000):>8s} "
              f"({fmt_ms(lp['p90_ms'] / 1000)}) {'full list ' + fmt_ms(lf['p50_ms'] / 1000):>16s} {'<= 10 ms':>10s} "
              f"{'MET' if lp['p50_ms'] <= 10 else 'NOT MET'}")
        print(f"{'GET one, p50: this checkout vs ' + str(args.compare):58s} {fmt_ms(gn['p50_ms'] / 1000):>14s} "
              f"{fmt_ms(gb['p50_ms'] / 1000):>16s} {'<= +10 %':>10s} {added:+.1f} % "
              f"{'MET' if added <= 10 else 'NOT MET'}")
        if g["now_diagnosed"]["n"]:
            nd, bd = g["now_diagnosed"], g["base_diagnosed"]
            print(f"{'  of those, the ' + str(nd['n']) + ' answers with a diagnosis':58s} "
                  f"{fmt_ms(nd['p50_ms'] / 1000):>14s} {fmt_ms(bd['p50_ms'] / 1000):>16s} {'<= +10 %':>10s} "
                  f"{added_d:+.1f} % {'MET' if added_d <= 10 else 'NOT MET'}")
        storm_label = f"Warning Events: {st['events_created']} at {st['rate_per_s']:.1f}/s for {st['seconds']:.0f} s"
        rss_span = f"{st['rss_before_mb']:.0f} -> {st['rss_after_mb']:.0f} MB"
        print(f"{storm_label:58s} {'kept ' + str(st['kept']):>14s} {'evicted ' + str(st['evicted']):>16s}")
        print(f"{'  RSS added by the storm':58s} {st['rss_added_mb']:>11.1f} MB {rss_span:>16s} "
              f"{'<= 30 MB':>10s} {'MET' if st['rss_added_mb'] <= 30 else 'NOT MET'}")
        print(f"{'  API-server requests per read during the storm':58s} {st['api_per_read']:>14.3f} "
              f"{str(st['reads']) + ' reads':>16s} {'= 0':>10s} {'MET' if st['api_per_read'] < 0.01 else 'NOT MET'}")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1, default=str))
    finally:
        for s in services:
            s.stop()
        server.stop(keep_data=args.keep or args.reuse_dir is not None)
        if args.keep:
            print(f"data kept in {run} (next run: --reuse-dir {run})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
