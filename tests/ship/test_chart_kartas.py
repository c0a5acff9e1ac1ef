"""The chart's Karta parts: the opt-in Karta CRD (printer columns read back as a Table from a real
API server; the schema takes every catalog definition) and `kartas.manage` (its RBAC, exactly;
the service writing Karta status with nothing but that RBAC)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from app.karta.load import load_builtin

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.kubeobjects import Kubectl, crd
from ..cluster.util import BATCHTASK_DEF, definition_text, eventually
from ..service.conftest import Server
from .test_helm_chart import (
    FULLNAME,
    Cluster,
    env_of,
    install,
    named,
    objects,
    one,
    render,
    rule_set,
    sa_token,
)

NS = "wlmap-kartas"  # the release namespace of the managing install
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_karta_parts_are_off_by_default() -> None:
    objs = objects(render())
    assert not [o for o in objs if o["kind"] == "CustomResourceDefinition" or "karta" in o["metadata"]["name"]]
    assert "WLMAP_MANAGE_KARTAS" not in env_of(objs)  # the service's default: false


def test_manage_grants_exactly_the_status_writer_rules() -> None:
    objs = objects(render({"kartas": {"manage": True}}))
    assert env_of(objs)["WLMAP_MANAGE_KARTAS"] == "true"
    name = f"{FULLNAME}-karta-manager"
    assert rule_set(named(objs, "ClusterRole", name)["rules"]) == {
        ("run.ai", "kartas", "patch"), ("run.ai", "kartas/status", "patch"),
        *{("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("get", "list", "watch")}}
    lease = named(objs, "Role", name)
    assert lease["metadata"]["namespace"] == "wlmap-chart"
    assert lease["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["workload-map-karta-manager"],
         "verbs": ["get", "update"]}]
    events = named(objs, "Role", f"{FULLNAME}-karta-events")
    assert events["metadata"]["namespace"] == "default"
    assert events["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    sa = {"kind": "ServiceAccount", "name": FULLNAME, "namespace": "wlmap-chart"}
    for kind, role in (("ClusterRoleBinding", name), ("RoleBinding", name), ("RoleBinding", f"{FULLNAME}-karta-events")):
        assert named(objs, kind, role)["subjects"] == [sa]
    assert not [o for o in objects(render({"kartas": {"manage": True}, "rbac": {"create": False}}))
                if "karta" in o["metadata"]["name"]]


def test_manage_without_karta_resources_is_refused() -> None:
    with pytest.raises(Exception, match="kartas.manage needs config.kartaResources: true"):
        render({"kartas": {"manage": True}, "config": {"kartaResources": False}})


def crd_from_chart() -> dict[str, Any]:
    return one(objects(render({"kartas": {"installCRD": True}})), "CustomResourceDefinition")


def test_crd_shape() -> None:
    crd = crd_from_chart()
    assert crd["metadata"]["name"] == "kartas.run.ai"
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    spec = crd["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["plural"]) == (
        "run.ai", "Cluster", "Karta", "kartas")
    (v,) = spec["versions"]
    assert v["name"] == "v1alpha1" and v["served"] and v["storage"] and v["subresources"] == {"status": {}}
    cols = {c["name"]: c for c in v["additionalPrinterColumns"]}
    assert [c["name"] for c in v["additionalPrinterColumns"] if not c.get("priority")] == ["Kind", "Ready", "Age"]
    assert cols["Kind"]["jsonPath"] == ".spec.structureDefinition.rootComponent.kind.kind"
    assert cols["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert cols["Age"] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def table(api: ApiServer, path: str) -> dict[str, Any]:
    """A list as `kubectl get` asks for it: a server-side Table."""
    req = urllib.request.Request(api.url + path, headers={"Authorization": f"Bearer {TOKENS['admin'][0]}",
                                                          "Accept": TABLE})
    with urllib.request.urlopen(req, context=api._ctx(), timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def chart_crd(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[str]:
    """The chart's CRD in place of the suite's minimal kartas.run.ai (put back afterwards)."""
    Cluster(apiserver).apply(crd_from_chart())
    kubectl.wait_crds(["kartas.run.ai"])
    yield "/apis/run.ai/v1alpha1/kartas"
    kubectl.apply(crd("run.ai", "Karta", "kartas", ["v1alpha1"], scope="Cluster"))
    kubectl.wait_crds(["kartas.run.ai"])


def test_crd_schema_takes_every_catalog_definition(apiserver: ApiServer, chart_crd: str) -> None:
    """Server-side dry runs: the API server stores each built-in definition as it is written."""
    defs = load_builtin()
    assert len(defs) > 20
    for d in defs:
        out = apiserver.call("POST", f"{chart_crd}?dryRun=All", d.raw)
        assert out["spec"] == json.loads(json.dumps(d.raw["spec"])), d.name


@pytest.fixture(scope="module")
def managing(apiserver: ApiServer, kubectl: Kubectl, chart_crd: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The chart installed with kartas.manage, and `wlmap serve` as its service account with its env."""
    cluster = Cluster(apiserver)
    kubectl.ensure_namespace(NS)
    kube_version, api_versions = cluster.capabilities()
    objs = [o for o, _ in install(cluster, render({"kartas": {"manage": True}, "config": {"cache": False}},
                                                  name="wlmap-kartas", namespace=NS, kube_version=kube_version,
                                                  api_versions=api_versions))]
    token = sa_token(apiserver, NS, one(objs, "ServiceAccount")["metadata"]["name"])
    kc = apiserver.write_kubeconfig(tmp_path_factory.mktemp("kartas") / "kubeconfig", token, "wlmap-kartas-sa")
    env = {k: v for k, v in env_of(objs).items() if k.startswith("WLMAP_")}
    s = Server("--kubeconfig", str(kc), "--namespace", NS, env=env)
    yield s
    s.stop()


def test_the_chart_lets_the_leader_write_status_labels_and_events(managing: Server, apiserver: ApiServer,
                                                                  kubectl: Kubectl, chart_crd: str) -> None:
    """With nothing but the chart's RBAC and CRD; then `kubectl get kartas` shows KIND and READY."""
    doc = yaml.safe_load(definition_text(BATCHTASK_DEF))
    doc["metadata"] = {"name": "chart-managed"}
    kubectl.apply(doc)
    try:
        def ready() -> bool:
            obj = kubectl.get("run.ai/v1alpha1", "Karta", None, "chart-managed")
            conds = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}
            return conds.get("Ready") == "True" and obj["metadata"].get("labels", {}).get("run.ai/karta-kind") == \
                "BatchTask"

        eventually(ready, timeout=20, what="status and labels written with the chart's RBAC")
        lease = apiserver.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/workload-map-karta-manager")
        assert lease["spec"]["holderIdentity"]
        q = "fieldSelector=involvedObject.name%3Dchart-managed"
        ev, _ = eventually(lambda: apiserver.call("GET", f"/api/v1/namespaces/default/events?{q}")["items"],
                           what="an Event in the namespace default")
        assert ev[0]["reason"] == "Validated"
        out = managing.output()
        assert "could not" not in out and "not allowed" not in out and "failed" not in out, out

        t = table(apiserver, chart_crd)
        assert t["kind"] == "Table"
        assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == ["Name", "Kind", "Ready", "Age"]
        (row,) = [r for r in t["rows"] if r["cells"][0] == "chart-managed"]
        assert row["cells"][1:3] == ["BatchTask", "True"]
    finally:
        kubectl.delete("run.ai/v1alpha1", "Karta", None, "chart-managed")
