"""The live model evaluates through the same worker pool as requests (here every definition
does: --isolation all): requests that fail cannot starve it, a busy pool (503) is retried rather
than kept as the workload's answer, and SIGTERM ends open streams at once instead of waiting
for them (real API server, real `wlmap serve`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from ..service.conftest import Server
from ..service.test_api import TASK
from ..service.test_deadline import BASE, hostile
from ..service.test_shutdown import BOUND, exits_within
from .apiserver import ApiServer
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl
from .test_streams import Stream
from .test_workloads import _jobset_with_pods
from .util import eventually

NS = "evalpool-live"


@pytest.fixture(scope="module")
def pooled(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[Server]:
    kubectl.ensure_namespace(NS)
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--watch-namespace", NS, "--isolation", "all", "--eval-workers", "2", "--eval-deadline", "8",
               "--eval-queue-timeout", "0.5", "--shutdown-timeout", "60")
    yield s
    if s.proc.poll() is None:
        s.stop()
    else:
        s.log.close()


def _row(c: httpx.Client, name: str) -> dict[str, Any] | None:
    items = c.get("/workloads", params={"namespace": NS}).json().get("items") or []
    return next((i for i in items if i["workload"]["name"] == name), None)


def test_failed_requests_do_not_stop_the_live_model(pooled: Server, kubectl: Kubectl) -> None:
    """The reported starvation: as many unencodable inline requests as there are workers, then
    the model must still interpret a new workload."""
    with httpx.Client(base_url=pooled.url, timeout=10) as c:
        big = dict(TASK, spec=dict(TASK["spec"], workers=2**64))
        for _ in range(2):
            r = c.post("/interpret", content=yaml.safe_dump({"object": big, "definition": BASE}),
                       headers={"content-type": "application/yaml"})
            assert r.status_code == 422, r.text
        _jobset_with_pods(kubectl, NS, "after-failures")
        # the JobSet can be seen before all its pods (Initializing, 3 of 7 ready): the model must
        # go on interpreting it as they come, up to Running
        row, _ = eventually(lambda: (r := _row(c, "after-failures")) and r.get("phase") == "Running" and r,
                            timeout=30, what="the new workload interpreted by the model, up to Running")
        assert "error" not in row, row


def test_a_busy_pool_is_retried_not_kept_as_the_answer(pooled: Server, kubectl: Kubectl) -> None:
    hogs = []

    def hog() -> None:
        with httpx.Client(base_url=pooled.url, timeout=30) as c:
            c.post("/interpret", json={"object": TASK, "definition": hostile("until(false; .)")})

    with httpx.Client(base_url=pooled.url, timeout=10) as c:
        for _ in range(2):  # both workers, for the 8 s deadline
            hogs.append(threading.Thread(target=hog, daemon=True))
            hogs[-1].start()
        eventually(lambda: c.post("/interpret", json={"object": TASK, "definition": BASE}).status_code == 503,
                   timeout=20, what="every worker busy")
        before = _busy_count(c)
        _jobset_with_pods(kubectl, NS, "while-busy")  # interpreted by the model while no worker is free
        eventually(lambda: _busy_count(c) > before, timeout=20, what="an evaluation refused while the pool was busy")
        for t in hogs:
            t.join(30)
        row, _ = eventually(lambda: (r := _row(c, "while-busy")) and r.get("phase") and r, timeout=30,
                            what="the workload interpreted once workers were free")
        assert row["phase"] == "Running" and "error" not in row, row


def _busy_count(c: httpx.Client) -> float:
    for line in c.get("/metrics").text.splitlines():
        if line.startswith("wlmap_evaluation_queue_timeouts_total "):
            return float(line.split()[1])
    return 0.0


def test_sigterm_ends_open_streams_at_once(pooled: Server) -> None:
    """--shutdown-timeout is 60 s here: only the streams ending on SIGTERM lets it exit sooner."""
    streams = [Stream(pooled.url + "/workloads", {"namespace": NS}),
               Stream(pooled.url + "/workloads", {"namespace": NS}, sse=True)]
    try:
        for s in streams:
            s.synced(timeout=20)
        took = exits_within(pooled, BOUND)
        assert took is not None, f"still running {BOUND} s after SIGTERM:\n{pooled.output()}"
        for s in streams:
            assert s.done.wait(10), "the stream did not end"
    finally:
        for s in streams:
            s.close()
