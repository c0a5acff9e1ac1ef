"""HTTP service benchmark, everything measured side by side in one run:

1. startup: `wlmap serve` with the full built-in catalog, process start -> /readyz 200;
2. POST /interpret of a realistic JobSet with a real HTTP load generator (wrk): requests/s and
   latency percentiles (target >= 1,500 req/s, p99 < 20 ms on 2 cores);
3. POST /interpret/batch with 100 workloads per request: workloads/s;
4. engine throughput in-process next to gojq (Debian's gojq, the upstream engine) evaluating
   the same definition's expressions over the same manifests (target >= 1x gojq).

    python benchmarks/http_bench.py [--duration 10] [--connections 32] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.engine.compiled import expression_texts
from app.engine.interpret import interpret
from app.karta.load import load_builtin
from app.karta.registry import Registry

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "data" / "jobset-16k.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workers: int) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    wlmap = Path(sys.executable).parent / "wlmap"
    started = time.perf_counter()
    proc = subprocess.Popen([str(wlmap), "serve", "--port", str(port), "--workers", str(workers),
                             "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=0.5).status_code == 200:
                return proc, url, time.perf_counter() - started
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.perf_counter() - started > 60:
            raise SystemExit("server did not start")
        time.sleep(0.02)


def wrk(url: str, path: str, body: str, duration: int, connections: int, threads: int = 2) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        body_file = Path(d) / "body.json"
        body_file.write_text(body)
        script = Path(d) / "post.lua"
        script.write_text(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f'local f = io.open("{body_file}", "r")\nwrk.body = f:read("*a")\nf:close()\n'
            'done = function(summary, latency, requests)\n'
            '  io.write(string.format("ERRORS %d %d %d\\n", summary.errors.status, summary.errors.connect, '
            'summary.errors.timeout))\n'
            '  for _, p in pairs({50, 90, 99, 99.9}) do io.write(string.format("P%g %d\\n", p, '
            'latency:percentile(p))) end\nend\n')
        out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "-s",
                              str(script), url + path], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    pct = {m.group(1): int(m.group(2)) / 1000 for m in re.finditer(r"^P([\d.]+) (\d+)$", out, re.M)}
    errs = re.search(r"ERRORS (\d+) (\d+) (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": pct["50"], "p90": pct["90"], "p99": pct["99"], "p999": pct["99.9"],
            "errors": int(errs.group(1)) + int(errs.group(2)) + int(errs.group(3)) + (int(non2xx.group(1)) if non2xx else 0)}


def engine_vs_gojq(obj: dict, n: int) -> tuple[float, float]:
    """Workloads per second: our in-process interpret vs gojq evaluating the same expressions
    (one gojq process over a stream of n manifests, so its start-up is amortised)."""
    d = Registry.of(load_builtin()).resolve_object(obj)
    assert d is not None
    interpret(obj, d)
    t = time.perf_counter()
    for _ in range(n):
        interpret(obj, d)
    ours = n / (time.perf_counter() - t)
    gojq = shutil.which("gojq")
    if gojq is None:
        return ours, float("nan")
    texts, _ = expression_texts(d)
    program = ", ".join(f"(try [limit(1000; ({e}\n))] catch {{\"e\": .}})" for e in texts)
    line = json.dumps(obj, separators=(",", ":"))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        for _ in range(n):
            f.write(line + "\n")
        path = f.name
    try:
        t = time.perf_counter()
        subprocess.run([gojq, "-c", program, path], stdout=subprocess.DEVNULL, check=True)
        theirs = n / (time.perf_counter() - t)
    finally:
        os.unlink(path)
    return ours, theirs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine-n", type=int, default=2000)
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install wrk")
    obj = json.loads(MANIFEST.read_text())
    body = json.dumps(obj, separators=(",", ":"))

    print(f"machine: {os.cpu_count()} cores; manifest {MANIFEST.name}: {len(body)} bytes")
    proc, url, startup = start_server(args.workers)
    try:
        r = httpx.post(url + "/interpret", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
        res = r.json()
        print(f"startup with the full built-in catalog ({len(httpx.get(url + '/definitions').json()['items'])} "
              f"definitions, {args.workers} workers): {startup:.2f} s (target < 2 s)")
        print(f"result: {res['definition']['name']}: phase {res['status']['phase']}, {res['totals']['pods']} pods, "
              f"{res['totals']['gpus']} GPUs")
        single = wrk(url, "/interpret", body, args.duration, args.connections)
        print(f"POST /interpret, {args.connections} connections, {args.duration} s: {single['rps']:.0f} req/s, "
              f"p50 {single['p50']:.2f} ms, p90 {single['p90']:.2f} ms, p99 {single['p99']:.2f} ms, "
              f"p99.9 {single['p999']:.2f} ms, errors {single['errors']} "
              f"(target >= 1500 req/s, p99 < 20 ms)")
        batch_body = json.dumps({"items": [{"object": obj}] * 100}, separators=(",", ":"))
        batch = wrk(url, "/interpret/batch", batch_body, args.duration, max(2, args.workers * 2))
        print(f"POST /interpret/batch x100: {batch['rps']:.1f} req/s = {batch['rps'] * 100:.0f} workloads/s, "
              f"p50 {batch['p50']:.1f} ms, p99 {batch['p99']:.1f} ms, errors {batch['errors']}")
    finally:
        proc.terminate()
        proc.wait(10)
    ours, theirs = engine_vs_gojq(obj, args.engine_n)
    print(f"engine, in-process: {ours:.0f} workloads/s; gojq 0.12.11 same expressions, same manifests: "
          f"{theirs:.0f} workloads/s; ratio {ours / theirs:.2f}x (target >= 1x)")


if __name__ == "__main__":
    main()
