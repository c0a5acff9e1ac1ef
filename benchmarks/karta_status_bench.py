"""Karta resources that report their own state (`--manage-kartas true`), on a real kube-apiserver:

1. an etcd + kube-apiserver v1.20.2 (tests/cluster/apiserver.py) with the Karta CRD, one
   framework CRD and the service user's RBAC (tests/cluster: what the chart's kartas.manage grants);
2. one `wlmap serve --manage-kartas true` (the Lease holder): N edits of one Karta, each
   flipping it between valid and invalid -> seconds from the edit's response to the flipped
   `Validated` condition read back (polled every 20 ms);
3. a quiet window: the Karta's resourceVersion and the writer's write counters must not move;
4. a second replica; SIGTERM the first -> seconds until the second leads (Lease released);
   a third replica; SIGKILL the second -> seconds until the third leads (the Lease expires).

    python benchmarks/karta_status_bench.py [--edits 20] [--quiet 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cluster.apiserver import ApiServer
from tests.cluster.kubeobjects import Kubectl, crd, service_rbac
from tests.cluster.test_karta_status import (
    KARTA_API,
    SERVICE_NS,
    invalid,
    karta,
    manager_of,
    manager_rbac,
    replica,
)


def until(check, timeout: float = 60.0, every: float = 0.02) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"not reached within {timeout} s")
        time.sleep(every)
    return time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--quiet", type=float, default=10.0)
    args = ap.parse_args()
    srv = ApiServer().start()
    k = Kubectl(srv)
    replicas = []
    try:
        for doc in (crd("run.ai", "Karta", "kartas", ["v1alpha1"], scope="Cluster"),
                    crd("acme.example.com", "BatchTask", "batchtasks", ["v1"])):
            k.apply(doc)
        k.wait_crds(["kartas.run.ai", "batchtasks.acme.example.com"])
        k.ensure_namespace(SERVICE_NS)
        for doc in service_rbac("wlmap-service", SERVICE_NS) + manager_rbac():
            k.apply(doc)
        first = replica(srv)
        replicas.append(first)
        until(lambda: manager_of(first)["leading"])

        def validated() -> str | None:
            obj = k.get(KARTA_API, "Karta", None, "bench")
            return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}.get("Validated")

        doc = karta("bench")
        k.apply(doc)
        until(lambda: validated() == "True")
        took = []
        for i in range(args.edits):
            want = "False" if i % 2 == 0 else "True"
            start = time.monotonic()
            k.apply(invalid(doc) if want == "False" else doc)
            until(lambda w=want: validated() == w)  # type: ignore[misc]
            took.append(time.monotonic() - start)
        print(f"edit -> status: median {statistics.median(took):.2f} s, max {max(took):.2f} s ({len(took)} edits)")

        time.sleep(1.0)
        rv, writes = k.get(KARTA_API, "Karta", None, "bench")["metadata"]["resourceVersion"], manager_of(first)["writes"]
        time.sleep(args.quiet)
        moved = k.get(KARTA_API, "Karta", None, "bench")["metadata"]["resourceVersion"] != rv
        print(f"quiet {args.quiet:.0f} s: resourceVersion {'MOVED' if moved else 'unchanged'}, writes "
              f"{'MOVED' if manager_of(first)['writes'] != writes else 'unchanged'} ({writes})")

        second = replica(srv)
        replicas.append(second)
        start = time.monotonic()
        first.stop()
        stopped = time.monotonic() - start
        led = until(lambda: manager_of(second)["leading"])
        print(f"SIGTERM -> the follower leads: {stopped + led:.2f} s (the first replica's exit took {stopped:.2f} s)")
        third = replica(srv)
        replicas.append(third)
        until(lambda: not manager_of(third)["leading"])
        os.kill(second.proc.pid, signal.SIGKILL)
        second.proc.wait(10)
        print(f"SIGKILL -> another replica leads: {until(lambda: manager_of(third)['leading'], timeout=60):.2f} s "
              "(the Lease is 15 s)")
        return 1 if moved else 0
    finally:
        for r in replicas:
            r.stop()
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
