"""Capacity and fit in the web UI, in a real browser against the suite's service and real
kube-apiserver: the fleet page's free accelerators per cluster and node pool (following a pod
bound to a node), and the interpret page's "Where does it fit?" (a JobSet that fits, with the
nodes of its placement, one that fits nowhere, and the service without a cluster).

The GPU nodes here carry a GPU product of this module's own (`nvidia.com/gpu.product`, the
first default pool label), so their pool is theirs alone; every JobSet selects them by it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from ..cluster.apiserver import ApiServer
from ..cluster.kubeobjects import Kubectl
from ..cluster.test_fit_http import GPU, GPU_TOLERATION, _jobset, schedulable_node
from ..model.test_capacity_live import _delete_all, _pod
from ..service.conftest import Server
from .browser import expect

PRODUCT = "nvidia.com/gpu.product"
BIG = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}


@dataclass
class World:
    product: str  # the nodes' GPU product: their pool
    a: str
    b: str
    ns: str


@pytest.fixture(scope="module")
def nodes(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[World]:
    sfx = uuid.uuid4().hex[:6]
    w = World(f"UITEST-{sfx}", f"uicap-{sfx}-a", f"uicap-{sfx}-b", f"uicap-{sfx}")
    kubectl.ensure_namespace(w.ns)
    try:
        schedulable_node(apiserver, w.a, {PRODUCT: w.product}, BIG)
        schedulable_node(apiserver, w.b, {PRODUCT: w.product}, BIG)
        yield w
    finally:
        _delete_all(apiserver, [f"/api/v1/namespaces/{w.ns}/pods/held", f"/api/v1/nodes/{w.a}",
                                f"/api/v1/nodes/{w.b}", f"/api/v1/namespaces/{w.ns}"])


def test_the_fleet_page_shows_free_accelerators_per_pool(service: Server, nodes: World, page: Any,
                                                         kubectl: Kubectl, apiserver: ApiServer) -> None:
    page.goto(f"{service.url}/ui/fleet")
    card = page.locator(".cluster-card").first
    row = card.locator(f'.pool-row[data-pool="{nodes.product}"]')
    expect(row.locator(".pool-free")).to_have_text("16/16 nvidia.com/gpu", timeout=20000)
    expect(row.locator("td").nth(1)).to_have_text("2/2")
    expect(row.locator(".pool-largest")).to_have_text(f"8 ({nodes.a})")
    expect(card.locator('.c-free li[data-resource="nvidia.com/gpu"] .free')).not_to_be_empty()
    # a pod bound to node b takes 3 of its GPUs: the card follows (capacity is read every 10 s)
    kubectl.apply(_pod(nodes.ns, "held", nodes.b, [{"cpu": "1", "memory": "1Gi", GPU: "3"}]))
    try:
        expect(row.locator(".pool-free")).to_have_text("13/16 nvidia.com/gpu", timeout=25000)
        expect(row.locator(".pool-largest")).to_have_text(f"8 ({nodes.a})")
    finally:
        _delete_all(apiserver, [f"/api/v1/namespaces/{nodes.ns}/pods/held"])


def test_the_interpret_page_says_where_a_workload_fits(service: Server, nodes: World, page: Any) -> None:
    page.goto(f"{service.url}/ui/interpret")
    fits = _jobset("fits", 2, 8, {PRODUCT: nodes.product}, [GPU_TOLERATION])
    page.fill("#manifest", yaml.safe_dump(fits))
    page.click("#fit")
    answer = page.locator("#fit-answer")
    row = answer.locator(".fit-row.best")
    expect(row).to_have_attribute("data-fits", "true", timeout=20000)
    expect(row.locator(".placed .nodes")).to_contain_text(nodes.a)
    expect(row.locator(".placed .nodes")).to_contain_text(nodes.b)
    expect(row.locator(".fit-message")).to_contain_text("fits now")

    big = _jobset("big", 1, 16, {PRODUCT: nodes.product}, [GPU_TOLERATION])
    page.fill("#manifest", yaml.safe_dump(big))
    page.select_option("#fit-policy", "spread")
    page.click("#fit")
    row = answer.locator(".fit-row").first
    expect(row).to_have_attribute("data-fits", "false")
    expect(row.locator(".fit-message")).to_contain_text("no node has 16 free nvidia.com/gpu")
    short = row.locator("tr.short")
    expect(short.locator("td").nth(1)).to_have_text(GPU)
    expect(short.locator("td").nth(3)).to_have_text("1 of 1")
    expect(answer).to_contain_text("policy spread")


def test_without_a_cluster_the_fit_says_so(bare: Server, page: Any) -> None:
    page.goto(f"{bare.url}/ui/interpret")
    page.fill("#manifest", yaml.safe_dump(_jobset("x", 1, 1, {}, [])))
    page.click("#fit")
    expect(page.locator("#fit-no-cluster")).to_contain_text("No cluster to fit on")
