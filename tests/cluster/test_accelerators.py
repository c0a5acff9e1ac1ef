"""Accelerators on a real API server (issue 22): list rows, the live answer, workload metrics and
/clusters carry every vendor's accelerators and whole-GPU counts."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ..service.conftest import ROOT, Server
from .apiserver import ApiServer
from .kubeobjects import Kubectl
from .test_model import _samples
from .util import eventually

NS = "accel"
MANIFESTS = list(yaml.safe_load_all((ROOT / "tests" / "data" / "manifests" / "accelerators.yaml").read_text()))


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> None:
    kubectl.ensure_namespace(NS)
    for doc in MANIFESTS:
        doc = copy.deepcopy(doc)
        doc["metadata"].pop("uid")
        doc["metadata"]["namespace"] = NS
        kubectl.apply(doc)


def _rows(s: Server) -> dict[str, dict[str, Any]] | None:
    with s.client() as c:
        items = c.get("/workloads", params={"namespace": NS}).json()["items"]
    rows = {r["workload"]["name"]: r for r in items}
    return rows if {"vllm-mi300", "mig-workers"} <= rows.keys() and all(r.get("phase") for r in rows.values()) \
        else None


def test_list_rows_and_live_answer_carry_accelerators(service: Server, world: None) -> None:
    rows, _ = eventually(lambda: _rows(service), timeout=15, what="both workloads listed")
    assert rows["vllm-mi300"]["gpus"] == 16 and rows["vllm-mi300"]["accelerators"] == {"amd.com/gpu": 16}
    assert rows["mig-workers"]["gpus"] == 3
    assert rows["mig-workers"]["accelerators"] == {"gpu.intel.com/i915": 3, "nvidia.com/mig-1g.10gb": 6}
    with service.client() as c:
        one = c.get(f"/workloads/{NS}/vllm-mi300").json()
    assert one["totals"]["accelerators"] == {"amd.com/gpu": 16}
    assert one["totals"]["requestValues"] == {"amd.com/gpu": 16, "cpu": 26000, "memory": 512 * 2**30}
    assert one["tree"]["instances"][0]["pod"]["requestValues"]["cpu"] == 13000


def test_metrics_count_whole_gpus_and_each_accelerator(service: Server, world: None) -> None:
    eventually(lambda: _rows(service), timeout=15, what="both workloads listed")
    with service.client() as c:
        got = _samples(c.get("/metrics/workloads").text)

    def val(name: str, workload: str, kind: str, **extra: str) -> float | None:
        w = {"namespace": NS, "group": "apps", "kind": kind, "name": workload}
        return got.get((name, frozenset((w | extra).items())))

    assert val("wlmap_workload_gpus", "vllm-mi300", "Deployment") == 16
    assert val("wlmap_workload_resource_requests", "vllm-mi300", "Deployment", resource="amd.com/gpu") == 16
    assert val("wlmap_workload_resource_requests", "vllm-mi300", "Deployment", resource="nvidia.com/gpu") == 0
    assert val("wlmap_workload_gpus", "mig-workers", "StatefulSet") == 3
    assert val("wlmap_workload_resource_requests", "mig-workers", "StatefulSet",
               resource="nvidia.com/mig-1g.10gb") == 6


@pytest.fixture(scope="module")
def fleet(apiserver: ApiServer) -> Iterator[Server]:
    s = Server("--cluster", f"lab={apiserver.kubeconfig('service')}", "--watch-namespace", NS, "--auth", "none")
    yield s
    s.stop()


def test_clusters_sum_gpus_and_accelerators(fleet: Server, world: None) -> None:
    def status() -> dict[str, Any] | None:
        with fleet.client() as c:
            items = c.get("/clusters").json()["items"]
        lab = next(i for i in items if i["name"] == "lab")
        return lab if lab["synced"] and lab["workloads"] == 2 else None

    lab, _ = eventually(status, timeout=20, what="the cluster synced with both workloads")
    assert lab["gpus"] == 19
    assert lab["accelerators"] == {"amd.com/gpu": 16, "gpu.intel.com/i915": 3, "nvidia.com/mig-1g.10gb": 6}


def test_describe_shows_accelerator_columns_and_takes_the_flags(apiserver: ApiServer, world: None) -> None:
    from ..cli.test_cli_live import wlmap

    admin = apiserver.kubeconfig("admin")
    r = wlmap("describe", "statefulset/mig-workers", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    res = [line.split() for line in lines[lines.index("Resources:") + 1:]]
    assert res[0] == ["COMPONENT", "REPLICAS", "GPU", "CPU", "MEMORY", "gpu.intel.com/i915", "nvidia.com/mig-1g.10gb"]
    assert res[-1][:3] == ["TOTAL", "3", "3"] and res[-1][-2:] == ["3", "6"]
    # the reference's rule (only nvidia.com/gpu is a GPU), and no Intel accelerators
    r = wlmap("describe", "statefulset/mig-workers", "-n", NS, "--gpu-resource", "nvidia.com/gpu",
              "--accelerator-resource", "nvidia.com/mig-*", "-o", "json", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["totals"]["gpus"] == 0 and body["totals"]["accelerators"] == {"nvidia.com/mig-1g.10gb": 6}
    r = wlmap("get", "deployments", "-n", NS, "-o", "json", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    [row] = json.loads(r.stdout)["items"]
    assert row["gpus"] == 16 and row["accelerators"] == {"amd.com/gpu": 16}
