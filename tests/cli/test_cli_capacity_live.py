"""`wlmap capacity` and `wlmap fit` on a real API server, run as the installed `wlmap`: Nodes
with their status, a pod bound by spec.nodeName, the capacity table and JSON following it, a
JobSet that fits (exit 0, the plan names the nodes) and one that fits nowhere (exit 1, the most
free on one node named), two contexts (one may not list nodes: its row says why, exit 1), and
bad input (exit 2). The nodes carry a label of this module's own (the pool label, and every
JobSet's nodeSelector), so other tests' nodes do not change the figures read here."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..cluster.apiserver import ApiServer
from ..cluster.kubeobjects import Kubectl
from ..cluster.test_fit_http import GPU, GPU_TOLERATION, _jobset, schedulable_node
from ..model.test_capacity_live import _delete_all, _pod
from .test_cli_live import wlmap

BIG = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}


@dataclass
class World:
    label: str
    a: str  # 8 GPUs, 2 held by a bound pod
    b: str  # 4 GPUs
    ns: str
    kubeconfig: Path  # contexts "full" (admin) and "bob" (may not list nodes)


@pytest.fixture(scope="module")
def world(apiserver: ApiServer, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    sfx = uuid.uuid4().hex[:6]
    w = World(f"wlmap.test/clicap-{sfx}", f"clicap-{sfx}-a", f"clicap-{sfx}-b", f"clicap-{sfx}",
              tmp_path_factory.mktemp("kc") / "kubeconfig")
    admin = json.loads(apiserver.kubeconfig("admin").read_text())
    bob = json.loads(apiserver.kubeconfig("bob").read_text())
    cluster = admin["clusters"][0]
    w.kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "full", "clusters": [cluster],
        "users": [{"name": "admin", "user": admin["users"][0]["user"]}, {"name": "bob", "user": bob["users"][0]["user"]}],
        "contexts": [{"name": "full", "context": {"cluster": cluster["name"], "user": "admin"}},
                     {"name": "bob", "context": {"cluster": cluster["name"], "user": "bob"}}]}))
    kubectl.ensure_namespace(w.ns)
    try:
        schedulable_node(apiserver, w.a, {w.label: "gpu"}, BIG)
        schedulable_node(apiserver, w.b, {w.label: "gpu"}, BIG | {GPU: "4"})
        kubectl.apply(_pod(w.ns, "held", w.a, [{"cpu": "1", "memory": "1Gi", GPU: "2"}]))
        yield w
    finally:
        _delete_all(apiserver, [f"/api/v1/namespaces/{w.ns}/pods/held", f"/api/v1/nodes/{w.a}",
                                f"/api/v1/nodes/{w.b}", f"/api/v1/namespaces/{w.ns}"])


def _file(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_capacity_per_pool_per_node_and_as_json(world: World) -> None:
    r = wlmap("capacity", "--pool-label", world.label, kubeconfig=world.kubeconfig)
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.splitlines()
    assert head.split() == ["CONTEXT", "POOL", "NODES", "ACCELERATORS(FREE/ALLOC)", "CPU(FREE/ALLOC)",
                            "MEMORY(FREE/ALLOC)", "LARGEST-FREE"]
    (gpu,) = [row for row in rows if row.split()[1] == "gpu"]
    assert "2/2" in gpu.split() and "10/12 nvidia.com/gpu" in gpu  # 6 + 4 free of 8 + 4
    assert f"6 nvidia.com/gpu ({world.a})" in gpu  # the most free on one node
    assert "127/128" in gpu  # cpu: the bound pod's one core

    doc = json.loads(wlmap("capacity", "--pool-label", world.label, "-o", "json", kubeconfig=world.kubeconfig).stdout)
    (item,) = doc["items"]
    (pool,) = [p for p in item["capacity"]["pools"] if p["label"] == f"{world.label}=gpu"]
    assert (pool["free"][GPU], pool["freeValues"][GPU], pool["largestFreeNodes"][GPU]) == ("10", 10, world.a)
    node = next(n for n in item["nodes"] if n["name"] == world.a)
    assert (node["free"][GPU], node["requested"]["cpu"], node["pods"]) == ("6", "1", 1)

    wide = wlmap("capacity", "--pool-label", world.label, "-o", "wide", kubeconfig=world.kubeconfig)
    (row,) = [line for line in wide.stdout.splitlines() if line.split()[1] == world.b]
    assert row.split()[2:4] == ["gpu", "Ready"] and "4/4 nvidia.com/gpu" in row


def test_fit_names_the_nodes_or_the_shortfall(world: World, tmp_path: Path) -> None:
    fits = _file(tmp_path, _jobset("fits", 2, 4, {world.label: "gpu"}, [GPU_TOLERATION]))
    r = wlmap("fit", fits, kubeconfig=world.kubeconfig)
    assert r.returncode == 0, r.stdout + r.stderr
    head, row = r.stdout.splitlines()
    assert head.split() == ["CONTEXT", "FITS", "SETS", "PLACEMENT", "MESSAGE"]
    assert row.split()[:3] == ["-", "(best)", "yes"] and f"{world.a}(1)" in row and f"{world.b}(1)" in row
    doc = json.loads(wlmap("fit", fits, "-o", "json", kubeconfig=world.kubeconfig).stdout)
    (c,) = doc["clusters"]
    assert doc["best"] == "" and c["fits"] is True and c["placement"][0]["nodes"] == {world.a: 1, world.b: 1}
    assert doc["policy"] == "pack" and doc["groups"][0]["pods"] == 2

    big = _file(tmp_path, _jobset("big", 1, 8, {world.label: "gpu"}, [GPU_TOLERATION]))
    r = wlmap("fit", big, "--policy", "spread", "-o", "yaml", kubeconfig=world.kubeconfig)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = yaml.safe_load(r.stdout)
    (c,) = doc["clusters"]
    assert doc["best"] is None and c["fits"] is False and doc["policy"] == "spread"
    assert c["message"] == f"no node has 8 free {GPU} (the most on one node is 6: {world.a})"
    assert c["shortfall"][0]["largestFree"] == {"node": world.a, "free": "6", "value": 6}


def test_several_contexts_one_of_which_may_not_list_nodes(world: World, tmp_path: Path) -> None:
    fits = _file(tmp_path, _jobset("fits", 1, 4, {world.label: "gpu"}, [GPU_TOLERATION]))
    r = wlmap("fit", fits, "--all-contexts", kubeconfig=world.kubeconfig)
    assert r.returncode == 0, r.stdout + r.stderr  # it fits in "full"
    rows = r.stdout.splitlines()[1:]
    assert rows[0].startswith("full (best)") and rows[1].startswith("bob") and "forbidden" in rows[1]
    assert "error: context bob: the kubeconfig user may not list nodes or pods: " in r.stderr
    doc = json.loads(wlmap("fit", fits, "--all-contexts", "-o", "json", kubeconfig=world.kubeconfig).stdout)
    assert [(c["cluster"], c["state"]) for c in doc["clusters"]] == [("full", "ready"), ("bob", "forbidden")]
    r = wlmap("capacity", "--context", "bob", "--context", "full", "-o", "json", kubeconfig=world.kubeconfig)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert [i["cluster"] for i in doc["items"]] == ["full"] and doc["errors"][0]["cluster"] == "bob"
    assert doc["errors"][0]["state"] == "forbidden" and "may not list nodes" in doc["errors"][0]["message"]


def test_bad_input_is_a_usage_error(world: World, tmp_path: Path) -> None:
    r = wlmap("fit", str(tmp_path / "missing.yaml"), kubeconfig=world.kubeconfig)
    assert r.returncode == 2 and "missing.yaml" in r.stderr
    r = wlmap("fit", _file(tmp_path, {"apiVersion": "v1", "kind": "Pod"}), "--policy", "tight",
              kubeconfig=world.kubeconfig)
    assert r.returncode == 2 and "--policy" in r.stderr
    unknown = _file(tmp_path, {"apiVersion": "x.example/v1", "kind": "Nope", "metadata": {"name": "n"}})
    r = wlmap("fit", unknown, kubeconfig=world.kubeconfig)
    assert r.returncode == 4, r.stdout + r.stderr


def test_describe_says_when_waiting_pods_fit_nowhere(world: World, kubectl: Kubectl, apiserver: ApiServer) -> None:
    pod = _pod(world.ns, "wait-big", None, [{"cpu": "1", "memory": "1Gi", GPU: "8"}])
    pod["spec"] |= {"nodeSelector": {world.label: "gpu"}, "tolerations": [GPU_TOLERATION]}
    kubectl.apply(pod)
    try:
        r = wlmap("describe", "pod/wait-big", "-n", world.ns, "-o", "json", kubeconfig=world.kubeconfig)
        assert r.returncode == 0, r.stderr
        entry = json.loads(r.stdout)["diagnosis"][0]
        assert (entry["reason"], entry["pods"], entry["fitsIn"]) == ("NoCapacity", 1, [])
        assert entry["message"] == (f"fits nowhere in this cluster now: no node has 8 free {GPU} "
                                    f"(the most on one node is 6: {world.a})")
        tree = wlmap("describe", "pod/wait-big", "-n", world.ns, kubeconfig=world.kubeconfig).stdout
        assert "Error    NoCapacity" in tree and "no node has 8 free" in tree
    finally:
        _delete_all(apiserver, [f"/api/v1/namespaces/{world.ns}/pods/wait-big"])
