"""The pages follow the cluster: after the first answer the list and the workload page read the
service's watch streams, so a change in the API server shows within 2 s, without Refresh (no
click, no other read: the tests count the page's requests, and the periodic refresh of the list
is off while streams work).  Also: a network drop is resumed from the last event id, a service
restart (a token it cannot resume from, 410) starts over from a fresh state, and a service
without streams (--cache false, no cluster) falls back to Refresh, saying so."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..cluster.fixtures import SERVICE_NS
from ..cluster.kubeobjects import Kubectl, pod, running
from ..cluster.test_workloads import _jobset_with_pods
from ..cluster.util import fixture_object
from ..service.conftest import Server
from .browser import expect
from .relay import Relay
from .world import _not_ready, _pytorchjob

NS = "ui-live"
BOUND_MS = 2000  # a change must be on screen within this, without a click
PYTORCH = "definitions/kubeflow.org/PyTorchJob/v1/testdata"
TRAINER = "live-train-trainer-0-0"  # a ready pod of the JobSet live-train (4/7 ready)
WORKER = "live-big-worker-3"  # a ready worker of the PyTorchJob live-big (30/32 workers ready)
BIG = 32


@pytest.fixture(scope="module")
def live(kubectl: Kubectl) -> dict[str, Any]:
    kubectl.ensure_namespace(NS)
    out = {"train": _jobset_with_pods(kubectl, NS, "live-train"), "big": _pytorchjob(kubectl, NS, "live-big", BIG)}
    shell = kubectl.apply(pod(NS, "live-shell", None, node="cpu-node-1"))
    kubectl.set_status(shell, running("cpu-node-1"))
    return out


def pod_ref(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}}


def set_ready(kubectl: Kubectl, name: str, ready: bool) -> None:
    kubectl.set_status(pod_ref(name), running("n") if ready else _not_ready("ContainersNotReady"))


class Traffic:
    """What a page asks the API for: plain reads, streams (with their Last-Event-ID), the answers,
    the requests aborted, and any complaint of the Content-Security-Policy."""

    def __init__(self, page: Any):
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.answers: list[tuple[str, int]] = []
        self.aborted: list[str] = []
        self.csp: list[str] = []
        page.on("request", lambda r: self.requests.append((r.url, r.headers)))
        page.on("response", lambda r: self.answers.append((r.url, r.status)))
        page.on("requestfailed", lambda r: self.aborted.append(r.url))
        page.on("console", lambda m: self.csp.append(m.text) if "Content Security Policy" in m.text else None)

    @staticmethod
    def _watch(url: str) -> bool:
        return "watch=true" in urllib.parse.urlsplit(url).query

    def reads(self, path: str) -> list[str]:
        """Plain (not stream) reads of the API path."""
        return [u for u, _ in self.requests if urllib.parse.urlsplit(u).path == path and not self._watch(u)]

    def streams(self, path: str | None = None) -> list[tuple[str, dict[str, str]]]:
        return [(u, h) for u, h in self.requests if self._watch(u) and (path is None or urllib.parse.urlsplit(u).path == path)]

    def stream_answers(self) -> list[tuple[str, int]]:
        return [(u, s) for u, s in self.answers if self._watch(u)]


def until(page: Any, check: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for something the page's events tell (they arrive while the page is waited on)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not seen in time"
        page.wait_for_timeout(50)


def count_refresh_clicks(page: Any) -> None:
    page.evaluate("""() => { window.refreshClicks = 0;
        document.addEventListener("click", e => { if (e.target.closest("#refresh")) window.refreshClicks++; }, true); }""")


def no_refresh_clicked(page: Any) -> None:
    assert page.evaluate("window.refreshClicks") == 0


def shows_within(page: Any, change: Callable[[], Any], predicate: str, arg: Any, timeout_ms: int = BOUND_MS) -> float:
    """Make the change, wait (checking every frame) until `predicate(arg)` holds in the page;
    the seconds from just before the change until then."""
    start = time.monotonic()
    change()
    page.wait_for_function(predicate, arg=arg, polling="raf", timeout=timeout_ms)
    return time.monotonic() - start


READY_TEXT = """([name, text]) => {
    const e = document.querySelector(`#workloads tr.workload-row[data-name="${name}"] .ready-text`);
    return !!e && e.textContent === text; }"""
ROW_COUNT = """([name, n]) => document.querySelectorAll(`#workloads tr.workload-row[data-name="${name}"]`).length === n"""
POD_STATE = """([pod, ready, box, text]) => {
    const p = document.querySelector(`svg#tree g.pod[data-pod="${pod}"]`);
    const b = document.querySelector(`svg#tree ${box}`);
    return !!p && !!b && p.dataset.ready === String(ready) && b.textContent.includes(text); }"""


def expect_live(page: Any) -> None:
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#updated")).to_contain_text("updated")


def rows(page: Any) -> list[str]:
    return page.locator("#workloads tr.workload-row").evaluate_all("rs => rs.map(r => r.dataset.name)")


# -- the list --------------------------------------------------------------------------

def test_list_follows_the_cluster(service: Server, live: dict[str, Any], kubectl: Kubectl, page: Any,
                                  timings: Any, shots: Any) -> None:
    traffic = Traffic(page)
    page.goto(f"{service.url}/ui/?namespace={NS}&sort=name")
    row = page.locator('tr.workload-row[data-name="live-train"]')
    expect(row.locator(".ready-text")).to_have_text("4/7")
    expect_live(page)
    count_refresh_clicks(page)
    # no timer does the work: auto-refresh (15 s) is off, and not even offered while live
    expect(page.locator("#auto-refresh")).not_to_be_checked()
    expect(page.locator("#auto-refresh-label")).to_be_hidden()
    assert rows(page) == ["live-big", "live-shell", "live-train"]
    expect(page.locator("#stat-pods .value")).to_have_text(f"{4 + BIG - 1 + 1} / {7 + BIG + 1 + 1}")
    shell_row = page.locator('tr.workload-row[data-name="live-shell"]').element_handle()
    shots(page, "ui-list-live")

    try:
        took = shows_within(page, lambda: set_ready(kubectl, TRAINER, False), READY_TEXT, ["live-train", "3/7"])
        timings("list: a pod not ready -> the row's Ready", took)
        # the figures follow; the other rows were left alone (updated in place, not redrawn)
        expect(page.locator("#stat-pods .value")).to_have_text(f"{3 + BIG - 1 + 1} / {7 + BIG + 1 + 1}")
        assert page.evaluate("e => e.isConnected", shell_row)
        expect(row).to_have_class("workload-row changed")  # pointed at, briefly
    finally:
        took = shows_within(page, lambda: set_ready(kubectl, TRAINER, True), READY_TEXT, ["live-train", "4/7"])
    timings("list: the pod ready again -> the row's Ready", took)

    # a workload created while the page is open: in its place by name; filtered out when the filter says so
    page.fill("#filter", "train")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(1)
    job, status = fixture_object(f"{PYTORCH}/created.yaml", NS, "live-mid")
    created: list[Any] = []
    try:
        took = shows_within(page, lambda: created.append(kubectl.set_status(kubectl.apply(job), status)),
                            "() => document.querySelector('#stat-workloads .value').textContent === '1 of 4'", None)
        timings("list: a workload created (filtered out) -> the figures", took)
        assert rows(page) == ["live-train"]
        page.fill("#filter", "")
        assert rows(page) == ["live-big", "live-mid", "live-shell", "live-train"]
        expect(page.locator('tr.workload-row[data-name="live-mid"] td.kind-cell')).to_contain_text("PyTorchJob")
    finally:
        took = shows_within(page, lambda: kubectl.delete("kubeflow.org/v1", "PyTorchJob", NS, "live-mid"),
                            ROW_COUNT, ["live-mid", 0])
    timings("list: a workload deleted -> its row gone", took)
    assert rows(page) == ["live-big", "live-shell", "live-train"]
    expect(page.locator("#stat-workloads .value")).to_have_text("3")

    # a new workload that was not filtered out
    solo = kubectl.apply(pod(NS, "live-solo", None))
    try:
        took = shows_within(page, lambda: kubectl.set_status(solo, running("n")), READY_TEXT, ["live-solo", "1/1"])
        timings("list: a workload created -> its row", took)
        assert rows(page) == ["live-big", "live-shell", "live-solo", "live-train"]
    finally:
        kubectl.delete("v1", "Pod", NS, "live-solo")
    page.wait_for_function(ROW_COUNT, arg=["live-solo", 0], polling="raf", timeout=BOUND_MS)

    # all of it came through the one stream: one read, one stream, no click, no retry
    expect_live(page)
    no_refresh_clicked(page)
    assert len(traffic.reads("/workloads")) == 1, traffic.reads("/workloads")
    assert len(traffic.streams("/workloads")) == 1
    assert traffic.stream_answers() and all(s == 200 for _, s in traffic.stream_answers())
    assert traffic.csp == []


def test_list_stream_follows_the_filters_and_refresh(service: Server, live: dict[str, Any], kubectl: Kubectl,
                                                     page: Any, timings: Any) -> None:
    traffic = Traffic(page)
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect_live(page)
    (first, _), = traffic.streams("/workloads")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(first).query)
    assert query.pop("resumeFrom")  # from the read's token: what changed since, not every row again
    assert query == {"namespace": [NS], "watch": ["true"]}

    # another kind: that kind's stream replaces the one of all kinds
    page.select_option("#kind", "JobSet")
    page.wait_for_function("n => document.querySelectorAll('#workloads tr.workload-row').length === n", arg=1)
    expect_live(page)
    streams = traffic.streams("/workloads")
    assert len(streams) == 2 and "kind=JobSet" in streams[1][0]
    until(page, lambda: first in traffic.aborted)
    took = shows_within(page, lambda: set_ready(kubectl, TRAINER, False), READY_TEXT, ["live-train", "3/7"])
    timings("list filtered by kind: a pod not ready -> the row's Ready", took)

    # Refresh still reads the list (and starts the stream over from there)
    page.select_option("#kind", "")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(3)
    expect_live(page)
    reads = len(traffic.reads("/workloads"))
    page.click("#refresh")
    expect(page.locator("#refresh")).to_be_enabled()
    expect_live(page)
    assert len(traffic.reads("/workloads")) == reads + 1
    took = shows_within(page, lambda: set_ready(kubectl, TRAINER, True), READY_TEXT, ["live-train", "4/7"])
    timings("list after Refresh: the pod ready again -> the row's Ready", took)

    # another namespace: the stream of this one is closed, the other's opened
    before = len(traffic.streams("/workloads"))
    page.fill("#namespace", "ui-live-nothing")
    page.press("#namespace", "Enter")
    expect(page.locator("#workloads td.empty")).to_have_text("No workloads in namespace “ui-live-nothing”.")
    expect_live(page)
    last = traffic.streams("/workloads")[-1][0]
    assert len(traffic.streams("/workloads")) == before + 1 and "namespace=ui-live-nothing" in last
    previous = traffic.streams("/workloads")[-2][0]
    until(page, lambda: previous in traffic.aborted)

    # leaving the page closes the stream
    page.goto(f"{service.url}/ui/interpret")
    expect(page.locator("#manifest")).to_be_visible()
    until(page, lambda: last in traffic.aborted)
    assert traffic.csp == []


# -- one workload ----------------------------------------------------------------------

def test_workload_page_follows_its_pods(service: Server, live: dict[str, Any], kubectl: Kubectl, page: Any,
                                        timings: Any) -> None:
    traffic = Traffic(page)
    path = f"/workloads/{NS}/live-train"
    page.goto(f"{service.url}/ui{path}?kind=JobSet")
    tree = page.locator("svg#tree")
    trainer = tree.locator('g.instance[data-id="trainer"]')
    expect(trainer).to_contain_text("3/4 ready")
    expect(tree.locator(f'g.pod[data-pod="{TRAINER}"]')).to_have_attribute("data-ready", "true")
    expect_live(page)
    count_refresh_clicks(page)
    # the reader is further down the page: an update must not move them
    page.evaluate("window.scrollTo(0, 420)")
    assert page.evaluate("scrollY") == 420

    try:
        took = shows_within(page, lambda: set_ready(kubectl, TRAINER, False), POD_STATE,
                            [TRAINER, False, 'g.instance[data-id="trainer"]', "2/4 ready"])
        timings("workload page: a pod not ready -> its box and the ready count", took)
        expect(tree.locator(f'g.pod[data-pod="{TRAINER}"]')).to_contain_text("ContainersNotReady")
        expect(tree.locator('g.component[data-name="jobset"]')).to_contain_text("3/7 ready")
        expect(page.locator("#stat-ready .value")).to_have_text("3 / 7")
        expect(page.locator(f'#pods-table tr[data-pod="{TRAINER}"]')).to_contain_text("Not ready")
        expect(page.locator('#resources-table tr[data-instance="trainer"]')).to_contain_text("2/4")
        assert page.evaluate("scrollY") == 420
    finally:
        took = shows_within(page, lambda: set_ready(kubectl, TRAINER, True), POD_STATE,
                            [TRAINER, True, 'g.instance[data-id="trainer"]', "3/4 ready"])
    timings("workload page: the pod ready again -> its box and the ready count", took)
    expect(tree.locator('g.component[data-name="jobset"]')).to_contain_text("4/7 ready")
    assert page.evaluate("scrollY") == 420

    expect_live(page)
    no_refresh_clicked(page)
    assert len(traffic.reads(path)) == 1
    assert len(traffic.streams(path)) == 1
    assert traffic.csp == []


def test_workload_page_keeps_the_place_in_a_large_tree(service: Server, live: dict[str, Any], kubectl: Kubectl,
                                                       new_page: Any, timings: Any) -> None:
    page = new_page({"width": 1100, "height": 600})  # the picture is taller than its card
    page.goto(f"{service.url}/ui/workloads/{NS}/live-big?kind=PyTorchJob")
    tree = page.locator("svg#tree")
    expect(tree.locator("g.pod")).to_have_count(BIG + 1)
    expect_live(page)
    # scrolled inside the picture (it is taller than its card) and down the page
    inner = page.evaluate("""() => { const s = document.getElementById('tree-scroll');
        s.scrollTop = s.scrollHeight; window.scrollTo(0, 300); return s.scrollTop; }""")
    assert inner > 100
    grid = f'g.grid[data-pods="{BIG}"]'
    try:
        took = shows_within(page, lambda: set_ready(kubectl, WORKER, False), POD_STATE,
                            [WORKER, False, grid, f"{BIG} pods · {BIG - 3} ready"])
        timings("workload page, 33 pods: a pod not ready -> the grid", took)
        expect(tree.locator('g.component[data-name="worker"]')).to_contain_text(f"{BIG - 3}/{BIG} ready")
        assert page.evaluate("[document.getElementById('tree-scroll').scrollTop, scrollY]") == [inner, 300]
    finally:
        set_ready(kubectl, WORKER, True)
    page.wait_for_function(POD_STATE, arg=[WORKER, True, grid, f"{BIG - 2} ready"], polling="raf", timeout=BOUND_MS)
    assert page.evaluate("[document.getElementById('tree-scroll').scrollTop, scrollY]") == [inner, 300]


def test_workload_page_says_when_the_workload_goes_and_comes_back(service: Server, kubectl: Kubectl, page: Any,
                                                                  timings: Any) -> None:
    kubectl.ensure_namespace(NS)
    job, status = fixture_object(f"{PYTORCH}/running.yaml", NS, "live-brief")
    kubectl.set_status(kubectl.apply(job), status)
    try:
        page.goto(f"{service.url}/ui/workloads/{NS}/live-brief?kind=PyTorchJob")
        expect(page.locator("#head-phase .chip")).to_have_text("Running")
        expect_live(page)
        took = shows_within(page, lambda: kubectl.delete("kubeflow.org/v1", "PyTorchJob", NS, "live-brief"),
                            "() => !!document.getElementById('deleted')", None)
        timings("workload page: the workload deleted -> said so", took)
        expect(page.locator("#deleted")).to_contain_text("This workload was deleted")
        expect(page.locator("svg#tree")).to_be_visible()  # its last state stays, greyed
        took = shows_within(page, lambda: kubectl.set_status(kubectl.apply(job), status),
                            "() => !document.getElementById('deleted')", None)
        timings("workload page: the workload back -> shown again", took)
        expect(page.locator("#head-phase .chip")).to_have_text("Running")
    finally:
        kubectl.delete("kubeflow.org/v1", "PyTorchJob", NS, "live-brief")


# -- drops, restarts, no streams ---------------------------------------------------------

@pytest.fixture()
def relay(service: Server) -> Iterator[Relay]:
    r = Relay(service.port)
    yield r
    r.close()


def test_a_network_drop_is_resumed_from_the_last_event(relay: Relay, live: dict[str, Any], kubectl: Kubectl,
                                                       new_page: Any, timings: Any) -> None:
    listing, one = new_page(), new_page()
    lt, ot = Traffic(listing), Traffic(one)
    listing.goto(f"{relay.url}/ui/?namespace={NS}")
    one.goto(f"{relay.url}/ui/workloads/{NS}/live-train?kind=JobSet")
    for p in (listing, one):
        expect_live(p)
    expect(one.locator('svg#tree g.instance[data-id="trainer"]')).to_contain_text("3/4 ready")

    relay.down()
    for p in (listing, one):
        expect(p.locator("#live")).to_have_attribute("data-state", "reconnecting")
        expect(p.locator("#live-state")).to_have_text("reconnecting…")
    try:
        set_ready(kubectl, TRAINER, False)  # while the pages cannot hear it
        time.sleep(1)
        start = time.monotonic()
        relay.up()
        listing.wait_for_function(READY_TEXT, arg=["live-train", "3/7"], polling="raf", timeout=20000)
        one.wait_for_function(POD_STATE, arg=[TRAINER, False, 'g.instance[data-id="trainer"]', "2/4 ready"],
                              polling="raf", timeout=20000)
        timings("after a network drop: back up -> the change missed shown (backoff included)", time.monotonic() - start)
    finally:
        set_ready(kubectl, TRAINER, True)
    listing.wait_for_function(READY_TEXT, arg=["live-train", "4/7"], polling="raf", timeout=BOUND_MS)
    for p in (listing, one):
        expect_live(p)

    # it came by resuming: the later streams carried the last id and were answered, not refused;
    # nothing was read again, and no row is there twice
    for t, path in ((lt, "/workloads"), (ot, f"/workloads/{NS}/live-train")):
        streams = t.streams(path)
        assert len(streams) >= 2 and "last-event-id" not in streams[0][1]
        assert all(h.get("last-event-id") for _, h in streams[1:]), streams
        assert all(s == 200 for _, s in t.stream_answers())
        assert len(t.reads(path)) == 1
    assert rows(listing).count("live-train") == 1


def test_a_restarted_service_is_followed_from_a_fresh_state(relay: Relay, apiserver: Any, live: dict[str, Any],
                                                            kubectl: Kubectl, new_page: Any, timings: Any) -> None:
    extra = kubectl.apply(pod(NS, "live-extra", None))
    kubectl.set_status(extra, running("n"))
    listing, one = new_page(), new_page()
    lt, ot = Traffic(listing), Traffic(one)
    listing.goto(f"{relay.url}/ui/?namespace={NS}")
    one.goto(f"{relay.url}/ui/workloads/{NS}/live-train?kind=JobSet")
    expect(listing.locator('tr.workload-row[data-name="live-extra"]')).to_have_count(1)
    for p in (listing, one):
        expect_live(p)

    relay.down()
    other = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
                   "--auth", "none", "--eval-deadline", "2")
    try:
        # while the pages are cut off: a workload goes, a pod changes; then the address leads to a
        # new process, which cannot resume from the old one's ids (410)
        kubectl.delete("v1", "Pod", NS, "live-extra")
        set_ready(kubectl, TRAINER, False)
        relay.target(other.port)
        start = time.monotonic()
        relay.up()
        listing.wait_for_function("""() => !document.querySelector('tr.workload-row[data-name="live-extra"]')
            && document.querySelector('tr.workload-row[data-name="live-train"] .ready-text').textContent === '3/7'""",
                                  polling="raf", timeout=30000)
        one.wait_for_function(POD_STATE, arg=[TRAINER, False, 'g.instance[data-id="trainer"]', "2/4 ready"],
                              polling="raf", timeout=30000)
        timings("after a restart: back up -> the fresh state shown (backoff and 410 included)", time.monotonic() - start)
        for p in (listing, one):
            expect_live(p)
        for t in (lt, ot):
            refused = [u for u, s in t.stream_answers() if s == 410]
            assert refused, t.stream_answers()
            last_url, last_headers = t.streams()[-1]
            assert "last-event-id" not in last_headers  # opened afresh after the 410
            assert t.stream_answers()[-1] == (last_url, 200)
        # and it is live on the new process
        took = shows_within(listing, lambda: set_ready(kubectl, TRAINER, True), READY_TEXT, ["live-train", "4/7"])
        timings("after a restart: a pod ready again -> the row's Ready", took)
    finally:
        set_ready(kubectl, TRAINER, True)
        kubectl.delete("v1", "Pod", NS, "live-extra")
        relay.down()
        other.stop()


def test_without_streams_the_pages_say_so_and_refresh_still_works(apiserver: Any, live: dict[str, Any],
                                                                  kubectl: Kubectl, bare: Server, page: Any,
                                                                  shots: Any) -> None:
    direct = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
                    "--auth", "none", "--cache", "false")
    try:
        traffic = Traffic(page)
        page.goto(f"{direct.url}/ui/?namespace={NS}")
        row = page.locator('tr.workload-row[data-name="live-train"]')
        expect(row.locator(".ready-text")).to_have_text("4/7")
        expect(page.locator("#live")).to_have_attribute("data-state", "off")
        expect(page.locator("#live-state")).to_have_text("updates paused")
        expect(page.locator("#live-hint")).to_be_visible()
        assert "--cache false" in page.locator("#live").get_attribute("title")
        expect(page.locator("#auto-refresh-label")).to_be_visible()  # the timer is offered again
        shots(page, "ui-list-no-streams")
        try:
            set_ready(kubectl, TRAINER, False)
            page.click("#refresh")
            expect(row.locator(".ready-text")).to_have_text("3/7")
        finally:
            set_ready(kubectl, TRAINER, True)
        assert [s for _, s in traffic.stream_answers()] == [400]  # asked once, not again on Refresh

        page.goto(f"{direct.url}/ui/workloads/{NS}/live-train?kind=JobSet")
        expect(page.locator('svg#tree g.instance[data-id="trainer"]')).to_contain_text("3/4 ready")
        expect(page.locator("#live")).to_have_attribute("data-state", "off")
        page.click("#refresh")
        expect(page.locator("#refresh")).to_be_enabled()
    finally:
        direct.stop()

    # no cluster at all: the list says so, and asks for no stream
    traffic = Traffic(page)
    page.goto(f"{bare.url}/ui/")
    expect(page.locator("#no-cluster")).to_be_visible()
    assert traffic.streams() == []


def test_workload_page_banner_says_why_and_follows(service: Server, live: dict[str, Any], kubectl: Kubectl,
                                                   page: Any) -> None:
    """The banner names what the pods and Events say: the scheduler's message for the pod short of
    GPUs; a container starting to crash-loop appears in it through the stream, and goes again."""
    from ..cluster.diagnosis_cases import crash_loop

    traffic = Traffic(page)
    path = f"/workloads/{NS}/live-train"
    page.goto(f"{service.url}/ui{path}?kind=JobSet")
    banner = page.locator("#diagnosis")
    expect(banner).to_be_visible()
    expect(banner.locator("h2")).to_have_text("Why it is not running")
    first = banner.locator("li.diagnosis-entry").first
    expect(first).to_have_attribute("data-reason", "Unschedulable")
    expect(first).to_contain_text("replicated-job [trainer] · 1 pod · short of nvidia.com/gpu")
    expect(first.locator(".diagnosis-message")).to_have_text("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    expect(banner.locator('li[data-reason="CrashLoopBackOff"]')).to_have_count(0)
    expect_live(page)
    try:
        kubectl.set_status(pod_ref(TRAINER), crash_loop("c"))
        loop = banner.locator('li[data-reason="CrashLoopBackOff"]')
        expect(loop).to_be_visible(timeout=BOUND_MS * 2)
        expect(loop).to_contain_text("container c keeps exiting (last: Error with code 1, restarted 7 times)")
    finally:  # the kubelet's next status: the container runs again
        kubectl.set_status(pod_ref(TRAINER), dict(running("n"), containerStatuses=[
            {"name": "c", "ready": True, "restartCount": 7, "image": "x", "imageID": "",
             "state": {"running": {"startedAt": "2026-12-01T10:06:00Z"}}, "lastState": {}}]))
    expect(banner.locator('li[data-reason="CrashLoopBackOff"]')).to_have_count(0, timeout=BOUND_MS * 2)
    assert len(traffic.reads(path)) == 1  # the stream carried both changes

    page.goto(f"{service.url}/ui/workloads/{NS}/live-shell")  # running, every pod ready: no banner
    expect(page.locator("#head-phase .chip")).to_have_text("Running")
    expect(page.locator("#diagnosis")).to_have_count(0)
