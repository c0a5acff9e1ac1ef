"""Memory under abuse: a real `wlmap serve` flooded with what any caller may send, its resident
memory (server + evaluation workers, from /proc/PID/status VmRSS and the server's VmHWM)
recorded after each flood.  Each flood runs against a fresh server:

  junk      N distinct invalid inline Kartas of ~2.9 MiB each (a spec of junk)
  valid     N distinct valid inline Kartas of ~1 MiB each (padded with annotations)
  huge      N distinct JobSets near the body limit (~2.9 MiB of pod template the expressions read)
  distinct  N distinct JobSets of normal size (~16 KB): the jq result cache's everyday load

`--compare PATH` runs the same floods, side by side in one run, against another checkout (e.g.
`git worktree add /tmp/oldmain main`): its code is run with PYTHONPATH=PATH by this venv.

    python benchmarks/abuse_memory.py [--compare /tmp/oldmain] [--floods junk,valid,huge,distinct]
                                      [--n-junk 30] [--n-valid 100] [--n-huge 60] [--n-distinct 4000]

A flood stops early when the process tree passes --max-rss-mb (the machine is shared).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.http_bench import process_tree  # noqa: E402

JOBSET = json.loads((ROOT / "benchmarks" / "data" / "jobset-16k.json").read_text())
KARTA = yaml.safe_load((ROOT / "tests" / "data" / "examples" / "batchtask.karta.yaml").read_text())
TASK = yaml.safe_load((ROOT / "tests" / "data" / "manifests" / "batchtask-running.yaml").read_text())
BODY_LIMIT = 3 * 1024 * 1024
# asyncio's loop: uvloop's add_reader leaves a worker's pipe non-blocking, and a later send of a
# message beyond the pipe's 64 KiB (a 1 MiB definition) then fails with BlockingIOError (a 500,
# the worker replaced): a bug of its own (reported), which would hide the workers' caches here.
LOOP = ("--loop", "asyncio")
MiB = 2**20


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory(root: int) -> dict[str, float]:
    """MB: the server's RSS and peak, and the evaluation workers' RSS (summed)."""
    pids = process_tree(root)
    workers = [p for p in pids if p != root]
    return {"server": _status_kb(root, "VmRSS") / 1024, "server_peak": _status_kb(root, "VmHWM") / 1024,
            "workers": sum(_status_kb(p, "VmRSS") for p in workers) / 1024,
            "workers_peak": sum(_status_kb(p, "VmHWM") for p in workers) / 1024}


def start(repo: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    env["PYTHONPATH"] = str(repo)
    proc = subprocess.Popen([sys.executable, "-c", "from app.cli.main import main; main()", "serve",
                             "--port", str(port), "--log-level", "warning", "--eval-deadline", "10", *LOOP],
                            cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the server of {repo} did not start")


# -- the floods: each yields (path, JSON body) for request i ----------------------------------

def junk(i: int) -> dict[str, Any]:
    items = [{"k": f"{i}-{n}", "v": [n, "x" * 40, {"n": n}]} for n in range((BODY_LIMIT - 300_000) // 90)]
    return {"object": TASK, "definition": {"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
                                           "metadata": {"name": f"junk-{i}"}, "spec": {"junk": items}}}


def valid(i: int) -> dict[str, Any]:
    d = copy.deepcopy(KARTA)
    d["metadata"]["name"] = f"caller-{i}"
    d["metadata"]["annotations"] = {f"pad-{i}-{n}": "y" * 30 for n in range(MiB // 50)}
    return {"object": TASK, "definition": d}


def _jobset(i: int, arg_bytes: int) -> dict[str, Any]:
    obj = copy.deepcopy(JOBSET)
    obj["metadata"]["name"] = f"flood-{i}"
    obj["metadata"]["uid"] = f"uid-{i}"
    for rj in obj["spec"]["replicatedJobs"]:
        c = rj["template"]["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [f"{i}-{n}-" + "z" * 40 for n in range(arg_bytes // 50)] if arg_bytes else [f"run-{i}"]
    return obj


def huge(i: int) -> dict[str, Any]:
    return _jobset(i, (BODY_LIMIT - 300_000) // len(JOBSET["spec"]["replicatedJobs"]))


def distinct(i: int) -> dict[str, Any]:
    return _jobset(i, 0)


FLOODS = {"junk": junk, "valid": valid, "huge": huge, "distinct": distinct}
EXPECTED = {"junk": 422, "valid": 200, "huge": 200, "distinct": 200}


def flood(repo: Path, name: str, n: int, max_rss_mb: float) -> dict[str, Any]:
    proc, url = start(repo)
    try:
        with httpx.Client(base_url=url, timeout=120) as c:
            c.post("/interpret", json={"object": TASK, "definition": KARTA})  # workers up
            base = memory(proc.pid)
            make, want = FLOODS[name], EXPECTED[name]
            sent, wrong, started = 0, 0, time.monotonic()

            def one(i: int) -> int:
                body = json.dumps(make(i)).encode()
                assert len(body) <= BODY_LIMIT, len(body)
                return c.post("/interpret", content=body, headers={"content-type": "application/json"}).status_code

            stopped = ""
            with ThreadPoolExecutor(2) as pool:
                for start_i in range(0, n, 10):
                    for status in pool.map(one, range(start_i, min(n, start_i + 10))):
                        sent += 1
                        wrong += status != want
                    m = memory(proc.pid)
                    if m["server"] + m["workers"] > max_rss_mb:
                        stopped = f"stopped at {sent}: over {max_rss_mb:.0f} MB"
                        break
            after = memory(proc.pid)
            return {"flood": name, "sent": sent, "unexpected_status": wrong, "seconds": time.monotonic() - started,
                    "base": base, "after": after, "stopped": stopped}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def bounds(repo: Path) -> str:
    """The bounds the checkout's caches are configured to (read from its own code)."""
    code = ("import json\n"
            "from app.engine import interpret as i, compiled as c\n"
            "try:\n    from app.engine import worker as w\n"  # where the worker is (app/service before)
            "except ImportError:\n    from app.service import worker as w\n"
            "from app.service import inline as l\n"
            "M = 2**20\n"
            "print(f'inline definitions {l.INLINE_CACHE_BYTES // M} MiB (invalid: findings only), '\n"
            "      f'jq results {i.JQ_RESULT_BYTES // M} MiB, compiled {c.COMPILED_BYTES // M} MiB, '\n"
            "      f'worker definitions {w.DEFINITION_BYTES // M} MiB, pod facts {i._pod_facts.max_bytes // M} MiB')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)),
                       capture_output=True, text=True)
    if r.returncode == 0:
        return r.stdout.strip()
    return ("entries, not bytes: inline definitions 256 (invalid ones with their documents), jq results 2048, "
            "compiled 1024, worker definitions 2048, pod facts 4096")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", type=Path, help="another checkout, flooded the same way (e.g. main)")
    ap.add_argument("--floods", default="junk,valid,huge,distinct")
    ap.add_argument("--n-junk", type=int, default=30)
    ap.add_argument("--n-valid", type=int, default=100)
    ap.add_argument("--n-huge", type=int, default=60)
    ap.add_argument("--n-distinct", type=int, default=4000)
    ap.add_argument("--max-rss-mb", type=float, default=6000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    repos = [("this tree", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    counts = {"junk": args.n_junk, "valid": args.n_valid, "huge": args.n_huge, "distinct": args.n_distinct}
    for label, repo in repos:
        print(f"{label} ({repo}): {bounds(repo)}")
    rows = []
    for name in args.floods.split(","):
        for label, repo in repos:
            r = flood(repo, name, counts[name], args.max_rss_mb)
            r["tree"] = label
            rows.append(r)
            a, b = r["after"], r["base"]
            print(f"{name:9} {label:9} sent {r['sent']:5} ({r['unexpected_status']} unexpected) in {r['seconds']:6.1f} s:"
                  f" server {b['server']:7.0f} -> {a['server']:7.0f} MB (peak {a['server_peak']:7.0f}),"
                  f" workers {b['workers']:6.0f} -> {a['workers']:6.0f} MB (peak {a['workers_peak']:6.0f})"
                  f" {r['stopped']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
