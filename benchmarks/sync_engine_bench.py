"""The engine's share of a cluster sync: every workload of the cluster_bench fill (1,000 JobSets,
8,000 pods, built by benchmarks/cluster_fill.py as the controllers and kubelets leave them)
interpreted once, as the live model does when it syncs: each workload alone (its row), and each
with its pods (its live answer, computed ahead).  Native evaluation and the libjq path side by
side, rounds interleaved.  Target: the engine's share of the sync <= 1 s.

    python benchmarks/sync_engine_bench.py [--workloads 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cluster_fill as cf  # noqa: E402

from app.engine.options import EngineOptions  # noqa: E402
from app.jqlang import jqbatch  # noqa: E402
from app.engine.interpret import interpret  # noqa: E402
from app.karta.load import load_builtin  # noqa: E402
from app.karta.registry import Registry  # noqa: E402


def cluster(spec: cf.FillSpec) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each JobSet with its pods, as plain JSON (what the API server's watch delivers)."""
    now = datetime.now(UTC)
    out = []
    for ns, name in spec.workload_refs():
        js = cf.jobset(ns, name, spec)
        js["metadata"]["uid"] = str(uuid.uuid4())
        pods = []
        for j in range(spec.jobs_per_jobset):
            jb = cf.job(js, j, spec)
            jb["metadata"]["uid"] = str(uuid.uuid4())
            for p in range(spec.pods_per_job):
                pod = cf.pod(jb, js, j, p)
                pod["status"] = cf.pod_status(pod, cf.pod_kind(ns, name, j, p), now)
                pods.append(pod)
        js["status"] = cf.jobset_status(spec.jobs_per_jobset, spec.jobs_per_jobset, now)
        out.append((orjson.loads(orjson.dumps(js)), [orjson.loads(orjson.dumps(p)) for p in pods]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    spec = cf.FillSpec(workloads=args.workloads)
    items = cluster(spec)
    registry = Registry.of(load_builtin())
    d = registry.resolve_object(items[0][0])
    assert d is not None
    cold = EngineOptions(jq_results=None)  # a sync sees every workload for the first time
    n_pods = sum(len(p) for _, p in items)

    def rows() -> None:
        for obj, _ in items:
            interpret(obj, d, options=cold)

    def answers() -> None:
        for obj, pods in items:
            interpret(obj, d, pods, options=cold)

    cases = {"rows (each workload alone)": rows, "live answers (each with its pods)": answers}
    samples: dict[tuple[str, bool], list[float]] = {}
    for _ in range(args.rounds):
        for native in (True, False):
            jqbatch.NATIVE = native
            for name, fn in cases.items():
                t = time.perf_counter()
                fn()
                samples.setdefault((name, native), []).append(time.perf_counter() - t)
    jqbatch.NATIVE = True
    print(f"{len(items)} JobSets, {n_pods} pods; {args.rounds} rounds, median seconds per sync")
    print(f"{'stage':36} {'native':>9} {'libjq':>9} {'ratio':>7}")
    total = {True: 0.0, False: 0.0}
    for name in cases:
        nat, lib = (statistics.median(samples[(name, m)]) for m in (True, False))
        total[True] += nat
        total[False] += lib
        print(f"{name:36} {nat:9.3f} {lib:9.3f} {lib / nat:6.2f}x")
    print(f"{'engine share of a sync (both)':36} {total[True]:9.3f} {total[False]:9.3f} "
          f"{total[False] / total[True]:6.2f}x   target <= 1 s: {'MET' if total[True] <= 1 else 'NOT MET'}")


if __name__ == "__main__":
    main()
