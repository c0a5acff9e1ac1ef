"""Scale and restart on a real API server: POST .../scale writes counts through the definition's
replicasPath (the same path and refusals as /interpret/update's `replicas`), POST .../restart
writes `kubectl.kubernetes.io/restartedAt` into the pod templates of the kinds marked
`workload-map.dev/restart: rollout`; both as one guarded patch with the caller's `patch` right
asked first, and refused with --actions off.  The services are the suite's `secured` (--auth
kubernetes, --actions true) and `service` (--actions off)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import token
from .kubeobjects import Kubectl, crd, reader_rbac
from .util import eventually, fixture_object

NS = "rolling"
VC_API, JS_API, LWS_API = "batch.volcano.sh/v1alpha1", "jobset.x-k8s.io/v1alpha2", "leaderworkerset.x-k8s.io/v1"
VCJOB = "definitions/batch.volcano.sh/Job/v1alpha1/testdata/running.yaml"  # tasks master x1 (min 1), worker x3 (min 2)
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
LWS = "definitions/leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml"  # workers: replicas x (size-1)
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
CRDS = ["jobs.batch.volcano.sh", "leaderworkersets.leaderworkerset.x-k8s.io"]  # installed here, removed after


def client(server: Server, user: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token(user)}"} if user else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def _template(kind: str, name: str, replicas: int | None = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


@pytest.fixture(scope="module")
def world(kubectl: Kubectl, secured: Server) -> Iterator[dict[str, Any]]:
    kubectl.ensure_namespace(NS)
    out: dict[str, Any] = {}
    out["web"] = kubectl.apply(_template("Deployment", "web", 2))
    out["db"] = kubectl.apply(_template("StatefulSet", "db", 1))
    out["agent"] = kubectl.apply(_template("DaemonSet", "agent", None))
    kubectl.apply(crd("batch.volcano.sh", "Job", "jobs", ["v1alpha1"]))
    kubectl.apply(crd("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkersets", ["v1"]))
    kubectl.wait_crds(CRDS)
    lws, _ = fixture_object(LWS, NS, "lws")
    out["lws"] = kubectl.apply(lws)
    vc, _ = fixture_object(VCJOB, NS, "vc")
    out["vc"] = kubectl.apply(vc)
    js, _ = fixture_object(JOBSET, NS, "js")
    out["js"] = kubectl.apply(js)
    # carol may read Deployments here, not change them
    for doc in reader_rbac("carol", NS, [("apps", "deployments"), ("", "events")]):
        kubectl.apply(doc)
    # The kinds installed just now reach the service's model through its CRD watch: act only
    # once it serves each workload.
    with client(secured, "admin") as c:
        for name, kind, api in (("lws", "LeaderWorkerSet", LWS_API), ("vc", "Job", VC_API), ("js", "JobSet", JS_API),
                                ("web", "Deployment", "apps/v1"), ("db", "StatefulSet", "apps/v1")):
            eventually(lambda: c.get(f"/workloads/{NS}/{name}", params={"kind": kind, "apiVersion": api}
                                     ).status_code == 200, timeout=30, what=f"{kind} {name} in the service")
    yield out
    for api, kind, name in ((VC_API, "Job", "vc"), (JS_API, "JobSet", "js"), (LWS_API, "LeaderWorkerSet", "lws")):
        kubectl.delete(api, kind, NS, name)  # the API server is the suite's: leave no stray objects
    for name in CRDS:  # nor kinds: a second Job kind makes `job` ambiguous for later tests
        kubectl.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, name)


def stored(kubectl: Kubectl, api: str, kind: str, name: str) -> dict[str, Any]:
    return kubectl.get(api, kind, NS, name)


def _problem(r: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["type"].endswith(slug), body
    return body


def test_scale_a_deployment(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """`.spec.replicas` written as one patch; the answer is the live interpretation after it; the
    same count again writes nothing."""
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/web/scale", params={"kind": "Deployment"},
                   json={"replicas": {"deployment": 5}})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["action"] == {"name": "scale", "changed": True}
        assert body["tree"]["instances"][0]["replicas"] == 5 and body["totals"]["pods"] == 5
        assert stored(kubectl, "apps/v1", "Deployment", "web")["spec"]["replicas"] == 5
        rv = stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"]
        again = c.post(f"/clusters/local/workloads/{NS}/web/scale", params={"kind": "Deployment"},
                       json={"replicas": {"deployment": 5}})
        assert again.status_code == 200 and again.json()["action"]["changed"] is False, again.text
        assert stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"] == rv


def test_scale_a_statefulset_and_a_volcano_task(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """A StatefulSet by name without kind; one task of a Volcano Job (`task/worker`) leaves the
    other task as it was."""
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/db/scale", params={"kind": "StatefulSet"},
                   json={"replicas": {"statefulset": 3}})
        assert r.status_code == 200 and r.json()["action"]["changed"] is True, r.text
        assert stored(kubectl, "apps/v1", "StatefulSet", "db")["spec"]["replicas"] == 3
        r = c.post(f"/workloads/{NS}/vc/scale", params={"kind": "Job", "apiVersion": VC_API},
                   json={"replicas": {"task/worker": 6}})
        assert r.status_code == 200, r.text
        tasks = {t["name"]: t["replicas"] for t in stored(kubectl, VC_API, "Job", "vc")["spec"]["tasks"]}
        assert tasks == {"master": 1, "worker": 6}
        got = {i["id"]: i["replicas"] for i in r.json()["tree"]["children"][0]["instances"]}
        assert got == {"master": 1, "worker": 6}


def test_scale_refusals(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """Refused as /interpret/update refuses `replicas`, by name and before anything is written:
    a count below the task's minAvailable, a computed replicas path (LeaderWorkerSet workers,
    replicas x (size - 1)), one read from the controller's status (a DaemonSet's), a component
    the definition does not have, a malformed body."""
    before = stored(kubectl, VC_API, "Job", "vc")["metadata"]["resourceVersion"]
    lws_before = stored(kubectl, LWS_API, "LeaderWorkerSet", "lws")["metadata"]["resourceVersion"]
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/lws/scale", json={"replicas": {"worker": 9}})
        body = _problem(r, 422, "update-refused")
        assert body["detail"].startswith("component worker: its replicas are computed, not written anywhere"), body
        r = c.post(f"/workloads/{NS}/vc/scale", params={"kind": "Job", "apiVersion": VC_API},
                   json={"replicas": {"task/worker": 1}})
        body = _problem(r, 422, "update-refused")
        assert "1 is below task/worker's minReplicas 2" in body["detail"], body
        assert body["errors"][0]["path"] == "replicas.task/worker"
        r = c.post(f"/workloads/{NS}/agent/scale", params={"kind": "DaemonSet"},
                   json={"replicas": {"daemonset": 2}})
        body = _problem(r, 422, "update-refused")
        assert "component daemonset" in body["detail"] and "/status/desiredNumberScheduled" in body["detail"], body
        r = c.post(f"/workloads/{NS}/web/scale", params={"kind": "Deployment"}, json={"replicas": {"nope": 1}})
        assert "no such component" in _problem(r, 422, "update-refused")["detail"]
        for bad in ({}, {"replicas": {}}, {"replicas": {"deployment": -1}}, {"replicas": {"deployment": 1}, "x": 1}):
            assert c.post(f"/workloads/{NS}/web/scale", json=bad).status_code == 422, bad
    assert stored(kubectl, VC_API, "Job", "vc")["metadata"]["resourceVersion"] == before
    assert stored(kubectl, LWS_API, "LeaderWorkerSet", "lws")["metadata"]["resourceVersion"] == lws_before


def test_restart_a_deployment(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """The annotation kubectl rollout restart writes, now, on the pod template (not the object);
    a second restart writes a new one."""
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/web/restart", params={"kind": "Deployment"})
        assert r.status_code == 200, r.text
        assert r.json()["action"] == {"name": "restart", "changed": True}
        obj = stored(kubectl, "apps/v1", "Deployment", "web")
        stamp = obj["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
        at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs(datetime.now(UTC) - at) < timedelta(minutes=2), stamp
        assert RESTARTED_AT not in (obj["metadata"].get("annotations") or {})
        assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "web"}  # merged, not replaced
        r = c.post(f"/workloads/{NS}/lws/restart")  # leader and worker templates alike
        assert r.status_code == 200, r.text
        lwt = stored(kubectl, LWS_API, "LeaderWorkerSet", "lws")["spec"]["leaderWorkerTemplate"]
        for t in ("leaderTemplate", "workerTemplate"):
            if t in lwt:
                assert lwt[t]["metadata"]["annotations"][RESTARTED_AT], (t, lwt[t])
        r = c.post(f"/clusters/local/workloads/{NS}/db/restart")
        assert r.status_code == 200, r.text
        assert RESTARTED_AT in stored(kubectl, "apps/v1", "StatefulSet", "db")["spec"]["template"]["metadata"][
            "annotations"]


def test_restart_refused_where_pods_do_not_roll(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """A JobSet keeps its running pods whatever its template says: 422 naming why, nothing written."""
    before = stored(kubectl, JS_API, "JobSet", "js")["metadata"]["resourceVersion"]
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/js/restart", params={"kind": "JobSet"})
        body = _problem(r, 422, "restart-not-supported")
        assert body["detail"].startswith("JobSet cannot be restarted: its controller does not replace running pods")
        assert "workload-map.dev/restart: rollout" in body["detail"]
    assert stored(kubectl, JS_API, "JobSet", "js")["metadata"]["resourceVersion"] == before


def test_a_caller_without_patch_is_refused(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """carol may get the Deployment, not patch it: 403 before anything is read, the same words for
    a name that does not exist; the audit line lists the check."""
    before = stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"]
    with client(secured, "carol") as c:
        assert c.get(f"/workloads/{NS}/web", params={"kind": "Deployment"}).status_code == 200
        for path, body in (("scale", {"replicas": {"deployment": 1}}), ("restart", None)):
            a = c.post(f"/workloads/{NS}/web/{path}", params={"kind": "Deployment"}, json=body)
            b = c.post(f"/workloads/{NS}/no-such/{path}", params={"kind": "Deployment"}, json=body)
            assert a.status_code == 403 and (a.json()["detail"], b.status_code) == (b.json()["detail"], 403), a.text
            assert a.json()["detail"] == f"not allowed to patch deployments.apps in namespace {NS}"
    assert stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"] == before
    lines = [json.loads(x) for x in secured.output().splitlines() if x.startswith("{")]
    hits = [x for x in lines if x.get("logger") == "wlmap.audit" and x.get("user") == "carol"
            and x.get("route") == "/workloads/{namespace}/{name}/restart"]
    assert hits and hits[-1]["decision"] == "deny", hits[-1:]
    assert {"verb": "patch", "resource": "deployments.apps", "namespace": NS, "allowed": False,
            "cluster": "local"} in hits[-1]["checks"]


def test_actions_off_refuse(service: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    before = stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"]
    with httpx.Client(base_url=service.url, timeout=30) as c:
        for path, body in ((f"/workloads/{NS}/web/scale", {"replicas": {"deployment": 1}}),
                           (f"/clusters/local/workloads/{NS}/web/restart", None)):
            r = c.post(path, json=body)
            assert r.status_code == 403 and r.json()["detail"].startswith("actions are off (--actions)"), r.text
    assert stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"] == before


# -- the CLI ---------------------------------------------------------------------------------

def test_cli_scale_and_restart(apiserver: ApiServer, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """`wlmap scale TYPE/NAME COMPONENT=N` and `wlmap restart TYPE/NAME` through the kubeconfig;
    refusals are a clean message and exit 5."""
    from ..cli.test_cli_live import wlmap

    admin = apiserver.kubeconfig("admin")
    r = wlmap("scale", "deployment/web", "deployment=2", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("deployment.apps/web scaled; phase"), r.stdout
    assert stored(kubectl, "apps/v1", "Deployment", "web")["spec"]["replicas"] == 2
    r = wlmap("scale", "deployments", "web", "deployment=2", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0 and "already scaled (unchanged)" in r.stdout, (r.stdout, r.stderr)
    r = wlmap("scale", "jobs.batch.volcano.sh/vc", "task/master=1", "task/worker=4", "-n", NS, "-o", "json",
              kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    got = {i["id"]: i["replicas"] for i in json.loads(r.stdout)["tree"]["children"][0]["instances"]}
    assert got == {"master": 1, "worker": 4}
    r = wlmap("restart", "deployment/web", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0 and "deployment.apps/web restarted" in r.stdout, (r.stdout, r.stderr)
    tmpl = stored(kubectl, "apps/v1", "Deployment", "web")["spec"]["template"]
    assert RESTARTED_AT in tmpl["metadata"]["annotations"]
    for args, code, words in ((["restart", "jobset/js"], 5, "JobSet cannot be restarted"),
                              (["scale", "daemonset/agent", "daemonset=3"], 5, "component daemonset"),
                              (["scale", "jobs.batch.volcano.sh/vc", "task/worker=1"], 5, "below task/worker's"),
                              (["scale", "deployment/web", "deployment"], 2, "COMPONENT[/INSTANCE]=N"),
                              (["restart", "deployment/no-such"], 3, 'Deployment "no-such" not found')):
        r = wlmap(*args, "-n", NS, kubeconfig=admin)
        assert r.returncode == code and words in r.stderr, (args, r.returncode, r.stderr)
    # carol may read the Deployment, not patch it: the API server's refusal, exit 1, nothing written
    before = stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"]
    r = wlmap("restart", "deployment/web", "-n", NS, kubeconfig=apiserver.kubeconfig("carol"))
    assert r.returncode == 1 and "not allowed to patch" in r.stderr, r.stderr
    assert stored(kubectl, "apps/v1", "Deployment", "web")["metadata"]["resourceVersion"] == before
