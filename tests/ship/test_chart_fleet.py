"""The chart's fleet values (clusters.*) with the real Helm engine and a real kube-apiserver:
the Role on cluster Secrets (namespace-wide, or exactly the named Secrets by resourceNames), the
WLMAP_CLUSTER* settings as `wlmap serve` parses them, kubeconfig Secrets mounted as files
(clusters.extra), the /clusters reader ClusterRole, and the service running with exactly the
chart's RBAC, serving the clusters of the named Secrets and no other."""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import httpx
import pytest
import yaml

from app.cli.main import cmd_serve
from app.cli.main import parser as cli_parser
from app.fleet import specs
from app.service.flags import add_serve_arguments, settings_from_args
from app.service.settings import Settings, fleet_mode

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.kubeobjects import Kubectl
from ..cluster.util import eventually
from ..service.conftest import Server
from .test_helm_chart import (
    ADMIN,
    CHART,
    FULLNAME,
    RELEASE,
    RELEASE_NS,
    Cluster,
    assert_lint_clean,
    assert_rejected,
    container,
    dropped,
    env_of,
    install,
    kinds,
    named,
    objects,
    one,
    render,
    rule_set,
    sa_token,
)

SECRETS_ROLE = f"{FULLNAME}-cluster-secrets"
CLUSTERS_READER = f"{FULLNAME}-clusters-reader"
SECRET_VERBS = ["get", "list", "watch"]
MOUNTS = "/etc/workload-map/clusters"
FLEET_ENV = ("WLMAP_CLUSTER_NAME", "WLMAP_CLUSTER_PROBE_INTERVAL", "WLMAP_CLUSTER_SECRETS",
             "WLMAP_CLUSTER_SECRET_SELECTOR", "WLMAP_CLUSTER_SECRET", "WLMAP_CLUSTERS", "WLMAP_KUBECONFIG_CONTEXTS")
PLATFORM = {"kind": "Group", "name": "platform-team", "apiGroup": "rbac.authorization.k8s.io"}

RBAC_NS = "chart-fleet-rbac"  # the fleet values applied to the server, and their Role tried out
WIDE_NS = "chart-fleet-wide"  # the namespace-wide Role tried out
LIVE_NS = "chart-fleet"  # the chart installed and `wlmap serve` run with its RBAC
LIVE_RELEASE = "wlmap-fleet"
LIVE_FULLNAME = f"{LIVE_RELEASE}-workload-map"
CLUSTERS_READER_LIVE = f"{LIVE_FULLNAME}-clusters-reader"

FLEET_VALUES: dict[str, Any] = {"clusters": {
    "name": "hub", "probeInterval": 2.5,
    "secrets": {"enabled": True, "names": ["east-kubeconfig", "west-kubeconfig"]},
    "extra": [{"name": "gpu-a", "secretName": "gpu-a-kubeconfig", "context": "wlmap@gpu-a"},
              {"name": "gpu-b.lab", "secretName": "gpu-b", "key": "config"}],
    "readers": [PLATFORM]}}


# -- helpers ----------------------------------------------------------------------------------

def serve_args(objs: list[dict[str, Any]]) -> tuple[Settings, Any]:
    """What the real `wlmap serve` command line makes of the rendered container: its args parsed
    by the CLI parser (add_serve_arguments) with exactly the container's environment."""
    c = container(objs)
    env = {e["name"]: e["value"] for e in c["env"]}
    mp = pytest.MonkeyPatch()
    try:
        for k in [k for k in os.environ if k.startswith("WLMAP_")]:
            mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        assert c["command"] == ["wlmap"]
        args = cli_parser().parse_args(c["args"])  # raises SystemExit on anything serve does not take
        assert args.func is cmd_serve
        return settings_from_args(args), args
    finally:
        mp.undo()


def bare_serve_parse(objs: list[dict[str, Any]]) -> Settings:
    """The same with only add_serve_arguments on a plain parser (the args after `serve`)."""
    import argparse

    c = container(objs)
    mp = pytest.MonkeyPatch()
    try:
        for k in [k for k in os.environ if k.startswith("WLMAP_")]:
            mp.delenv(k)
        for e in c["env"]:
            mp.setenv(e["name"], e["value"])
        p = argparse.ArgumentParser(exit_on_error=False)
        add_serve_arguments(p)
        assert c["args"][0] == "serve"
        return settings_from_args(p.parse_args(c["args"][1:]))
    finally:
        mp.undo()


def fleet_env(objs: list[dict[str, Any]]) -> dict[str, str]:
    return {k: v for k, v in env_of(objs).items() if k.startswith("WLMAP_CLUSTER") or k in FLEET_ENV}


def names_of(objs: list[dict[str, Any]], kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs if o["kind"] == kind)


def status(api: ApiServer, token: str, path: str) -> int:
    try:
        api.call("GET", path, token=token, raw=True)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


# -- render (no cluster) ----------------------------------------------------------------------

def test_defaults_render_no_fleet_objects_or_settings() -> None:
    objs = objects(render())
    assert SECRETS_ROLE not in names_of(objs, "Role") and SECRETS_ROLE not in names_of(objs, "RoleBinding")
    assert CLUSTERS_READER not in names_of(objs, "ClusterRole") + names_of(objs, "ClusterRoleBinding")
    for o in objs:  # nothing anywhere grants Secrets
        for rule in o.get("rules", []):
            assert "secrets" not in rule.get("resources", []), o["metadata"]["name"]
    assert fleet_env(objs) == {}
    s, _ = serve_args(objs)
    assert (s.cluster_name, s.cluster_secrets, s.cluster_secret_names, s.clusters) == (None, False, [], [])
    assert s.cluster_probe_interval == Settings().cluster_probe_interval and not fleet_mode(s)
    assert "Clusters" not in render()["workload-map/templates/NOTES.txt"]


def test_cluster_secrets_by_label_get_a_namespace_wide_role() -> None:
    objs = objects(render({"clusters": {"secrets": {"enabled": True}}}))
    role = named(objs, "Role", SECRETS_ROLE)
    assert role["metadata"]["namespace"] == RELEASE_NS
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": SECRET_VERBS}]
    binding = named(objs, "RoleBinding", SECRETS_ROLE)
    assert binding["metadata"]["namespace"] == RELEASE_NS
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SECRETS_ROLE}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME, "namespace": RELEASE_NS}]
    # the other roles are untouched: no ClusterRole rule on Secrets
    for o in objs:
        if o["kind"] == "ClusterRole":
            assert all("secrets" not in r.get("resources", []) for r in o["rules"]), o["metadata"]["name"]
    assert rule_set(named(objs, "Role", FULLNAME)["rules"]) == {("", "configmaps", v) for v in SECRET_VERBS} | {
        ("", "events", "create")}

    assert fleet_env(objs) == {"WLMAP_CLUSTER_SECRETS": "true",
                               "WLMAP_CLUSTER_SECRET_SELECTOR": "workload-map.dev/cluster=true"}
    s, _ = serve_args(objs)
    assert (s.cluster_secrets, s.cluster_secret_names, s.cluster_secret_selector) == (
        True, [], "workload-map.dev/cluster=true")
    assert fleet_mode(s) and s.namespace == RELEASE_NS  # the Secrets are watched in the release namespace

    objs = objects(render({"clusters": {"secrets": {"enabled": True, "selector": "team=ml,workload-map.dev/cluster"}}}))
    assert env_of(objs)["WLMAP_CLUSTER_SECRET_SELECTOR"] == "team=ml,workload-map.dev/cluster"
    assert serve_args(objs)[0].cluster_secret_selector == "team=ml,workload-map.dev/cluster"


def test_named_cluster_secrets_are_exactly_the_role_resource_names_and_the_flags() -> None:
    names = ["east-kubeconfig", "west.kubeconfig", "c3"]
    objs = objects(render({"clusters": {"secrets": {"enabled": True, "names": names}}}))
    role = named(objs, "Role", SECRETS_ROLE)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": names,
                              "verbs": SECRET_VERBS}]
    env = fleet_env(objs)
    assert env == {"WLMAP_CLUSTER_SECRETS": "true", "WLMAP_CLUSTER_SECRET": ",".join(names)}
    s, _ = serve_args(objs)
    assert (s.cluster_secrets, s.cluster_secret_names) == (True, names)
    assert s.to_env()["WLMAP_CLUSTER_SECRET"] == ",".join(names)  # handed on to the workers unchanged
    assert bare_serve_parse(objs).cluster_secret_names == names
    assert set(role["rules"][0]["resourceNames"]) == set(s.cluster_secret_names)  # nothing read is not granted

    notes = render({"clusters": {"secrets": {"enabled": True, "names": names}}})["workload-map/templates/NOTES.txt"]
    assert "east-kubeconfig, west.kubeconfig, c3" in notes and SECRETS_ROLE in notes
    # names are used only with enabled: no Role, no settings
    objs = objects(render({"clusters": {"secrets": {"enabled": False, "names": names}}}))
    assert SECRETS_ROLE not in names_of(objs, "Role") and fleet_env(objs) == {}


def test_secret_role_needs_rbac_create_but_the_settings_do_not() -> None:
    objs = objects(render({"rbac": {"create": False}, "clusters": {"secrets": {"enabled": True, "names": ["e"]},
                                                                   "readers": [PLATFORM]}}))
    assert not {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} & set(kinds(objs))
    assert fleet_env(objs) == {"WLMAP_CLUSTER_SECRETS": "true", "WLMAP_CLUSTER_SECRET": "e"}


def test_cluster_secrets_may_skip_tls_verification_only_when_allowed() -> None:
    objs = objects(render({"clusters": {"secrets": {"enabled": True}}}))
    assert "WLMAP_CLUSTER_SECRET_ALLOW_INSECURE" not in fleet_env(objs)
    assert serve_args(objs)[0].cluster_secret_allow_insecure is False
    objs = objects(render({"clusters": {"secrets": {"enabled": True, "allowInsecure": True}}}))
    assert fleet_env(objs)["WLMAP_CLUSTER_SECRET_ALLOW_INSECURE"] == "true"
    s, _ = serve_args(objs)
    assert s.cluster_secret_allow_insecure is True
    assert s.to_env()["WLMAP_CLUSTER_SECRET_ALLOW_INSECURE"] == "true"  # handed on to the workers
    assert bare_serve_parse(objs).cluster_secret_allow_insecure is True
    # only with the Secrets themselves
    assert fleet_env(objects(render({"clusters": {"secrets": {"allowInsecure": True}}}))) == {}
    assert_rejected({"clusters": {"secrets": {"allowInsecure": "yes"}}})


def test_cluster_name_and_probe_interval() -> None:
    objs = objects(render({"clusters": {"name": "hub.eu-1", "probeInterval": 2.5}}))
    assert fleet_env(objs) == {"WLMAP_CLUSTER_NAME": "hub.eu-1", "WLMAP_CLUSTER_PROBE_INTERVAL": "2.5"}
    s, _ = serve_args(objs)
    assert (s.cluster_name, s.cluster_probe_interval) == ("hub.eu-1", 2.5)
    assert not fleet_mode(s)  # naming the own cluster alone serves no other
    assert specs.home(s.cluster_name, None, in_pod=True).name == "hub.eu-1"
    assert serve_args(objects(render({"clusters": {"probeInterval": 30}})))[0].cluster_probe_interval == 30.0
    assert env_of(objects(render({"clusters": {"probeInterval": 30}})))["WLMAP_CLUSTER_PROBE_INTERVAL"] == "30"


def test_extra_clusters_mount_their_kubeconfig_secrets(tmp_path: Path) -> None:
    objs = objects(render(FLEET_VALUES))
    pod_spec = one(objs, "Deployment")["spec"]["template"]["spec"]
    c = container(objs)
    env = env_of(objs)
    assert env["WLMAP_CLUSTERS"] == (f"gpu-a={MOUNTS}/gpu-a/kubeconfig#wlmap@gpu-a,"
                                     f"gpu-b.lab={MOUNTS}/gpu-b.lab/kubeconfig")
    assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"},
                                 {"name": "cluster-0", "mountPath": f"{MOUNTS}/gpu-a", "readOnly": True},
                                 {"name": "cluster-1", "mountPath": f"{MOUNTS}/gpu-b.lab", "readOnly": True}]
    assert pod_spec["volumes"][1:] == [
        {"name": "cluster-0", "secret": {"secretName": "gpu-a-kubeconfig",
                                         "items": [{"key": "kubeconfig", "path": "kubeconfig"}]}},
        {"name": "cluster-1", "secret": {"secretName": "gpu-b", "items": [{"key": "config", "path": "kubeconfig"}]}}]

    s, _ = serve_args(objs)
    assert s.clusters == [f"gpu-a={MOUNTS}/gpu-a/kubeconfig#wlmap@gpu-a", f"gpu-b.lab={MOUNTS}/gpu-b.lab/kubeconfig"]
    assert (s.cluster_name, s.cluster_probe_interval) == ("hub", 2.5) and fleet_mode(s)

    # every --cluster file is the kubeconfig key of the Secret mounted at its directory: lay the
    # volumes out under tmp_path as the kubelet would, and register each flag as the service does
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    for flag in s.clusters:
        name, _, rest = flag.partition("=")
        path = Path(rest.partition("#")[0])
        vol = volumes[mounts[str(path.parent)]]["secret"]
        (item,) = vol["items"]
        assert item["path"] == path.name
        entry = next(e for e in FLEET_VALUES["clusters"]["extra"] if e["name"] == name)
        assert (vol["secretName"], item["key"]) == (entry["secretName"], entry.get("key", "kubeconfig"))
        local = tmp_path / str(path).lstrip("/")
        local.parent.mkdir(parents=True)
        local.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []}))
        spec = specs.from_flag(flag.replace(MOUNTS, str(tmp_path / MOUNTS.lstrip("/")), 1))
        assert (spec.name, spec.origin, spec.context) == (name, "flag", entry.get("context"))


@pytest.mark.parametrize("clusters,taken", [
    ({"extra": [{"name": "a", "secretName": "s1"}, {"name": "a", "secretName": "s2"}]}, "clusters.extra[0]"),
    ({"extra": [{"name": "in-cluster", "secretName": "s1"}]}, "the service's own cluster"),
    ({"name": "hub", "extra": [{"name": "hub", "secretName": "s1"}]}, "the service's own cluster"),
])
def test_a_cluster_name_used_twice_fails_the_render(clusters: dict[str, Any], taken: str) -> None:
    with pytest.raises(helm_python.HelmError, match=re.escape(f"already taken by {taken}")):
        render({"clusters": clusters})
    # a different own name frees in-cluster
    render({"clusters": {"name": "hub", "extra": [{"name": "in-cluster", "secretName": "s1"}]}})


def test_clusters_reader_clusterrole() -> None:
    role_rules = [{"nonResourceURLs": ["/clusters", "/model"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]  # capacity
    for values in ({"clusters": {"secrets": {"enabled": True}}},
                   {"clusters": {"extra": [{"name": "b", "secretName": "b"}]}}):
        objs = objects(render(values))
        role = named(objs, "ClusterRole", CLUSTERS_READER)
        assert role["rules"] == role_rules and "namespace" not in role["metadata"]
        assert role["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
        assert CLUSTERS_READER not in names_of(objs, "ClusterRoleBinding")
        assert "Clusters" in render(values)["workload-map/templates/NOTES.txt"]
    # readers alone (a single-cluster release whose /clusters some may read)
    readers = [PLATFORM, {"kind": "ServiceAccount", "name": "dashboard", "namespace": "ui"}]
    objs = objects(render({"clusters": {"readers": readers}}))
    assert named(objs, "ClusterRole", CLUSTERS_READER)["rules"] == role_rules
    binding = named(objs, "ClusterRoleBinding", CLUSTERS_READER)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": CLUSTERS_READER}
    assert binding["subjects"] == readers
    # the /metrics/workloads reader is its own role, unchanged
    metrics = named(objs, "ClusterRole", f"{FULLNAME}-workload-metrics-reader")
    assert metrics["rules"] == [{"nonResourceURLs": ["/metrics/workloads"], "verbs": ["get"]}]
    notes = render({"config": {"auth": "none"}, "clusters": {"secrets": {"enabled": True}}})[
        "workload-map/templates/NOTES.txt"]
    assert "localhost:8080/clusters" in notes and "Authorization" not in notes


@pytest.mark.parametrize("values", [{}, FLEET_VALUES, {"clusters": {"secrets": {"enabled": True}}}],
                         ids=["defaults", "fleet", "secrets-by-label"])
@pytest.mark.parametrize("kube_version", [None, "v1.20.2"])
def test_lint_strict_is_clean(values: dict[str, Any], kube_version: str | None) -> None:
    assert_lint_clean(values, kube_version)


@pytest.mark.parametrize("bad", [
    {"clusters": {"name": "Hub_1"}},
    {"clusters": {"name": 3}},
    {"clusters": {"probeInterval": 0}},
    {"clusters": {"probeInterval": -1}},
    {"clusters": {"probeInterval": "10"}},
    {"clusters": {"probeInterval": 7200}},
    {"clusters": {"secrets": {"enabled": "yes"}}},
    {"clusters": {"secrets": {"names": "east"}}},
    {"clusters": {"secrets": {"names": ["East"]}}},
    {"clusters": {"secrets": {"names": ["east", "east"]}}},
    {"clusters": {"secrets": {"names": [""]}}},
    {"clusters": {"secrets": {"names": ["a,b"]}}},
    {"clusters": {"secrets": {"selector": ""}}},
    {"clusters": {"secrets": {"label": "x"}}},
    {"clusters": {"extra": [{"name": "b"}]}},
    {"clusters": {"extra": [{"secretName": "b"}]}},
    {"clusters": {"extra": [{"name": "B", "secretName": "b"}]}},
    {"clusters": {"extra": [{"name": "b", "secretName": "b", "context": "x,y"}]}},
    {"clusters": {"extra": [{"name": "b", "secretName": "b", "key": "a/b"}]}},
    {"clusters": {"extra": [{"name": "b", "secretName": "b", "kubeconfig": "/x"}]}},
    {"clusters": {"extra": {"name": "b", "secretName": "b"}}},
    {"clusters": {"readers": [{"kind": "ServiceAccount", "name": "x"}]}},
    {"clusters": {"kubeconfigContexts": "all"}},
], ids=lambda v: json.dumps(v)[:60])
def test_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    assert_rejected(bad)


def test_schema_accepts_the_documented_values() -> None:
    chart = helm_python.Chart.load(CHART)
    chart.validate_schema(FLEET_VALUES)
    documented = yaml.safe_load((CHART / "values.yaml").read_text())["clusters"]
    assert documented == {"name": "", "probeInterval": "", "extra": [], "readers": [],
                          "secrets": {"enabled": False, "names": [], "selector": "workload-map.dev/cluster=true",
                                      "allowInsecure": False}}
    assert documented["secrets"]["allowInsecure"] == Settings().cluster_secret_allow_insecure
    assert documented["secrets"]["selector"] == Settings().cluster_secret_selector == specs.SECRET_LABEL
    chart.validate_schema({"clusters": {"name": "", "probeInterval": 0.5,
                                        "extra": [{"name": "a.b-c", "secretName": "kc", "key": "config.yaml",
                                                   "context": "arn:aws:eks:eu-west-1:1:cluster/gpu#1"}],
                                        "readers": [{"kind": "User", "name": "jane@example.com"}]}})


# -- on a real API server ---------------------------------------------------------------------

def _kubeconfig_for(api: ApiServer, token: str, context: str) -> dict[str, Any]:
    """A self-contained kubeconfig (CA inline): what a cluster Secret holds."""
    ca = base64.b64encode(api.ca.read_bytes()).decode()
    return {"apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": api.url, "certificate-authority-data": ca}}],
            "users": [{"name": "wlmap", "user": {"token": token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": "wlmap"}}]}


def _secret(namespace: str, secret_name: str, kubeconfig: dict[str, Any], labelled: bool = True,
            **extra: str) -> dict[str, Any]:
    """A cluster Secret; `extra` are more data keys (context, name)."""
    meta: dict[str, Any] = {"name": secret_name, "namespace": namespace}
    if labelled:
        meta["labels"] = {"workload-map.dev/cluster": "true"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
            "stringData": {"kubeconfig": yaml.safe_dump(kubeconfig), **extra}}


def test_fleet_values_are_stored_as_sent_and_grant_only_the_named_secrets(apiserver: ApiServer,
                                                                          kubectl: Kubectl) -> None:
    """The fleet values (Role with resourceNames, /clusters reader, mounted kubeconfig Secrets)
    applied as `helm install` renders them for this server; then the service account reads the
    named Secrets, by get and by the field-selected list and watch the service sends, and no other."""
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    kubectl.ensure_namespace(RBAC_NS)
    values = {"clusters": dict(FLEET_VALUES["clusters"],
                               readers=[{"kind": "ServiceAccount", "name": "fleet-viewer", "namespace": RBAC_NS}])}
    applied = install(cluster, render(values, name="wlmap-fleet-rbac", namespace=RBAC_NS,
                                      kube_version=kube_version, api_versions=api_versions))
    for sent, stored in applied:
        assert dropped(sent, stored) == [], f"{sent['kind']}/{sent['metadata']['name']}"
    objs = [sent for sent, _ in applied]
    role = named(objs, "Role", "wlmap-fleet-rbac-workload-map-cluster-secrets")
    assert role["rules"][0]["resourceNames"] == ["east-kubeconfig", "west-kubeconfig"]
    assert "wlmap-fleet-rbac-workload-map-clusters-reader" in names_of(objs, "ClusterRoleBinding")

    for name in ("east-kubeconfig", "other"):
        kubectl.apply(_secret(RBAC_NS, name, _kubeconfig_for(apiserver, "x", name)))
    token = sa_token(apiserver, RBAC_NS, "wlmap-fleet-rbac-workload-map")
    base = f"/api/v1/namespaces/{RBAC_NS}/secrets"

    def allowed(path: str) -> bool:
        return status(apiserver, token, path) == 200

    eventually(lambda: allowed(f"{base}/east-kubeconfig"), what="the RoleBinding in force")
    assert allowed(f"{base}?fieldSelector=metadata.name%3Deast-kubeconfig")
    assert allowed(f"{base}?fieldSelector=metadata.name%3Dwest-kubeconfig")  # granted before it exists
    assert allowed(f"{base}?fieldSelector=metadata.name%3Deast-kubeconfig&watch=1&timeoutSeconds=1")
    assert status(apiserver, token, f"{base}/west-kubeconfig") == 404  # allowed, not there yet
    for denied in (base, f"{base}?labelSelector=workload-map.dev%2Fcluster%3Dtrue", f"{base}/other",
                   f"{base}?fieldSelector=metadata.name%3Dother",
                   f"{base}?fieldSelector=metadata.name%3Dother&watch=1&timeoutSeconds=1",
                   "/api/v1/secrets", "/api/v1/namespaces/kube-system/secrets/east-kubeconfig"):
        assert status(apiserver, token, denied) == 403, denied


def test_namespace_wide_secret_role_on_the_api_server(apiserver: ApiServer, kubectl: Kubectl) -> None:
    """Without names the Role covers every Secret of the release namespace (RBAC cannot select by
    label) and nothing beyond it."""
    objs = objects(render({"clusters": {"secrets": {"enabled": True}}}, name="wlmap-wide", namespace=WIDE_NS))
    kubectl.ensure_namespace(WIDE_NS)
    cluster = Cluster(apiserver)
    for o in objs:
        if o["kind"] == "ServiceAccount" or o["metadata"]["name"] == "wlmap-wide-workload-map-cluster-secrets":
            cluster.apply(o)
    kubectl.apply(_secret(WIDE_NS, "any", _kubeconfig_for(apiserver, "x", "any"), labelled=False))
    token = sa_token(apiserver, WIDE_NS, "wlmap-wide-workload-map")
    base = f"/api/v1/namespaces/{WIDE_NS}/secrets"
    eventually(lambda: status(apiserver, token, base) == 200, what="the RoleBinding in force")
    assert status(apiserver, token, f"{base}?labelSelector=workload-map.dev%2Fcluster%3Dtrue&watch=1"
                                    "&timeoutSeconds=1") == 200
    assert status(apiserver, token, f"{base}/any") == 200
    assert status(apiserver, token, "/api/v1/secrets") == 403
    assert status(apiserver, token, f"/api/v1/namespaces/{RBAC_NS}/secrets") == 403


@pytest.fixture(scope="module")
def fleet_release(apiserver: ApiServer, kubectl: Kubectl,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The chart installed with clusters.secrets.names, and `wlmap serve` running as its service
    account with the Deployment's settings.  Its Secrets hold kubeconfigs of this same API server
    (as the chart's service account), so the fleet is this cluster seen again under other names."""
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    kubectl.ensure_namespace(LIVE_NS)
    viewer = {"kind": "ServiceAccount", "name": "fleet-viewer", "namespace": LIVE_NS}
    values = {"config": {"kartaResources": False},
              "clusters": {"name": "home", "probeInterval": 0.5,
                           "secrets": {"enabled": True, "names": ["east-kubeconfig", "west-kubeconfig"]},
                           "readers": [viewer]}}
    applied = install(cluster, render(values, name=LIVE_RELEASE, namespace=LIVE_NS,
                                      kube_version=kube_version, api_versions=api_versions))
    objs = [sent for sent, _ in applied]
    kubectl.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "fleet-viewer",
                                                                              "namespace": LIVE_NS}})
    token = sa_token(apiserver, LIVE_NS, LIVE_FULLNAME)
    # one named Secret now (the other comes later), and a labelled one that is not named
    kubectl.apply(_secret(LIVE_NS, "east-kubeconfig", _kubeconfig_for(apiserver, token, "east-ctx"), name="east"))
    kubectl.apply(_secret(LIVE_NS, "decoy", _kubeconfig_for(apiserver, token, "decoy-ctx")))
    kc = apiserver.write_kubeconfig(tmp_path_factory.mktemp("chart-fleet") / "kubeconfig", token, "wlmap-fleet-sa")
    env = {k: v for k, v in env_of(objs).items() if k.startswith("WLMAP_")}
    server = Server("--kubeconfig", str(kc), env=env)
    try:
        yield {"server": server, "objects": objs, "token": token,
               "viewer": sa_token(apiserver, LIVE_NS, "fleet-viewer")}
    finally:
        server.stop()
        try:  # cluster-wide: leave no grant behind
            apiserver.call("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{CLUSTERS_READER_LIVE}")
        except urllib.error.HTTPError:
            pass


def refused_secret_reads(server: Server) -> list[str]:
    """Log lines of refused Secret reads.  Other refusals are expected on a shared API server: a
    pod another test left, owned by a kind outside the catalog (a BatchTask), makes the model try
    that owner kind, which the chart's RBAC rightly does not grant."""
    return [line for line in server.output().splitlines() if "forbidden" in line.lower() and "secrets" in line]


def _clusters(server: Server, token: str = TOKENS["admin"][0]) -> dict[str, dict[str, Any]]:
    r = httpx.get(server.url + "/clusters", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 200, r.text
    return {i["name"]: i for i in r.json()["items"]}


def test_service_serves_exactly_the_named_secrets_with_the_chart_rbac(fleet_release: dict[str, Any],
                                                                      apiserver: ApiServer,
                                                                      kubectl: Kubectl) -> None:
    s: Server = fleet_release["server"]
    env = env_of(fleet_release["objects"])
    assert (env["WLMAP_CLUSTER_SECRET"], env["WLMAP_CLUSTER_NAME"]) == ("east-kubeconfig,west-kubeconfig", "home")

    def synced(*names: str) -> dict[str, dict[str, Any]] | None:
        items = _clusters(s)
        return items if all(items.get(n, {}).get("synced") and items[n]["available"] for n in names) else None

    items, _ = eventually(lambda: synced("home", "east"), timeout=30, what="home and east synced")
    assert sorted(items) == ["east", "home"], items  # the labelled decoy is never read
    assert (items["east"]["origin"], items["east"]["source"]) == ("secret", f"{LIVE_NS}/east-kubeconfig")
    assert (items["home"]["origin"], items["east"]["server"]) == ("home", items["home"]["server"])
    assert refused_secret_reads(s) == []  # no watch of a named Secret was refused

    # a named Secret created while the service runs: its own watch, granted by resourceNames
    token = fleet_release["token"]
    kubectl.apply(_secret(LIVE_NS, "west-kubeconfig", _kubeconfig_for(apiserver, token, "west-ctx"),
                          labelled=False))
    items, _ = eventually(lambda: synced("home", "east", "west-kubeconfig"), timeout=30, what="west added")
    assert sorted(items) == ["east", "home", "west-kubeconfig"]
    r = httpx.get(s.url + "/clusters/west-kubeconfig/workloads", params={"namespace": LIVE_NS}, headers=ADMIN,
                  timeout=30)
    assert r.status_code == 200, r.text
    assert refused_secret_reads(s) == []


def test_clusters_needs_get_on_the_url(fleet_release: dict[str, Any]) -> None:
    """config.auth kubernetes: GET /clusters asks for `get` on /clusters, which the chart's reader
    ClusterRole grants to clusters.readers."""
    s: Server = fleet_release["server"]
    url = s.url + "/clusters"
    assert httpx.get(url, timeout=10).status_code == 401
    assert httpx.get(url, headers={"Authorization": f"Bearer {TOKENS['bob'][0]}"}, timeout=10).status_code == 403
    viewer = {"Authorization": f"Bearer {fleet_release['viewer']}"}
    eventually(lambda: httpx.get(url, headers=viewer, timeout=10).status_code == 200, what="the reader binding")
    assert httpx.get(s.url + "/clusters/home", headers=viewer, timeout=10).status_code == 200
    assert httpx.get(s.url + "/clusters/home", headers={"Authorization": f"Bearer {TOKENS['bob'][0]}"},
                     timeout=10).status_code == 403
