"""Capacity and fit (issue 30): the live model's inventory, POST /fit, the plan's verdicts, and how
soon a change shows.

1. **Inventory memory**, simulated in-process: 3,000 GPU nodes x 30 bound pods (90,000 pods) are
   more than the test API server holds comfortably on this machine, so the objects an informer's
   list hands over are played through the live model's own code, as benchmarks/model_memory.py
   does: Nodes through `ClusterCapacity.keep_node` / `on_node` into a node `Informer`'s copy, pods
   (cluster_fill's, kubelet-written status, rebound to the nodes, requests set per node) through
   `LiveModel._keeper` (record(): projection, `held`) and `LiveModel._handler` (graph, `on_pod`).
   tracemalloc counts what they add: per node everything (informer entry, view, inventory entry,
   its usage), per pod what the capacity code allocated (app/model/capacity.py and
   app/capacity/nodes.py; plus the 8-byte `held` slot of a record) against the whole pod record
   the model keeps anyway.
2. **POST /fit** of a JobSet of 64 pods x 8 GPUs (one gang) through the ASGI app in-process (as
   benchmarks/asgi_bench.py does; no network), on a fleet of one cluster whose live model is
   the simulated one above; and `app.capacity.plan.plan` alone on the same snapshot. Also the
   worst plans constructed (many copies of a tiny workload, 4,096 topology choices).
3. **Verdicts** against a brute force written here (every assignment of pods to nodes; the
   filters from app/capacity/filters.py, nothing of plan.py) on small random inventories,
   seeded: `fits` must agree whenever the plan says it is exact.
4. **Change to capacity** on a real kube-apiserver (tests/cluster/apiserver.py): a live model
   watches it; pods are created bound and deleted, nodes relabelled and resized, and
   `LiveModel.nodes()` polled until each change shows; then a burst of capacity reads, counting
   the API server's requests (apiserver_request_total, watches aside) before and after.

    python benchmarks/capacity_bench.py [--quick] [--no-cluster] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

GPU = "nvidia.com/gpu"
GIB = 1024**3
NODE_TARGET = 2048  # bytes per node
FIT_TARGET_MS = 20.0
CHANGE_TARGET_S = 1.0
# GPUs in use on a node, and how often: most nodes busy, some whole ones free
USED_MIX = ((8, 40), (7, 10), (6, 15), (4, 20), (0, 15))
GPU_POD_SPLIT = {8: (8,), 7: (4, 2, 1), 6: (4, 2), 4: (4,), 0: ()}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


# -- 1. the simulated inventory ---------------------------------------------------------------


def node_pods(
    templates: list[bytes], i: int, per_node: int, used: int, serial: itertools.count
) -> list[dict[str, Any]]:
    """`per_node` pods bound to node i: GPU pods holding `used` GPUs, the rest CPU-only (daemons,
    services), each a cluster_fill pod parsed afresh (as a list page arrives), renamed."""
    import orjson

    node = f"gpu-node-{i:04d}"
    gpus = list(GPU_POD_SPLIT[used])
    out = []
    for k in range(per_node):
        n = next(serial)
        pod = orjson.loads(templates[n % len(templates)])
        meta = pod["metadata"]
        meta["name"], meta["uid"] = f"{meta['name']}-{n}", f"uid-pod-{n}"
        pod["spec"]["nodeName"] = node
        first = pod["spec"]["containers"][0]["resources"]
        if k < len(gpus):
            first["requests"] = {"cpu": "16", "memory": "64Gi", GPU: str(gpus[k])}
            first["limits"] = {GPU: str(gpus[k])}
        else:
            first["requests"] = {"cpu": "500m", "memory": "1Gi"}
            first.pop("limits", None)
        out.append(pod)
    return out


def build(nodes: int, per_node: int, seed: int = 30) -> dict[str, Any]:
    """The live model with its inventory filled (see the module docstring, 1.)."""
    import orjson

    from app.cluster.informer import Informer, key_of
    from app.cluster.kube import NODES, PODS
    from app.jqlang.paths import merge
    from app.karta.load import load_builtin
    from app.karta.registry import Registry
    from app.model.kinds import KindWatch
    from app.model.live import LiveModel
    from app.model.records import POD_BASE, pod_expression_projection
    from benchmarks.model_memory import fill_objects
    from tests.model.test_capacity_inventory import _gpu_node  # 34 labels, a kubelet's noise

    reg = Registry.of(load_builtin())

    async def no_interpret(*_: Any) -> dict[str, Any]:
        raise AssertionError("not interpreted here")

    model = LiveModel(None, lambda: reg, no_interpret)  # type: ignore[arg-type]
    kw = KindWatch(PODS, None, merge(POD_BASE, pod_expression_projection(reg.active())), is_pod=True)
    pods_inf = Informer(None, PODS, model._keeper(kw), model._handler(kw))  # type: ignore[arg-type]
    kw.informers.append(pods_inf)
    model.kinds[kw.gk] = kw
    cap = model.capacity_inventory
    nodes_inf = Informer(None, NODES, cap.keep_node, cap.on_node)  # type: ignore[arg-type]
    cap.informer = nodes_inf

    def play(inf: Informer, obj: dict[str, Any]) -> None:  # as Informer._list hands a listed object over
        rec = inf.keep(obj)
        if rec is not None:
            k = key_of(obj)
            inf.objects[k] = rec
            inf.on_event("ADDED", k, None, rec)

    templates = [orjson.dumps(p) for p in fill_objects(40)[2]]
    rng = random.Random(seed)
    used = rng.choices([u for u, _ in USED_MIX], [w for _, w in USED_MIX], k=nodes)
    node_texts = [orjson.dumps(_gpu_node(i)) for i in range(nodes)]
    gc.collect()
    tracemalloc.start()
    t0 = tracemalloc.take_snapshot()
    for text in node_texts:
        play(nodes_inf, orjson.loads(text))
    del text
    gc.collect()
    t1 = tracemalloc.take_snapshot()
    serial = itertools.count()
    for i in range(nodes):
        for pod in node_pods(templates, i, per_node, used[i], serial):
            play(pods_inf, pod)
    del pod
    gc.collect()
    t2 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    node_bytes = sum(s.size_diff for s in t1.compare_to(t0, "filename"))
    by_file = {s.traceback[0].filename: s.size_diff for s in t2.compare_to(t1, "filename")}
    pod_total = sum(by_file.values())
    nodes_py = sum(v for f, v in by_file.items() if f.endswith("app/capacity/nodes.py"))  # the usage per node
    held_py = sum(v for f, v in by_file.items() if f.endswith("app/model/capacity.py"))  # what each pod holds
    n_pods = nodes * per_node
    for inf in (nodes_inf, pods_inf):
        inf.synced_once.set()
        inf.state = "synced"
    return {
        "model": model,
        "nodes": nodes,
        "pods": n_pods,
        "free_gpus": Counter(8 - u for u in used),
        "per_node": (node_bytes + nodes_py) / nodes,
        "per_node_view": node_bytes / nodes,
        "usage_per_node": nodes_py / nodes,
        "per_pod": held_py / n_pods + 8,
        "kept_pod": pod_total / n_pods,
    }


def kept_pod_elsewhere(workloads: int) -> float:
    """What benchmarks/model_memory.py measures per kept pod (its fill, in a fresh process)."""
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "model_memory.py"), "--inner", "--workloads", str(workloads)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(r.stdout)["tracemalloc_per_pod"])


# -- 2. POST /fit and plan --------------------------------------------------------------------


def gang_jobset(pods: int, gpus: int) -> dict[str, Any]:
    pod_spec = {
        "restartPolicy": "Never",
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "trainer",
                "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "resources": {
                    "requests": {"cpu": "96", "memory": "1000Gi", GPU: str(gpus)},
                    "limits": {GPU: str(gpus)},
                },
            }
        ],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "llm", "namespace": "x"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "trainer",
                    "replicas": 1,
                    "template": {"spec": {"parallelism": pods, "completions": pods, "template": {"spec": pod_spec}}},
                }
            ]
        },
    }


def fit_latency(model: Any, n: int) -> dict[str, Any]:
    """POST /fit through the ASGI app (one cluster: the simulated model), and plan alone."""
    from app.capacity.plan import plan
    from app.capacity.workload import pod_groups
    from app.engine.interpret import interpret
    from app.karta.load import load_builtin
    from app.karta.registry import Registry
    from app.service.app import create_app
    from app.service.settings import Settings
    from benchmarks.asgi_bench import post

    body = json.dumps({"object": gang_jobset(64, 8)}).encode()
    app = create_app(Settings(isolation="none", auth="none"))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"host", b"x")]
    member = SimpleNamespace(name="sim", model=model, access=None, listed=None)
    fleet = SimpleNamespace(members={"sim": member}, get=lambda name: member if name == "sim" else None)
    out: dict[str, Any] = {}

    async def call() -> dict[str, Any]:
        sent = await post(app, "/fit", body, headers)
        if sent[0]["status"] != 200:
            raise SystemExit(f"/fit: {sent[0]['status']} {sent[-1].get('body', b'')[:500]!r}")
        return json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))

    async def run() -> None:
        async with app.router.lifespan_context(app):
            service = app.state.service
            service.cluster = SimpleNamespace(fleet=fleet, home=member, sharing=None)
            try:
                await measure()
            finally:
                service.cluster = None  # nothing of the service's own to close

    async def measure() -> None:
        if True:
            doc = await call()
            out["answer"] = {k: doc["clusters"][0].get(k) for k in ("fits", "sets", "exact", "message")}
            for _ in range(max(3, n // 10)):
                await call()
            times = []
            for _ in range(n):
                t = time.perf_counter()
                await call()
                times.append((time.perf_counter() - t) * 1e3)
            out["fit_ms"] = times

    asyncio.run(run())
    obj = gang_jobset(64, 8)  # the groups /fit fits: the interpretation's
    reg = Registry.of(load_builtin())
    d = reg.resolve_object(obj)
    assert d is not None
    out["groups"] = pod_groups(interpret(obj, d))
    inv = model.capacity_inventory.inventory
    nodes, free = list(inv.nodes.values()), inv.free()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        p = plan(out["groups"], nodes, free)
        times.append((time.perf_counter() - t) * 1e3)
    out["plan_ms"] = times
    out["plan"] = (p.fits, p.sets, p.exact)
    snap = []
    for _ in range(max(5, n // 5)):
        t = time.perf_counter()
        list(inv.nodes.values()), inv.free()
        snap.append((time.perf_counter() - t) * 1e3)
    out["snapshot_ms"] = snap
    return out


def worst_plans(nodes_n: int) -> list[tuple[str, float, Any]]:
    """The costliest plans constructed: (what, seconds, plan)."""
    from app.capacity.nodes import Node
    from app.capacity.plan import Gang, PodGroup, plan

    nodes, free = [], {}
    for i in range(nodes_n):
        labels = {f"k{j}": str((i >> j) & 1) for j in range(12)} | {
            "rack": f"r{i % 64:02d}",
            "block": f"b{(i // 64) % 64:02d}",
        }
        nd = Node(f"node-{i:04d}", labels=labels, allocatable={"cpu": 64000, GPU: 8, "pods": 110})
        nodes.append(nd)
        free[nd.name] = {"cpu": 64000, GPU: 8, "pods": 110}
    cases = [
        ("1 pod of 10m cpu: up to 1,000 copies", [PodGroup("s", 1, {"cpu": 10})]),
        (
            "2 topology gangs x 64 values (4,096 choices), 40 pods x 8 GPUs each",
            [
                PodGroup("a", 40, {GPU: 8}, gang=Gang("ga", "rack")),
                PodGroup("b", 40, {GPU: 8}, gang=Gang("gb", "block")),
            ],
        ),
        (
            "2 topology gangs x 64 values, 2 pods x 1 GPU each",
            [PodGroup("a", 2, {GPU: 1}, gang=Gang("ga", "rack")), PodGroup("b", 2, {GPU: 1}, gang=Gang("gb", "block"))],
        ),
        (
            "12 topology gangs x 2 values, the last group fits nowhere (verdict and its explanation)",
            [PodGroup(f"g{j:02d}", 4, {GPU: 8}, gang=Gang(f"gang{j}", f"k{j}")) for j in range(11)]
            + [PodGroup("g11", 4, {GPU: 9}, gang=Gang("gang11", "k11"))],
        ),
    ]
    out = []
    for what, groups in cases:
        t = time.perf_counter()
        p = plan(groups, nodes, free)
        out.append((what, time.perf_counter() - t, p))
    return out


# -- 3. verdicts against a brute force ----------------------------------------------------------


def brute_fits(groups: list[Any], nodes: list[Any], free: dict[str, dict[str, int]]) -> bool:
    """Whether some assignment of every group's pods to nodes exists: filters pass, no node
    over-committed (each positive request and one pod slot per pod), a gang with a topology key
    all on nodes with one value of it. Independent of plan.py."""
    from app.capacity.filters import static_reason

    live = [g for g in groups if g.count > 0]
    options = []
    for g in live:
        ok = [n.name for n in nodes if static_reason(n, g.constraints) is None]
        options.append(list(itertools.combinations_with_replacement(ok, g.count)))
    labels = {n.name: n.labels for n in nodes}
    keys: dict[str, str | None] = {}
    for g in live:  # a gang's key: as the first group naming the gang gives it
        if g.gang is not None and g.gang.topology_key and g.gang.name not in keys:
            keys[g.gang.name] = g.gang.topology_key
    for choice in itertools.product(*options):
        used: dict[str, Counter[str]] = {}
        values: dict[str, set[str | None]] = {}
        for g, picked in zip(live, choice, strict=True):
            key = keys.get(g.gang.name) if g.gang is not None else None
            for name in picked:
                u = used.setdefault(name, Counter())
                u["pods"] += 1
                for r, amount in g.requests.items():
                    if amount > 0 and r != "pods":
                        u[r] += amount
                if key is not None:
                    values.setdefault(g.gang.name, set()).add(labels[name].get(key))
        if any(None in v or len(v) > 1 for v in values.values()):
            continue
        if all(n <= free[name].get(r, 0) for name, u in used.items() for r, n in u.items()):
            return True
    return False


def random_case(rng: random.Random) -> tuple[list[Any], list[Any], dict[str, dict[str, int]]]:
    from app.capacity.filters import Constraints
    from app.capacity.nodes import Node, Taint
    from app.capacity.plan import Gang, PodGroup

    taints = ((), (), (Taint("gpu", "true", "NoSchedule"),), (Taint("spot", "", "NoExecute"),))
    tolerations = ((), (), ({"key": "gpu", "operator": "Exists"},), ({"operator": "Exists"},))
    nodes, free = [], {}
    for i in range(rng.randint(1, 4)):
        alloc = {"cpu": rng.choice([0, 1, 2, 4, 6]), GPU: rng.choice([0, 1, 2, 4]), "pods": rng.choice([0, 1, 3, 4])}
        labels = {k: rng.choice(vs) for k, vs in (("zone", "ab"), ("rack", "xy")) if rng.random() < 0.7}
        n = Node(
            f"n{i}",
            labels=labels,
            taints=rng.choice(taints),
            unschedulable=rng.random() < 0.1,
            ready=rng.random() < 0.9,
            allocatable=alloc,
        )
        nodes.append(n)
        free[n.name] = {r: v - rng.choice([0, 0, v // 2, v]) for r, v in alloc.items()}
    gangs = (None, None, Gang("g"), Gang("z", "zone"), Gang("r", "rack"))
    groups = []
    for j in range(rng.randint(1, 3)):
        sel = {"zone": "a"} if rng.random() < 0.15 else None
        groups.append(
            PodGroup(
                f"g{j}",
                rng.randint(0, 3),
                {"cpu": rng.choice([0, 1, 2]), GPU: rng.choice([0, 1, 2])},
                Constraints(node_selector=sel, tolerations=rng.choice(tolerations)),
                rng.choice(gangs),
            )
        )
    return groups, nodes, free


def verdicts(cases: int, seed: int) -> dict[str, int]:
    from app.capacity.plan import plan

    rng = random.Random(seed)
    out = Counter(cases=0, agree=0, disagree=0, exact=0, fits=0)
    for _ in range(cases):
        groups, nodes, free = random_case(rng)
        p = plan(groups, nodes, free, policy=rng.choice(["pack", "spread"]))
        out["cases"] += 1
        out["fits"] += p.fits
        if not p.exact:
            continue
        out["exact"] += 1
        if p.fits == brute_fits(groups, nodes, free):
            out["agree"] += 1
        else:
            out["disagree"] += 1
    return dict(out)


# -- 4. a change to capacity, on a real API server ------------------------------------------------


def api_requests(api: Any) -> int:
    """Requests on API resources the API server has served, watches aside (the scrape of
    /metrics itself is not one: its `resource` is empty)."""
    total = 0.0
    for line in api.call("GET", "/metrics", raw=True).decode().splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, value = line.rsplit(" ", 1)
            if 'verb="WATCH"' not in labels and 'verb="CONNECT"' not in labels and ',resource=""' not in labels:
                total += float(value)
    return int(total)


def change_latency(changes: int, reads: int) -> dict[str, Any]:
    from tests.cluster.apiserver import ApiServer
    from tests.cluster.test_fit_http import schedulable_node
    from tests.model.test_capacity_live import _with_model  # a live model on the API server, synced

    api = ApiServer().start()
    out: dict[str, Any] = {}
    names = [f"cap-{i:02d}" for i in range(10)]
    alloc = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    try:
        for name in names:  # Ready, untainted (the API server taints a new node not-ready)
            schedulable_node(api, name, {"pool": "a"}, alloc)
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cap"}})

        async def run(m: Any) -> None:
            async def until(check: Any, timeout: float = 10.0) -> float:
                start = time.perf_counter()
                while True:
                    try:
                        if check():
                            return time.perf_counter() - start
                    except Exception:  # not there yet
                        pass
                    if time.perf_counter() - start > timeout:
                        raise RuntimeError("a change did not show within the timeout")
                    await asyncio.sleep(0.002)

            def row(name: str) -> dict[str, Any]:
                return next(r for r in m.nodes() if r["name"] == name)

            await until(
                lambda: (
                    m.synced
                    and m.capacity_state()[0] == "ready"
                    and all(any(r["name"] == n for r in m.nodes()) for n in names)
                ),
                60,
            )
            lat: dict[str, list[float]] = {
                "pod created": [],
                "pod deleted": [],
                "node relabelled": [],
                "node resized": [],
            }
            for k in range(changes):
                node = names[k % len(names)]
                what = list(lat)[k % 4]
                pods_before = row(node)["pods"]
                t0 = time.perf_counter()
                if what == "pod created":
                    pod = {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": f"p{k}", "namespace": "cap"},
                        "spec": {
                            "nodeName": node,
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "x",
                                    "resources": {"requests": {"cpu": "1", GPU: "1"}, "limits": {GPU: "1"}},
                                }
                            ],
                        },
                    }
                    await asyncio.to_thread(api.call, "POST", "/api/v1/namespaces/cap/pods", pod)
                    check = lambda node=node, n=pods_before: row(node)["pods"] == n + 1  # noqa: E731
                elif what == "pod deleted":
                    gone = names[(k - 1) % len(names)]  # where p{k-1} was created
                    n_gone = row(gone)["pods"]
                    t0 = time.perf_counter()
                    await asyncio.to_thread(
                        api.call,
                        "DELETE",
                        f"/api/v1/namespaces/cap/pods/p{k - 1}",
                        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                    )
                    check = lambda node=gone, n=n_gone: row(node)["pods"] == n - 1  # noqa: E731
                elif what == "node relabelled":
                    await asyncio.to_thread(
                        api.call,
                        "PATCH",
                        f"/api/v1/nodes/{node}",
                        {"metadata": {"labels": {"step": str(k)}}},
                        content_type="application/merge-patch+json",
                    )
                    check = lambda node=node, k=k: row(node)["labels"].get("step") == str(k)  # noqa: E731
                else:
                    gpus = 8 + (k % 3) + 1
                    new = alloc | {GPU: str(gpus)}
                    await asyncio.to_thread(
                        api.call,
                        "PATCH",
                        f"/api/v1/nodes/{node}/status",
                        {"status": {"allocatable": new, "capacity": new}},
                        content_type="application/merge-patch+json",
                    )
                    check = lambda node=node, n=gpus: row(node)["allocatable"].get(GPU) == n  # noqa: E731
                await until(check)
                lat[what].append(time.perf_counter() - t0)
            out["latency_s"] = lat
            await asyncio.sleep(0.5)
            before = api_requests(api)
            t = time.perf_counter()
            for _ in range(reads):
                m.capacity()
                m.nodes()
            out["read_us"] = (time.perf_counter() - t) / reads * 1e6
            after = api_requests(api)
            out["requests_during_reads"] = after - before
            # the control: one request of the service's kind between two scrapes counts 1
            await asyncio.to_thread(api.call, "GET", "/api/v1/nodes?limit=1")
            out["control_requests"] = api_requests(api) - after
            out["reads"] = reads

        _with_model(api.kubeconfig("admin"), run)
    finally:
        api.stop()
    return out


# -- the report ----------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 300 nodes, fewer cases and changes")
    ap.add_argument("--no-cluster", action="store_true", help="skip 4 (the real API server)")
    ap.add_argument("--parts", default="1234", help="which measures to run (1 and 2 go together), e.g. 4")
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    q = args.quick
    nodes, per_node = (300, 30) if q else (3000, 30)
    n_fit, n_cases, n_changes, n_reads = (30, 1000, 12, 200) if q else (200, 10_000, 60, 2000)
    rows: list[tuple[str, str, str, str]] = []
    res: dict[str, Any] = {"machine_cores": os.cpu_count(), "quick": q}
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}{' (--quick)' if q else ''}", flush=True)

    if "1" in args.parts or "2" in args.parts:
        inventory_and_fit(args, rows, res, nodes, per_node, n_fit)
    if "3" in args.parts:
        verdict_rows(args, rows, res, n_cases)
    if "4" in args.parts and not args.no_cluster:
        change_rows(rows, res, n_changes, n_reads)
    print("\n| measure | target | measured | verdict |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, default=str))


def inventory_and_fit(args: Any, rows: list[Any], res: dict[str, Any], nodes: int, per_node: int, n_fit: int) -> None:
    q = args.quick
    kept_elsewhere = kept_pod_elsewhere(40 if q else 1000)
    t = time.perf_counter()
    inv = build(nodes, per_node, args.seed)
    print(
        f"\n1. inventory (simulated in-process): {inv['nodes']} nodes x {per_node} pods = {inv['pods']} pods, "
        f"played in {time.perf_counter() - t:.0f} s; free GPUs per node: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(inv["free_gpus"].items())),
        flush=True,
    )
    print(
        f"   per node {inv['per_node']:.0f} B (view, labels, informer and inventory entries "
        f"{inv['per_node_view']:.0f} B + usage {inv['usage_per_node']:.0f} B); target {NODE_TARGET} B: "
        f"ratio {inv['per_node'] / NODE_TARGET:.2f}"
    )
    print(
        f"   per pod, capacity's share {inv['per_pod']:.0f} B (held + 8 B slot); the pod record kept anyway "
        f"{inv['kept_pod']:.0f} B here, {kept_elsewhere:.0f} B in model_memory.py's fill: ratio "
        f"{inv['per_pod'] / inv['kept_pod']:.3f}"
    )
    rows.append(
        (
            f"memory per node ({nodes:,} GPU nodes, 34 labels)",
            f"≤ {NODE_TARGET} B",
            f"{inv['per_node']:.0f} B",
            "met" if inv["per_node"] <= NODE_TARGET else "MISSED",
        )
    )
    rows.append(
        (
            f"memory per bound pod ({inv['pods']:,} pods)",
            f"≤ a kept pod ({inv['kept_pod']:.0f} B)",
            f"{inv['per_pod']:.0f} B ({inv['per_pod'] / inv['kept_pod']:.1%})",
            "met" if inv["per_pod"] <= inv["kept_pod"] else "MISSED",
        )
    )
    res["inventory"] = {k: v for k, v in inv.items() if k != "model"} | {"kept_pod_model_memory": kept_elsewhere}

    fit = fit_latency(inv["model"], n_fit)
    f50, f99 = pct(fit["fit_ms"], 50), pct(fit["fit_ms"], 99)
    p50, p99 = pct(fit["plan_ms"], 50), pct(fit["plan_ms"], 99)
    s50 = pct(fit["snapshot_ms"], 50)
    print(
        f"\n2. POST /fit, JobSet 64 pods x 8 GPUs (one gang), {n_fit} requests in-process: p50 {f50:.1f} ms, "
        f"p99 {f99:.1f} ms; target p50 ≤ {FIT_TARGET_MS:g} ms: ratio {f50 / FIT_TARGET_MS:.2f}"
    )
    print(f"   answer: {fit['answer']}")
    print(
        f"   plan() alone: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({fit['plan']}); the inventory snapshot "
        f"(nodes, free): p50 {s50:.1f} ms"
    )
    rows.append(
        (
            f"POST /fit 64 x 8-GPU gang, {nodes} nodes, p50 / p99",
            f"p50 ≤ {FIT_TARGET_MS:g} ms",
            f"{f50:.1f} / {f99:.1f} ms",
            "met" if f50 <= FIT_TARGET_MS else "MISSED",
        )
    )
    rows.append(("plan() alone, same, p50 / p99", "-", f"{p50:.1f} / {p99:.1f} ms", "-"))
    res["fit"] = {
        "fit_ms_p50": f50,
        "fit_ms_p99": f99,
        "plan_ms_p50": p50,
        "plan_ms_p99": p99,
        "snapshot_ms_p50": s50,
        "answer": fit["answer"],
    }
    worst = worst_plans(nodes)
    print("   worst plans constructed (plan alone):")
    for what, secs, p in worst:
        lower = " (a lower bound)" if p.sets_bounded else ""
        print(f"     {secs * 1e3:8.1f} ms  {what}: fits {p.fits}, sets {p.sets}{lower}, exact {p.exact}")
    worst_s = max(s for _, s, _ in worst)
    rows.append(
        (
            "worst plan constructed (many copies, 4,096 topology choices, a failure explained)",
            "bounded, well under 1 s",
            f"{worst_s * 1e3:.0f} ms",
            "met" if worst_s < 1 else "MISSED",
        )
    )
    res["worst"] = [(w, s, p.fits, p.sets, p.sets_bounded, p.exact) for w, s, p in worst]


def verdict_rows(args: Any, rows: list[Any], res: dict[str, Any], n_cases: int) -> None:
    t = time.perf_counter()
    v = verdicts(n_cases, args.seed)
    print(
        f"\n3. verdicts against the brute force (seed {args.seed}): {v['cases']} cases, {v['exact']} exact, "
        f"{v['agree']} agree, {v['disagree']} disagree ({v['fits']} fit), {time.perf_counter() - t:.0f} s"
    )
    rows.append(
        (
            f"verdicts = brute force ({v['cases']:,} random small cases)",
            "0 disagreements",
            f"{v['disagree']} of {v['exact']:,} exact",
            "met" if v["disagree"] == 0 else "MISSED",
        )
    )
    res["verdicts"] = v


def change_rows(rows: list[Any], res: dict[str, Any], n_changes: int, n_reads: int) -> None:
    c = change_latency(n_changes, n_reads)
    every = [x for xs in c["latency_s"].values() for x in xs]
    c50, c99 = pct(every, 50), pct(every, 99)
    print(
        f"\n4. a change on a real API server to LiveModel.nodes(), {len(every)} changes: p50 {c50 * 1e3:.0f} ms, "
        f"p99 {c99 * 1e3:.0f} ms; target p99 ≤ {CHANGE_TARGET_S:g} s: ratio {c99 / CHANGE_TARGET_S:.2f}"
    )
    for what, xs in c["latency_s"].items():
        print(f"   {what:16s} n={len(xs):3d} p50 {pct(xs, 50) * 1e3:6.0f} ms  max {max(xs) * 1e3:6.0f} ms")
    print(
        f"   {c['reads']} reads of capacity() and nodes(): {c['read_us']:.0f} µs each, "
        f"{c['requests_during_reads']} API requests (control: one GET of nodes counts "
        f"{c['control_requests']})"
    )
    rows.append(
        (
            f"change visible in capacity ({len(every)} changes), p50 / p99",
            f"p99 ≤ {CHANGE_TARGET_S:g} s",
            f"{c50 * 1e3:.0f} / {c99 * 1e3:.0f} ms",
            "met" if c99 <= CHANGE_TARGET_S else "MISSED",
        )
    )
    rows.append(
        (
            f"API requests made by {c['reads']:,} capacity reads",
            "0",
            str(c["requests_during_reads"]),
            "met" if c["requests_during_reads"] == 0 else "MISSED",
        )
    )
    res["change"] = {"p50_s": c50, "p99_s": c99, **c}


if __name__ == "__main__":
    main()
