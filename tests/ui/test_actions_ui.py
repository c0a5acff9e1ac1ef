"""Suspend / Resume on the workload page (Chromium), against the suite's `secured` service
(--auth kubernetes, --actions true) and `service` (actions off) on the real API server: the
button fits the phase, a click changes the object on the API server and the page follows; a
caller without `patch` sees the API's 403; no buttons without --actions or a suspendDefinition."""

from __future__ import annotations

from typing import Any

import pytest

from ..cluster.apiserver import TOKENS
from ..cluster.kubeobjects import Kubectl, reader_rbac
from ..cluster.util import fixture_object
from ..service.conftest import Server
from .browser import expect

NS = "ui-actions"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
JS_API = "jobset.x-k8s.io/v1alpha2"


@pytest.fixture(scope="module")
def acting(kubectl: Kubectl) -> dict[str, Any]:
    kubectl.ensure_namespace(NS)
    out = {}
    for name in ("ui-act", "ui-guarded"):
        obj, _ = fixture_object(JOBSET, NS, name)  # no status: no controller runs here
        obj["spec"].pop("suspend", None)
        out[name] = kubectl.apply(obj)
    out["web"] = kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
                                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                                         "template": {"metadata": {"labels": {"app": "web"}},
                                                      "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    for doc in reader_rbac("carol", NS, [("jobset.x-k8s.io", "jobsets"), ("", "events")]):
        kubectl.apply(doc)
    return out


def open_with_token(page: Any, server: Server, path: str, user: str) -> None:
    page.goto(f"{server.url}{path}")
    page.fill("#inline-token", TOKENS[user][0])
    page.press("#inline-token", "Enter")


def suspended(kubectl: Kubectl, name: str) -> Any:
    return kubectl.get(JS_API, "JobSet", NS, name)["spec"].get("suspend")


def test_suspend_then_resume_from_the_page(secured: Server, kubectl: Kubectl, acting: dict[str, Any],
                                           page: Any, shots: Any) -> None:
    open_with_token(page, secured, f"/ui/workloads/{NS}/ui-act?kind=JobSet", "admin")
    expect(page.locator("#workload-name")).to_have_text("ui-act")
    expect(page.locator("#suspend")).to_be_visible()
    expect(page.locator("#resume")).to_have_count(0)
    page.click("#suspend")
    expect(page.locator("#head-phase")).to_have_text("Suspended")
    expect(page.locator("#resume")).to_be_visible()
    assert suspended(kubectl, "ui-act") is True
    shots(page, "ui-workload-suspended")
    page.click("#resume")
    expect(page.locator("#suspend")).to_be_visible()
    expect(page.locator("#head-phase")).not_to_have_text("Suspended")
    assert suspended(kubectl, "ui-act") is False
    expect(page.locator("#action-problem")).to_be_empty()


def test_a_refusal_shows_the_problem(secured: Server, kubectl: Kubectl, acting: dict[str, Any], page: Any) -> None:
    """carol may read the JobSet, not patch it: the 403 is on the page, the object unchanged."""
    open_with_token(page, secured, f"/ui/workloads/{NS}/ui-guarded?kind=JobSet", "carol")
    page.click("#suspend")
    problem = page.locator("#action-problem .problem")
    expect(problem).to_contain_text("Could not suspend: Forbidden (403)")
    expect(problem).to_contain_text(f"not allowed to patch jobsets.jobset.x-k8s.io in namespace {NS}")
    expect(page.locator("#suspend")).to_be_enabled()
    assert suspended(kubectl, "ui-guarded") is None


def test_no_buttons_without_actions_or_a_suspend_definition(secured: Server, service: Server,
                                                            acting: dict[str, Any], page: Any) -> None:
    open_with_token(page, secured, f"/ui/workloads/{NS}/web?kind=Deployment", "admin")
    expect(page.locator("#workload-name")).to_have_text("web")
    expect(page.locator("#actions")).to_have_attribute("data-state", "none")  # no suspendDefinition
    expect(page.locator("#actions button")).to_have_count(0)
    page.goto(f"{service.url}/ui/workloads/{NS}/ui-act?kind=JobSet")  # --actions false
    expect(page.locator("#workload-name")).to_have_text("ui-act")
    expect(page.locator("#actions")).to_have_attribute("data-state", "off")
    expect(page.locator("#actions button")).to_have_count(0)
    assert page.locator("html").get_attribute("data-actions") == "false"
