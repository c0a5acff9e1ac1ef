"""The web UI of a service reading three real clusters (a, b, c), in Chromium: the fleet page
(a card per cluster, its figures those of GET /clusters), the cluster selector of the list (its
rows those of GET /workloads?cluster=, kept in the URL), the workload page naming its cluster,
and the pages following the streams: a JobSet created in cluster c shows in the list and in
the fleet's figures without a reload, and a cluster whose API server stops answering (a relay
in front of it drops the network; no API server is stopped) is said to be down within seconds,
its rows dimmed.  A single-cluster service's list looks as it always did."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..cluster.fixtures import SERVICE_NS
from ..cluster.test_workloads import _jobset_with_pods
from ..service.conftest import Server
from ..ui.browser import expect
from ..ui.relay import Relay
from .conftest import NS, Fleet, settled, wait_synced

# browser, new_page, page, shots, timings: suite-wide fixtures (tests/ui/browser.py)

LIVE_MS = 10000  # a change in a cluster must be on screen within this, without a reload


def expect_live(page: Any) -> None:
    expect(page.locator("#live")).to_have_attribute("data-state", "live")


def rows(page: Any) -> list[tuple[str, str]]:
    """(cluster, name) of the rows, in the order shown."""
    return [tuple(x) for x in page.locator("#workloads tr.workload-row").evaluate_all(
        "rs => rs.map(r => [r.dataset.cluster || '', r.dataset.name])")]


def api_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((r["cluster"], r["workload"]["name"]) for r in doc["items"])


def mark(*pages: Any) -> None:
    for p in pages:
        p.evaluate("window.notReloaded = true")


def not_reloaded(*pages: Any) -> None:
    assert all(p.evaluate("window.notReloaded === true") for p in pages)


def watched(requests: list[str], path: str) -> list[dict[str, list[str]]]:
    """The query of every stream the page opened on `path`."""
    out = []
    for u in requests:
        parts = urllib.parse.urlsplit(u)
        q = urllib.parse.parse_qs(parts.query)
        if parts.path == path and q.get("watch") == ["true"]:
            out.append(q)
    return out


# -- the fleet page ----------------------------------------------------------------------

def test_fleet_page_shows_every_cluster_as_clusters_says(fleet_service: Server, fleet: Fleet, page: Any,
                                                         shots: Any) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{fleet_service.url}/ui/fleet")
    cards = page.locator("#clusters .cluster-card")
    expect(cards).to_have_count(3)
    expect_live(page)
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.cluster)") == ["a", "b", "c"]
    expect(page.locator("#nav-fleet")).to_be_visible()
    expect(page.locator("#nav-fleet")).to_have_class("active")
    with settled(fleet_service, ["a", "b", "c"]) as c:
        items = {i["name"]: i for i in c.get("/clusters").json()["items"]}
    assert all(i["gpus"] > 0 for i in items.values())
    for name, item in items.items():
        card = page.locator(f'#clusters .cluster-card[data-cluster="{name}"]')
        expect(card).to_have_attribute("data-state", "ready")
        expect(card.locator(".cluster-state")).to_have_text("available · synced")
        expect(card.locator(".c-server")).to_have_text(item["server"])
        expect(card.locator(".c-version")).to_have_text(item["version"])
        expect(card.locator(".c-workloads")).to_have_text(str(item["workloads"]))
        expect(card.locator(".c-gpus")).to_have_text(str(item["gpus"]))
        phases = card.locator("tr.phase-row")
        expect(phases).to_have_count(len(item["phases"]))
        for phase, v in item["phases"].items():
            row = card.locator(f'tr.phase-row[data-phase="{phase}"]')
            expect(row.locator(".p-workloads")).to_have_text(str(v["workloads"]))
            expect(row.locator(".p-gpus")).to_have_text(str(v["gpus"]))
        # the bar of GPUs by phase: a segment per phase that requests some
        segs = card.locator(".gpu-stack .seg")
        assert sorted(segs.evaluate_all("ss => ss.map(s => s.dataset.phase)")) == \
            sorted(p for p, v in item["phases"].items() if v["gpus"] > 0)  # the UI orders them by lifecycle
        # the cluster's name leads to its workloads
        assert card.locator("a.cluster-name").get_attribute("href") == f"/ui/?cluster={name}"
    expect(page.locator("#fleet-clusters .value")).to_have_text("3")
    expect(page.locator("#fleet-available .value")).to_have_text("3 of 3")
    expect(page.locator("#fleet-gpus .value")).to_have_text(str(sum(i["gpus"] for i in items.values())))
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1440
    # the page read /clusters once, then follows its stream
    assert [u for u in requests if urllib.parse.urlsplit(u).path == "/clusters" and "watch" not in u] != []
    assert len(watched(requests, "/clusters")) == 1
    shots(page, "ui-fleet")


# -- the list: the cluster selector ------------------------------------------------------

def test_the_selector_filters_the_list_to_one_cluster(fleet_service: Server, fleet: Fleet, page: Any,
                                                      shots: Any) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    with settled(fleet_service, ["a", "b", "c"]) as c:
        everything = c.get("/workloads", params={"namespace": NS}).json()
        only_b = c.get("/workloads", params={"namespace": NS, "cluster": "b"}).json()
    page.goto(f"{fleet_service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(len(everything["items"]))
    expect_live(page)
    assert sorted(rows(page)) == api_rows(everything)
    expect(page.locator("#workloads th.col-cluster")).to_have_text(re.compile("^Cluster"))
    expect(page.locator("#cluster")).to_be_visible()
    expect(page.locator("#cluster option")).to_have_text(["All clusters", "a", "b", "c"])
    # the twins of b and c are two rows, each linking to its cluster's workload
    twins = page.locator('#workloads tr.workload-row[data-name="shared"]')
    expect(twins).to_have_count(2)
    assert twins.locator("td.cluster").all_inner_texts() == ["b", "c"]
    hrefs = twins.locator("a.workload-link").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert [urllib.parse.urlsplit(h).path for h in hrefs] == [f"/ui/clusters/{n}/workloads/{NS}/shared"
                                                              for n in ("b", "c")]
    assert all(r["cluster"] for r in everything["items"])

    page.select_option("#cluster", "b")
    expect(page).to_have_url(re.compile(r"[?&]cluster=b(&|$)"))
    expect(page.locator("#workloads tr.workload-row")).to_have_count(len(only_b["items"]))
    expect_live(page)
    assert sorted(rows(page)) == api_rows(only_b) and {r[0] for r in api_rows(only_b)} == {"b"}
    for r in only_b["items"]:  # the figures of each row are the API's
        row = page.locator(f'#workloads tr.workload-row[data-cluster="b"][data-name="{r["workload"]["name"]}"]')
        expect(row.locator("td.gpus")).to_have_text(str(r["gpus"]))
        expect(row.locator(".ready-text")).to_have_text(f'{r["pods"]["ready"]}/{r["pods"]["desired"]}')
    expect(page.locator("#stat-gpus .value")).to_have_text(str(sum(r["gpus"] for r in only_b["items"])))
    # the selector drives the read and the stream
    stream = watched(requests, "/workloads")[-1]
    assert stream.pop("resumeFrom")  # from the read's token (one log for every cluster)
    assert stream == {"cluster": ["b"], "namespace": [NS], "watch": ["true"]}
    assert any(urllib.parse.parse_qs(urllib.parse.urlsplit(u).query).get("cluster") == ["b"]
               for u in requests if urllib.parse.urlsplit(u).path == "/workloads" and "watch" not in u)
    shots(page, "ui-list-cluster")

    # a reload keeps it
    page.reload()
    expect(page.locator("#workloads tr.workload-row")).to_have_count(len(only_b["items"]))
    expect(page.locator("#cluster")).to_have_value("b")
    assert sorted(rows(page)) == api_rows(only_b)

    # to the workload of cluster b: the page names its cluster, and follows that cluster's stream
    page.click('#workloads tr.workload-row[data-name="shared"] a.workload-link')
    expect(page).to_have_url(re.compile(rf"/ui/clusters/b/workloads/{NS}/shared\?"))
    expect(page.locator("#workload-cluster")).to_have_text("cluster b")
    expect(page.locator("#crumb-cluster")).to_have_text("b")
    expect(page.locator("#head-phase .chip")).to_be_visible()
    expect_live(page)
    assert any(urllib.parse.urlsplit(u).path == f"/clusters/b/workloads/{NS}/shared" for u in requests)
    assert len(watched(requests, f"/clusters/b/workloads/{NS}/shared")) == 1
    shots(page, "ui-workload-cluster")

    # a workload opened by name only (one cluster has it): its cluster is named too
    page.goto(f"{fleet_service.url}/ui/workloads/{NS}/train-c")
    expect(page.locator("#workload-cluster")).to_have_text("cluster c")
    expect_live(page)
    assert len(watched(requests, f"/clusters/c/workloads/{NS}/train-c")) == 1

    # back to the list of all clusters
    page.goto(f"{fleet_service.url}/ui/?namespace={NS}&cluster=b")
    page.select_option("#cluster", "")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(len(everything["items"]))
    assert "cluster=" not in page.url


def test_a_jobset_created_in_a_cluster_shows_live(fleet_service: Server, fleet: Fleet, new_page: Any,
                                                  timings: Any) -> None:
    page = new_page()
    fleet_page = new_page()
    page.goto(f"{fleet_service.url}/ui/?namespace={NS}")
    fleet_page.goto(f"{fleet_service.url}/ui/fleet")
    expect(page.locator('#workloads tr.workload-row[data-cluster="c"]')).not_to_have_count(0)
    expect_live(page)
    expect_live(fleet_page)
    before = len(rows(page))
    with settled(fleet_service, ["c"]) as c:
        was = next(i for i in c.get("/clusters").json()["items"] if i["name"] == "c")
    expect(fleet_page.locator('.cluster-card[data-cluster="c"] .c-workloads')).to_have_text(str(was["workloads"]))
    mark(page, fleet_page)

    start = time.monotonic()
    _jobset_with_pods(fleet.kubectl["c"], NS, "ui-late")
    fleet.made["c"].append("ui-late")
    late = page.locator('#workloads tr.workload-row[data-cluster="c"][data-name="ui-late"]')
    expect(late).to_have_count(1, timeout=LIVE_MS)
    timings("fleet list: a JobSet created in cluster c -> its row", time.monotonic() - start)
    expect(fleet_page.locator('.cluster-card[data-cluster="c"] .c-workloads')).to_have_text(
        str(was["workloads"] + 1), timeout=LIVE_MS)
    timings("fleet page: a JobSet created in cluster c -> its count", time.monotonic() - start)
    assert len(rows(page)) == before + 1
    not_reloaded(page, fleet_page)
    with settled(fleet_service, ["c"]) as c:
        row = next(r for r in c.get("/workloads", params={"namespace": NS, "cluster": "c"}).json()["items"]
                   if r["workload"]["name"] == "ui-late")
        now = next(i for i in c.get("/clusters").json()["items"] if i["name"] == "c")
    expect(late.locator("td.cluster")).to_have_text("c")
    expect(late.locator(".ready-text")).to_have_text(f'{row["pods"]["ready"]}/{row["pods"]["desired"]}')
    expect(late.locator("td.gpus")).to_have_text(str(row["gpus"]))
    expect(fleet_page.locator('.cluster-card[data-cluster="c"] .c-gpus')).to_have_text(str(now["gpus"]))


# -- a cluster that goes down ------------------------------------------------------------

@pytest.fixture()
def relayed(fleet: Fleet, tmp_path: Path) -> Iterator[tuple[Server, Relay]]:
    """A service over a and b, cluster b reached through a relay (which can drop the network)."""
    relay = Relay(int(urllib.parse.urlsplit(fleet.servers["b"].url).port or 0))
    doc = fleet.kubeconfig_doc("b")
    doc["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    kc = tmp_path / "b-relayed"
    kc.write_text(json.dumps(doc))
    a = fleet.servers["a"]
    s = Server("--kubeconfig", str(a.kubeconfig("service")), "--cluster-name", "a", "--namespace", SERVICE_NS,
               "--cluster", f"b={kc}", "--auth", "none", "--karta-resources", "false",
               "--cluster-probe-interval", "0.5")
    try:
        wait_synced(s, ["a", "b"])
        yield s, relay
    finally:
        relay.up()
        s.stop()
        relay.close()


def test_a_cluster_going_down_shows_without_reload(relayed: tuple[Server, Relay], fleet: Fleet, new_page: Any,
                                                   timings: Any, shots: Any) -> None:
    service, relay = relayed
    fleet_page = new_page()
    page = new_page()
    fleet_page.goto(f"{service.url}/ui/fleet")
    page.goto(f"{service.url}/ui/?namespace={NS}")
    card = fleet_page.locator('.cluster-card[data-cluster="b"]')
    expect(card).to_have_attribute("data-state", "ready")
    b_rows = page.locator('#workloads tr.workload-row[data-cluster="b"]')
    expect(b_rows).to_have_count(len(fleet.made["b"]))
    expect(page.locator("#workloads tr.workload-row.unavailable")).to_have_count(0)
    expect_live(fleet_page)
    expect_live(page)
    mark(page, fleet_page)

    start = time.monotonic()
    relay.down()
    try:
        expect(card).to_have_attribute("data-state", "unavailable", timeout=LIVE_MS)
        timings("fleet page: cluster b unreachable -> said so", time.monotonic() - start)
        expect(card.locator(".cluster-state")).to_have_text("unavailable")
        item = next(i for i in httpx.get(service.url + "/clusters", timeout=10).json()["items"] if i["name"] == "b")
        assert item["available"] is False and item["lastError"]
        expect(card.locator(".cluster-error")).not_to_be_empty()
        expect(fleet_page.locator("#fleet-available .value")).to_have_text("1 of 2")
        # its rows stay, as last seen, dimmed and marked; those of a are untouched
        expect(page.locator("#workloads tr.workload-row.unavailable")).to_have_count(len(fleet.made["b"]),
                                                                                     timeout=LIVE_MS)
        timings("list: cluster b unreachable -> its rows dimmed", time.monotonic() - start)
        expect(b_rows.locator(".unavailable-badge")).to_have_count(len(fleet.made["b"]))
        expect(page.locator('#workloads tr.workload-row[data-cluster="a"].unavailable')).to_have_count(0)
        opacity = b_rows.first.locator("td.name").evaluate("e => getComputedStyle(e).opacity")
        assert float(opacity) < 1
        shots(fleet_page, "ui-fleet-down")
        shots(page, "ui-list-down")
    finally:
        relay.up()
    start = time.monotonic()
    expect(card).to_have_attribute("data-state", "ready", timeout=30000)
    timings("fleet page: cluster b back -> said so", time.monotonic() - start)
    expect(page.locator("#workloads tr.workload-row.unavailable")).to_have_count(0, timeout=LIVE_MS)
    expect(b_rows).to_have_count(len(fleet.made["b"]))
    not_reloaded(page, fleet_page)


# -- one cluster: as before --------------------------------------------------------------

def test_a_single_cluster_service_shows_no_cluster(service: Server, fleet: Fleet, page: Any) -> None:
    """The suite's service reads cluster a alone (train-a is there)."""
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator('#workloads tr.workload-row[data-name="train-a"]')).to_be_visible()
    expect_live(page)
    expect(page.locator("#nav-fleet")).to_be_hidden()
    expect(page.locator("#cluster")).to_be_hidden()
    expect(page.locator("#workloads th.col-cluster")).to_have_count(0)
    expect(page.locator("#workloads td.cluster")).to_have_count(0)
    assert page.locator("#workloads tr.workload-row[data-cluster]").count() == 0
    href = page.locator("#workloads a.workload-link").first.get_attribute("href") or ""
    assert href.startswith("/ui/workloads/")
    # its fleet page (not linked) shows its one cluster
    page.goto(f"{service.url}/ui/fleet")
    expect(page.locator("#clusters .cluster-card")).to_have_count(1)
    expect(page.locator("#clusters .cluster-card")).to_have_attribute("data-state", "ready")


def test_fleet_routes(fleet_service: Server, service: Server) -> None:
    with httpx.Client(base_url=fleet_service.url, timeout=10) as c:
        shell = c.get("/ui/").text
        assert 'data-fleet="true"' in shell and 'id="nav-fleet">' in shell
        for path in ("/ui/fleet", f"/ui/clusters/b/workloads/{NS}/shared", f"/ui/workloads/{NS}/train-a"):
            r = c.get(path)
            assert r.status_code == 200 and r.text == shell, path
        assert c.get("/ui/static/js/views/fleet.js").headers["content-type"].startswith("text/javascript")
    single = httpx.get(service.url + "/ui/", timeout=10).text
    assert 'data-fleet="false"' in single and 'id="nav-fleet" hidden>' in single
