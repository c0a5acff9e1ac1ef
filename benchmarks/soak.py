"""Soak: hold ~80% of the measured capacity for minutes; report errors, p99 per minute, memory trend.

1. start `wlmap serve` (jq result cache off, so every request runs jq: the worst case);
2. measure capacity with wrk (16 connections, POST /interpret, a mix of catalog workloads);
3. pace wrk to a fraction of it (each connection waits between requests; calibrated once);
4. run segment after segment (default 10 x 60 s), sampling the RSS of the whole process tree
   (server + evaluation workers) every 2 s;
5. print one row per segment and a verdict: zero errors, flat memory (least-squares slope of
   RSS over the run after the first segment), stable p99 (max/min across segments).

    python benchmarks/soak.py [--minutes 10] [--segment 60] [--fraction 0.8] [--json FILE]

Exit code 1 when a request failed, the server died, or memory grew faster than --max-slope MB/min.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.http_bench import process_tree, start_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ["definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml",
             "definitions/kubeflow.org/PyTorchJob/v1/testdata/running.yaml",
             "definitions/ray.io/RayCluster/v1/testdata/running.yaml",
             "definitions/serving.kserve.io/InferenceService/v1beta1/testdata/running-raw-gpu.yaml",
             "definitions/leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml"]


def tree_rss_mb(root: int) -> float:
    """Resident memory of a process and all its descendants."""
    pages = 0
    for pid in process_tree(root):
        try:
            pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            continue
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def wrk(url: str, bodies: list[str], seconds: float, connections: int, delay_ms: float) -> dict[str, Any]:
    """wrk with a rotating mix of bodies and, when delay_ms > 0, a pause before each request."""
    import yaml

    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, b in enumerate(bodies):
            f = Path(d) / f"b{i}.json"
            f.write_text(json.dumps(yaml.safe_load(b)) if not b.lstrip().startswith("{") else b)
            files.append(str(f))
        script = Path(d) / "soak.lua"
        script.write_text(
            "local bodies = {}\n"
            + "".join(f'do local f = io.open("{f}", "r"); bodies[#bodies + 1] = f:read("*a"); f:close() end\n'
                      for f in files)
            + "local i = 0\n"
            "request = function()\n  i = i % #bodies + 1\n"
            '  return wrk.format("POST", "/interpret", {["Content-Type"] = "application/json"}, bodies[i])\nend\n'
            + (f"delay = function() return {delay_ms:.3f} end\n" if delay_ms > 0 else "")
            + 'done = function(summary, latency, requests)\n'
            '  io.write(string.format("ERRORS %d %d %d %d %d\\n", summary.errors.status, summary.errors.connect, '
            "summary.errors.read, summary.errors.write, summary.errors.timeout))\n"
            '  for _, p in pairs({50, 99, 99.9}) do io.write(string.format("P%g %d\\n", p, '
            "latency:percentile(p))) end\n"
            '  io.write(string.format("REQUESTS %d\\n", summary.requests))\nend\n')
        out = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{max(1, round(seconds))}s",
                              "--timeout", "5s", "-s", str(script), url], capture_output=True, text=True,
                             check=True).stdout
    pct = {m.group(1): int(m.group(2)) / 1000 for m in re.finditer(r"^P([\d.]+) (\d+)$", out, re.M)}
    errs = [int(x) for x in re.search(r"ERRORS (\d+) (\d+) (\d+) (\d+) (\d+)", out).groups()]
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "requests": int(re.search(r"REQUESTS (\d+)", out).group(1)),
            "p50": pct["50"], "p99": pct["99"], "p999": pct["99.9"], "errors": sum(errs)}


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 3:
        return 0.0
    ts = [t / 60 for t, _ in samples]
    ms = [m for _, m in samples]
    tm, mm = statistics.fmean(ts), statistics.fmean(ms)
    den = sum((t - tm) ** 2 for t in ts)
    return sum((t - tm) * (m - mm) for t, m in zip(ts, ms)) / den if den else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--segment", type=float, default=60, help="seconds per reported segment")
    ap.add_argument("--fraction", type=float, default=0.8, help="share of the measured capacity to hold")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--max-slope", type=float, default=1.0, help="MB/min of RSS growth that fails the run")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()

    bodies = [(ROOT / w).read_text() for w in WORKLOADS]
    proc, url, _ = start_server(1, "--jq-result-cache", "false")
    result: dict[str, Any] = {"segments": []}
    try:
        # Capacity with the same client shape as the soak (same connections, no pause).
        cap = wrk(url, bodies, 10, args.connections, 0)
        target = cap["rps"] * args.fraction
        # Each connection cycles through pause + latency: start from the cycle the target needs,
        # then correct the pause by the cycle actually measured (wrk rounds pauses to whole
        # milliseconds and latency falls as load does, so a formula alone overshoots).
        cycle = args.connections * 1000 / target
        delay = max(0.0, cycle - cap["p50"])
        for _ in range(3):
            probe = wrk(url, bodies, 5, args.connections, delay)
            delay = max(0.0, delay + cycle - args.connections * 1000 / probe["rps"])
        result.update(capacity_rps=cap["rps"], capacity_p99_ms=cap["p99"], target_rps=target, delay_ms=delay)
        print(f"capacity {cap['rps']:.0f} req/s (p99 {cap['p99']:.1f} ms); holding {target:.0f} req/s "
              f"({args.fraction:.0%}) with {args.connections} connections, {delay:.2f} ms pause each")

        samples: list[tuple[float, float]] = []
        stop = threading.Event()
        t0 = time.monotonic()

        def sample() -> None:
            while not stop.is_set():
                samples.append((time.monotonic() - t0, tree_rss_mb(proc.pid)))
                stop.wait(2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        n = max(1, round(args.minutes * 60 / args.segment))
        print(f"{'seg':>3} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'p99.9':>7} {'errors':>6} {'RSS MB':>7}")
        for i in range(n):
            seg = wrk(url, bodies, args.segment, args.connections, delay)
            seg["rss_mb"] = samples[-1][1] if samples else tree_rss_mb(proc.pid)
            result["segments"].append(seg)
            print(f"{i + 1:>3} {seg['rps']:>7.0f} {seg['p50']:>7.2f} {seg['p99']:>7.2f} {seg['p999']:>7.2f} "
                  f"{seg['errors']:>6} {seg['rss_mb']:>7.1f}", flush=True)
            if proc.poll() is not None:
                break
        stop.set()
        sampler.join()
        metrics = httpx.get(url + "/metrics", timeout=10).text
    finally:
        alive = proc.poll() is None
        proc.terminate()
        proc.wait(10)

    segs = result["segments"]
    warm = [s for s in samples if s[0] >= min(args.segment, args.minutes * 30)]  # skip the first segment
    restarts = re.search(r"^wlmap_evaluation_worker_restarts_total ([\d.]+)", metrics, re.M)
    p99s = [s["p99"] for s in segs]
    result.update(
        requests=sum(s["requests"] for s in segs), errors=sum(s["errors"] for s in segs), server_alive=alive,
        rss_first_mb=samples[0][1], rss_last_mb=samples[-1][1], rss_max_mb=max(m for _, m in samples),
        rss_slope_mb_per_min=slope_mb_per_min(warm), p99_min_ms=min(p99s), p99_max_ms=max(p99s),
        mean_rps=statistics.fmean(s["rps"] for s in segs),
        worker_restarts=float(restarts.group(1)) if restarts else 0.0)
    print(f"\n{result['requests']} requests in {len(segs)} segments, {result['mean_rps']:.0f} req/s "
          f"({result['mean_rps'] / cap['rps']:.0%} of capacity); errors {result['errors']}; "
          f"worker restarts {result['worker_restarts']:.0f}")
    print(f"p99 per segment {result['p99_min_ms']:.1f}-{result['p99_max_ms']:.1f} ms "
          f"(max/min {result['p99_max_ms'] / max(result['p99_min_ms'], 1e-9):.2f}x)")
    print(f"RSS {result['rss_first_mb']:.1f} -> {result['rss_last_mb']:.1f} MB (max {result['rss_max_mb']:.1f}); "
          f"trend after warm-up {result['rss_slope_mb_per_min']:+.3f} MB/min")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    ok = result["errors"] == 0 and alive and result["rss_slope_mb_per_min"] <= args.max_slope
    print("verdict:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
