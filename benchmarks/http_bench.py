"""HTTP service benchmark, everything measured side by side in one run:

1. startup: `wlmap serve` with the full built-in catalog, process start -> /readyz 200;
2. POST /interpret of a realistic JobSet with a real HTTP load generator (wrk): requests/s and
   latency percentiles (target >= 1,500 req/s, p99 < 20 ms on 2 cores);
3. POST /interpret/batch with 100 workloads per request: workloads/s;
4. engine throughput in-process next to gojq (Debian's gojq, the upstream engine) evaluating
   the same definition's expressions over the same manifests (target >= 1x gojq).

    python benchmarks/http_bench.py [--duration 10] [--connections 4 16 64] [--workers 2]
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


def start_server(workers: int, *extra: str) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    wlmap = Path(sys.executable).parent / "wlmap"
    started = time.perf_counter()
    proc = subprocess.Popen([str(wlmap), "serve", "--port", str(port), "--workers", str(workers),
                             "--log-level", "warning", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=0.5).status_code == 200:
                ready = time.perf_counter() - started
                # the first worker answers /readyz before the others have started: measuring then
                # leaves wrk's keep-alive connections all on that one
                while workers_listening(proc.pid, port) < workers and time.perf_counter() - started < 60:
                    time.sleep(0.02)
                return proc, url, ready
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.perf_counter() - started > 60:
            raise SystemExit("server did not start")
        time.sleep(0.02)


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat fields after the command name (field 4, ppid, is index 1)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def workers_listening(root: int, port: int) -> int:
    """How many processes under `root` poll a listening socket of `port` (its descriptor is in
    one of their epoll sets): a worker counts once its server has started, not merely spawned."""
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == port and f[3] == "0A":
            listening.add(f"socket:[{f[9]}]")
    count = 0
    for pid in process_tree(root):
        try:
            links = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            polled = "".join(Path(f"/proc/{pid}/fdinfo/{fd}").read_text() for fd, link in links.items()
                             if link == "anon_inode:[eventpoll]")
        except OSError:
            continue
        count += any(re.search(rf"^tfd:\s+{fd}\s", polled, re.MULTILINE)
                     for fd, link in links.items() if link in listening)
    return count


def process_tree(root: int) -> list[int]:
    """A process and all its descendants (uvicorn and evaluation workers)."""
    ppid: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid[int(d)] = int(_stat(int(d))[1])
            except OSError:
                continue
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += [c for c, p in ppid.items() if p == pid]
    return tree


def cpu_ticks(pid: int) -> int:
    """utime + stime of one process, in clock ticks (0 once it is gone)."""
    try:
        fields = _stat(pid)
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def _tree_cpu_seconds(root: int) -> float:
    """utime+stime of a process and all its descendants."""
    return sum(cpu_ticks(pid) for pid in process_tree(root)) / os.sysconf("SC_CLK_TCK")


def _worker_cpu_seconds(root: int) -> list[float]:
    """CPU of each process directly under the server, with its own children: the uvicorn workers
    (and multiprocessing's resource tracker, which stays at 0 and is left out by the caller)."""
    tick = os.sysconf("SC_CLK_TCK")
    workers = [pid for pid in process_tree(root) if pid != root and _stat(pid)[1] == str(root)]
    return [sum(cpu_ticks(p) for p in process_tree(w)) / tick for w in sorted(workers)]


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


def engine_vs_gojq(obj: dict, n: int) -> tuple[float, float, float]:
    """Workloads per second: our in-process interpret (cold, and with jq results reused for an
    unchanged object) vs gojq evaluating the same expressions (one gojq process over a stream of
    n manifests, so its start-up is amortised)."""
    from app.engine.options import EngineOptions

    d = Registry.of(load_builtin()).resolve_object(obj)
    assert d is not None
    rates = []
    for cache in (False, True):
        options = EngineOptions() if cache else EngineOptions(jq_results=None)
        interpret(obj, d, options=options)
        t = time.perf_counter()
        for _ in range(n):
            interpret(obj, d, options=options)
        rates.append(n / (time.perf_counter() - t))
    ours, warm = rates
    gojq = shutil.which("gojq")
    if gojq is None:
        return ours, warm, float("nan")
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
    return ours, warm, theirs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine-n", type=int, default=2000)
    ap.add_argument("--loops", nargs="+", default=["uvloop", "asyncio"], choices=["uvloop", "asyncio"],
                    help="event loops of the cold runs, side by side (the service picks asyncio's whenever it "
                         "talks to an API server)")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install wrk")
    obj = json.loads(MANIFEST.read_text())
    body = json.dumps(obj, separators=(",", ":"))

    print(f"machine: {os.cpu_count()} cores; manifest {MANIFEST.name}: {len(body)} bytes")
    for workers in (1, 2):
        proc, url, startup = start_server(workers)
        proc.terminate()
        proc.wait(10)
        print(f"startup with the full built-in catalog, {workers} worker(s): process start -> /readyz 200 in "
              f"{startup:.2f} s (target < 2 s)")
    for loop in args.loops:
        print(f"-- server with --jq-result-cache false --loop {loop}: every request evaluates jq (cold)")
        run_server(args, obj, body, "--jq-result-cache", "false", "--loop", loop)
    print("-- server with --jq-result-cache true: the unchanged manifest reuses jq results (a scheduler's "
          "repeated placement rounds)")
    run_server(args, obj, body, "--jq-result-cache", "true")
    ours, warm, theirs = engine_vs_gojq(obj, args.engine_n)
    print(f"engine, in-process: {ours:.0f} workloads/s cold, {warm:.0f} workloads/s for an unchanged object "
          f"(jq results reused); gojq 0.12.11, same expressions, same manifests: {theirs:.0f} workloads/s; "
          f"ratio cold {ours / theirs:.2f}x, unchanged {warm / theirs:.2f}x (target >= 1x)")


def run_server(args: argparse.Namespace, obj: dict, body: str, *extra: str) -> None:
    proc, url, startup = start_server(args.workers, *extra)
    try:
        r = httpx.post(url + "/interpret", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
        res = r.json()
        print(f"result: {res['definition']['name']}: phase {res['status']['phase']}, {res['totals']['pods']} pods, "
              f"{res['totals']['gpus']} GPUs")
        for conns in args.connections:
            cpu0, split0 = _tree_cpu_seconds(proc.pid), _worker_cpu_seconds(proc.pid)
            single = wrk(url, "/interpret", body, args.duration, conns)
            cpu = _tree_cpu_seconds(proc.pid) - cpu0
            split = [b - a for a, b in zip(split0, _worker_cpu_seconds(proc.pid))]
            per_req = cpu / (single["rps"] * args.duration) * 1e6
            # keep-alive connections stay with the worker that accepted them: an uneven split caps
            # the run near one core (it was the norm before start_server waited for every worker)
            shares = "/".join(f"{100 * c / max(sum(split), 1e-9):.0f}" for c in split if c > 0.05)
            print(f"POST /interpret, {conns:3d} connections, {args.duration} s: {single['rps']:6.0f} req/s, "
                  f"p50 {single['p50']:6.2f} ms, p90 {single['p90']:6.2f} ms, p99 {single['p99']:6.2f} ms, "
                  f"p99.9 {single['p999']:6.2f} ms, errors {single['errors']}, "
                  f"server CPU {per_req:.0f} µs/request, worker CPU split {shares} % "
                  f"(target >= 1500 req/s, p99 < 20 ms)")
        batch_body = json.dumps({"items": [{"object": obj}] * 100}, separators=(",", ":"))
        batch = wrk(url, "/interpret/batch", batch_body, args.duration, args.workers * 2)
        print(f"POST /interpret/batch x100: {batch['rps']:.1f} req/s = {batch['rps'] * 100:.0f} workloads/s, "
              f"p50 {batch['p50']:.1f} ms, p99 {batch['p99']:.1f} ms, errors {batch['errors']}")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
