"""Acting on workloads on a real API server: suspend / resume through each definition's
`suspendDefinition`, `/interpret/update?apply=true`, the caller's `patch` right (asked before the
object is read), one patch guarded by the resourceVersion (409 on a concurrent change), and
`--actions false` refusing.  The services are the suite's `secured` (--auth kubernetes,
--actions true) and `service` (--actions off)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.cluster.kube import Kube
from app.cluster.writes import WriteFailed, guard, guarded_patch

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS, token
from .kubeobjects import Kubectl, crd, reader_rbac
from .util import BATCHTASK_DEF, definition_text, eventually, fixture_object

NS = "acting"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
RAY = "definitions/ray.io/RayCluster/v1/testdata/running.yaml"
JS_API, RAY_API, GADGET_API = "jobset.x-k8s.io/v1alpha2", "ray.io/v1", "act.example.com/v1"
# A kind whose definition comes from a ConfigMap, with two suspend actions applied in order
# (the second writes through a quoted key, the first is overwritten by a later one).
GADGET_DEF = (definition_text(BATCHTASK_DEF).replace("acme.example.com", "act.example.com")
              .replace("BatchTask", "Gadget").replace("acme-example-com-batchtask", "act-example-com-gadget")
              .replace('suspendActions: [{path: .spec.paused, value: "true"}]',
                       'suspendActions: [{path: .spec.paused, value: "false"}, '
                       '{path: .metadata.annotations."act.example.com/state", value: \'"suspended"\'}, '
                       '{path: .spec.paused, value: "true"}]'))


def client(server: Server, user: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token(user)}"} if user else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def world(kubectl: Kubectl, secured: Server) -> Iterator[dict[str, Any]]:
    kubectl.ensure_namespace(NS)
    out: dict[str, Any] = {}
    for key, rel, name in (("jobset", JOBSET, "js"), ("ray", RAY, "rc"), ("other", JOBSET, "js-other")):
        obj, _ = fixture_object(rel, NS, name)  # no status: no controller runs here
        obj["spec"].pop("suspend", None)
        out[key] = kubectl.apply(obj)
    out["deploy"] = kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                                   "metadata": {"name": "web", "namespace": NS},
                                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                                            "template": {"metadata": {"labels": {"app": "web"}},
                                                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    kubectl.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "gadget-def", "namespace": SERVICE_NS,
                                "labels": {"workload-map.dev/definitions": "true"}},
                   "data": {"gadget.yaml": GADGET_DEF}})
    kubectl.apply(crd("act.example.com", "Gadget", "gadgets", ["v1"]))
    kubectl.wait_crds(["gadgets.act.example.com"])
    out["gadget"] = kubectl.apply({"apiVersion": GADGET_API, "kind": "Gadget",
                                   "metadata": {"name": "g1", "namespace": NS},
                                   "spec": {"workers": 1, "podTemplate": {"spec": {"containers": [
                                       {"name": "main", "image": "x"}]}}}})
    # carol may read JobSets and RayClusters here (and their pods), not change them
    for doc in reader_rbac("carol", NS, [("jobset.x-k8s.io", "jobsets"), ("ray.io", "rayclusters"),
                                          ("", "events")]):
        kubectl.apply(doc)
    with client(secured, "admin") as c:
        eventually(lambda: any(d["kind"] == "Gadget" and d["state"] == "active"
                               for d in c.get("/definitions").json()["items"]), timeout=15,
                   what="the ConfigMap definition is served")
    yield out
    kubectl.delete("v1", "ConfigMap", SERVICE_NS, "gadget-def")


def stored(kubectl: Kubectl, api: str, kind: str, name: str) -> dict[str, Any]:
    return kubectl.get(api, kind, NS, name)


@pytest.mark.parametrize("api,kind,name", [(JS_API, "JobSet", "js"), (RAY_API, "RayCluster", "rc")])
def test_suspend_then_resume_catalog_kinds(secured: Server, kubectl: Kubectl, world: dict[str, Any],
                                           api: str, kind: str, name: str) -> None:
    """The catalog's suspendDefinition (`.spec.suspend = true`) written as one patch; the answer
    is the live interpretation read after it; resume writes it back; a second suspend changes nothing."""
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/{name}/suspend", params={"kind": kind})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["action"] == {"name": "suspend", "changed": True}
        assert body["workload"]["name"] == name and body["status"]["phase"] == "Suspended", body["status"]
        assert body["freshness"]["source"] == "direct"
        assert stored(kubectl, api, kind, name)["spec"]["suspend"] is True
        again = c.post(f"/workloads/{NS}/{name}/suspend", params={"kind": kind, "apiVersion": api})
        assert again.status_code == 200 and again.json()["action"]["changed"] is False
        r = c.post(f"/clusters/local/workloads/{NS}/{name}/resume", params={"kind": kind})
        assert r.status_code == 200, r.text
        assert r.json()["action"] == {"name": "resume", "changed": True}
        assert r.json()["status"]["phase"] != "Suspended"
        assert stored(kubectl, api, kind, name)["spec"]["suspend"] is False


def test_suspend_with_a_configmap_definition(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """A definition from a ConfigMap: its actions applied in order (a later one overwrites an
    earlier one; a value that is a JSON string), found by name without kind."""
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/g1/suspend")
        assert r.status_code == 200, r.text
        assert r.json()["definition"]["name"] == "act-example-com-gadget-v1"
        obj = stored(kubectl, GADGET_API, "Gadget", "g1")
        assert obj["spec"]["paused"] is True
        assert obj["metadata"]["annotations"]["act.example.com/state"] == "suspended"
        assert c.post(f"/workloads/{NS}/g1/resume").status_code == 200
        assert stored(kubectl, GADGET_API, "Gadget", "g1")["spec"]["paused"] is False


def test_no_suspend_definition_is_422(secured: Server, world: dict[str, Any]) -> None:
    with client(secured, "admin") as c:
        r = c.post(f"/workloads/{NS}/web/suspend", params={"kind": "Deployment"})
    assert r.status_code == 422 and r.json()["type"].endswith("no-suspend-definition"), r.text
    assert "the definition of Deployment has no suspendDefinition" in r.json()["detail"]


def test_a_caller_without_patch_is_refused(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """carol may get the JobSet but not patch it: 403 before anything is read (the same words for
    a name that does not exist), and the object is unchanged on the API server."""
    before = stored(kubectl, JS_API, "JobSet", "js-other")
    with client(secured, "carol") as c:
        assert c.get(f"/workloads/{NS}/js-other", params={"kind": "JobSet"}).status_code == 200
        r = c.post(f"/workloads/{NS}/js-other/suspend", params={"kind": "JobSet"})
        assert r.status_code == 403, r.text
        assert r.json()["detail"] == f"not allowed to patch jobsets.jobset.x-k8s.io in namespace {NS}"
        missing = c.post(f"/workloads/{NS}/no-such-jobset/suspend", params={"kind": "JobSet"})
        assert (missing.status_code, missing.json()["detail"]) == (403, r.json()["detail"])
        r = c.post("/interpret/update", params={"apply": "true"},
                   json={"ref": {"apiVersion": JS_API, "kind": "JobSet", "namespace": NS, "name": "js-other"},
                         "set": {"labels": {"queue": "a"}}})
        assert r.status_code == 403, r.text
    with client(secured, None) as c:
        assert c.post(f"/workloads/{NS}/js-other/suspend").status_code == 401
    after = stored(kubectl, JS_API, "JobSet", "js-other")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "suspend" not in after["spec"]


def test_the_patch_check_is_audited(secured: Server, world: dict[str, Any]) -> None:
    with client(secured, "carol") as c:
        assert c.post(f"/workloads/{NS}/js-other/resume", params={"kind": "JobSet"}).status_code == 403

    def line() -> dict[str, Any] | None:
        lines = [json.loads(x) for x in secured.output().splitlines() if x.startswith("{")]
        hits = [x for x in lines if x.get("logger") == "wlmap.audit" and x.get("user") == "carol"
                and x.get("route") == "/workloads/{namespace}/{name}/resume"]
        return hits[-1] if hits else None

    got, _ = eventually(line, timeout=10, what="the audit line")
    assert got["decision"] == "deny" and got["status"] == 403
    assert {"verb": "patch", "resource": "jobsets.jobset.x-k8s.io", "namespace": NS, "allowed": False,
            "cluster": "local"} in got["checks"]


def test_a_concurrent_change_is_a_409(apiserver: ApiServer, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """The guarded patch made from a version that is no longer current writes nothing."""
    obj = stored(kubectl, JS_API, "JobSet", "js-other")
    stale = obj["metadata"]["resourceVersion"]
    kubectl.patch(obj, {"metadata": {"labels": {"edited": "meanwhile"}}})  # someone else's change

    async def attempt() -> None:
        kube = await Kube.connect(str(apiserver.kubeconfig("service")))
        try:
            res = await kube.resource(("jobset.x-k8s.io", "v1alpha2", "JobSet"))
            assert res is not None
            await guarded_patch(kube, res, NS, "js-other", guard([{"op": "add", "path": "/spec/suspend",
                                                                  "value": True}], stale))
        finally:
            await kube.close()

    with pytest.raises(WriteFailed) as e:
        asyncio.run(attempt())
    assert e.value.status == 409 and e.value.slug == "conflict", e.value.message
    now = stored(kubectl, JS_API, "JobSet", "js-other")
    assert "suspend" not in now["spec"] and now["metadata"]["labels"]["edited"] == "meanwhile"


def test_update_apply(secured: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """?apply=true with a ref: the returned patch applied, the object as stored in the answer; with
    an inline object there is nothing to apply to."""
    ref = {"apiVersion": JS_API, "kind": "JobSet", "namespace": NS, "name": "js"}
    with client(secured, "admin") as c:
        r = c.post("/interpret/update", params={"apply": "true"},
                   json={"ref": ref, "set": {"labels": {"queue": "q1"}, "schedulerName": "kai-scheduler"}})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["applied"] is True and body["patch"][0]["op"] == "test"
        obj = stored(kubectl, JS_API, "JobSet", "js")
        assert body["object"]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        for rj in obj["spec"]["replicatedJobs"]:
            tmpl = rj["template"]["spec"]["template"]
            assert tmpl["metadata"]["labels"]["queue"] == "q1" and tmpl["spec"]["schedulerName"] == "kai-scheduler"
        again = c.post("/interpret/update", params={"apply": "true"},
                       json={"ref": ref, "set": {"labels": {"queue": "q1"}}})
        assert again.status_code == 200 and again.json()["applied"] is False
        inline = c.post("/interpret/update", params={"apply": "true"},
                        json={"object": obj, "set": {"labels": {"queue": "q2"}}})
        assert inline.status_code == 422 and inline.json()["type"].endswith("nothing-to-apply"), inline.text


def test_actions_off_refuse(service: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """Without --actions true nothing is written, for any caller."""
    before = stored(kubectl, JS_API, "JobSet", "js-other")
    with httpx.Client(base_url=service.url, timeout=30) as c:
        for path in (f"/workloads/{NS}/js-other/suspend", f"/clusters/local/workloads/{NS}/js-other/resume"):
            r = c.post(path)
            assert r.status_code == 403 and r.json()["detail"].startswith("actions are off (--actions)"), r.text
        r = c.post("/interpret/update", params={"apply": "true"},
                   json={"ref": {"apiVersion": JS_API, "kind": "JobSet", "namespace": NS, "name": "js-other"},
                         "set": {"labels": {"queue": "a"}}})
        assert r.status_code == 403 and "--actions" in r.json()["detail"], r.text
    assert stored(kubectl, JS_API, "JobSet", "js-other")["metadata"]["resourceVersion"] == \
        before["metadata"]["resourceVersion"]


# -- the CLI ---------------------------------------------------------------------------------

def test_cli_suspend_and_resume(apiserver: ApiServer, kubectl: Kubectl, world: dict[str, Any]) -> None:
    """`wlmap suspend|resume TYPE/NAME` through the kubeconfig; exit codes as documented."""
    from ..cli.test_cli_live import wlmap

    admin = apiserver.kubeconfig("admin")
    r = wlmap("suspend", "raycluster/rc", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "raycluster.ray.io/rc suspended; phase Suspended"
    assert stored(kubectl, RAY_API, "RayCluster", "rc")["spec"]["suspend"] is True
    r = wlmap("suspend", "rayclusters", "rc", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0 and "already suspended (unchanged)" in r.stdout, r.stdout
    r = wlmap("resume", "raycluster/rc", "-n", NS, "-o", "json", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["workload"]["name"] == "rc"
    assert stored(kubectl, RAY_API, "RayCluster", "rc")["spec"]["suspend"] is False
    # carol may read the JobSet, not patch it: the API server's refusal, exit 1, nothing written
    before = stored(kubectl, JS_API, "JobSet", "js-other")["metadata"]["resourceVersion"]
    r = wlmap("suspend", "jobset/js-other", "-n", NS, kubeconfig=apiserver.kubeconfig("carol"))
    assert r.returncode == 1 and "not allowed to patch" in r.stderr and "forbidden" in r.stderr, r.stderr
    assert stored(kubectl, JS_API, "JobSet", "js-other")["metadata"]["resourceVersion"] == before
    for args, code, words in ((["jobset/no-such"], 3, 'JobSet "no-such" not found'),
                              (["deployment/web"], 5, "has no suspendDefinition"),
                              (["frobnicator/x"], 4, 'no Karta definition covers "frobnicator"')):
        r = wlmap("suspend", *args, "-n", NS, kubeconfig=admin)
        assert r.returncode == code and words in r.stderr, (args, r.returncode, r.stderr)


@pytest.fixture(scope="module")
def open_service(apiserver: ApiServer) -> Iterator[Server]:
    """--auth none --actions true: whatever the service account may patch, for anyone."""
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--actions", "true", "--cache", "false", "--karta-resources", "false")
    yield s
    s.stop()


def test_without_auth_the_service_accounts_rights_decide(open_service: Server, kubectl: Kubectl,
                                                        world: dict[str, Any]) -> None:
    """No caller rights to check: a kind the service account may patch is suspended; one it may
    not (PyTorchJob: not in the test's patch rule, as a kind outside the chart's catalog rules) is
    a 503 naming config.actions, and nothing is written."""
    obj, _ = fixture_object("definitions/kubeflow.org/PyTorchJob/v1/testdata/running.yaml", NS, "pt")
    pt = kubectl.apply(obj)
    with httpx.Client(base_url=open_service.url, timeout=30) as c:
        r = c.post(f"/workloads/{NS}/js-other/resume", params={"kind": "JobSet"})
        assert r.status_code == 200 and r.json()["action"]["name"] == "resume", r.text
        r = c.post(f"/workloads/{NS}/pt/suspend", params={"kind": "PyTorchJob"})
        assert r.status_code == 503 and r.json()["type"].endswith("service-forbidden"), r.text
        assert "config.actions" in r.json()["detail"] and "not allowed to patch" in r.json()["detail"]
    now = kubectl.get("kubeflow.org/v1", "PyTorchJob", NS, "pt")
    assert now["metadata"]["resourceVersion"] == pt["metadata"]["resourceVersion"]
    kubectl.delete("kubeflow.org/v1", "PyTorchJob", NS, "pt")  # the API server is the suite's: leave no stray kind
