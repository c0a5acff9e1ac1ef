"""--auth kubernetes against a real API server: real tokens, TokenReview, SubjectAccessReview."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ..consistency import hook
from ..service.conftest import Server
from .apiserver import TOKENS, ApiServer
from .conftest import token
from .kubeobjects import Kubectl, reader_rbac
from .test_workloads import _jobset_with_pods
from .util import eventually

NS = "acl"
OTHER = "acl-other"


@pytest.fixture(scope="module")
def objects(kubectl: Kubectl) -> dict[str, Any]:
    for ns in (NS, OTHER):
        kubectl.ensure_namespace(ns)
    js = _jobset_with_pods(kubectl, NS, "guarded")
    _jobset_with_pods(kubectl, OTHER, "elsewhere")
    for doc in reader_rbac("alice", NS, [("jobset.x-k8s.io", "jobsets")]):
        kubectl.apply(doc)
    # carol may read JobSets in NS but not list its pods
    for doc in reader_rbac("carol", NS, [("jobset.x-k8s.io", "jobsets")], pods=False):
        kubectl.apply(doc)
    return {"jobset": js}


def as_user(s: Server, user: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token(user)}"} if user else {}
    return httpx.Client(base_url=s.url, headers=headers, timeout=30, event_hooks={"request": [hook(s.url)]})


def test_token_required(secured: Server, objects: dict[str, Any]) -> None:
    anon = as_user(secured, None)
    for method, path in (("GET", f"/workloads/{NS}/guarded"), ("GET", "/workloads"), ("GET", "/definitions"),
                         ("GET", "/definitions/jobset-x-k8s-io-jobset-v1alpha2"), ("POST", "/interpret"),
                         ("POST", "/interpret/batch"), ("POST", "/definitions/validate")):
        r = anon.request(method, path, json=objects["jobset"] if method == "POST" else None)
        assert r.status_code == 401, (path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["www-authenticate"].startswith("Bearer")
    r = httpx.get(secured.url + f"/workloads/{NS}/guarded", headers={"Authorization": "Bearer not-a-token"})
    assert r.status_code == 401 and "not valid" in r.json()["detail"]
    # probes and the API description stay open (kubelet and Prometheus have no token)
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        assert anon.get(path).status_code == 200, path


def test_allowed_reader(secured: Server, objects: dict[str, Any]) -> None:
    alice = as_user(secured, "alice")
    r = alice.get(f"/workloads/{NS}/guarded")
    assert r.status_code == 200, r.text
    assert r.json()["live"]["current"] == 5
    r = alice.get(f"/workloads/{NS}/guarded", params={"kind": "jobset"})
    assert r.status_code == 200
    # interpreting a manifest the caller sends reads nothing from the cluster: a valid token is enough
    assert alice.post("/interpret", json=objects["jobset"]).status_code == 200
    ref = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": "guarded"}
    assert alice.post("/interpret", json={"ref": ref}).status_code == 200


def test_denied_reader(secured: Server, objects: dict[str, Any]) -> None:
    alice, bob = as_user(secured, "alice"), as_user(secured, "bob")
    # another namespace: alice has no rights there
    r = alice.get(f"/workloads/{OTHER}/elsewhere", params={"kind": "JobSet"})
    assert r.status_code == 403 and "not allowed to get jobsets.jobset.x-k8s.io" in r.json()["detail"]
    ref = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": OTHER, "name": "elsewhere"}
    assert alice.post("/interpret", json={"ref": ref}).status_code == 403
    # bob may read nothing here
    r = bob.get(f"/workloads/{NS}/guarded")
    assert r.status_code == 403
    assert r.json()["type"].endswith("forbidden")


def test_pod_view_needs_list_pods(secured: Server, objects: dict[str, Any]) -> None:
    carol = as_user(secured, "carol")
    r = carol.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet"})
    assert r.status_code == 403 and "list pods" in r.json()["detail"]
    r = carol.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet", "pods": "false"})
    assert r.status_code == 200 and "live" not in r.json()


def test_list_leaves_out_what_the_caller_cannot_list(secured: Server, objects: dict[str, Any]) -> None:
    alice = as_user(secured, "alice")
    body = alice.get("/workloads", params={"namespace": NS}).json()
    assert [(x["workload"]["kind"], x["workload"]["name"]) for x in body["items"]] == [("JobSet", "guarded")]
    assert body["items"][0]["pods"] == {"ready": 4, "desired": 7}
    assert any("not allowed to list pytorchjobs" in w for w in body["warnings"])
    # all namespaces: alice may list nothing cluster-wide, so she sees the namespaces she may
    # list, as she would listing them one by one
    body = alice.get("/workloads").json()
    assert {x["workload"]["namespace"] for x in body["items"]} == {NS}
    assert ("JobSet", "guarded") in [(x["workload"]["kind"], x["workload"]["name"]) for x in body["items"]]
    assert any("only where it is allowed" in w for w in body["warnings"])


def test_granted_permission_takes_effect_soon(secured: Server, kubectl: Kubectl, objects: dict[str, Any]) -> None:
    """Denials are cached for seconds, not for the allow TTL."""
    bob = as_user(secured, "bob")
    assert bob.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet", "pods": "false"}).status_code == 403
    for doc in reader_rbac("bob", NS, [("jobset.x-k8s.io", "jobsets")]):
        kubectl.apply(doc)
    eventually(lambda: bob.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet"}).status_code == 200,
               timeout=10, interval=0.5, what="bob allowed after the RoleBinding")


def test_reviews_are_cached(secured: Server, apiserver: ApiServer, objects: dict[str, Any]) -> None:
    """A client polling the same workload does not cost a review per request."""
    alice = as_user(secured, "alice")
    alice.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet"})
    before = _reviews(apiserver)
    for _ in range(20):
        assert alice.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet"}).status_code == 200
    assert _reviews(apiserver) - before == 0


def _reviews(apiserver: ApiServer) -> float:
    """TokenReview + SubjectAccessReview requests the API server has served."""
    text = apiserver.call("GET", "/metrics", raw=True).decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'verb="POST"' in line and (
                'resource="tokenreviews"' in line or 'resource="subjectaccessreviews"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_no_token_appears_in_responses_or_logs(secured: Server, objects: dict[str, Any]) -> None:
    """Callers' tokens and the service's own credentials never show in an answer or a log line,
    whatever the outcome (allowed, denied, invalid token, bad request)."""
    seen: list[str] = []
    for user in ("alice", "bob", None):
        c = as_user(secured, user)
        for r in (c.get(f"/workloads/{NS}/guarded"), c.get("/workloads", params={"namespace": NS}),
                  c.post("/interpret", json={"ref": {"apiVersion": "v1", "kind": "Pod", "namespace": NS,
                                                     "name": "x"}}),
                  c.post("/interpret", content=b"{not json", headers={"content-type": "application/json"})):
            seen.append(r.text + str(dict(r.headers)))
    bad = httpx.get(secured.url + "/definitions", headers={"Authorization": "Bearer leaked-if-you-see-me"})
    seen.append(bad.text + str(dict(bad.headers)))
    secret_tokens = [t for t, *_ in TOKENS.values()] + ["leaked-if-you-see-me"]
    log = secured.output()
    assert "wlmap.access" in log  # the log was written (one line per request)
    for t in secret_tokens:
        assert t not in log, f"token {t} in the log"
        assert not any(t in s for s in seen), f"token {t} in a response"
    assert "Bearer " not in log


AUDIENCE_NS = "acl-audience"


def test_token_audience_accepts_only_tokens_issued_for_it(apiserver: ApiServer, kubectl: Kubectl) -> None:
    """--token-audience wlmap: the TokenReview asks for that audience, so a service-account token
    requested for `wlmap` (TokenRequest) is accepted and one requested for another audience, or a
    token bound to none (a static one, valid for the API server itself), is refused."""
    kubectl.ensure_namespace(AUDIENCE_NS)
    kubectl.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "caller", "namespace": AUDIENCE_NS}})

    def bound_token(audience: str) -> str:
        req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"audiences": [audience], "expirationSeconds": 3600}}
        return str(apiserver.call("POST", f"/api/v1/namespaces/{AUDIENCE_NS}/serviceaccounts/caller/token",
                                  req)["status"]["token"])

    ours, theirs = bound_token("wlmap"), bound_token("another-service")
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", AUDIENCE_NS,
               "--auth", "kubernetes", "--karta-resources", "false", "--token-audience", "wlmap")
    try:
        def status(tok: str) -> int:
            return httpx.get(s.url + "/definitions", headers={"Authorization": f"Bearer {tok}"}, timeout=30).status_code

        assert status(ours) == 200
        assert status(theirs) == 401
        assert status(token("admin")) == 401  # not issued for wlmap
    finally:
        s.stop()
