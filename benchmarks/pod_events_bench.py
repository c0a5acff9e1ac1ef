"""CPU per pod event in the live model, in process (issue 33, item 1), side by side with another
checkout (`--compare`).

The fill's objects (benchmarks/cluster_fill.py's JobSets, Jobs and kubelet-written pods) go
through the model's own code as an informer hands them over (`LiveModel._keeper`, `_handler`,
as benchmarks/model_memory.py plays them), then the model interprets every workload (its first
sync).  Then per event: one pod's Ready condition flips, its watch event line (JSON, with a new
resourceVersion) is decoded, kept and handled, and the model applies the change (`_process`: the
row with its ready count, its reason, the stream event).  Measured, in CPU time (the process's,
`time.process_time`):

* **event**: that path alone, per event;
* **read after a change**: GET one's answer with pods (`describe`: the answer + the diagnosis)
  of the workload an event changed, read once per event: what a poller (or the model's own
  warm-ahead before issue 33) pays per change;
* **export after a change**: what a shard computes for the store per changed workload
  (`LiveModel.export`: row, answer, diagnosis with and without Events; then the digest and the
  deflated answer it writes, as app/store/shard.py `_export`), Redis aside.

No API server and no HTTP: what the model itself costs per event.  `benchmarks/replay_bench.py`
measures the whole service on a watch replay server.

    python benchmarks/pod_events_bench.py [--workloads 300] [--events 3000] [--compare /work/base]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: --compare's code is the one imported


def _engine(reg: Any) -> Any:
    """The in-process evaluation a service gives its models (the parts engine when this tree has one)."""
    from app.engine.interpret import interpret

    async def evaluate(d: Any, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        return interpret(obj, d, pods)

    try:
        from app.engine.interpret import live_base_and_result, pod_parts
    except ImportError:
        return evaluate

    class Parts:
        async def __call__(self, d: Any, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
            return interpret(obj, d, pods)

        def live_base(self, d: Any, obj: dict[str, Any]) -> Any:
            return live_base_and_result(obj, d)

        def pod_parts(self, base: Any, pods: list[dict[str, Any]]) -> Any:
            return pod_parts(base, pods)

    return Parts()


class Fed:
    """A LiveModel fed by hand, as its informers would (no API server): `apply` one watch event line."""

    def __init__(self, workloads: int, interpret: Any = None):
        import orjson

        from app.cluster.informer import Informer, key_of
        from app.cluster.kube import PODS, Resource
        from app.jqlang.paths import merge
        from app.karta.load import load_builtin
        from app.karta.registry import Registry
        from app.model.live import KindWatch, LiveModel
        from app.model.records import POD_BASE, pod_expression_projection, workload_projection
        from benchmarks.model_memory import fill_objects

        reg = Registry.of(load_builtin())
        self.model = model = LiveModel(None, lambda: reg, interpret or _engine(reg))  # type: ignore[arg-type]
        self.jobsets = Resource("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True)
        job_res = Resource("batch", "v1", "Job", "jobs", True)
        watches = {}
        for res in (self.jobsets, job_res):
            d = reg.resolve(res.gvk)
            watches[res.kind] = KindWatch(res, d, workload_projection([d]))
        watches["Pod"] = KindWatch(PODS, None, merge(POD_BASE, pod_expression_projection(reg.active())), is_pod=True)
        model._covered_gk = {(d.gvk[0], d.gvk[2]) for d in reg.all() if d.valid and d.gvk}
        model._planning = False
        self.informers = {}
        for kind, kw in watches.items():
            inf = Informer(None, kw.resource, model._keeper(kw), model._handler(kw))  # type: ignore[arg-type]
            kw.informers.append(inf)
            model.kinds[kw.gk] = kw
            self.informers[kind] = inf
        self.key_of, self.loads = key_of, orjson.loads
        self.fill = fill_objects(workloads)
        for kind, objs in zip(("JobSet", "Job", "Pod"), self.fill, strict=True):
            for o in objs:
                self.apply(kind, orjson.dumps({"type": "ADDED", "object": o}))
        self.loop = asyncio.new_event_loop()

    def apply(self, kind: str, text: bytes) -> None:
        ev = self.loads(text)  # a watch event line, as the informer decodes it
        obj = ev["object"]
        inf = self.informers[kind]
        k = self.key_of(obj)
        prev = inf.objects.get(k)
        if ev["type"] == "DELETED":
            inf.objects.pop(k, None)
            inf.on_event("DELETED", k, prev, None)
            return
        rec = inf.keep(obj)
        inf.objects[k] = rec
        inf.on_event(ev["type"], k, prev, rec)

    def settle(self) -> None:
        self.loop.run_until_complete(self.model._process())


def _store_writes(got: Any, uid: str, written: dict[str, Any]) -> int:
    """What a shard serializes for the store after `export` (app/store/shard.py `_export`), Redis
    aside: the parts that changed (this tree), or the whole answer's digest and deflated text."""
    if isinstance(got, tuple):  # a tree that stores answers whole
        from app.model.packing import deflate
        from app.store.shard import _sig  # type: ignore[attr-defined]

        _sig(got[1], got[3], got[4])
        return len(deflate(got[3])) + len(got[4])
    from app.store.answers import plan

    was = written.get(uid)
    now, sig, sets, _ = plan(got, "f", was, None, set(was.pods) if was else set())
    written[uid] = now
    return sum(len(v) for _, _, v in sets)


def run(workloads: int, events: int) -> dict[str, Any]:
    import orjson

    from app.cluster.reader import allow_all

    fed = Fed(workloads)
    model, loop, apply = fed.model, fed.loop, fed.apply
    jobsets, jobs, pods = fed.fill
    t0 = time.process_time()
    fed.settle()
    sync_cpu = time.process_time() - t0
    assert sum(1 for s in model.states.values() if s.row is not None) == workloads
    by_ns = {(js["metadata"]["namespace"], js["metadata"]["name"]): js for js in jobsets}
    ready = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])]
    stride = max(1, len(ready) // events) if len(ready) >= events else 1
    order = [ready[(i * stride) % len(ready)] for i in range(events)]
    rv = 10_000_000
    lines = []
    for p in order:  # flip its Ready back and forth: every event changes its workload's ready count
        for c in p["status"]["conditions"]:
            if c["type"] in ("Ready", "ContainersReady"):
                c["status"] = "False" if c["status"] == "True" else "True"
        rv += 1
        p["metadata"]["resourceVersion"] = str(rv)
        lines.append(orjson.dumps({"type": "MODIFIED", "object": p}))
    owners = [(p["metadata"]["namespace"], p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]) for p in order]
    del pods, jobs
    gc.collect()

    written: dict[str, Any] = {}
    for uid, st in list(model.states.items()):  # the store in step with the model, as after a resync
        if st.row is not None:
            obj = model.graph.by_uid[uid]
            _store_writes(loop.run_until_complete(model.export(uid, obj.rv)), uid, written)
    ev_cpu = rd_cpu = ex_cpu = 0.0
    ex_bytes = 0
    seen = 0
    for i, (line, (ns, name)) in enumerate(zip(lines, owners, strict=True)):
        t = time.process_time()
        apply("Pod", line)
        loop.run_until_complete(model._process())
        t2 = time.process_time()
        ev_cpu += t2 - t
        if i % 2 == 0:  # half the changes are read, the other half exported: neither finds the other's answer
            body = loop.run_until_complete(model.describe(ns, name, allow=allow_all, freshness=False))
            rd_cpu += time.process_time() - t2
            seen += orjson.loads(body)["live"]["ready"] >= 0
            continue
        obj = model._lookup(model.kinds[("jobset.x-k8s.io", "JobSet")], ns, name)
        got = loop.run_until_complete(model.export(obj.uid, obj.rv))  # the store holds the object already
        assert got is not None
        ex_bytes += _store_writes(got, obj.uid, written)
        ex_cpu += time.process_time() - t2
        seen += 1
    assert by_ns and seen == len(lines)
    return {"pods": sum(1 for _ in model.graph.pods), "workloads": workloads, "events": len(lines),
            "sync_cpu_s": sync_cpu, "event_us": ev_cpu / len(lines) * 1e6, "read_us": rd_cpu / ((len(lines) + 1) // 2) * 1e6,
            "export_us": ex_cpu / (len(lines) // 2) * 1e6, "export_bytes": ex_bytes / (len(lines) // 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=300, help="JobSets (2 Jobs of 4 pods each)")
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per tree, interleaved")
    ap.add_argument("--compare", type=Path, help="another checkout, measured the same way (e.g. main)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(run(args.workloads, args.events)))
        return
    repos = [("this tree", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    got: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in repos}
    for _ in range(args.rounds):
        for label, repo in repos:
            r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner", "--workloads",
                                str(args.workloads), "--events", str(args.events)],
                               cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)), capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"{label}: {r.stderr[-3000:]}")
            got[label].append(json.loads(r.stdout))
    first = got[repos[0][0]][0]
    print(f"{first['pods']} pods of {args.workloads} JobSets, {first['events']} pod events (Ready flipped; every other one read, the "
          f"rest exported), {args.rounds} rounds; medians, CPU time")
    keys = ("event_us", "read_us", "export_us", "export_bytes", "sync_cpu_s")
    med = {label: {k: sorted(r[k] for r in rs)[len(rs) // 2] for k in keys} for label, rs in got.items()}
    print(f"{'':12s}{'event path µs':>16s}{'read after it µs':>18s}{'export after it µs':>20s}"
          f"{'bytes to write':>16s}{'first sync s':>14s}")
    for label, m in med.items():
        print(f"{label:12s}{m['event_us']:16.1f}{m['read_us']:18.1f}{m['export_us']:20.1f}{m['export_bytes']:16.0f}"
              f"{m['sync_cpu_s']:14.2f}")
    if args.compare:
        a, b = med["this tree"], med["compare"]
        print("ratio this/compare: " + ", ".join(f"{k} {a[k] / b[k]:.2f}x" for k in keys[:4]))
    if args.json:
        args.json.write_text(json.dumps({"rounds": got, "medians": med}, indent=1))


if __name__ == "__main__":
    main()
