"""The authorization matrix: every route of the app x every kind of caller x both readers.

Generated from the app's own routes: a route added without a row here fails
`test_every_route_has_a_row`.  Each row says what each caller gets, against a real API server
with real RBAC:

* no token;
* bob: a valid token with no rights;
* dana: rights in one namespace only (get/list JobSets, pods and events in `authz`);
* admin: system:masters.

...on the live model (`secured`, the suite's --auth kubernetes service) and on direct reads
(`--cache false`).  Rows that read a named object also check that a refusal does not depend on
existence: the same 403, word for word, for an object that exists and for one that does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Mount

from app.service.app import create_app
from app.service.settings import Settings

from ..consistency import hook
from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS, token
from .kubeobjects import Kubectl, reader_rbac
from .test_workloads import _jobset_with_pods
from .util import eventually

NS, OTHER = "authz", "authz-other"
USERS = (None, "bob", "dana", "admin")
HOME = "local"  # the home cluster's name: the suite kubeconfig's context
JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
SCALE = {"replicas": {"no-such-component": 1}}  # refused once past the rights: the matrix writes nothing


@dataclass
class Ctx:
    server: Server
    cached: bool  # the live model answers (else every read goes to the API server)
    user: str | None

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token(self.user)}"} if self.user else {}
        return httpx.Client(base_url=self.server.url, headers=headers, timeout=30,
                            event_hooks={"request": [hook(self.server.url)]})


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> None:
    for ns in (NS, OTHER):
        kubectl.ensure_namespace(ns)
    _jobset_with_pods(kubectl, NS, "guarded")
    _jobset_with_pods(kubectl, OTHER, "hidden")
    # what a namespace's readers usually get (the `view` role lists Events too: the diagnosis reads them)
    for doc in reader_rbac("dana", NS, [("jobset.x-k8s.io", "jobsets"), ("", "events")]):
        kubectl.apply(doc)


@pytest.fixture(scope="module")
def direct(apiserver: ApiServer, world: None) -> Iterator[Server]:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "kubernetes", "--karta-resources", "false", "--cache", "false", "--actions", "true")
    yield s
    s.stop()


@pytest.fixture(params=["model", "direct"])
def server(request: pytest.FixtureRequest, secured: Server, world: None) -> tuple[Server, bool]:
    if request.param == "model":
        return secured, True
    return request.getfixturevalue("direct"), False


# -- what a caller may expect ------------------------------------------------------------------

def _problem(r: httpx.Response) -> tuple[int, str]:
    assert r.headers["content-type"].startswith("application/problem+json"), (r.status_code, r.text)
    return r.status_code, r.json()["detail"]


def _same_refusal(a: httpx.Response, b: httpx.Response) -> None:
    """A 403 for what exists and for what does not: the same answer, word for word."""
    assert a.status_code == 403, a.text
    assert _problem(a) == _problem(b), (a.text, b.text)


def _events(c: httpx.Client, path: str, params: dict[str, Any], until: Callable[[dict[str, Any]], bool]
            ) -> tuple[int, list[dict[str, Any]]]:
    """Open a stream and read events until `until` says so (or the first event for a problem)."""
    out: list[dict[str, Any]] = []
    with c.stream("GET", path, params={**params, "watch": "true"}, timeout=20) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, [r.json()]
        for line in r.iter_lines():
            if line.strip():
                out.append(json.loads(line))
                if until(out[-1]):
                    break
    return 200, out


def _initial_end(ev: dict[str, Any]) -> bool:
    return ev["type"] == "BOOKMARK" and bool(ev.get("initialEventsEnd"))


def _names(rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r["workload"]["namespace"], r["workload"]["name"]) for r in rows if r["workload"]["kind"] == "JobSet"}


def open_route(path: str) -> Callable[[Ctx], None]:
    def check(x: Ctx) -> None:
        assert x.client().get(path).status_code == 200, path

    return check


def token_only(method: str, path: str, body: Any = None) -> Callable[[Ctx], None]:
    """Needs a valid token, reads no cluster data."""
    def check(x: Ctx) -> None:
        r = x.client().request(method, path, json=body)
        assert r.status_code == (401 if x.user is None else 200), (x.user, path, r.text)

    return check


def service_view(path: str, params: dict[str, Any] | None = None, watch: bool = False,
                 needs_model: bool = False) -> Callable[[Ctx], None]:
    """A cluster-wide view of the service (a non-resource URL): admin only."""
    def check(x: Ctx) -> None:
        c = x.client()
        if watch:
            status, evs = _events(c, path, params or {}, lambda ev: True)
        else:
            r = c.get(path, params=params)
            status, evs = r.status_code, [r.json() if "json" in r.headers["content-type"] else r.text]
        if x.user is None:
            assert status == 401
        elif x.user in ("bob", "dana"):
            assert status == 403 and "not allowed to get" in evs[0]["detail"], (x.user, path, evs)
        else:
            assert status == (400 if needs_model and not x.cached else 200), (path, evs)

    return check


def one_workload(prefix: str, watch: bool = False, fmt: str | None = None) -> Callable[[Ctx], None]:
    """GET {prefix}/workloads/{ns}/{name}: the object's own rights, before anything is looked up;
    `fmt`: with ?format= (the consumer's shape, read with the same rights)."""
    def check(x: Ctx) -> None:
        c = x.client()
        q = {"format": fmt} if fmt else {}
        if watch:
            if not x.cached:  # streams come from the live model
                status, evs = _events(c, f"{prefix}/workloads/{NS}/guarded", {}, lambda ev: True)
                assert status == (401 if x.user is None else 400), evs
                return
            status, evs = _events(c, f"{prefix}/workloads/{NS}/guarded", {}, _initial_end)
            if x.user is None:
                assert status == 401
            elif x.user == "bob":
                assert status == 403, evs
                other, _ = _events(c, f"{prefix}/workloads/{NS}/no-such-workload", {}, lambda ev: True)
                assert other == 403
            else:
                assert status == 200 and evs[0]["type"] == "ADDED", evs
                assert evs[0]["object"]["workload"]["name"] == "guarded"
            return
        r = c.get(f"{prefix}/workloads/{NS}/guarded", params=q)
        if x.user is None:
            assert r.status_code == 401
            return
        if x.user == "bob":
            _same_refusal(r, c.get(f"{prefix}/workloads/{NS}/no-such-workload", params=q))
        else:
            assert r.status_code == 200, r.text
            if fmt == "kai":
                assert r.json()["podGroups"][0]["metadata"]["ownerReferences"][0]["name"] == "guarded", r.text
            else:
                assert r.json()["live"]["current"] == 5
        if x.user in ("bob", "dana"):  # where they have no rights: existing or not, the same 403
            for params in ({}, {"kind": "JobSet"}, {"kind": "jobsets", "apiVersion": JOBSET["apiVersion"]}):
                _same_refusal(c.get(f"{prefix}/workloads/{OTHER}/hidden", params={**params, **q}),
                              c.get(f"{prefix}/workloads/{OTHER}/no-such-workload", params={**params, **q}))
        else:
            assert c.get(f"{prefix}/workloads/{OTHER}/hidden", params=q).status_code == 200
            assert c.get(f"{prefix}/workloads/{OTHER}/no-such-workload", params=q).status_code == 404

    return check


def fleet_workload(x: Ctx) -> None:
    """GET /fleet/workloads/{ns}/{name}: each cluster read with the caller's rights, one where they
    may not look left out; refused everywhere, the same 403 whether it exists or not."""
    c = x.client()
    path = "/fleet/workloads/{}/{}"
    r = c.get(path.format(NS, "guarded"))
    if x.user is None:
        assert r.status_code == 401
        return
    if x.user == "bob":
        _same_refusal(r, c.get(path.format(NS, "no-such-workload")))
    else:
        assert r.status_code == 200, r.text
        parts = r.json()["clusters"]
        assert [(p["cluster"], p["live"]) for p in parts] == [(HOME, {"ready": 4, "desired": 7})], parts
    if x.user in ("bob", "dana"):
        for params in ({}, {"kind": "JobSet"}, {"kind": "jobsets", "apiVersion": JOBSET["apiVersion"]}):
            _same_refusal(c.get(path.format(OTHER, "hidden"), params=params),
                          c.get(path.format(OTHER, "no-such-workload"), params=params))
    else:
        assert c.get(path.format(OTHER, "hidden")).json()["status"]["phase"] == "Running"
        assert c.get(path.format(OTHER, "no-such-workload")).status_code == 404


def workload_list(prefix: str, watch: bool = False) -> Callable[[Ctx], None]:
    """GET {prefix}/workloads: exactly the rows the caller may list."""
    def check(x: Ctx) -> None:
        c = x.client()
        seen: dict[str | None, set[tuple[str, str]]] = {}
        for ns in (NS, None):
            params = {"namespace": ns} if ns else {}
            if watch:
                status, evs = _events(c, f"{prefix}/workloads", params, _initial_end)
                if status == 200:
                    rows = [e["object"] for e in evs if e["type"] == "ADDED"]
                elif x.user is not None and not x.cached:
                    assert status == 400, evs  # streams come from the live model
                    return
            else:
                r = c.get(f"{prefix}/workloads", params=params)
                status, rows = r.status_code, (r.json().get("items") if r.status_code == 200 else None)
            if x.user is None:
                assert status == 401
                return
            assert status == 200, (x.user, rows)
            seen[ns] = _names(rows or []) & {(NS, "guarded"), (OTHER, "hidden")}
        expected = {"bob": set(), "dana": {(NS, "guarded")}, "admin": {(NS, "guarded"), (OTHER, "hidden")}}[x.user]
        assert seen[None] == expected, (x.user, seen)
        assert seen[NS] == expected & {(NS, "guarded")}, (x.user, seen)

    return check


def interpret_ref(path: str, extra: dict[str, Any] | None = None,
                  name_of: Callable[[Any], str] = lambda j: j["workload"]["name"]) -> Callable[[Ctx], None]:
    """POST /interpret (or /interpret/update, with `extra`) with a ref: the caller's `get` on the
    object, asked before it is read."""
    def ref(ns: str, name: str) -> dict[str, Any]:
        return {"ref": {**JOBSET, "namespace": ns, "name": name}, **(extra or {})}

    def check(x: Ctx) -> None:
        c = x.client()
        # a manifest the caller sends reads nothing from the cluster: a valid token is enough
        r = c.post(path, json={"object": {**JOBSET, "metadata": {"name": "sent", "namespace": OTHER},
                                          "spec": {"replicatedJobs": []}}, **(extra or {})})
        assert r.status_code == (401 if x.user is None else 200), r.text
        r = c.post(path, json=ref(NS, "guarded"))
        if x.user is None:
            assert r.status_code == 401
            return
        if x.user == "bob":
            _same_refusal(r, c.post(path, json=ref(NS, "no-such-workload")))
        else:
            assert r.status_code == 200 and name_of(r.json()) == "guarded", r.text
        if x.user == "admin":
            assert c.post(path, json=ref(OTHER, "hidden")).status_code == 200
            assert c.post(path, json=ref(OTHER, "no-such-workload")).status_code == 404
        else:
            _same_refusal(c.post(path, json=ref(OTHER, "hidden")), c.post(path, json=ref(OTHER, "no-such-workload")))

    return check


def owner_of_group(j: dict[str, Any]) -> str:
    """The workload a ?format=kai answer is about (its PodGroup's owner)."""
    return str(j["podGroups"][0]["metadata"]["ownerReferences"][0]["name"])


def batch_refs(fmt: str | None = None) -> Callable[[Ctx], None]:
    """POST /interpret/batch: each item's ref is read with the caller's rights (it used to be read
    with the service's own); `fmt`: with ?format= too."""
    return lambda x: _batch_refs(x, fmt)


def _batch_refs(x: Ctx, fmt: str | None) -> None:
    items = [{"ref": {**JOBSET, "namespace": ns, "name": n}}
             for ns, n in ((NS, "guarded"), (OTHER, "hidden"), (OTHER, "no-such-workload"))]
    r = x.client().post("/interpret/batch", json={"items": items}, params={"format": fmt} if fmt else None)
    if x.user is None:
        assert r.status_code == 401
        return
    assert r.status_code == 200, r.text
    name_of = owner_of_group if fmt == "kai" else (lambda i: i["workload"]["name"])
    got = [(i["error"]["status"], i["error"]["detail"]) if "error" in i else (200, name_of(i))
           for i in r.json()["items"]]
    if x.user == "admin":
        assert [g[0] for g in got] == [200, 200, 404] and got[1][1] == "hidden"
        return
    assert got[0] == ((200, "guarded") if x.user == "dana" else got[0]), got
    if x.user == "bob":
        assert got[0][0] == 403
    assert got[1][0] == 403 and got[1] == got[2], got  # existence never shows through a refusal


def act_on_workload(prefix: str, which: str, body: dict[str, Any] | None = None,
                    refused: str | None = None) -> Callable[[Ctx], None]:
    """POST {prefix}/workloads/{ns}/{name}/suspend|resume|scale|restart: `patch` on the object,
    asked before it is read (dana may get the JobSet, not change it); admin's suspend is undone at
    once.  `refused`: the 422 admin gets once past the rights (a JobSet does not restart; `body`
    scales a component it does not have), so nothing is written."""
    def check(x: Ctx) -> None:
        c = x.client()
        path = f"{prefix}/workloads/{{}}/{{}}/{which}"
        r = c.post(path.format(NS, "guarded"), json=body)
        if x.user is None:
            assert r.status_code == 401
            return
        if x.user == "admin":
            if refused:
                assert r.status_code == 422 and r.json()["type"].endswith(refused), r.text
            else:
                assert r.status_code == 200 and r.json()["workload"]["name"] == "guarded", r.text
            if which == "suspend":
                assert c.post(f"{prefix}/workloads/{NS}/guarded/resume").status_code == 200
            missing = c.post(path.format(OTHER, "no-such-workload"), params={"kind": "JobSet"}, json=body)
            assert missing.status_code == 404, missing.text
            return
        for ns in (NS, OTHER):
            for params in ({}, {"kind": "JobSet"}, {"kind": "jobsets", "apiVersion": JOBSET["apiVersion"]}):
                name = "guarded" if ns == NS else "hidden"
                a = c.post(path.format(ns, name), params=params, json=body)
                b = c.post(path.format(ns, "no-such"), params=params, json=body)
                _same_refusal(a, b)
                assert "not allowed to patch" in a.json()["detail"], a.text

    return check


def apply_update(x: Ctx) -> None:
    """POST /interpret/update?apply=true: `patch` on the ref, asked before it is read."""
    c = x.client()

    def post(ns: str, name: str) -> httpx.Response:
        return c.post("/interpret/update", params={"apply": "true"},
                      json={"ref": {**JOBSET, "namespace": ns, "name": name}, "set": {"labels": {"queue": "a"}}})

    r = post(NS, "guarded")
    if x.user is None:
        assert r.status_code == 401
        return
    if x.user == "admin":
        assert r.status_code == 200 and "applied" in r.json(), r.text
        assert post(OTHER, "no-such-workload").status_code == 404
        return
    _same_refusal(r, post(NS, "no-such-workload"))
    assert "not allowed to patch" in r.json()["detail"]
    _same_refusal(post(OTHER, "hidden"), post(OTHER, "no-such-workload"))


def cluster_nodes(path: str) -> Callable[[Ctx], None]:
    """GET /clusters/{c}/nodes: the caller's `list nodes` (cluster-scoped), asked before anything is
    read; the figures come from the live model, or with --cache false from one list."""
    def check(x: Ctx) -> None:
        c = x.client()
        r = c.get(path)
        if x.user is None:
            assert r.status_code == 401, r.text
        elif x.user in ("bob", "dana"):  # dana's namespace rights do not cover nodes
            assert _problem(r) == (403, "not allowed to list nodes in this cluster"), r.text
            assert c.get(path, params={"labelSelector": "no=such"}).json() == r.json()
        else:
            r = eventually(lambda: (a := c.get(path)).status_code == 200 and a, timeout=30,
                           what="capacity ready")[0]
            assert r.json()["cluster"] == HOME and isinstance(r.json()["items"], list)
            assert r.json()["watching"] is x.cached  # no watch without the model: the lists'

    return check


def cluster_capacity(path: str) -> Callable[[Ctx], None]:
    """`capacity` in a /clusters answer: admin (who may list nodes) gets the figures, from the live
    model or (--cache false) from one list; the others never get past the URL's check."""
    def check(x: Ctx) -> None:
        if x.user != "admin":
            return  # service_view's row: 401 / 403
        c = x.client()

        def item() -> dict[str, Any]:
            doc = c.get(path).json()
            return doc if "capacity" in doc else next(i for i in doc["items"] if i["name"] == HOME)

        got = eventually(lambda: (i := item())["capacityState"] == "ready" and i, timeout=30,
                         what="capacity ready")[0]
        assert got["capacityVisible"] is True and got["capacity"]["nodes"]["total"] >= 0
        assert "freeValues" in got["capacity"] and got["capacity"]["watching"] is x.cached

    return check


def fit_route(x: Ctx) -> None:
    """POST /fit of a sent manifest: a valid token interprets it; a cluster's verdict (it names
    nodes) only with `list nodes` there: admin gets it (from the live model, or from one list with
    --cache false), bob and dana `forbidden` and no figure."""
    c = x.client()
    body = {"object": {**JOBSET, "metadata": {"name": "sent", "namespace": NS}, "spec": {"replicatedJobs": []}}}
    r = c.post("/fit", json=body)
    if x.user is None:
        assert r.status_code == 401, r.text
        return
    assert r.status_code == 200, r.text
    if x.user in ("bob", "dana"):
        assert r.json()["clusters"] == [{"cluster": HOME, "available": False, "state": "forbidden", "fits": None,
                                         "message": "not allowed to list nodes in this cluster"}], r.text
    else:
        row = eventually(lambda: (a := c.post("/fit", json=body).json()["clusters"][0])["available"] and a,
                         timeout=30, what="capacity ready")[0]
        assert row["cluster"] == HOME and row["fits"] is True, row


def metrics_for_workloads(x: Ctx) -> None:
    service_view("/metrics/workloads", needs_model=True)(x)


def redirects_to_the_ui(x: Ctx) -> None:
    r = x.client().get("/")
    assert r.status_code == 307 and r.headers["location"] == "/ui/", r.text


ROWS: dict[tuple[str, str], list[Callable[[Ctx], None]]] = {
    ("GET", "/"): [redirects_to_the_ui],
    ("GET", "/healthz"): [open_route("/healthz")],
    ("GET", "/readyz"): [open_route("/readyz")],
    ("GET", "/metrics"): [open_route("/metrics")],
    ("GET", "/openapi.json"): [open_route("/openapi.json")],
    ("GET", "/docs"): [open_route("/docs")],
    ("GET", "/docs/oauth2-redirect"): [open_route("/docs/oauth2-redirect")],
    ("GET", "/redoc"): [open_route("/redoc")],
    ("GET", "/ui"): [open_route("/ui/")],
    ("GET", "/ui/"): [open_route("/ui/")],
    ("GET", "/ui/interpret"): [open_route("/ui/interpret")],
    ("GET", "/ui/workloads/{namespace}/{name}"): [open_route(f"/ui/workloads/{NS}/guarded")],
    ("GET", "/ui/definitions/{name}"): [open_route("/ui/definitions/x")],
    ("GET", "/ui/fleet"): [open_route("/ui/fleet")],
    ("GET", "/ui/clusters/{cluster}/workloads/{namespace}/{name}"):
        [open_route(f"/ui/clusters/{HOME}/workloads/{NS}/guarded")],
    ("GET", "/ui/static"): [open_route("/ui/static/ui.css")],
    ("GET", "/definitions"): [token_only("GET", "/definitions")],
    ("GET", "/definitions/{name}"): [token_only("GET", "/definitions/jobset-x-k8s-io-jobset-v1alpha2")],
    ("POST", "/definitions/validate"): [token_only("POST", "/definitions/validate",
                                                    {"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
                                                     "metadata": {"name": "x"}, "spec": {}})],
    ("POST", "/interpret"): [interpret_ref("/interpret"), interpret_ref("/interpret?format=kai", name_of=owner_of_group)],
    ("POST", "/interpret/batch"): [batch_refs(), batch_refs("kai")],
    ("POST", "/interpret/update"): [interpret_ref("/interpret/update", {"set": {"labels": {"queue": "a"}}},
                                                  lambda j: j["object"]["metadata"]["name"]), apply_update],
    ("POST", "/divide"): [interpret_ref("/divide", {"clusters": [{"name": "a", "weight": 1}]})],
    ("GET", "/workloads/{namespace}/{name}"):
        [one_workload(""), one_workload("", watch=True), one_workload("", fmt="kai")],
    ("GET", "/clusters/{cluster}/workloads/{namespace}/{name}"):
        [one_workload(f"/clusters/{HOME}"), one_workload(f"/clusters/{HOME}", watch=True),
         one_workload(f"/clusters/{HOME}", fmt="kai")],
    ("POST", "/workloads/{namespace}/{name}/suspend"): [act_on_workload("", "suspend")],
    ("POST", "/workloads/{namespace}/{name}/resume"): [act_on_workload("", "resume")],
    ("POST", "/clusters/{cluster}/workloads/{namespace}/{name}/suspend"):
        [act_on_workload(f"/clusters/{HOME}", "suspend")],
    ("POST", "/clusters/{cluster}/workloads/{namespace}/{name}/resume"):
        [act_on_workload(f"/clusters/{HOME}", "resume")],
    ("POST", "/workloads/{namespace}/{name}/scale"): [act_on_workload("", "scale", SCALE, "update-refused")],
    ("POST", "/clusters/{cluster}/workloads/{namespace}/{name}/scale"):
        [act_on_workload(f"/clusters/{HOME}", "scale", SCALE, "update-refused")],
    ("POST", "/workloads/{namespace}/{name}/restart"): [act_on_workload("", "restart", None, "restart-not-supported")],
    ("POST", "/clusters/{cluster}/workloads/{namespace}/{name}/restart"):
        [act_on_workload(f"/clusters/{HOME}", "restart", None, "restart-not-supported")],
    ("GET", "/fleet/workloads/{namespace}/{name}"): [fleet_workload],
    ("GET", "/workloads"): [workload_list(""), workload_list("", watch=True)],
    ("GET", "/clusters/{cluster}/workloads"):
        [workload_list(f"/clusters/{HOME}"), workload_list(f"/clusters/{HOME}", watch=True)],
    ("GET", "/clusters"): [service_view("/clusters"), service_view("/clusters", watch=True),
                           cluster_capacity("/clusters")],
    ("GET", "/clusters/{cluster}"): [service_view(f"/clusters/{HOME}"), cluster_capacity(f"/clusters/{HOME}")],
    ("GET", "/clusters/{cluster}/nodes"): [cluster_nodes(f"/clusters/{HOME}/nodes")],
    ("POST", "/fit"): [fit_route],
    ("GET", "/model"): [service_view("/model"), service_view("/model", {"cluster": HOME})],
    ("GET", "/metrics/workloads"): [metrics_for_workloads],
}


def _app_routes() -> set[tuple[str, str]]:
    """Every route of the app, those of its included routers too."""
    routes: set[tuple[str, str]] = set()
    for r in iter_route_contexts(create_app(Settings()).routes):
        if isinstance(r.original_route, Mount):
            routes.add(("GET", r.path or ""))
            continue
        for m in sorted(r.methods or []):
            if m != "HEAD":
                routes.add((m, r.path or ""))
    return routes


def test_every_route_has_a_row() -> None:
    """A route added later without a row in ROWS fails here (and a row of a removed route too)."""
    routes = _app_routes()
    assert sum(isinstance(r.original_route, APIRoute) for r in iter_route_contexts(create_app(Settings()).routes)) > 20
    assert routes == set(ROWS), {"without a row": sorted(routes - set(ROWS)), "stale rows": sorted(set(ROWS) - routes)}


@pytest.mark.parametrize("user", USERS, ids=lambda u: u or "no-token")
@pytest.mark.parametrize("route", sorted(ROWS), ids=lambda r: f"{r[0]} {r[1]}")
def test_matrix(route: tuple[str, str], user: str | None, server: tuple[Server, bool]) -> None:
    s, cached = server
    if cached:  # read-your-writes: the model has applied the fixtures before the first check
        eventually(lambda: httpx.get(s.url + f"/workloads/{NS}/guarded", timeout=10,
                                     headers={"Authorization": f"Bearer {token('admin')}"}).status_code == 200,
                   timeout=30, what="the model has the fixtures")
    for check in ROWS[route]:
        check(Ctx(s, cached, user))


def test_reads_are_audited(secured: Server, world: None) -> None:
    """One audit line per read of cluster data: who, which route, cluster, namespace, decision."""
    dana = Ctx(secured, True, "dana").client()
    bob = Ctx(secured, True, "bob").client()

    def audit() -> list[dict[str, Any]]:
        lines = [json.loads(x) for x in secured.output().splitlines() if x.startswith("{")]
        return [x for x in lines if x.get("logger") == "wlmap.audit"]

    def interprets() -> int:
        return sum(1 for x in audit() if x["route"] == "/interpret")

    before = interprets()
    assert dana.post("/interpret", json={"object": {**JOBSET, "metadata": {"name": "x"}}}).status_code == 200
    assert dana.get(f"/workloads/{NS}/guarded", params={"kind": "JobSet"}).status_code == 200
    assert bob.get(f"/workloads/{OTHER}/hidden", params={"kind": "JobSet"}).status_code == 403

    def line(user: str, ns: str) -> dict[str, Any] | None:
        lines = [x for x in audit() if x["user"] == user and ns in x["namespaces"]
                 and x["route"] == "/workloads/{namespace}/{name}"]
        return lines[-1] if lines else None  # this test's own request is the latest

    eventually(lambda: line("dana", NS) is not None and line("bob", OTHER) is not None, timeout=10,
               what="audit lines")
    a, b = line("dana", NS), line("bob", OTHER)
    assert a is not None and b is not None
    assert a["status"] == 200 and a["clusters"] == [HOME]
    assert {"verb": "get", "resource": "jobsets.jobset.x-k8s.io", "namespace": NS, "allowed": True,
            "cluster": HOME} in a["checks"]
    # its pods wait: the NoCapacity verdict asked for `list nodes`, which dana lacks: withheld, so
    # the read is recorded as partial
    nodes = [ch for ch in a["checks"] if ch["resource"] == "nodes"]
    assert [(ch["verb"], ch["allowed"]) for ch in nodes] == [("list", False)] and a["decision"] == "partial", a
    assert b["decision"] == "deny" and b["status"] == 403 and b["path"] == f"/workloads/{OTHER}/hidden"
    # a manifest sent in the request reads no cluster data: no audit line, and no token anywhere
    assert interprets() == before
    assert not re.search(r"test-\w+-token", secured.output())
