"""The list page of a large fleet (issue 22, item 5): the server filters (phases, label selector,
minimum GPUs), sorts (`sort=`) and pages (`limit` + `continue`); the page never reads every row,
its URL carries the query (Back works), a bad selector shows the server's message by its field,
the stream (same filters, from the read's token) updates page 1 in order and tells a later page
that the list changed; rows and the fleet page show every accelerator.  In Chromium, against the
suite's real API server and service."""

from __future__ import annotations

import copy
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from ..cluster.kubeobjects import Kubectl, pod, running, unschedulable
from ..cluster.util import ROOT, eventually
from ..service.conftest import Server
from .browser import expect, timeout_error

NS = "ui-paging"
# name: (gpus, labels, running?) -- bare Pods; two GPU counts tie (ties go by namespace/name)
PODS = {
    "pg-a": (0, {"team": "vision"}, True),
    "pg-b": (2, {"team": "vision", "tier": "gpu"}, True),
    "pg-c": (8, {"team": "vision", "tier": "gpu"}, False),
    "pg-d": (4, {"team": "nlp", "tier": "gpu"}, True),
    "pg-e": (1, {"team": "nlp", "tier": "gpu"}, False),
    "pg-f": (12, {"team": "nlp", "tier": "gpu"}, True),
    "pg-g": (2, {"team": "nlp", "tier": "gpu"}, True),
}
ACCEL = list(yaml.safe_load_all((ROOT / "tests" / "data" / "manifests" / "accelerators.yaml").read_text()))
ALL = len(PODS) + len(ACCEL)


def api(service: Server, **params: Any) -> dict[str, Any]:
    with service.client() as c:
        r = c.get("/workloads", params={"namespace": NS, **params})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def names(body: dict[str, Any]) -> list[str]:
    return [r["workload"]["name"] for r in body["items"]]


def every_page(service: Server, **params: Any) -> list[str]:
    """The whole list in the server's order, read page by page (as a client that pages would)."""
    out: list[str] = []
    token = None
    while True:
        body = api(service, **params, **({"continue": token} if token else {}))
        out += names(body)
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return out


@pytest.fixture(scope="module")
def paging(kubectl: Kubectl, service: Server) -> dict[str, Any]:
    kubectl.ensure_namespace(NS)
    for name, (gpus, labels, up) in PODS.items():
        p = kubectl.apply(pod(NS, name, None, labels=labels, gpus=gpus, node="gpu-node-0" if up else None))
        kubectl.set_status(p, running("gpu-node-0") if up else unschedulable())
    for doc in ACCEL:  # an AMD Deployment, and MIG workers with an Intel sidecar
        doc = copy.deepcopy(doc)
        doc["metadata"].pop("uid")
        doc["metadata"]["namespace"] = NS
        kubectl.apply(doc)
    eventually(lambda: len(api(service)["items"]) == ALL and all(r.get("phase") for r in api(service)["items"]),
               timeout=20, what="every row of the namespace")
    return {}


class Requests:
    """The page's requests to /workloads: plain reads and streams, with their query."""

    def __init__(self, page: Any):
        self.urls: list[str] = []
        page.on("request", lambda r: self.urls.append(r.url))

    def _of(self, watch: bool) -> list[dict[str, list[str]]]:
        out = []
        for u in self.urls:
            parts = urllib.parse.urlsplit(u)
            q = urllib.parse.parse_qs(parts.query)
            if parts.path == "/workloads" and (q.get("watch") == ["true"]) == watch:
                out.append(q)
        return out

    def reads(self) -> list[dict[str, list[str]]]:
        return self._of(False)

    def streams(self) -> list[dict[str, list[str]]]:
        return self._of(True)


def rows(page: Any) -> list[str]:
    return page.locator("#workloads tr.workload-row").evaluate_all("rs => rs.map(r => r.dataset.name)")


def shows(page: Any, expected: list[str]) -> None:
    try:
        _shows(page, expected)
    except timeout_error():
        raise AssertionError(f"the page shows {rows(page)}, not {expected}") from None


def _shows(page: Any, expected: list[str]) -> None:
    page.wait_for_function("names => JSON.stringify([...document.querySelectorAll('#workloads tr.workload-row')]"
                           ".map(r => r.dataset.name)) === JSON.stringify(names)", arg=expected, timeout=10000)


def read_done(page: Any) -> None:
    expect(page.locator("#refresh")).to_be_enabled()


# -- filters --------------------------------------------------------------------------------

def test_filters_are_applied_by_the_server_and_kept_in_the_url(service: Server, paging: Any, page: Any,
                                                                shots: Any) -> None:
    seen = Requests(page)
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(ALL)

    page.click("#phase summary")
    page.check('#phase input[data-phase="Running"]')
    page.fill("#label-selector", "team=nlp,tier in (gpu)")
    page.press("#label-selector", "Enter")
    page.fill("#min-gpus", "2")
    page.press("#min-gpus", "Enter")
    want = api(service, phase="Running", labelSelector="team=nlp,tier in (gpu)", minGpus=2)
    assert sorted(names(want)) == ["pg-d", "pg-f", "pg-g"]  # the ground truth: running, nlp, 2 GPUs or more
    shows(page, names(want))

    # the read asked the server (not the browser) to filter, and a page of rows, not every row
    last = seen.reads()[-1]
    assert last["phase"] == ["Running"] and last["labelSelector"] == ["team=nlp,tier in (gpu)"]
    assert last["minGpus"] == ["2"] and last["limit"] == ["50"]
    # the stream follows the same filters, from the read's token (not a snapshot of every row)
    read_done(page)
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    stream = seen.streams()[-1]
    assert stream["phase"] == ["Running"] and stream["labelSelector"] == ["team=nlp,tier in (gpu)"]
    assert stream["minGpus"] == ["2"] and stream.get("resumeFrom")
    for name in ("pg-d", "pg-f", "pg-g"):
        expect(page.locator(f'tr.workload-row[data-name="{name}"] td.phase .chip')).to_have_text("Running")
    shots(page, "ui-list-filtered")

    # the page URL says it all: shareable, and Back returns to the query before
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)
    assert query == {"namespace": [NS], "phase": ["Running"], "labelSelector": ["team=nlp,tier in (gpu)"],
                     "minGpus": ["2"]}
    page.go_back()
    shows(page, names(api(service, phase="Running", labelSelector="team=nlp,tier in (gpu)")))
    assert "minGpus" not in page.url
    expect(page.locator("#min-gpus")).to_have_value("")
    page.go_forward()
    shows(page, names(want))
    other = page.context.new_page()
    other.goto(page.url)
    expect(other.locator("#label-selector")).to_have_value("team=nlp,tier in (gpu)")
    expect(other.locator('#phase input[data-phase="Running"]')).to_be_checked()
    shows(other, names(want))


def test_a_bad_label_selector_shows_the_servers_message_by_the_field(service: Server, paging: Any,
                                                                     page: Any) -> None:
    bad = "team in (nlp"
    with service.client() as c:
        problem = c.get("/workloads", params={"namespace": NS, "labelSelector": bad}).json()
    assert problem["status"] == 400 and problem["detail"].startswith("labelSelector: ")
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(ALL)
    page.fill("#label-selector", bad)
    page.press("#label-selector", "Enter")
    error = page.locator("#label-selector-error")
    expect(error).to_be_visible()
    expect(error).to_have_text(problem["detail"].removeprefix("labelSelector: "))
    expect(page.locator("#label-selector")).to_have_attribute("aria-invalid", "true")
    # the page is whole: its controls stay, no page-wide error, no stale rows
    expect(page.locator("#notices .notice")).to_have_count(0)
    expect(page.locator("#workloads tr.workload-row")).to_have_count(0)
    expect(page.locator("#kind")).to_be_visible()
    # corrected: the message goes, the rows come
    page.fill("#label-selector", "team in (nlp)")
    page.press("#label-selector", "Enter")
    shows(page, names(api(service, labelSelector="team in (nlp)")))
    expect(error).to_be_hidden()


# -- order and pages ------------------------------------------------------------------------

def test_sorting_by_gpus_is_done_by_the_server(service: Server, paging: Any, page: Any) -> None:
    seen = Requests(page)
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(ALL)
    page.click("th[data-sort=gpus]")  # a number: largest first
    want = api(service, sort="-gpus")
    shows(page, names(want))
    assert seen.reads()[-1]["sort"] == ["-gpus"]
    assert "sort=-gpus" in page.url
    expect(page.locator("th[data-sort=gpus]")).to_have_attribute("aria-sort", "descending")
    gpus = [int(t) for t in page.locator("#workloads td.gpus .gpu-count").all_inner_texts()]
    assert gpus == sorted(gpus, reverse=True) and gpus[0] == 16
    page.click("th[data-sort=gpus]")
    shows(page, names(api(service, sort="gpus")))
    assert seen.reads()[-1]["sort"] == ["gpus"]
    # a column the server cannot order by is not offered as sortable
    expect(page.locator("th.col-ready")).not_to_have_class("sortable")


def test_the_page_orders_rows_as_the_server_does(service: Server, paging: Any, page: Any) -> None:
    """Where page 1 inserts a row the stream brings (app/ui/static/js/order.js) is where the
    server's sort puts it (app/cluster/listing.py): every sort, ties on GPUs and on age included."""
    rows_ = api(service)["items"]
    rows_.append({**rows_[0], "workload": {**rows_[0]["workload"], "name": "zz-unknown"}, "gpus": None,
                  "createdAt": None, "phase": None})  # unknown values: last either way
    page.goto(f"{service.url}/ui/interpret")
    for sort in ("namespace", "name", "gpus", "-gpus", "age", "-age", "phase", "-phase"):
        server = names(api(service, sort=sort))
        browser = page.evaluate("""async ([sort, rows]) => {
            const { compareRows } = await import("/ui/static/js/order.js");
            return [...rows].reverse().sort((a, b) => compareRows(sort, a, b)).map(r => r.workload.name); }""",
                                [sort, rows_])
        assert [n for n in browser if n != "zz-unknown"] == server, sort
        if sort != "name":  # (by name, "zz-unknown" sorts last anyway)
            assert browser[-1] == "zz-unknown", sort


def test_paging_forward_and_back_sees_every_row_once(service: Server, paging: Any, page: Any) -> None:
    seen = Requests(page)
    everything = every_page(service, sort="-gpus")
    assert sorted(everything) == sorted(names(api(service)))  # the ground truth: all rows, each once
    page.goto(f"{service.url}/ui/?namespace={NS}&sort=-gpus&limit=3")
    pages: list[list[str]] = []
    while True:
        expect(page.locator("#page-info")).to_contain_text(f"Page {len(pages) + 1}")
        read_done(page)
        shown = rows(page)
        assert 0 < len(shown) <= 3
        pages.append(shown)
        if page.locator("#page-next").is_disabled():
            break
        page.click("#page-next")
    assert [n for p in pages for n in p] == everything  # none repeated, none missed, in order
    assert len(pages) == -(-ALL // 3)
    # no read asked for more than a page
    assert seen.reads() and all(q["limit"] == ["3"] for q in seen.reads())
    # Previous walks the same pages back
    for expected in reversed(pages[:-1]):
        page.click("#page-prev")
        shows(page, expected)
    expect(page.locator("#page-prev")).to_be_disabled()
    page.click("#page-next")
    page.click("#page-next")
    shows(page, pages[2])
    page.click("#page-first")
    shows(page, pages[0])
    expect(page.locator("#page-info")).to_have_text("Page 1")


# -- accelerators -----------------------------------------------------------------------------

def test_accelerators_show_on_the_list_and_the_fleet_page(service: Server, paging: Any, page: Any) -> None:
    page.goto(f"{service.url}/ui/?namespace={NS}")
    mig = page.locator('tr.workload-row[data-name="mig-workers"] td.gpus')
    expect(mig.locator(".gpu-count")).to_have_text("3")  # whole GPUs: the Intel devices, not the MIG slices
    expect(mig.locator(".acc")).to_have_text(["3 × gpu.intel.com/i915", "6 × nvidia.com/mig-1g.10gb"])
    amd = page.locator('tr.workload-row[data-name="vllm-mi300"] td.gpus')
    expect(amd.locator(".gpu-count")).to_have_text("16")
    expect(amd.locator(".acc")).to_have_text(["16 × amd.com/gpu"])
    # plain NVIDIA GPUs are the GPUs column itself
    expect(page.locator('tr.workload-row[data-name="pg-f"] td.gpus')).to_have_text("12")

    with service.client() as c:
        clusters = c.get("/clusters").json()["items"]
    acc = clusters[0]["accelerators"]
    assert acc["amd.com/gpu"] >= 16 and acc["nvidia.com/mig-1g.10gb"] >= 6
    page.goto(f"{service.url}/ui/fleet")
    card = page.locator(f'.cluster-card[data-cluster="{clusters[0]["name"]}"]')
    items = card.locator(".c-accelerators li")
    expect(items).to_have_text([f"{n} × {k}" for k, n in sorted(acc.items()) if n > 0])
    expect(card.locator('.c-accelerators li[data-resource="nvidia.com/mig-1g.10gb"]')).to_be_visible()


# -- live -------------------------------------------------------------------------------------

def test_a_list_read_gives_the_token_its_stream_resumes_from(service: Server, paging: Any, kubectl: Kubectl) -> None:
    body = api(service, limit=2, sort="-gpus")
    token = body["metadata"]["resumeFrom"]
    kubectl.apply(pod(NS, "pg-token", None, labels={"team": "nlp"}, gpus=1))
    try:
        eventually(lambda: "pg-token" in names(api(service)), timeout=10, what="the new pod's row")
        with httpx.Client(base_url=service.url, timeout=10) as c, c.stream(
                "GET", "/workloads", params={"namespace": NS, "labelSelector": "team=nlp", "watch": "true",
                                             "resumeFrom": token}) as r:
            assert r.status_code == 200
            events = []
            for line in r.iter_lines():
                if line:
                    events.append(json.loads(line))
                if events and events[-1].get("initialEventsEnd"):
                    break
        # only what changed since the read (the new pod), not every row of the filter again
        got = {e["object"]["workload"]["name"] for e in events if e["type"] != "BOOKMARK"}
        assert got == {"pg-token"}, events
    finally:
        kubectl.delete("v1", "Pod", NS, "pg-token")


@pytest.fixture()
def extra(kubectl: Kubectl, service: Server) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:
        kubectl.delete("v1", "Pod", NS, name)
    eventually(lambda: len(api(service)["items"]) == ALL, timeout=20, what="the extra pods gone")


def test_the_stream_updates_page_one_in_order_and_tells_a_later_page(service: Server, paging: Any,
                                                                    kubectl: Kubectl, page: Any,
                                                                    extra: list[str], shots: Any) -> None:
    seen = Requests(page)
    page.goto(f"{service.url}/ui/?namespace={NS}&sort=-gpus&limit=3")
    first = names(api(service, sort="-gpus", limit=3))
    shows(page, first)
    expect(page.locator("#live")).to_have_attribute("data-state", "live")

    def create(name: str, gpus: int) -> None:
        extra.append(name)
        p = kubectl.apply(pod(NS, name, None, labels={"team": "nlp"}, gpus=gpus))  # (no node: deleted at once)
        kubectl.set_status(p, running("gpu-node-0"))

    # 10 GPUs: between the rows of page 1, inserted in its place; 0 GPUs: a later page's, not shown here
    create("pg-live", 10)
    create("pg-small", 0)
    want = sorted([*first, "pg-live"], key=lambda n: -({**{k: v[0] for k, v in PODS.items()},
                                                        "vllm-mi300": 16, "pg-live": 10}[n]))
    shows(page, want)
    expect(page.locator('tr.workload-row[data-name="pg-live"] td.gpus')).to_have_text("10")
    page.wait_for_timeout(300)  # (the other pod's events have come too)
    assert "pg-small" not in rows(page)
    kubectl.delete("v1", "Pod", NS, "pg-live")
    shows(page, first)
    # all of it through the one stream, opened from the read's token: one read
    assert len(seen.reads()) == 1 and len(seen.streams()) == 1 and seen.streams()[0].get("resumeFrom")

    # a later page: a row coming into its range is told, not inserted; Refresh reads the page again
    page.click("#page-next")
    second = names(api(service, sort="-gpus", limit=3, **{"continue": api(service, sort="-gpus", limit=3)
                                                           ["metadata"]["continue"]}))
    shows(page, second)
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    expect(page.locator("#list-changed")).to_be_hidden()
    create("pg-mid", 3)  # between pg-d (4) and pg-b/pg-g (2): page 2's range
    expect(page.locator("#list-changed")).to_be_visible()
    assert "pg-mid" not in rows(page)
    shots(page, "ui-list-page-2-changed")
    page.click("#reread")
    expect(page.locator('tr.workload-row[data-name="pg-mid"]')).to_have_count(1)
    expect(page.locator("#list-changed")).to_be_hidden()
    expect(page.locator("#page-info")).to_contain_text("Page 2")
