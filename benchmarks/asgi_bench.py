"""The service's own cost per request, without a network or a load generator: the app is called as
an ASGI application in-process, one request at a time, so wrk's and the kernel's share of a 2-core
machine does not blur a difference of a few microseconds (http_bench.py's req/s varies by up to
0.2x between runs of the same code).

Each case is `POST /interpret` of the 16 KB JobSet (jq results reused, the hot path of a
scheduler's placement rounds, and cold), or a batch of 100; `--compare PATH` runs another checkout
too (its code imported with PYTHONPATH=PATH), the two alternating in fresh processes, and prints
the ratio this/other of the medians.

    python benchmarks/asgi_bench.py [--rounds 5] [--n 2000] [--compare /work/before]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "benchmarks" / "data" / "jobset-16k.json"
CASES = ("interpret, jq results reused", "interpret, cold", "batch of 100, jq results reused")


async def post(app: Any, path: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    """One POST through the ASGI app in-process: the messages it sent."""
    sent: list[dict[str, Any]] = []
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {}}
    await app(scope, receive, send)
    return sent


def measure(case: str, n: int) -> float:
    """µs per request of `case` in this process (the app of whatever `app` imports)."""
    from app.service.app import create_app
    from app.service.settings import Settings

    one = MANIFEST.read_bytes()
    body, path = one, "/interpret"
    if case.startswith("batch"):
        body, path = json.dumps({"items": [{"object": json.loads(one)}] * 100}).encode(), "/interpret/batch"
        n = max(1, n // 100)
    app = create_app(Settings(jq_result_cache="cold" not in case, isolation="none"))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"host", b"x")]

    async def call() -> None:
        sent = await post(app, path, body, headers)
        if sent[0]["status"] != 200:
            raise SystemExit(f"{case}: {sent[0]['status']} {sent[-1].get('body', b'')[:300]!r}")

    async def run() -> float:
        async with app.router.lifespan_context(app):
            for _ in range(max(10, n // 10)):
                await call()
            start = time.perf_counter()
            for _ in range(n):
                await call()
            return (time.perf_counter() - start) / n * 1e6

    return asyncio.run(run())


def in_process(checkout: Path, case: str, n: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    env["PYTHONPATH"] = str(checkout)
    out = subprocess.run([sys.executable, __file__, "--one", case, "--n", str(n)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=2000, help="requests per round (a batch counts as 100)")
    ap.add_argument("--compare", type=Path, help="another checkout, measured alternately")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(f"{measure(args.one, args.n):.2f}")
        return
    trees = [("this", ROOT)] + ([("other", args.compare.resolve())] if args.compare else [])
    print(f"machine: {os.cpu_count()} cores; {args.rounds} rounds of {args.n} requests, a fresh process each")
    for case in CASES:
        got: dict[str, list[float]] = {name: [] for name, _ in trees}
        for r in range(args.rounds):
            for name, tree in trees if r % 2 == 0 else trees[::-1]:
                got[name].append(in_process(tree, case, args.n))
        line = "  ".join(f"{name} median {statistics.median(v):8.1f} µs (min {min(v):.1f}, max {max(v):.1f})"
                         for name, v in got.items())
        ratio = f"  ratio this/other {statistics.median(got['this']) / statistics.median(got['other']):.3f}x" \
            if args.compare else ""
        print(f"{case:32s} {line}{ratio}", flush=True)


if __name__ == "__main__":
    main()
