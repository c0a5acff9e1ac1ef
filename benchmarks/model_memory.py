"""What the live model keeps per pod, and why (issue 24: kept memory per pod).

Two measures:

1. **in process** (default): the fill's objects (benchmarks/cluster_fill.py: JobSets, their Jobs,
   their pods with kubelet-written status) go through the model's own code paths, as an
   informer's list hands them over: `LiveModel._keeper` (record(): projection, symptoms) into
   an `Informer`'s `objects`, `LiveModel._handler` into the owner graph.  Reported: bytes per pod
   by tracemalloc (what the pods added), and a breakdown by a sizeof walk in which an object
   shared by several places is counted once, at the first place listed.
2. **whole process** (`--serve`): `wlmap serve` on a filled API server (`--fill DIR`, an etcd data
   directory made by cluster_bench.py / cluster_fill.py; copied first, so the original stays as
   it is), RSS once synced and its answers warmed, minus the RSS of the same service watching an
   empty namespace only, divided by the pods.

`--compare PATH` runs the same measures, side by side in one run, on another checkout (e.g.
`git worktree add /tmp/podmem-base main`): its code runs with PYTHONPATH=PATH in this venv.

    python benchmarks/model_memory.py [--workloads 1000] [--compare /tmp/podmem-base]
                                      [--serve --fill /tmp/diagfill]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from collections.abc import Callable
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: --compare's code is the one imported


def fill_objects(workloads: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """JobSets, Jobs and pods as the API server holds them after cluster_fill's run."""
    from benchmarks.cluster_fill import FillSpec, _uuidish, job, jobset, pod, pod_kind, pod_status

    spec = FillSpec(workloads=workloads)
    now = datetime.now(UTC)
    rv = 1000
    jobsets, jobs, pods = [], [], []

    def stamp(obj: dict[str, Any], *parts: object) -> dict[str, Any]:
        nonlocal rv
        rv += 1
        obj["metadata"].update(uid=_uuidish(*parts), resourceVersion=str(rv), creationTimestamp="2026-01-01T00:00:00Z")
        return obj

    for i in range(workloads):
        ns, name = spec.namespace(i), spec.name(i)
        js = stamp(jobset(ns, name, spec), "js", ns, name)
        jobsets.append(js)
        for j in range(spec.jobs_per_jobset):
            jb = stamp(job(js, j, spec), "job", ns, name, j)
            jobs.append(jb)
            for k in range(spec.pods_per_job):
                p = stamp(pod(jb, js, j, k), "pod", ns, name, j, k)
                p["status"] = pod_status(p, pod_kind(ns, name, j, k), now)
                pods.append(p)
    return jobsets, jobs, pods


def filled_model(workloads: int) -> tuple[Any, dict[str, Any], Callable[[str, list[bytes]], None]]:
    """A LiveModel with a JobSet, a Job and a Pod informer (no API server: their lists are
    played by hand, as Informer._list does): the model, its informers by kind, and `play`."""
    import orjson

    from app.cluster.informer import Informer, key_of
    from app.cluster.kube import PODS, Resource
    from app.jqlang.paths import merge
    from app.karta.load import load_builtin
    from app.karta.registry import Registry
    from app.model.live import KindWatch, LiveModel
    from app.model.records import POD_BASE, pod_expression_projection, workload_projection

    reg = Registry.of(load_builtin())

    async def no_interpret(*_: Any) -> dict[str, Any]:
        raise AssertionError("not interpreted here")

    model = LiveModel(None, lambda: reg, no_interpret)  # type: ignore[arg-type]
    js_res = Resource("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", True)
    job_res = Resource("batch", "v1", "Job", "jobs", True)
    watches = {}
    for res in (js_res, job_res):
        d = reg.resolve(res.gvk)
        assert d is not None, res
        watches[res.kind] = KindWatch(res, d, workload_projection([d]))
    watches["Pod"] = KindWatch(PODS, None, merge(POD_BASE, pod_expression_projection(reg.active())), is_pod=True)
    model._covered_gk = {(d.gvk[0], d.gvk[2]) for d in reg.all() if d.valid and d.gvk}
    informers = {}
    for kind, kw in watches.items():
        inf = Informer(None, kw.resource, model._keeper(kw), model._handler(kw))  # type: ignore[arg-type]
        kw.informers.append(inf)
        model.kinds[kw.gk] = kw
        informers[kind] = inf

    def play(kind: str, texts: list[bytes]) -> None:
        inf = informers[kind]
        for text in texts:
            obj = orjson.loads(text)  # as a list page arrives: every string its own object
            rec = inf.keep(obj)
            if rec is not None:
                k = key_of(obj)
                inf.objects[k] = rec
                inf.on_event("ADDED", k, None, rec)

    return model, informers, play


def build_model(workloads: int) -> dict[str, Any]:
    """Feed the fill to a LiveModel's keepers and handlers; report what the pods cost."""
    import orjson

    model, informers, play = filled_model(workloads)
    jobsets, jobs, pods = (list(map(orjson.dumps, objs)) for objs in fill_objects(workloads))
    wire = sum(map(len, pods)) / len(pods)
    play("JobSet", jobsets)
    play("Job", jobs)
    n = len(pods)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    play("Pod", pods)
    texts = pods
    del pods
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    added = sum(s.size_diff for s in after.compare_to(before, "filename"))
    top = [(str(s.traceback[0]).replace(str(ROOT) + "/", ""), s.size_diff / n)
           for s in after.compare_to(before, "lineno")[:8]]
    # CPU per pod event, untraced: keeping it (projection, symptoms, packing) and reading it back
    objs = [orjson.loads(t) for t in texts[:2000]]
    keep = informers["Pod"].keep
    t0 = time.process_time()
    recs = [keep(o) for o in objs]
    t1 = time.process_time()
    for r in recs:
        r.object()
    t2 = time.process_time()
    return {"pods": n, "wire_bytes": wire, "tracemalloc_per_pod": added / n, "top_lines": top,
            "keep_us": (t1 - t0) / len(objs) * 1e6, "read_us": (t2 - t1) / len(objs) * 1e6,
            "breakdown": breakdown(model, informers["Pod"], n)}


def relists(workloads: int, rounds: int, policy: str) -> dict[str, Any]:
    """The model filled, then `rounds` relists of every kind (each object kept afresh from its
    text and handed over as MODIFIED, the old records dropped, as Informer._list does), under
    Python's collector ("python": as main's service, frozen at its start only) or the service's
    policy ("service": app/service/gc_policy.py's defaults, a settle after the sync and after each
    relist).  Per relist: its CPU seconds, RSS, the collector's seconds during it, the settle's seconds, frozen
    objects."""
    import orjson

    from app.cluster.informer import key_of

    from app.service.settings import Settings
    from app.service.wiring import collector as collector_of  # imported either way: the same modules loaded

    collector = None
    if policy == "service":
        collector = collector_of(Settings())
        collector.apply()
    gc.collect()
    gc.freeze()  # the service's start
    from benchmarks.engine_bench import collector_clock

    spent = collector_clock()
    model, informers, play = filled_model(workloads)
    texts = dict(zip(("JobSet", "Job", "Pod"), (list(map(orjson.dumps, objs)) for objs in fill_objects(workloads))))
    out: list[dict[str, float]] = []
    for r in range(rounds + 1):
        spent[0] = 0.0
        t0 = time.process_time()
        for kind, batch in texts.items():
            if r == 0:
                play(kind, batch)  # the first list
                continue
            inf = informers[kind]
            old, inf.objects = inf.objects, {}
            for text in batch:
                obj = orjson.loads(text)
                rec = inf.keep(obj)
                if rec is not None:
                    k = key_of(obj)
                    inf.objects[k] = rec
                    inf.on_event("MODIFIED", k, old.get(k), rec)
            del old
        took, in_gc = time.process_time() - t0, spent[0]
        settle = collector.settle() if collector is not None else 0.0
        out.append({"list_s": took, "gc_s": in_gc, "settle_s": settle, "rss_mb": _rss_mb(),
                    "frozen": gc.get_freeze_count()})
    assert model.kinds
    return {"rounds": out}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def breakdown(model: Any, inf: Any, n: int) -> dict[str, float]:
    """Bytes per pod by where they are kept; each object counted once, where first met."""
    seen: set[int] = set()
    g = model.graph
    pod_uids = set(g.pods)
    recs = [g.by_uid[u] for u in pod_uids]
    # whatever every pod shares (interned kinds, the empty-symptoms tuple) is not a pod's cost
    for v in (None, True, False, "", (), frozenset()):
        seen.add(id(v))

    def size(o: Any) -> int:
        if id(o) in seen:
            return 0
        seen.add(id(o))
        total = sys.getsizeof(o)
        if isinstance(o, dict):
            total += sum(size(k) + size(v) for k, v in o.items())
        elif isinstance(o, (list, tuple, set, frozenset)):
            total += sum(size(x) for x in o)
        elif hasattr(type(o), "__slots__") and not isinstance(o, (str, bytes, int, float)):
            total += sum(size(getattr(o, s, None)) for s in type(o).__slots__ if not s.startswith("__"))
        elif hasattr(o, "__dict__") and not isinstance(o, type):
            total += size(vars(o))
        return total

    def part(objs: Any) -> float:
        return sum(size(o) for o in objs) / n

    out: dict[str, float] = {}
    # the record's own fields, body first (what the projection keeps), then the rest
    out["body (projected JSON)"] = part(getattr(r, "body", None) for r in recs)
    out["owners"] = part(r.owners for r in recs)
    out["symptoms"] = part(r.symptoms for r in recs)
    out["record (Obj, its strings)"] = part(recs)
    # the informer's copy: its dict's slots and keys (the records are counted above)
    out["informer dict + keys"] = (sys.getsizeof(inf.objects) + sum(size(k) for k in inf.objects)) / n
    seen.add(id(inf.objects))
    for name in ("by_uid", "chains", "members", "_touched", "_walked", "children", "pods"):
        d = getattr(g, name, None)
        if d is None:
            continue
        if isinstance(d, dict):  # a pod's share of the container: its entries and what they hold
            keys = [k for k in d if k in pod_uids] if name != "members" else list(d)
            share = sys.getsizeof(d) * len(keys) / max(1, len(d))
            out[f"graph.{name}"] = (share + sum(size(k) + size(d[k]) for k in keys)) / n
        else:
            out[f"graph.{name}"] = (sys.getsizeof(d) + sum(size(x) for x in d)) / n
        seen.add(id(d))
    out["total (walk)"] = sum(out.values())
    return out


# -- whole process ----------------------------------------------------------------------------

def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# `wlmap serve`, answering SIGUSR1 with what its memory holds: Python objects by type (the
# model's records, the caches' bytes), and RSS before and after giving freed memory back to the
# system (malloc_trim): the difference is the allocator's, not the model's
_WHY = """
import ctypes, gc, json, signal, sys
from collections import Counter
def why(*_):
    gc.collect()
    def rss():
        return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
    before = rss()
    objs = gc.get_objects()
    kept = Counter()
    for o in objs:
        kept[type(o).__name__] += sys.getsizeof(o)
    by_type = dict(kept.most_common(12))
    blobs = Counter()
    for o in objs:
        for x in (o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()):
            if type(x) is bytes and len(x) > 256:
                blobs[id(x)] = sys.getsizeof(x)
    import os, tempfile
    with tempfile.TemporaryFile('w+') as f:  # pymalloc's own account: blocks in use, arenas held
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        stats = [line.strip() for line in f if line.startswith(('# bytes in', 'Total', '# arenas'))]
    lines = []
    import tracemalloc
    if tracemalloc.is_tracing():  # --trace: where the live memory was allocated
        snap = tracemalloc.take_snapshot()
        lines = [(str(st.traceback[0]), st.size / 2**20) for st in snap.statistics('lineno')[:30]]
    ctypes.CDLL('libc.so.6').malloc_trim(0)
    json.dump({'rss_before_trim_mb': before, 'rss_after_trim_mb': rss(), 'by_type_mb':
               {k: v / 2**20 for k, v in by_type.items()}, 'bytes_over_256_mb': sum(blobs.values()) / 2**20,
               'pymalloc': stats, 'traced_mb_by_line': lines},
              open(DUMP, 'w'))
signal.signal(signal.SIGUSR1, why)
from app.cli.main import main
sys.argv[0] = 'wlmap'
main()
"""


def serve_rss(repo: Path, kubeconfig: Path, watch_ns: str | None, settle: float,
              trace: bool = False) -> tuple[float, dict[str, Any]]:
    """RSS of `wlmap serve` (code of `repo`) once its model is synced and quiet."""
    import http.client
    import socket

    from benchmarks.cluster_bench import stop_tree

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    env["PYTHONPATH"] = str(repo)
    if trace:
        env["PYTHONTRACEMALLOC"] = "1"
    dump = Path(tempfile.mkdtemp(prefix="podmem-")) / "heap.json"
    args = [sys.executable, "-c", _WHY.replace("DUMP", repr(str(dump))), "serve", "--host", "127.0.0.1", "--port", str(port),
            "--kubeconfig", str(kubeconfig), "--namespace", "wlmap-system", "--auth", "none", "--log-level", "warning"]
    if watch_ns:
        args += ["--watch-namespace", watch_ns]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 600
        info: dict[str, Any] = {}
        while time.time() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"serve exited {proc.returncode}: {log.read()[-3000:].decode(errors='replace')}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/model")
                r = c.getresponse()
                body = r.read()
                c.close()
                if r.status == 200:
                    info = json.loads(body)
                    if info.get("synced"):
                        break
            except (OSError, ValueError, http.client.HTTPException):
                pass
            time.sleep(0.5)
        else:
            raise RuntimeError("serve not synced in 600 s")
        # the model warms every workload's live answer after the sync: wait until it is done
        last, still = -1.0, 0
        while still < 3 and time.time() < deadline:
            time.sleep(settle)
            cur = rss_mb(proc.pid)
            still = still + 1 if abs(cur - last) < 1.0 else 0
            last = cur
        rss = rss_mb(proc.pid)
        os.kill(proc.pid, signal.SIGUSR1)  # what of it is the Python heap, what the allocator holds
        for _ in range(100):
            if dump.exists():
                break
            time.sleep(0.1)
        heap = json.loads(dump.read_text()) if dump.exists() else {}
        return rss, {"objects": info.get("objects"), "pods": info.get("pods"),
                     "workloads": info.get("workloads"), **heap}
    finally:
        stop_tree(proc, 15)
        shutil.rmtree(dump.parent, ignore_errors=True)


def whole_process(repos: list[tuple[str, Path]], fill: Path, settle: float, trace: bool = False,
                  part: int = 2) -> dict[str, Any]:
    """Per pod two ways: over the same service watching an empty namespace (everything the
    pods and their workloads bring, bounded caches included), and the slope between watching
    `part` of the fill's namespaces and all of them (as the sizing of docs/sharding.md counts: what each more
    pod adds once the fixed costs are paid)."""
    from benchmarks.cluster_fill import FillSpec

    from tests.cluster.apiserver import ApiServer

    work = Path(tempfile.mkdtemp(prefix="podmem-fill-", dir="/tmp"))
    shutil.copytree(fill, work / "fill", symlinks=True)
    server = ApiServer(work / "fill").start()
    out: dict[str, Any] = {}
    try:
        kc = server.kubeconfig("admin")
        for label, repo in repos:
            empty, empty_info = serve_rss(repo, Path(kc), "podmem-empty", settle, trace)
            some, some_info = serve_rss(repo, Path(kc), ",".join(FillSpec().namespaces_list()[:part]), settle, trace)
            full, info = serve_rss(repo, Path(kc), None, settle, trace)
            pods, some_pods = info.get("pods") or 1, some_info.get("pods") or 0
            out[label] = {"rss_empty_mb": empty, "rss_part_mb": some, "rss_full_mb": full, "part_pods": some_pods,
                          **info, "empty": empty_info, "part": some_info,
                          "per_pod_kb": (full - empty) * 1024 / pods,
                          "slope_per_pod_kb": (full - some) * 1024 / max(1, pods - some_pods)}
            print(f"  {label}: RSS {empty:.0f} MB empty, {some:.0f} MB with {some_pods} pods, {full:.0f} MB with "
                  f"{pods} pods -> {out[label]['per_pod_kb']:.1f} KB per pod over empty, "
                  f"{out[label]['slope_per_pod_kb']:.1f} KB per more pod", flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=1000, help="JobSets (2 Jobs of 4 pods each)")
    ap.add_argument("--compare", type=Path, help="another checkout, measured the same way (e.g. main)")
    ap.add_argument("--serve", action="store_true", help="also the whole process on a filled API server")
    ap.add_argument("--fill", type=Path, default=Path("/tmp/diagfill"), help="etcd data of a fill (copied)")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds between RSS readings while it settles")
    ap.add_argument("--trace", action="store_true", help="--serve under tracemalloc: where its memory was "
                    "allocated, by line (slower; the RSS figures then include tracemalloc's own)")
    ap.add_argument("--part", type=int, default=2, help="namespaces of the fill the slope starts from")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--relists", type=int, default=0, metavar="K",
                    help="instead: K relists of the filled model in process, under Python's collector "
                         "(as main's service) and the service's policy (--gc-thresholds, --gc-freeze), "
                         "side by side: RSS, collector and settle time per relist")
    ap.add_argument("--gc", choices=("python", "service"), default="python", help=argparse.SUPPRESS)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(relists(args.workloads, args.relists, args.gc) if args.relists
                         else build_model(args.workloads)))
        return
    if args.relists:
        return relists_main(args)
    repos = [("this tree", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    results: dict[str, Any] = {"in_process": {}}
    for label, repo in repos:
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner", "--workloads", str(args.workloads)],
                           cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)), capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{label}: {r.stderr[-3000:]}")
        results["in_process"][label] = json.loads(r.stdout)
    labels = [label for label, _ in repos]
    first = results["in_process"][labels[0]]
    print(f"\nin process: {first['pods']} pods of {args.workloads} JobSets, wire pod {first['wire_bytes']:.0f} B")
    print(f"{'bytes per pod':34s}" + "".join(f"{label:>12s}" for label in labels))
    rows = list(first["breakdown"])
    for other in labels[1:]:
        rows += [k for k in results["in_process"][other]["breakdown"] if k not in rows]
    for k in rows:
        print(f"{k:34s}" + "".join(f"{results['in_process'][label]['breakdown'].get(k, 0):12.0f}" for label in labels))
    print(f"{'tracemalloc (what the pods added)':34s}"
          + "".join(f"{results['in_process'][label]['tracemalloc_per_pod']:12.0f}" for label in labels))
    for key, what in (("keep_us", "µs to keep a pod (CPU)"), ("read_us", "µs to read it back (CPU)")):
        print(f"{what:34s}" + "".join(f"{results['in_process'][label][key]:12.1f}" for label in labels))
    for label in labels:
        print(f"\n{label}: top lines (bytes per pod)")
        for where, b in results["in_process"][label]["top_lines"]:
            print(f"  {b:8.0f}  {where}")
    if args.serve:
        print("\nwhole process (wlmap serve on the fill):", flush=True)
        results["whole_process"] = whole_process(repos, args.fill, args.settle, args.trace, args.part)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def relists_main(args: argparse.Namespace) -> None:
    runs = {}
    for policy in ("python", "service"):
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner", "--workloads",
                            str(args.workloads), "--relists", str(args.relists), "--gc", policy],
                           cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{policy}: {r.stderr[-3000:]}")
        runs[policy] = json.loads(r.stdout)["rounds"]
    print(f"{args.workloads} JobSets ({args.workloads * 8} pods) filled, then {args.relists} relists of every kind")
    print(f"{'':10}" + "".join(f"{p:>9} {k:>8}" for p in runs for k in ("list CPU s", "gc s", "settle s", "RSS MB")))
    for i in range(args.relists + 1):
        cells = "".join(f"{r[i]['list_s']:18.2f}{r[i]['gc_s']:18.2f}{r[i]['settle_s']:18.2f}{r[i]['rss_mb']:18.0f}"
                        for r in runs.values())
        print(f"{'sync' if i == 0 else f'relist {i}':10}" + cells)
    print("frozen objects after each (service): " + ", ".join(str(r["frozen"]) for r in runs["service"]))


if __name__ == "__main__":
    main()
