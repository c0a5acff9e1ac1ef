"""The Helm chart (helm/workload-map) with the real Helm engine (helm-python-sdk: lint, schema,
render) and a real kube-apiserver: the rendered manifests are applied as they are, and the
service runs with exactly the chart's RBAC (a token of the chart's service account) and the
chart's settings (the Deployment's WLMAP_* variables)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import httpx
import pytest
import yaml
from helm_python import _native

from app.karta.load import load_builtin
from app.service.settings import Settings

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.kubeobjects import Kubectl, crd, owner_ref, pod, running
from ..cluster.test_workloads import _jobset_with_pods
from ..cluster.util import BATCHTASK_DEF, definition_text, eventually, fixture_object
from ..service.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "workload-map"
DASHBOARD = CHART / "dashboards" / "workload-map.json"
APP_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

RELEASE = "wlmap"
RELEASE_NS = "wlmap-chart"  # where the chart is installed (namespaces cannot be deleted on this server)
LIVE_NS = "chart-live"  # workloads the installed service is asked about
FULL_NS = "chart-full"  # the non-default values, applied only
FULLNAME = f"{RELEASE}-workload-map"
READER = f"{FULLNAME}-workload-metrics-reader"
PROMETHEUS_SA = {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
WORKLOADS_ENDPOINT = {"port": "http", "path": "/metrics/workloads", "interval": "30s", "scrapeTimeout": "10s",
                      "honorLabels": True,
                      "relabelings": [{"sourceLabels": ["__metrics_path__"], "targetLabel": "metrics_path"}]}
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SAME_NAMESPACE = {"podSelector": {}}
PROMETHEUS_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
TLS_DIR = "/etc/workload-map/tls"
CERT_MANAGER = {"tls": {"certManager": {"enabled": True, "issuerRef": {"name": "cluster-ca", "kind": "ClusterIssuer"},
                                        "duration": "720h", "dnsNames": ["wlmap.example.com"]}},
                "metrics": {"serviceMonitor": {"enabled": True}}}
ADMIN = {"Authorization": f"Bearer {TOKENS['admin'][0]}"}

BATCHTASK_RULE = {"apiGroups": ["acme.example.com"], "resources": ["batchtasks"], "verbs": ["get", "list", "watch"]}
FULL_VALUES: dict[str, Any] = {
    "replicas": 3,
    "image": {"repository": "registry.example.com/ai/workload-map", "tag": "1.2.3", "pullPolicy": "Always"},
    "config": {"workers": 2, "evalDeadline": 2.5, "evalWorkers": 3, "isolation": "all", "maxBodyBytes": 10485760,
               "actions": True,
               "allowInlineDefinitions": False, "auth": "none", "configmapSelector": "team=ml",
               "kartaResources": False, "logLevel": "debug", "jqResultCache": False, "cache": False,
               "watchNamespaces": ["team-a", "team-b"], "streamBuffer": 50, "streamWriteTimeout": 2.5},
    "tls": {"secretName": "wlmap-full-tls"},
    "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 8, "targetCPUUtilizationPercentage": 60},
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prometheus"}},
                "workloadMetrics": {"readers": [PROMETHEUS_SA]}},
    "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "AI workloads"}},
    "networkPolicy": {"enabled": True,
                      "ingressFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ui"}}}],
                      "apiServer": {"cidrs": ["10.0.0.1/32"], "ports": [6443]}},
    "rbac": {"extraRules": [BATCHTASK_RULE]},
    "definitions": {"batchtask.yaml": definition_text(BATCHTASK_DEF),
                    "batchtask-object.yaml": yaml.safe_load(definition_text(BATCHTASK_DEF))},
    "podAnnotations": {"example.com/team": "ml"}, "podLabels": {"tier": "platform"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cpu"]}]}}]}},
}


def _chart_rbac() -> Any:
    spec = importlib.util.spec_from_file_location("chart_rbac", ROOT / "scripts" / "chart_rbac.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- rendering ------------------------------------------------------------------------------

def render(values: dict[str, Any] | None = None, *, name: str = RELEASE, namespace: str = RELEASE_NS,
           kube_version: str | None = None, api_versions: list[str] | None = None) -> dict[str, str]:
    """{template: text}.  kube_version/api_versions are what `helm template --kube-version
    --api-versions` takes (the API versions are added to Helm's default set, which lists every
    version); the native render takes them, the Python wrapper of helm-python-sdk 0.2 does not
    pass them on."""
    chart = helm_python.Chart.load(CHART)
    if kube_version is None and api_versions is None:
        return chart.render(values or {}, name=name, namespace=namespace, is_install=True)
    opts: dict[str, Any] = {"name": name, "namespace": namespace, "is_install": True}
    if kube_version:
        opts["kube_version"] = kube_version
    if api_versions is not None:
        opts["api_versions"] = api_versions
    return json.loads(_native.call_string("helm_render", chart._raw(), json.dumps(values or {}), json.dumps(opts)))


def objects(rendered: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            out.extend(d for d in yaml.safe_load_all(text) if d)
    return out


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def named(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind}/{name} objects"
    return found[0]


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["kind"] for o in objs)


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def env_of(objs: list[dict[str, Any]]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container(objs)["env"]}


def rule_set(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule.get("apiGroups", []) for r in rule.get("resources", [])
            for v in rule["verbs"]}


def root_kinds() -> set[tuple[str, str]]:
    """(group, Kind) of every built-in definition, from the layout definitions/<group>/<Kind>/."""
    return {("" if g.name == "core" else g.name, k.name) for g in (ROOT / "definitions").iterdir() if g.is_dir()
            for k in g.iterdir() if k.is_dir()}


def catalog_rule_set() -> set[tuple[str, str, str]]:
    """What the catalog asks for, derived here from the definitions (not from the chart): root
    kinds, child components' kinds (objects the workload owns with pods under them) and the
    chain links no definition names as a component.  Nothing else a definition lists."""
    rbac = _chart_rbac()
    kinds = root_kinds() | set(rbac.OWNER_LINKS)
    for d in load_builtin():
        sd = d.karta.spec.structure_definition
        kinds |= {(c.kind.group or "", c.kind.kind) for c in sd.child_components or [] if c.kind}
    return {(g, rbac.plural(k), v) for g, k in kinds for v in ("get", "list", "watch")}


REVIEWS = {("authentication.k8s.io", "tokenreviews", "create"),
           ("authorization.k8s.io", "subjectaccessreviews", "create")}
KARTAS = {("run.ai", "kartas", v) for v in ("get", "list", "watch")}
CRDS = {("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("get", "list", "watch")}
EVENTS = {("", "events", v) for v in ("get", "list", "watch")}  # the diagnosis reads Warning Events
NODES = {("", "nodes", v) for v in ("get", "list", "watch")}  # the model's capacity inventory
DEPENDENCIES = {(g, r, "get") for g, r in (("", "persistentvolumeclaims"), ("scheduling.k8s.io", "priorityclasses"),
                                          ("resource.k8s.io", "resourceclaims"),
                                          ("resource.k8s.io", "resourceclaimtemplates"))}  # dependencies' `exists`


# -- lint, schema, render (no cluster) -------------------------------------------------------

def test_chart_metadata_follows_the_package() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert meta["apiVersion"] == "v2" and meta["name"] == "workload-map"
    assert meta["appVersion"] == APP_VERSION


@pytest.mark.parametrize("values", [{}, FULL_VALUES, CERT_MANAGER], ids=["defaults", "full", "cert-manager"])
@pytest.mark.parametrize("kube_version", [None, "v1.20.2"])
def test_lint_strict_is_clean(values: dict[str, Any], kube_version: str | None) -> None:
    assert_lint_clean(values, kube_version)


def assert_lint_clean(values: dict[str, Any], kube_version: str | None) -> None:
    """`helm lint --strict` of the chart with these values: no error, no warning."""
    report = helm_python.lint(CHART, values, strict=True, namespace=RELEASE_NS, kube_version=kube_version)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_catalog_rules_are_current() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "chart_rbac.py"), "--check"], check=False,
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_plurals_of_irregular_kinds() -> None:
    plural = _chart_rbac().plural
    assert (plural("Milvus"), plural("Sandbox"), plural("Ingress")) == ("milvuses", "sandboxes", "ingresses")
    assert (plural("PyTorchJob"), plural("Gateway"), plural("DynamoGraphDeploymentScalingAdapter")) == (
        "pytorchjobs", "gateways", "dynamographdeploymentscalingadapters")
    with pytest.raises(ValueError, match="IRREGULAR"):
        plural("Policy")  # -> policies: must be looked up and listed, not guessed


def test_collector_policy_values() -> None:
    env = env_of(objects(render({"config": {"gcThresholds": "5000,10,50", "gcFreeze": False}})))
    assert (env["WLMAP_GC_THRESHOLDS"], env["WLMAP_GC_FREEZE"]) == ("5000,10,50", "false")


def test_default_render() -> None:
    objs = objects(render())
    assert kinds(objs) == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy",
                           "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"]
    for o in objs:
        labels = o["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "workload-map" and labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm" and labels["app.kubernetes.io/version"] == APP_VERSION
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert o["metadata"]["namespace"] == RELEASE_NS

    dep = one(objs, "Deployment")
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod_spec = spec["template"]["spec"]
    assert spec["selector"]["matchLabels"] == {"app.kubernetes.io/name": "workload-map",
                                               "app.kubernetes.io/instance": RELEASE}
    assert pod_spec["serviceAccountName"] == FULLNAME and pod_spec["automountServiceAccountToken"] is True
    assert pod_spec["enableServiceLinks"] is False
    c = container(objs)
    assert c["image"] == f"workload-map:{APP_VERSION}"
    assert c["command"] + c["args"] == ["wlmap", "serve", "--host", "0.0.0.0", "--port", "8080"]
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}

    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001 and sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    psc = pod_spec["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 10001
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod_spec["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}]
    assert pod_spec["topologySpreadConstraints"] == [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": spec["selector"]["matchLabels"]}}]
    for absent in ("affinity", "nodeSelector", "tolerations", "imagePullSecrets", "priorityClassName"):
        assert absent not in pod_spec
    assert "annotations" not in spec["template"]["metadata"]  # no checksum: definitions reload hot

    assert env_of(objs) == {
        "WLMAP_WORKERS": "1", "WLMAP_EVAL_DEADLINE": "2", "WLMAP_EVAL_WORKERS": "2", "WLMAP_ISOLATION": "untrusted",
        "WLMAP_MAX_BODY_BYTES": "3145728", "WLMAP_ALLOW_INLINE_DEFINITIONS": "true", "WLMAP_AUTH": "kubernetes",
        "WLMAP_ACTIONS": "false", "WLMAP_NAMESPACE": RELEASE_NS, "WLMAP_CONFIGMAP_SELECTOR": "workload-map.dev/definitions",
        "WLMAP_KARTA_RESOURCES": "true", "WLMAP_LOG_LEVEL": "info", "WLMAP_JQ_RESULT_CACHE": "true",
        "WLMAP_GC_THRESHOLDS": "20000,20,100", "WLMAP_GC_FREEZE": "true", "WLMAP_CACHE": "true", "WLMAP_STREAM_BUFFER": "1000", "WLMAP_STREAM_WRITE_TIMEOUT": "10", "TMPDIR": "/tmp"}

    svc = one(objs, "Service")
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]
    assert svc["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert one(objs, "ServiceAccount")["metadata"]["name"] == FULLNAME

    pdb = one(objs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"  # no capabilities known: the modern API
    assert pdb["spec"] == {"minAvailable": 1, "selector": {"matchLabels": spec["selector"]["matchLabels"]}}


def test_default_rbac_is_the_catalog_and_nothing_more() -> None:
    objs = objects(render())
    role = named(objs, "ClusterRole", FULLNAME)
    rules = role["rules"]
    assert rule_set(rules) == catalog_rule_set() | KARTAS | CRDS | NODES | REVIEWS | EVENTS | DEPENDENCIES
    for rule in rules:
        assert "*" not in rule.get("apiGroups", []) + rule["resources"] + rule["verbs"]
        assert "secrets" not in rule["resources"] and not rule.get("nonResourceURLs")
        assert set(rule["verbs"]) <= {"get", "list", "watch"} or set(rule["verbs"]) == {"create"}
    granted = rule_set(rules)
    for need in (("", "pods"), ("apps", "replicasets"), ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"),
                 ("milvus.io", "milvuses"), ("agents.x-k8s.io", "sandboxes"), ("run.ai", "kartas")):
        assert {(need[0], need[1], v) for v in ("get", "list", "watch")} <= granted, need

    binding = named(objs, "ClusterRoleBinding", FULLNAME)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": FULLNAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME, "namespace": RELEASE_NS}]
    ns_role = one(objs, "Role")
    assert rule_set(ns_role["rules"]) == {("", "configmaps", v) for v in ("get", "list", "watch")} | {
        ("", "events", "create")}
    assert one(objs, "RoleBinding")["subjects"] == binding["subjects"]


def documented_rbac_table() -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, where) of docs/helm.md's "What the service account may do" table."""
    text = (ROOT / "docs" / "helm.md").read_text()
    section = text[text.index("<!-- rbac-table"):text.index("<!-- /rbac-table -->")]
    out = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`"):
            group = cells[0].strip("`")
            out |= {("" if group == "core" else group, cells[1].strip("`"), v.strip(), cells[3])
                    for v in cells[2].split(",")}
    return out


def test_rbac_is_exactly_the_documented_table() -> None:
    """Every built-in root kind (walked in definitions/) is granted get/list/watch, and the
    service accounts get exactly what docs/helm.md's table lists, with every feature on (and the
    sharded layout's Roles): a catalog
    kind added without a rule, or a rule nobody documented, fails here."""
    objs = objects(render({"clusters": {"secrets": {"enabled": True}}, "config": {"actions": True},
                           "kartas": {"manage": True}}))
    granted = set()
    for role in (FULLNAME, f"{FULLNAME}-karta-manager"):
        granted |= {(g, r, v, "cluster") for g, r, v in rule_set(named(objs, "ClusterRole", role)["rules"])}
    for role in (FULLNAME, f"{FULLNAME}-cluster-secrets", f"{FULLNAME}-karta-manager"):
        granted |= {(g, r, v, "release namespace") for g, r, v in rule_set(named(objs, "Role", role)["rules"])}
    granted |= {(g, r, v, "namespace `default`") for g, r, v in
                rule_set(named(objs, "Role", f"{FULLNAME}-karta-events")["rules"])}
    store = objects(render({"store": {"bundled": True}, "clusters": {"secrets": {"enabled": True}},
                            "config": {"actions": True}, "kartas": {"manage": True}}))
    shards, api = named(store, "Role", f"{FULLNAME}-shards"), named(store, "ClusterRole", f"{FULLNAME}-api")
    granted |= {(g, r, v, "release namespace") for g, r, v in rule_set(shards["rules"])}
    granted |= {(g, r, v, "cluster") for g, r, v in rule_set(api["rules"])}
    plural = _chart_rbac().plural
    for g, k in root_kinds():
        assert {(g, plural(k), v, "cluster") for v in ("get", "list", "watch")} <= granted, (g, k)
    assert granted == documented_rbac_table()
    for never in ("configmaps", "secrets", "serviceaccounts", "services"):  # core: only in the namespace
        assert not [x for x in granted if x[:2] == ("", never) and x[3] == "cluster"], never
    assert not [x for x in granted if x[0] == "rbac.authorization.k8s.io"]


def test_full_values_render() -> None:
    objs = objects(render(FULL_VALUES, name="wlmap-full", namespace=FULL_NS))
    assert kinds(objs) == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ConfigMap",
                           "ConfigMap", "Deployment", "HorizontalPodAutoscaler", "NetworkPolicy", "PodDisruptionBudget",
                           "Role", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"]
    dep = one(objs, "Deployment")
    assert "replicas" not in dep["spec"]  # the HPA owns the replica count
    c = container(objs)
    assert c["image"] == "registry.example.com/ai/workload-map:1.2.3" and c["imagePullPolicy"] == "Always"
    env = env_of(objs)
    cfg = FULL_VALUES["config"]
    assert env == {
        "WLMAP_WORKERS": "2", "WLMAP_EVAL_DEADLINE": "2.5", "WLMAP_EVAL_WORKERS": "3", "WLMAP_ISOLATION": "all",
        "WLMAP_MAX_BODY_BYTES": "10485760", "WLMAP_ALLOW_INLINE_DEFINITIONS": "false", "WLMAP_AUTH": "none",
        "WLMAP_ACTIONS": "true",
        "WLMAP_NAMESPACE": FULL_NS, "WLMAP_CONFIGMAP_SELECTOR": "team=ml", "WLMAP_KARTA_RESOURCES": "false",
        "WLMAP_LOG_LEVEL": "debug", "WLMAP_JQ_RESULT_CACHE": "false", "WLMAP_GC_THRESHOLDS": "20000,20,100",
        "WLMAP_GC_FREEZE": "true", "WLMAP_CACHE": "false",
        "WLMAP_STREAM_BUFFER": "50", "WLMAP_STREAM_WRITE_TIMEOUT": "2.5",
        "WLMAP_WATCH_NAMESPACE": "team-a,team-b",
        "WLMAP_TLS_CERT_FILE": f"{TLS_DIR}/tls.crt", "WLMAP_TLS_KEY_FILE": f"{TLS_DIR}/tls.key", "TMPDIR": "/tmp"}
    pod_meta = dep["spec"]["template"]["metadata"]
    assert pod_meta["annotations"] == {"example.com/team": "ml"} and pod_meta["labels"]["tier"] == "platform"
    pod_spec = dep["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == FULL_VALUES["nodeSelector"]
    assert pod_spec["tolerations"] == FULL_VALUES["tolerations"] and pod_spec["affinity"] == FULL_VALUES["affinity"]

    # what `wlmap serve` makes of those variables is what the values say
    s = _settings_from(env)
    assert (s.workers, s.eval_deadline, s.eval_workers, s.isolation, s.max_body_bytes) == (
        cfg["workers"], cfg["evalDeadline"], cfg["evalWorkers"], cfg["isolation"], cfg["maxBodyBytes"])
    assert (s.allow_inline_definitions, s.auth, s.namespace, s.configmap_selector, s.karta_resources,
            s.log_level, s.jq_result_cache) == (False, "none", FULL_NS, "team=ml", False, "debug", False)
    assert (s.to_env()["WLMAP_CACHE"], s.to_env()["WLMAP_WATCH_NAMESPACE"]) == ("false", "team-a,team-b")
    assert (s.stream_buffer, s.stream_write_timeout) == (50, 2.5)
    assert (s.tls_cert_file, s.tls_key_file) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")

    hpa = one(objs, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "wlmap-full-workload-map"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 8)
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    assert one(objs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1

    sm = one(objs, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1" and sm["metadata"]["labels"]["release"] == "prometheus"
    https = {"port": "https", "scheme": "https", "tlsConfig": {
        "ca": {"secret": {"name": "wlmap-full-tls", "key": "ca.crt"}}, "serverName": f"wlmap-full-workload-map.{FULL_NS}.svc"}}
    assert sm["spec"]["endpoints"] == [{"path": "/metrics", "interval": "15s", "scrapeTimeout": "10s", **https},
                                       dict(WORKLOADS_ENDPOINT, interval="15s", **https)]  # auth none: no token sent
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [FULL_NS]}

    np = one(objs, "NetworkPolicy")["spec"]
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}],
                              "from": [SAME_NAMESPACE, PROMETHEUS_PEER, *FULL_VALUES["networkPolicy"]["ingressFrom"]]}]
    dns, api = np["egress"]
    assert {(p["port"], p["protocol"]) for p in dns["ports"]} == {(53, "UDP"), (53, "TCP")} and "to" not in dns
    assert api == {"ports": [{"port": 6443, "protocol": "TCP"}], "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}]}

    cm = named(objs, "ConfigMap", "wlmap-full-workload-map-definitions")
    assert cm["metadata"]["labels"]["workload-map.dev/definitions"] == "true"
    assert cm["data"]["batchtask.yaml"] == definition_text(BATCHTASK_DEF)  # a string: verbatim
    assert yaml.safe_load(cm["data"]["batchtask-object.yaml"]) == FULL_VALUES["definitions"]["batchtask-object.yaml"]

    dash = named(objs, "ConfigMap", "wlmap-full-workload-map-dashboard")
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dash["metadata"]["annotations"] == {"grafana_folder": "AI workloads"}
    reader = named(objs, "ClusterRoleBinding", "wlmap-full-workload-map-workload-metrics-reader")
    assert reader["subjects"] == [PROMETHEUS_SA]

    # auth none: no token or access reviews; no Karta resources: no kartas; no cache: no CRDs; the
    # extra rule is there; Events are read either way (the diagnosis); actions: patch on root kinds;
    # capacity lists nodes
    rules = named(objs, "ClusterRole", "wlmap-full-workload-map")["rules"]
    patch = {(g, _chart_rbac().plural(k), "patch") for g, k in root_kinds()}
    listed = {("", "nodes", "list")}
    assert rule_set(rules) == catalog_rule_set() | rule_set([BATCHTASK_RULE]) | EVENTS | DEPENDENCIES | patch | listed
    assert all("*" not in r["resources"] and "secrets" not in r["resources"] for r in rules)


def _settings_from(env: dict[str, str]) -> Settings:
    mp = pytest.MonkeyPatch()
    try:
        for k in [k for k in os.environ if k.startswith("WLMAP_")]:
            mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        return Settings.from_env()
    finally:
        mp.undo()


def test_default_env_is_what_serve_reads() -> None:
    s = _settings_from(env_of(objects(render())))
    assert (s.auth, s.namespace, s.configmap_selector, s.eval_deadline, s.max_body_bytes, s.isolation) == (
        "kubernetes", RELEASE_NS, "workload-map.dev/definitions", 2.0, 3 * 1024 * 1024, "untrusted")


@pytest.mark.parametrize("values,pdb", [
    ({"replicas": 1}, False),
    ({"replicas": 2}, True),
    ({"replicas": 2, "podDisruptionBudget": {"enabled": False}}, False),
    ({"replicas": 1, "autoscaling": {"enabled": True, "minReplicas": 1}}, False),
    ({"replicas": 1, "autoscaling": {"enabled": True, "minReplicas": 2}}, True),
])
def test_pdb_only_when_several_replicas_run(values: dict[str, Any], pdb: bool) -> None:
    assert ("PodDisruptionBudget" in kinds(objects(render(values)))) is pdb


def test_api_versions_follow_the_cluster_capabilities() -> None:
    on = {"autoscaling": {"enabled": True}}
    for kube, hpa, pdb in (("v1.20.2", "autoscaling/v2beta2", "policy/v1beta1"),
                           ("v1.22.17", "autoscaling/v2beta2", "policy/v1"),
                           ("v1.30.0", "autoscaling/v2", "policy/v1"),
                           (None, "autoscaling/v2", "policy/v1")):
        objs = objects(render(on, kube_version=kube, api_versions=[]))
        assert (one(objs, "HorizontalPodAutoscaler")["apiVersion"], one(objs, "PodDisruptionBudget")["apiVersion"]) \
            == (hpa, pdb), kube
    forced = {"autoscaling": {"enabled": True, "apiVersion": "autoscaling/v2beta2"},
              "podDisruptionBudget": {"apiVersion": "policy/v1beta1"}}
    objs = objects(render(forced, kube_version="v1.30.0", api_versions=["autoscaling/v2", "policy/v1"]))
    assert one(objs, "HorizontalPodAutoscaler")["apiVersion"] == "autoscaling/v2beta2"
    assert one(objs, "PodDisruptionBudget")["apiVersion"] == "policy/v1beta1"


def test_existing_service_account_and_no_rbac() -> None:
    objs = objects(render({"serviceAccount": {"create": False, "name": "platform-reader"}}))
    assert "ServiceAccount" not in kinds(objs)
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "platform-reader"
    assert one(objs, "ClusterRoleBinding")["subjects"][0]["name"] == "platform-reader"
    assert one(objs, "RoleBinding")["subjects"][0]["name"] == "platform-reader"
    with pytest.raises(helm_python.HelmError, match="serviceAccount.name is required"):
        render({"serviceAccount": {"create": False}})
    objs = objects(render({"rbac": {"create": False}}))
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & set(kinds(objs))


@pytest.mark.parametrize("bad", [
    {"replicas": -1},
    {"replicas": "two"},
    {"config": {"auth": "maybe"}},
    {"config": {"isolation": "some"}},
    {"config": {"logLevel": "verbose"}},
    {"config": {"evalDeadline": 0}},
    {"config": {"workers": 0}},
    {"config": {"allowInlineDefinitions": "yes"}},
    {"config": {"unknownFlag": 1}},
    {"image": {"pullPolicy": "Sometimes"}},
    {"replica": 3},
    {"service": {"port": 70000}},
    {"autoscaling": {"targetCPUUtilizationPercentage": 150}},
    {"autoscaling": {"apiVersion": "autoscaling/v1"}},
    {"definitions": {"not a key!": "kind: Karta"}},
    {"definitions": {"x.yaml": {"kind": "Karta"}}},
    {"definitions": {"x.yaml": 3}},
    {"rbac": {"extraRules": [{"apiGroups": [""], "resources": ["pods"]}]}},
    {"resources": {"limits": {"memory": "lots"}}},
    {"topologySpread": {"whenUnsatisfiable": "Maybe"}},
    {"networkPolicy": {"apiServer": {"cidrs": ["10.0.0.1"]}}},
    {"config": {"cache": "yes"}},
    {"config": {"watchNamespaces": "team-a"}},
    {"config": {"watchNamespaces": ["Team_A"]}},
    {"config": {"watchNamespaces": ["team-a", "team-a"]}},
    {"config": {"watchNamespaces": [""]}},
    {"config": {"streamBuffer": 0}},
    {"config": {"streamBuffer": "many"}},
    {"config": {"streamWriteTimeout": 0}},
    {"metrics": {"workloadMetrics": {"enabled": "true"}}},
    {"metrics": {"workloadMetrics": {"path": "/metrics/workloads"}}},
    {"metrics": {"workloadMetrics": {"readers": [{"kind": "ServiceAccount", "name": "prometheus-k8s"}]}}},
    {"metrics": {"workloadMetrics": {"readers": [{"kind": "Robot", "name": "r2d2"}]}}},
    {"metrics": {"workloadMetrics": {"readers": [{"kind": "User"}]}}},
    {"metrics": {"workloadMetrics": {"readers": {"kind": "User", "name": "jane"}}}},
    {"metrics": {"workloadMetrics": {"tokenSecret": {"name": "Scrape_Token"}}}},
    {"metrics": {"workloadMetrics": {"tokenSecret": {"name": "scrape-token", "key": ""}}}},
    {"grafanaDashboard": {"enabled": "yes"}},
    {"grafanaDashboard": {"label": "grafana dashboard"}},
    {"grafanaDashboard": {"labelValue": 1}},
    {"grafanaDashboard": {"labelValue": "not a value"}},
    {"grafanaDashboard": {"namespace": "Monitoring"}},
    {"grafanaDashboard": {"annotations": {"grafana_folder": 1}}},
    {"grafanaDashboard": {"folder": "AI"}},
    {"tls": {"secretName": "Bad_Name"}},
    {"tls": {"certManager": {"enabled": "yes"}}},
    {"tls": {"certManager": {"issuerRef": {"name": "ca", "kind": ""}}}},
    {"tls": {"certFile": "/x"}},
    {"config": {"tokenAudiences": "wlmap"}},
    {"config": {"tokenAudiences": ["a,b"]}},
    {"networkPolicy": {"prometheus": {"namespace": "monitoring"}}},
], ids=lambda v: json.dumps(v)[:60])
def test_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    assert_rejected(bad)


def assert_rejected(bad: dict[str, Any]) -> None:
    """The schema refuses the values, so rendering does, and lint reports it."""
    chart = helm_python.Chart.load(CHART)
    with pytest.raises(helm_python.HelmValuesError):
        chart.validate_schema(bad)
    with pytest.raises(helm_python.HelmValuesError):
        chart.render(bad, name=RELEASE, namespace=RELEASE_NS)
    assert helm_python.lint(CHART, bad, strict=True)["errors"]


def test_schema_accepts_the_documented_values() -> None:
    chart = helm_python.Chart.load(CHART)
    chart.validate_schema(FULL_VALUES)
    chart.validate_schema(yaml.safe_load((CHART / "values.yaml").read_text()))
    chart.validate_schema({"config": {"auth": "auto", "evalDeadline": 0.5, "configmapName": "defs", "cache": False,
                                      "watchNamespaces": ["team-a", "a1"]},
                           "podDisruptionBudget": {"minAvailable": "50%"},
                           "tmp": {"sizeLimit": "", "medium": "Memory"},
                           "metrics": {"workloadMetrics": {
                               "enabled": False, "tokenSecret": {"name": "scrape-token", "key": "token"},
                               "readers": [PROMETHEUS_SA, {"kind": "User", "name": "jane@example.com"},
                                           {"kind": "Group", "name": "monitoring",
                                            "apiGroup": "rbac.authorization.k8s.io"}]}},
                           "grafanaDashboard": {"enabled": True, "label": "example.com/dashboard", "labelValue": "",
                                                "namespace": "monitoring",
                                                "annotations": {"k8s-sidecar-target-directory": "/tmp/dashboards/AI"}}})
    objs = objects(render({"config": {"configmapName": "defs"}}))
    env = env_of(objs)
    assert env["WLMAP_CONFIGMAP_NAME"] == "defs" and "WLMAP_CONFIGMAP_SELECTOR" not in env


def test_notes_tell_how_to_reach_the_service() -> None:
    notes = render()["workload-map/templates/NOTES.txt"]
    assert f"kubectl -n {RELEASE_NS} port-forward svc/{FULLNAME} 8080:8080" in notes
    assert "Authorization: Bearer $TOKEN" in notes and "/workloads?namespace=" in notes
    assert f"{FULLNAME}-definitions" in notes and "rbac.extraRules" in notes
    assert "Authorization" not in render({"config": {"auth": "none"}})["workload-map/templates/NOTES.txt"]
    assert "https://" not in notes and "--audience" not in notes
    notes = render({"tls": {"secretName": "wlmap-tls"}, "config": {"tokenAudiences": ["workload-map"]}})[
        "workload-map/templates/NOTES.txt"]
    assert f"https://{FULLNAME}.{RELEASE_NS}.svc:8080" in notes and "get secret wlmap-tls" in notes
    assert "kubectl create token <your-service-account> -n <its-namespace> --audience workload-map" in notes


def test_cache_and_watch_namespaces_become_env() -> None:
    env = env_of(objects(render()))
    assert env["WLMAP_CACHE"] == "true" and "WLMAP_WATCH_NAMESPACE" not in env  # default: every namespace
    env = env_of(objects(render({"config": {"cache": False, "watchNamespaces": ["team-a", "team-b", "ml"]}})))
    assert (env["WLMAP_CACHE"], env["WLMAP_WATCH_NAMESPACE"]) == ("false", "team-a,team-b,ml")
    served = _settings_from(env).to_env()  # what `wlmap serve` reads back
    assert (served["WLMAP_CACHE"], served["WLMAP_WATCH_NAMESPACE"]) == ("false", "team-a,team-b,ml")
    env = env_of(objects(render({"config": {"watchNamespaces": ["team-a"]}})))
    assert (env["WLMAP_CACHE"], env["WLMAP_WATCH_NAMESPACE"]) == ("true", "team-a")


def test_crd_watch_rule_follows_the_cache() -> None:
    """The model (config.cache) watches CustomResourceDefinitions and Nodes; direct reads do not need them."""
    assert CRDS | NODES <= rule_set(named(objects(render()), "ClusterRole", FULLNAME)["rules"])
    off = rule_set(named(objects(render({"config": {"cache": False}})), "ClusterRole", FULLNAME)["rules"])
    # without the model: no watch, but capacity lists nodes
    assert not (CRDS | NODES) & off - {("", "nodes", "list")}
    assert off == catalog_rule_set() | KARTAS | REVIEWS | EVENTS | DEPENDENCIES | {("", "nodes", "list")}


def test_patch_rules_follow_actions() -> None:
    """config.actions: `patch` on every built-in root kind, and nothing else is added; WLMAP_ACTIONS."""
    plural = _chart_rbac().plural
    on = objects(render({"config": {"actions": True}}))
    added = rule_set(named(on, "ClusterRole", FULLNAME)["rules"]) - rule_set(
        named(objects(render()), "ClusterRole", FULLNAME)["rules"])
    assert added == {(g, plural(k), "patch") for g, k in root_kinds()}
    assert env_of(on)["WLMAP_ACTIONS"] == "true"
    assert _settings_from(env_of(on)).actions is True


def test_workload_metrics_reader_clusterrole() -> None:
    objs = objects(render())
    role = named(objs, "ClusterRole", READER)
    assert role["rules"] == [{"nonResourceURLs": ["/metrics/workloads"], "verbs": ["get"]}]
    assert role["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE and "namespace" not in role["metadata"]
    assert not [o for o in objs if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"] == READER]

    readers = [PROMETHEUS_SA, {"kind": "Group", "name": "metrics-readers", "apiGroup": "rbac.authorization.k8s.io"}]
    objs = objects(render({"metrics": {"workloadMetrics": {"readers": readers}}}))
    binding = named(objs, "ClusterRoleBinding", READER)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER}
    assert binding["subjects"] == readers
    assert named(objs, "ClusterRoleBinding", FULLNAME)["subjects"][0]["kind"] == "ServiceAccount"  # untouched

    for values in ({"metrics": {"workloadMetrics": {"enabled": False, "readers": readers}}},
                   {"rbac": {"create": False}, "metrics": {"workloadMetrics": {"readers": readers}}}):
        objs = objects(render(values))
        assert not [o for o in objs if o["metadata"]["name"] == READER], values


def test_servicemonitor_scrapes_workload_metrics_with_the_scrapers_token() -> None:
    on = {"serviceMonitor": {"enabled": True}}
    sm = one(objects(render({"metrics": on})), "ServiceMonitor")
    assert sm["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"},  # stays open, no token
        dict(WORKLOADS_ENDPOINT, bearerTokenFile=TOKEN_FILE)]
    sm = one(objects(render({"metrics": {**on, "workloadMetrics": {
        "tokenSecret": {"name": "wlmap-scrape-token", "key": "token"}}}})), "ServiceMonitor")
    assert sm["spec"]["endpoints"][1] == dict(WORKLOADS_ENDPOINT, authorization={
        "type": "Bearer", "credentials": {"name": "wlmap-scrape-token", "key": "token"}})
    sm = one(objects(render({"metrics": on, "config": {"auth": "auto"}})), "ServiceMonitor")
    assert sm["spec"]["endpoints"][1]["bearerTokenFile"] == TOKEN_FILE  # auto is kubernetes in a pod
    sm = one(objects(render({"metrics": on, "config": {"auth": "none"}})), "ServiceMonitor")
    assert sm["spec"]["endpoints"][1] == WORKLOADS_ENDPOINT  # nothing checks a token
    sm = one(objects(render({"metrics": {**on, "workloadMetrics": {"enabled": False}}})), "ServiceMonitor")
    assert [e["path"] for e in sm["spec"]["endpoints"]] == ["/metrics"]
    assert "ServiceMonitor" not in kinds(objects(render()))


def test_tls_from_a_secret() -> None:
    """tls.secretName: the Secret mounted as a directory (not subPath, so the kubelet's rotation
    reaches the files), --tls-* pointing into it, probes and the Service port on HTTPS."""
    objs = objects(render({"tls": {"secretName": "wlmap-tls"}}))
    assert "Certificate" not in kinds(objs)
    c = container(objs)
    env = env_of(objs)
    assert (env["WLMAP_TLS_CERT_FILE"], env["WLMAP_TLS_KEY_FILE"]) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")
    assert {"name": "tls", "mountPath": TLS_DIR, "readOnly": True} in c["volumeMounts"]
    assert all("subPath" not in m for m in c["volumeMounts"])
    volumes = one(objs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": "wlmap-tls"}} in volumes
    assert c["ports"] == [{"name": "https", "containerPort": 8080, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert one(objs, "Service")["spec"]["ports"] == [
        {"name": "https", "port": 8080, "targetPort": "https", "protocol": "TCP", "appProtocol": "https"}]
    s = _settings_from(env)
    assert (s.tls_cert_file, s.tls_key_file) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")
    # off by default: plain HTTP, nothing mounted
    env = env_of(objects(render()))
    assert "WLMAP_TLS_CERT_FILE" not in env and "WLMAP_TOKEN_AUDIENCE" not in env


def test_token_audiences_become_env() -> None:
    env = env_of(objects(render({"config": {"tokenAudiences": ["workload-map", "wlmap.example.com"]}})))
    assert env["WLMAP_TOKEN_AUDIENCE"] == "workload-map,wlmap.example.com"
    assert _settings_from(env).token_audiences == ["workload-map", "wlmap.example.com"]
    with pytest.raises(helm_python.HelmError, match="tokenAudiences needs config.auth kubernetes"):
        render({"config": {"auth": "none", "tokenAudiences": ["workload-map"]}})  # `wlmap serve` would refuse it


def test_accelerator_rules_become_env() -> None:
    env = env_of(objects(render({"config": {"acceleratorResources": ["nvidia.com/mig-*", "example.com/fpga"],
                                            "gpuResources": ["nvidia.com/gpu"]}})))
    s = _settings_from(env)
    assert s.accelerator_resources == ["nvidia.com/mig-*", "example.com/fpga"] and s.gpu_resources == ["nvidia.com/gpu"]
    env = env_of(objects(render()))
    assert "WLMAP_ACCELERATOR_RESOURCE" not in env and "WLMAP_GPU_RESOURCE" not in env  # the service's defaults
    assert_rejected({"config": {"gpuResources": ["amd.com/gpu,nvidia.com/gpu"]}})


def test_tls_from_a_cert_manager_certificate() -> None:
    objs = objects(render(CERT_MANAGER))
    cert = one(objs, "Certificate")
    assert cert["apiVersion"] == "cert-manager.io/v1" and cert["metadata"]["namespace"] == RELEASE_NS
    assert cert["spec"]["secretName"] == f"{FULLNAME}-tls"
    assert cert["spec"]["issuerRef"] == {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert cert["spec"]["duration"] == "720h" and "renewBefore" not in cert["spec"]
    assert cert["spec"]["dnsNames"] == [FULLNAME, f"{FULLNAME}.{RELEASE_NS}", f"{FULLNAME}.{RELEASE_NS}.svc",
                                        f"{FULLNAME}.{RELEASE_NS}.svc.cluster.local", "wlmap.example.com"]
    volumes = one(objs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": f"{FULLNAME}-tls"}} in volumes
    assert container(objs)["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    # the ServiceMonitor scrapes over HTTPS, verifying with the CA cert-manager puts in the Secret
    sm = one(objs, "ServiceMonitor")
    tls = {"ca": {"secret": {"name": f"{FULLNAME}-tls", "key": "ca.crt"}}, "serverName": f"{FULLNAME}.{RELEASE_NS}.svc"}
    for ep in sm["spec"]["endpoints"]:
        assert (ep["port"], ep["scheme"], ep["tlsConfig"]) == ("https", "https", tls), ep["path"]
    own = {"ca": {"configMap": {"name": "corp-ca", "key": "ca.pem"}}, "serverName": "wlmap.example.com"}
    sm = one(objects(render({**CERT_MANAGER, "metrics": {"serviceMonitor": {"enabled": True, "tlsConfig": own}}})),
             "ServiceMonitor")
    assert [ep["tlsConfig"] for ep in sm["spec"]["endpoints"]] == [own, own]
    with pytest.raises(helm_python.HelmError, match="issuerRef.name is required"):
        render({"tls": {"certManager": {"enabled": True}}})
    report = helm_python.lint(CHART, CERT_MANAGER, strict=True, namespace=RELEASE_NS)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []


def test_network_policy_is_on_by_default() -> None:
    """Ingress to 8080 only from the release namespace's pods and Prometheus (plus what the user
    adds); egress only to DNS and the API server's ports."""
    np = one(objects(render()), "NetworkPolicy")
    assert np["metadata"]["namespace"] == RELEASE_NS
    spec = np["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "workload-map",
                                                   "app.kubernetes.io/instance": RELEASE}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}], "from": [SAME_NAMESPACE, PROMETHEUS_PEER]}]
    dns, api = spec["egress"]
    assert "to" not in dns and api == {"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}

    ui = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ui"}}}
    values = {"networkPolicy": {"ingressFrom": [ui], "prometheus": {
        "namespaceSelector": {"matchLabels": {"name": "observability"}}, "podSelector": {"matchLabels": {"app": "prom"}}}}}
    spec = one(objects(render(values)), "NetworkPolicy")["spec"]
    assert spec["ingress"][0]["from"] == [SAME_NAMESPACE, {"namespaceSelector": {"matchLabels": {"name": "observability"}},
                                                           "podSelector": {"matchLabels": {"app": "prom"}}}, ui]
    spec = one(objects(render({"networkPolicy": {"prometheus": {"enabled": False}}})), "NetworkPolicy")["spec"]
    assert spec["ingress"][0]["from"] == [SAME_NAMESPACE]
    assert "NetworkPolicy" not in kinds(objects(render({"networkPolicy": {"enabled": False}})))


def test_grafana_dashboard_configmap_only_when_enabled() -> None:
    assert not [o for o in objects(render()) if o["metadata"]["name"].endswith("-dashboard")]
    shipped = DASHBOARD.read_text()
    cm = named(objects(render({"grafanaDashboard": {"enabled": True}})), "ConfigMap", f"{FULLNAME}-dashboard")
    assert cm["metadata"]["namespace"] == RELEASE_NS and "annotations" not in cm["metadata"]
    labels = cm["metadata"]["labels"]
    assert labels["grafana_dashboard"] == "1" and labels["app.kubernetes.io/instance"] == RELEASE
    assert "workload-map.dev/definitions" not in labels  # not read as definitions
    assert list(cm["data"]) == ["workload-map.json"] and cm["data"]["workload-map.json"] == shipped
    assert json.loads(cm["data"]["workload-map.json"])["uid"] == "workload-map"

    cm = named(objects(render({"grafanaDashboard": {
        "enabled": True, "label": "example.com/grafana-dashboard", "labelValue": "ai", "namespace": "monitoring",
        "annotations": {"grafana_folder": "AI workloads"}}})), "ConfigMap", f"{FULLNAME}-dashboard")
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["example.com/grafana-dashboard"] == "ai"
    assert "grafana_dashboard" not in cm["metadata"]["labels"]
    assert cm["metadata"]["annotations"] == {"grafana_folder": "AI workloads"}
    assert json.loads(cm["data"]["workload-map.json"]) == json.loads(shipped)


# -- on a real API server ---------------------------------------------------------------------

class Cluster:
    """Apply any manifest as admin: resources found through discovery (as kubectl does)."""

    def __init__(self, api: ApiServer):
        self.api = api
        self._discovery: dict[str, dict[str, Any]] = {}

    def path(self, doc: dict[str, Any], name: bool = True) -> str:
        gv = doc["apiVersion"]
        base = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
        if gv not in self._discovery:
            self._discovery[gv] = self.api.call("GET", base)
        res = next(r for r in self._discovery[gv]["resources"] if r["kind"] == doc["kind"] and "/" not in r["name"])
        meta = doc["metadata"]
        p = base + (f"/namespaces/{meta['namespace']}" if res["namespaced"] else "") + f"/{res['name']}"
        return p + (f"/{meta['name']}" if name else "")

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.api.call("POST", self.path(doc, name=False), doc)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise AssertionError(f"{doc['kind']}/{doc['metadata']['name']}: {e.code} {e.read().decode()}") from None
        current = self.api.call("GET", self.path(doc))
        doc = dict(doc, metadata=dict(doc["metadata"], resourceVersion=current["metadata"]["resourceVersion"]))
        return self.api.call("PUT", self.path(doc), doc)

    def capabilities(self) -> tuple[str, list[str]]:
        """What `helm install` learns from the cluster: its version and served API versions."""
        version = self.api.call("GET", "/version")["gitVersion"]
        gvs = list(self.api.call("GET", "/api")["versions"])
        for g in self.api.call("GET", "/apis")["groups"]:
            gvs += [v["groupVersion"] for v in g["versions"]]
        return version, gvs


def dropped(sent: Any, got: Any, path: str = "") -> list[str]:
    """Paths of what was sent but is not in the stored object: a field the server does not know
    (a 1.20 server drops unknown fields silently) or a value it changed."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [path]
        return [p for k, v in sent.items()
                for p in (dropped(v, got[k], f"{path}.{k}") if k in got else [f"{path}.{k}"])]
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [path]
        return [p for i, (a, b) in enumerate(zip(sent, got)) for p in dropped(a, b, f"{path}[{i}]")]
    return [] if sent == got else [f"{path}: {sent!r} -> {got!r}"]


def install(cluster: Cluster, rendered: dict[str, str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Apply every rendered object, in Helm's install order (RBAC and config before workloads)."""
    order = ["ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
             "Deployment", "StatefulSet", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy",
             "ServiceMonitor"]
    objs = sorted(objects(rendered), key=lambda o: order.index(o["kind"]))
    return [(o, cluster.apply(o)) for o in objs]


def sa_token(api: ApiServer, namespace: str, sa: str) -> str:
    req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    return str(api.call("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{sa}/token", req)["status"]["token"])


@pytest.fixture(scope="module")
def release(apiserver: ApiServer, kubectl: Kubectl,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The chart installed with default values (plus a custom definition and its read rule) as
    `helm install` would render it for this server, and `wlmap serve` running as the chart's
    service account with the Deployment's settings."""
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    values = {"definitions": {"batchtask.yaml": definition_text(BATCHTASK_DEF)},
              "rbac": {"extraRules": [BATCHTASK_RULE]}}
    rendered = render(values, kube_version=kube_version, api_versions=api_versions)
    kubectl.ensure_namespace(RELEASE_NS)
    applied = install(cluster, rendered)
    objs = [sent for sent, _ in applied]

    token = sa_token(apiserver, RELEASE_NS, one(objs, "ServiceAccount")["metadata"]["name"])
    kc = apiserver.write_kubeconfig(tmp_path_factory.mktemp("chart") / "kubeconfig", token, "wlmap-chart-sa")
    env = {k: v for k, v in env_of(objs).items() if k.startswith("WLMAP_")}
    server = Server("--kubeconfig", str(kc), env=env)  # waits for /readyz: ConfigMaps and Kartas listed and watched
    try:
        yield {"server": server, "token": token, "applied": applied, "objects": objs, "cluster": cluster,
               "kube_version": kube_version}
    finally:
        server.stop()


def test_rendered_manifests_are_stored_as_sent(release: dict[str, Any]) -> None:
    assert kinds(release["objects"]) == ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                                         "NetworkPolicy", "PodDisruptionBudget", "Role", "RoleBinding", "Service",
                                         "ServiceAccount"]
    for sent, stored in release["applied"]:
        assert dropped(sent, stored) == [], f"{sent['kind']}/{sent['metadata']['name']}"
    # a v1.20 server serves no policy/v1: the chart picked the API it serves
    assert release["kube_version"].startswith("v1.20")
    assert one(release["objects"], "PodDisruptionBudget")["apiVersion"] == "policy/v1beta1"


def test_full_values_are_accepted_by_the_server(apiserver: ApiServer, kubectl: Kubectl) -> None:
    kubectl.apply(crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors", ["v1"]))
    kubectl.wait_crds(["servicemonitors.monitoring.coreos.com"])
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    kubectl.ensure_namespace(FULL_NS)
    applied = install(cluster, render(FULL_VALUES, name="wlmap-full", namespace=FULL_NS,
                                      kube_version=kube_version, api_versions=api_versions))
    assert {o["kind"] for o, _ in applied} >= {"HorizontalPodAutoscaler", "NetworkPolicy", "ServiceMonitor",
                                               "ConfigMap"}
    for sent, stored in applied:
        assert dropped(sent, stored) == [], f"{sent['kind']}/{sent['metadata']['name']}"
    hpa = next(o for o, _ in applied if o["kind"] == "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2beta2"


def test_service_reads_its_definitions_with_the_chart_rbac(release: dict[str, Any]) -> None:
    c = release["server"].client()
    assert c.get("/readyz").status_code == 200
    assert c.get("/definitions").status_code == 401  # --auth kubernetes from the Deployment's env
    body = c.get("/definitions", headers=ADMIN).json()
    sources = {s["name"]: s for s in body["sources"]}
    assert sources["configmap"]["state"] == "synced" and sources["cluster"]["state"] == "synced", sources
    cm = one(release["objects"], "ConfigMap")["metadata"]["name"]
    mine = [d for d in body["items"] if d["kind"] == "BatchTask"]
    assert [(d["source"], d["state"], d["origin"]) for d in mine] == [
        ("configmap", "active", f"configmap:{RELEASE_NS}/{cm}/batchtask.yaml")]


def test_the_chart_rbac_lets_the_model_keep_its_capacity_inventory(release: dict[str, Any]) -> None:
    """config.cache (the default): the chart grants nodes get/list/watch, so the live model's
    node watch is not refused and its capacity inventory is kept."""
    c = release["server"].client()

    def capacity() -> dict[str, Any] | None:
        cap = c.get("/model", headers=ADMIN).json().get("capacity") or {}
        return cap if cap.get("state") == "ready" else None

    cap, _ = eventually(capacity, timeout=20, what="the model's capacity inventory ready")
    assert cap["informer"]["state"] == "synced" and cap["reason"] is None


def _train(kubectl: Kubectl, ns: str, name: str) -> dict[str, Any]:
    """A JobSet as its controller leaves it: Jobs owned by it, pods owned by the Jobs."""
    return _jobset_with_pods(kubectl, ns, name)


@pytest.fixture(scope="module")
def live(release: dict[str, Any], kubectl: Kubectl) -> dict[str, Any]:
    kubectl.ensure_namespace(LIVE_NS)
    js = _train(kubectl, LIVE_NS, "train")
    web = kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "namespace": LIVE_NS},
                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                                  "template": {"metadata": {"labels": {"app": "web"}},
                                               "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    rs = kubectl.apply({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "web-5d8f", "namespace": LIVE_NS, "ownerReferences": [owner_ref(web)]},
                        "spec": {"selector": {"matchLabels": {"app": "web"}},
                                 "template": {"metadata": {"labels": {"app": "web"}},
                                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    kubectl.set_status(kubectl.apply(pod(LIVE_NS, "web-5d8f-x1", rs, labels={"app": "web", "pod-template-hash": "5d8f"},
                                         node="cpu-node")), running("cpu-node"))
    task, status = fixture_object("examples/definitions/acme.example.com/BatchTask/v1/testdata/running.yaml",
                                  LIVE_NS, "nightly")
    task = kubectl.set_status(kubectl.apply(task), status)
    worker = kubectl.apply(pod(LIVE_NS, "nightly-w0", task, gpus=1, node="gpu-node-0"))
    kubectl.set_status(worker, running("gpu-node-0"))
    return {"jobset": js, "deployment": web, "task": task}


def test_live_jobset_with_jobs_and_pods(release: dict[str, Any], live: dict[str, Any]) -> None:
    r = release["server"].client().get(f"/workloads/{LIVE_NS}/train", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["kind"] == "JobSet" and body["workload"]["uid"] == live["jobset"]["metadata"]["uid"]
    lv = body["live"]
    assert (lv["current"], lv["ready"]) == (5, 4)  # jobsets, jobs and pods were all readable
    assert sorted(p["name"] for p in lv["pods"]) == ["train-coordinator-0-0", "train-trainer-0-0", "train-trainer-0-1",
                                                     "train-trainer-1-0", "train-trainer-1-1"]


def test_live_deployment_through_its_replicaset(release: dict[str, Any], live: dict[str, Any]) -> None:
    r = release["server"].client().get(f"/workloads/{LIVE_NS}/web", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["kind"] == "Deployment"
    assert [p["name"] for p in body["live"]["pods"]] == ["web-5d8f-x1"]  # pod -> ReplicaSet -> Deployment


def test_live_custom_kind_from_the_chart_definition(release: dict[str, Any], live: dict[str, Any]) -> None:
    r = release["server"].client().get(f"/workloads/{LIVE_NS}/nightly", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["definition"]["source"] == "configmap" and body["status"]["phase"] == "Running"
    assert [p["name"] for p in body["live"]["pods"]] == ["nightly-w0"]


def test_summary_list_has_no_unreadable_kind(release: dict[str, Any], live: dict[str, Any]) -> None:
    r = release["server"].client().get("/workloads", params={"namespace": LIVE_NS}, headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["warnings"] == []  # every served kind with a definition could be listed
    rows = {(i["workload"]["kind"], i["workload"]["name"]): i for i in body["items"]}
    assert set(rows) == {("JobSet", "train"), ("Deployment", "web"), ("BatchTask", "nightly")}
    assert rows[("JobSet", "train")]["pods"]["ready"] == 4 and rows[("Deployment", "web")]["pods"]["ready"] == 1


def test_callers_are_checked_with_token_and_access_reviews(release: dict[str, Any], live: dict[str, Any]) -> None:
    c = release["server"].client()
    assert c.get(f"/workloads/{LIVE_NS}/train").status_code == 401
    assert c.get(f"/workloads/{LIVE_NS}/train", headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    bob = c.get(f"/workloads/{LIVE_NS}/train", headers={"Authorization": f"Bearer {TOKENS['bob'][0]}"})
    assert bob.status_code == 403, bob.text  # the review answered "no" (a review it may not send would be 503)


def test_chart_service_account_cannot_read_secrets_or_write(release: dict[str, Any], apiserver: ApiServer) -> None:
    token = release["token"]

    def status(method: str, path: str, body: Any = None) -> int:
        try:
            apiserver.call(method, path, body, token=token)
            return 200
        except urllib.error.HTTPError as e:
            return e.code

    assert status("GET", "/api/v1/secrets") == 403
    assert status("GET", f"/api/v1/namespaces/{RELEASE_NS}/secrets") == 403
    assert status("GET", "/api/v1/namespaces/kube-system/secrets/anything") == 403
    assert status("POST", f"/api/v1/namespaces/{LIVE_NS}/configmaps",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) == 403
    assert status("DELETE", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{LIVE_NS}/jobsets/train") == 403
    assert status("GET", "/apis/jobset.x-k8s.io/v1alpha2/jobsets") == 200  # reads do work, cluster-wide


def test_invalid_edit_of_the_chart_configmap_posts_an_event(release: dict[str, Any], apiserver: ApiServer) -> None:
    c = release["server"].client()
    cluster: Cluster = release["cluster"]
    cm = one(release["objects"], "ConfigMap")
    name = cm["metadata"]["name"]
    good = cm["data"]["batchtask.yaml"]
    bad = good.replace("rootComponent:", "rootComponentTypo:", 1)
    cluster.apply(dict(cm, data={"batchtask.yaml": bad}))
    try:
        def states() -> set[str] | None:
            mine = {d["state"] for d in c.get("/definitions", headers=ADMIN).json()["items"]
                    if d["origin"].startswith(f"configmap:{RELEASE_NS}/{name}/")}
            return mine if {"last-good", "invalid"} <= mine else None

        eventually(states, what="last-good and invalid entries")

        def event() -> dict[str, Any] | None:
            evs = apiserver.call("GET", f"/api/v1/namespaces/{RELEASE_NS}/events")["items"]
            return next((e for e in evs if e["involvedObject"]["name"] == name
                         and e["reason"] == "InvalidDefinition"), None)

        ev, _ = eventually(event, what="InvalidDefinition event posted with the chart's Role")
        assert ev["type"] == "Warning" and "rootComponent: Required value" in ev["message"]
        assert ev["involvedObject"]["kind"] == "ConfigMap" and ev["involvedObject"]["namespace"] == RELEASE_NS
    finally:
        cluster.apply(dict(cm, data={"batchtask.yaml": good}))
    eventually(lambda: states_ok(c, name), what="the good version active again")


def states_ok(c: httpx.Client, name: str) -> bool:
    mine = [d["state"] for d in c.get("/definitions", headers=ADMIN).json()["items"]
            if d["origin"].startswith(f"configmap:{RELEASE_NS}/{name}/")]
    return mine == ["active"]


def test_workload_metrics_readers_may_get_the_url(apiserver: ApiServer) -> None:
    """The reader ClusterRole and its binding, applied to a real API server, answer the
    SubjectAccessReview the service sends for GET /metrics/workloads: yes for a listed reader,
    no for anyone else and for any other URL."""
    objs = objects(render({"metrics": {"workloadMetrics": {"readers": [PROMETHEUS_SA]}}}))
    cluster = Cluster(apiserver)
    for o in (named(objs, "ClusterRole", READER), named(objs, "ClusterRoleBinding", READER)):
        cluster.apply(o)

    def allowed(user: str, path: str) -> bool:
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": user, "groups": ["system:authenticated"],
                           "nonResourceAttributes": {"path": path, "verb": "get"}}}
        return bool(apiserver.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                   review)["status"].get("allowed"))

    prometheus = "system:serviceaccount:monitoring:prometheus-k8s"
    eventually(lambda: allowed(prometheus, "/metrics/workloads"), what="the binding in force")
    assert not allowed("system:serviceaccount:monitoring:someone-else", "/metrics/workloads")
    assert not allowed(prometheus, "/metrics/workloads/extra")
    assert not allowed(prometheus, "/metrics")  # nothing else comes with it
