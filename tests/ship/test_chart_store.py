"""The chart's sharded layout (issue 24): with store.url (an existing Redis/Valkey) or
store.bundled (the release's own Redis) it runs shards (a StatefulSet, `--role shard`) and API
replicas (a Deployment behind the Service, `--role api`).  Rendered by the real Helm engine, linted
strictly, applied to a real kube-apiserver, its RBAC asked of that server (SubjectAccessReview and
the service accounts' own tokens), and the containers' command lines parsed by the real `wlmap
serve` parser into Settings that Settings.check accepts.  Without a store the chart renders, text for
text, what it rendered before the layout existed."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import urllib.error
from pathlib import Path
from typing import Any

import helm_python
import httpx
import pytest

from app.cli.main import cmd_serve
from app.cli.main import parser as cli_parser
from app.service import settings as settings_mod
from app.service.flags import settings_from_args
from app.service.settings import Settings

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.kubeobjects import Kubectl
from ..cluster.util import eventually
from .test_chart_fleet import FLEET_VALUES
from .test_helm_chart import (
    CERT_MANAGER,
    CHART,
    FULL_VALUES,
    FULLNAME,
    RELEASE,
    RELEASE_NS,
    ROOT,
    Cluster,
    assert_lint_clean,
    assert_rejected,
    dropped,
    install,
    kinds,
    named,
    objects,
    render,
    rule_set,
    sa_token,
)


def rule(group: str, resources: list[str], verbs: str) -> str:
    """A catalog rule as the ClusterRole renders it (helm/workload-map/files/catalog-rules.yaml)."""
    return (f'  - apiGroups: ["{group}"]\n    resources:\n' + "".join(f"    - {r}\n" for r in resources)
            + f"    verbs: [{verbs}]\n")


def _both(group: str, now: list[str], before: list[str]) -> list[tuple[str, str, list[str], list[str]]]:
    """A catalog group's read rule and its patch rule (config.actions), alike."""
    return [(group, verbs, now, before) for verbs in ("get, list, watch", "patch")]


# Issue 31: the catalog's new root kinds. (group, verbs, the rule's resources now, before; [] for a
# group the chart did not read before.)
CATALOG_RULES = [
    *_both("ray.io", ["rayclusters", "raycronjobs", "rayjobs", "rayservices"],
           ["rayclusters", "rayjobs", "rayservices"]),
    *_both("sparkoperator.k8s.io", ["scheduledsparkapplications", "sparkapplications", "sparkconnects"],
           ["sparkapplications"]),
    *_both("kubeflow.org", ["jaxjobs", "mpijobs", "notebooks", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs"],
           ["jaxjobs", "mpijobs", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs"]),
    *_both("apps.nvidia.com", ["nemocustomizers", "nemodatastores", "nemoentitystores", "nemoevaluators",
                               "nemoguardrails", "nimcaches", "nimpipelines", "nimservices"],
           ["nimcaches", "nimservices"]),
    ("nvidia.com", "get, list, watch",
     ["dynamocomponentdeployments", "dynamographdeploymentrequests", "dynamographdeployments"],
     ["dynamocomponentdeployments", "dynamographdeployments"]),
    ("nvidia.com", "patch", ["dynamographdeploymentrequests", "dynamographdeployments"], ["dynamographdeployments"]),
    *_both("serving.kserve.io", ["inferencegraphs", "inferenceservices", "llminferenceservices"],
           ["inferenceservices", "llminferenceservices"]),
    *_both("serving.kubeflow.org", ["inferenceservices"], []),
    *_both("disaggregatedset.x-k8s.io", ["disaggregatedsets"], []),
    *_both("argoproj.io", ["workflows"], []),
    *_both("workload.codeflare.dev", ["appwrappers"], []),
    *_both("flink.apache.org", ["flinkdeployments", "flinksessionjobs"], []),
]


# The chart before the sharded layout: the single-process render must stay exactly this one, but
# for the changes made on purpose since, each named here by its template and the text it added (or,
# where the added text alone is not unique, by the text now and the text it replaced).
BASELINE = "3251db6"
ON_PURPOSE: list[tuple[str, str] | tuple[str, str, str]] = [
    ("workload-map/templates/clusterrole.yaml",  # issue 30: the capacity inventory watches Nodes
     '  # ...and Nodes, for its capacity inventory (allocatable, labels, taints, cordon, readiness);\n'
     '  # without this rule workloads are served as before and capacity says it is unavailable.\n'
     '  - apiGroups: [""]\n'
     '    resources: ["nodes"]\n'
     '    verbs: ["get", "list", "watch"]\n'),
    ("workload-map/templates/clusterrole.yaml",  # issue 30: without the model, capacity lists Nodes
     '  # Without a model, capacity comes from one list of Nodes (and bound pods) per read, at most\n'
     '  # every 5 s; without this rule capacity says it is unavailable.\n'
     '  - apiGroups: [""]\n'
     '    resources: ["nodes"]\n'
     '    verbs: ["list"]\n'),
    ("workload-map/templates/clusterrole-clusters-reader.yaml",  # issue 30: readers see capacity
     "# `list nodes` lets them see this cluster's capacity (its `capacity` there, /clusters/NAME/nodes,\n"
     "# POST /fit's verdict); another cluster's capacity needs the same right in that cluster.\n"),
    ("workload-map/templates/clusterrole-clusters-reader.yaml",
     '  - apiGroups: [""]\n'
     '    resources: ["nodes"]\n'
     '    verbs: ["list"]\n'),
    ("workload-map/templates/deployment.yaml",  # issue 33: the collector policy's settings
     '            - name: WLMAP_GC_THRESHOLDS\n              value: "20000,20,100"\n'
     '            - name: WLMAP_GC_FREEZE\n              value: "true"\n'),
    ("workload-map/templates/clusterrole.yaml",  # issue 32: dependencies' `exists`, Secrets left out
     "  # What workloads' pods refer to, for a live answer's `dependencies[].exists`: one metadata-only\n"
     "  # get each.  ConfigMaps, Secrets and ServiceAccounts are left out (their `get` reads contents\n"
     "  # cluster-wide): grant it in rbac.extraRules to have theirs checked; else they read null.\n"
     '  - apiGroups: [""]\n'
     '    resources: ["persistentvolumeclaims"]\n'
     '    verbs: ["get"]\n'
     '  - apiGroups: ["scheduling.k8s.io"]\n'
     '    resources: ["priorityclasses"]\n'
     '    verbs: ["get"]\n'
     '  - apiGroups: ["resource.k8s.io"]\n'
     '    resources: ["resourceclaims", "resourceclaimtemplates"]\n'
     '    verbs: ["get"]\n'),
    # issue 31: the catalog's DaemonSet and (bare) ReplicaSet definitions, root kinds: read, and
    # patched with config.actions
    ("workload-map/templates/clusterrole.yaml", "    - daemonsets\n"),  # the read rules
    ("workload-map/templates/clusterrole.yaml", "    - daemonsets\n"),  # the patch rules
    ("workload-map/templates/clusterrole.yaml", "    - replicasets\n    - statefulsets\n    verbs: [patch]\n",
     "    - statefulsets\n    verbs: [patch]\n"),
    ("workload-map/templates/clusterrole.yaml",  # issue 31: Volcano CronJob is a root kind
     '  - apiGroups: ["batch.volcano.sh"]\n    resources:\n    - cronjobs\n    - jobs\n',
     '  - apiGroups: ["batch.volcano.sh"]\n    resources:\n    - jobs\n'),
    ("workload-map/templates/clusterrole.yaml",  # ...and its patch rule (config.actions)
     '  - apiGroups: ["batch.volcano.sh"]\n    resources:\n    - cronjobs\n    - jobs\n    verbs: [patch]\n',
     '  - apiGroups: ["batch.volcano.sh"]\n    resources:\n    - jobs\n    verbs: [patch]\n'),
    ("workload-map/templates/clusterrole.yaml",  # issue 31: Volcano JobFlow is a root kind
     '  - apiGroups: ["flow.volcano.sh"]\n    resources:\n    - jobflows\n    verbs: [get, list, watch]\n'),
    ("workload-map/templates/clusterrole.yaml",
     '  - apiGroups: ["flow.volcano.sh"]\n    resources:\n    - jobflows\n    verbs: [patch]\n'),
    *(("workload-map/templates/clusterrole.yaml", rule(group, now, verbs), rule(group, before, verbs))
      if before else ("workload-map/templates/clusterrole.yaml", rule(group, now, verbs))
      for group, verbs, now, before in CATALOG_RULES),
]

URL = "rediss://valkey.example.com:6380/2"
STORE_URL: dict[str, Any] = {"store": {"url": URL, "passwordSecret": {"name": "valkey-auth", "key": "pw"},
                                       "streamLength": 20000},
                             "shards": {"replicas": 3, "buckets": 4,
                                        "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                                      "limits": {"memory": "4Gi"}}},
                             "api": {"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 9,
                                                     "targetCPUUtilizationPercentage": 60}},
                             "networkPolicy": {"store": {"to": [{"ipBlock": {"cidr": "10.9.0.0/16"}}]}}}
BUNDLED: dict[str, Any] = {"store": {"bundled": True}}
API = f"{FULLNAME}-api"
SHARDS = f"{FULLNAME}-shards"
REDIS = f"{FULLNAME}-redis"
BUNDLED_URL = f"redis://{REDIS}.{RELEASE_NS}.svc:6379/0"
SELECT = {"app.kubernetes.io/name": "workload-map", "app.kubernetes.io/instance": RELEASE}
LEASE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")

STORE_NS = "chart-store"  # both layouts applied, and their service accounts asked
STORE_RELEASE = "wlmap-store"


# -- helpers ----------------------------------------------------------------------------------

def workload(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one container of a Deployment or StatefulSet."""
    (c,) = named(objs, kind, name)["spec"]["template"]["spec"]["containers"]
    return c


def serve_settings(c: dict[str, Any], secrets: dict[str, str] | None = None) -> Settings:
    """What `wlmap serve` makes of a rendered container: its args through the real CLI parser, with
    exactly its environment (a secretKeyRef resolved from `secrets` as the kubelet would; POD_NAME
    from the downward API is not a WLMAP_ variable)."""
    mp = pytest.MonkeyPatch()
    try:
        for k in [k for k in os.environ if k.startswith("WLMAP_")]:
            mp.delenv(k)
        for e in c["env"]:
            if "value" in e:
                mp.setenv(e["name"], e["value"])
            elif "secretKeyRef" in e["valueFrom"]:
                ref = e["valueFrom"]["secretKeyRef"]
                mp.setenv(e["name"], (secrets or {})[f"{ref['name']}/{ref['key']}"])
        assert c["command"] == ["wlmap"]
        args = cli_parser().parse_args(c["args"])  # SystemExit on anything serve does not take
        assert args.func is cmd_serve
        return settings_from_args(args)
    finally:
        mp.undo()


def in_a_pod(s: Settings) -> None:
    """Settings.check as in a pod: there the service account token makes the home cluster (which a
    test process, holding no /var/run/secrets token, cannot be)."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(settings_mod, "in_cluster", lambda: True)
        s.check()
    finally:
        mp.undo()


def baseline_chart(tmp: Path) -> Path:
    """The chart at BASELINE (from git), with today's Chart.yaml: the versions in its labels are
    not the layout."""
    out = subprocess.run(["git", "archive", "--format=tar", BASELINE, "helm/workload-map"], cwd=ROOT,
                         capture_output=True, check=False)
    assert out.returncode == 0, f"git archive {BASELINE}: {out.stderr.decode()} (a clone with history is needed)"
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(tmp, filter="data")
    chart = tmp / "helm" / "workload-map"
    shutil.copy(CHART / "Chart.yaml", chart / "Chart.yaml")
    return chart


def nonempty(rendered: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in rendered.items() if v.strip()}


# -- without a store: exactly the chart before ------------------------------------------------

@pytest.mark.parametrize("values", [{}, FULL_VALUES, CERT_MANAGER, FLEET_VALUES,
                                    {"kartas": {"manage": True, "installCRD": True},
                                     "clusters": {"secrets": {"enabled": True}}, "autoscaling": {"enabled": True}}],
                         ids=["defaults", "full", "cert-manager", "fleet", "kartas-hpa"])
def test_without_a_store_the_render_is_the_one_before(values: dict[str, Any], tmp_path: Path) -> None:
    before = helm_python.Chart.load(baseline_chart(tmp_path))
    now = helm_python.Chart.load(CHART)
    for opts in ({}, {"is_upgrade": True}):
        a = nonempty(before.render(values, name=RELEASE, namespace=RELEASE_NS, **opts))
        b = nonempty(now.render(values, name=RELEASE, namespace=RELEASE_NS, **opts))
        for template, added, *replaced in ON_PURPOSE:
            if template in b and added in b[template]:
                b[template] = b[template].replace(added, "".join(replaced), 1)
        assert sorted(a) == sorted(b)
        for template in a:
            assert a[template] == b[template], template


# -- lint, schema, render ---------------------------------------------------------------------

@pytest.mark.parametrize("values", [STORE_URL, BUNDLED,
                                    {"store": {"bundled": True, "passwordSecret": {"name": "redis-auth"},
                                               "redis": {"persistence": {"enabled": True, "storageClass": "fast"}}},
                                     "tls": {"secretName": "wlmap-tls"}, "clusters": FLEET_VALUES["clusters"],
                                     "kartas": {"manage": True}}],
                         ids=["url", "bundled", "bundled-everything"])
@pytest.mark.parametrize("kube_version", [None, "v1.20.2"])
def test_lint_strict_is_clean(values: dict[str, Any], kube_version: str | None) -> None:
    assert_lint_clean(values, kube_version)


@pytest.mark.parametrize("bad", [
    {"store": {"url": "redis://r:6379/0", "bundled": True}},
    {"store": {"url": "redis://:s3cret@r:6379/0"}},  # a password would show in the pods' args
    {"store": {"url": "redis://user:s3cret@r:6379"}},
    {"store": {"url": "http://r:6379"}},
    {"store": {"url": "redis://"}},
    {"store": {"url": "redis://r/db0"}},
    {"store": {"bundled": "yes"}},
    {"store": {"streamLength": 10}},
    {"store": {"passwordSecret": {"name": "Bad_Name"}}},
    {"store": {"passwordSecret": {"name": "auth", "key": ""}}},
    {"store": {"redis": {"persistence": {"save": "often"}}}},
    {"store": {"redis": {"resources": {"limits": {"memory": "lots"}}}}},
    {"store": {"redis": {"image": {"tag": ""}}}},
    {"store": {"replicas": 2}},
    {"shards": {"replicas": 0}},
    {"shards": {"buckets": 0}},
    {"shards": {"buckets": 1000}},
    {"shards": {"leaseSeconds": 1}},
    {"shards": {"podDisruptionBudget": {"maxUnavailable": 0}}},
    {"shards": {"autoscaling": {"enabled": True}}},
    {"api": {"replicas": 0}},
    {"api": {"autoscaling": {"targetCPUUtilizationPercentage": 150}}},
    {"api": {"autoscaling": {"apiVersion": "autoscaling/v2"}}},
    {"networkPolicy": {"store": {"cidrs": ["10.0.0.0/8"]}}},
], ids=lambda v: str(v)[:60])
def test_schema_rejects_bad_store_values(bad: dict[str, Any]) -> None:
    assert_rejected(bad)


def test_a_store_needs_the_live_model() -> None:
    """--store with --cache false is what Settings.check refuses: the chart fails the render first."""
    with pytest.raises(helm_python.HelmError, match="config.cache false"):
        render({"store": {"bundled": True}, "config": {"cache": False}})


def test_bundled_layout_renders_shards_api_and_redis() -> None:
    objs = objects(render(BUNDLED))
    assert kinds(objs) == ["ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
                           "Deployment", "NetworkPolicy", "NetworkPolicy", "PodDisruptionBudget",
                           "PodDisruptionBudget", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "Service",
                           "Service", "ServiceAccount", "ServiceAccount", "StatefulSet", "StatefulSet"]
    api_sel = dict(SELECT, **{"app.kubernetes.io/component": "api"})
    shard_sel = dict(SELECT, **{"app.kubernetes.io/component": "shard"})

    # the Service reaches the API replicas only; the shards have their own headless Service
    svc = named(objs, "Service", FULLNAME)["spec"]
    assert svc["selector"] == api_sel and svc["ports"][0]["port"] == 8080
    assert named(objs, "Service", SHARDS)["spec"] == {
        "clusterIP": "None", "selector": shard_sel,
        "ports": [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]}

    dep = named(objs, "Deployment", API)["spec"]
    assert dep["replicas"] == 2 and dep["selector"]["matchLabels"] == api_sel
    assert dep["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "api"
    assert dep["template"]["spec"]["serviceAccountName"] == API
    assert dep["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"] == api_sel
    api = workload(objs, "Deployment", API)
    assert api["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080", "--role", "api", "--store", BUNDLED_URL]
    assert api["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}

    sts = named(objs, "StatefulSet", SHARDS)["spec"]
    assert (sts["replicas"], sts["serviceName"], sts["podManagementPolicy"]) == (2, SHARDS, "Parallel")
    assert sts["selector"]["matchLabels"] == shard_sel
    assert sts["template"]["spec"]["serviceAccountName"] == FULLNAME
    shard = workload(objs, "StatefulSet", SHARDS)
    assert shard["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080", "--role", "shard", "--store",
                             BUNDLED_URL, "--shard-lease", "6", "--shard-buckets", "1"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in shard["env"]
    assert shard["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    for c in (api, shard):  # the single process's settings and hardening, unchanged
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert {"name": "WLMAP_STORE_STREAM_LENGTH", "value": "100000"} in c["env"]
        assert not [e for e in c["env"] if e["name"] == "WLMAP_STORE_PASSWORD"]  # no passwordSecret

    pdbs = {p["metadata"]["name"]: p["spec"] for p in objs if p["kind"] == "PodDisruptionBudget"}
    assert pdbs == {API: {"minAvailable": 1, "selector": {"matchLabels": api_sel}},
                    SHARDS: {"maxUnavailable": 1, "selector": {"matchLabels": shard_sel}}}

    # Redis: pinned image, non-root, read-only root, resources, probes, nothing persisted
    redis_sel = {"app.kubernetes.io/name": "workload-map-redis", "app.kubernetes.io/instance": RELEASE,
                 "app.kubernetes.io/component": "store"}
    rs = named(objs, "StatefulSet", REDIS)["spec"]
    assert (rs["replicas"], rs["serviceName"], rs["selector"]["matchLabels"]) == (1, REDIS, redis_sel)
    pod = rs["template"]["spec"]
    (redis,) = pod["containers"]
    assert redis["image"] == "docker.io/library/redis:7.4.2-alpine"
    assert redis["args"] == ["--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
    assert pod["automountServiceAccountToken"] is False and pod["securityContext"]["runAsNonRoot"] is True
    sc = redis["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["runAsUser"] == 999 and sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["allowPrivilegeEscalation"] is False
    assert redis["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    for probe in ("livenessProbe", "readinessProbe"):
        assert "redis-cli -h 127.0.0.1 -p 6379 ping" in " ".join(redis[probe]["exec"]["command"])
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}] and "volumeClaimTemplates" not in rs
    assert named(objs, "Service", REDIS)["spec"]["clusterIP"] == "None"
    assert named(objs, "Service", REDIS)["spec"]["selector"] == redis_sel
    # no selector of the service's pods reaches Redis, and Redis is reached only by the release's pods
    assert not set(SELECT.items()) <= set(redis_sel.items())
    redis_np = named(objs, "NetworkPolicy", REDIS)["spec"]
    assert redis_np["podSelector"] == {"matchLabels": redis_sel} and redis_np["policyTypes"] == ["Ingress", "Egress"]
    assert redis_np["ingress"] == [{"ports": [{"port": 6379, "protocol": "TCP"}],
                                    "from": [{"podSelector": {"matchLabels": SELECT}}]}]
    assert "egress" not in redis_np  # Redis connects to nothing
    egress = named(objs, "NetworkPolicy", FULLNAME)["spec"]["egress"]
    assert egress[-1] == {"ports": [{"port": 6379, "protocol": "TCP"}],
                          "to": [{"podSelector": {"matchLabels": redis_sel}}]}
    notes = render(BUNDLED)["workload-map/templates/NOTES.txt"]
    assert f"StatefulSet {SHARDS}" in notes and f"Deployment\n{API}" in notes and "get leases" in notes
    assert "NetworkPolicy" not in kinds(objects(render({"store": {"bundled": True},
                                                        "networkPolicy": {"enabled": False}})))


def test_external_store_layout() -> None:
    objs = objects(render(STORE_URL))
    assert not [o for o in objs if "redis" in o["metadata"]["name"]]
    for kind, name, role in (("Deployment", API, "api"), ("StatefulSet", SHARDS, "shard")):
        c = workload(objs, kind, name)
        assert c["args"][5:9] == ["--role", role, "--store", URL]
        assert "s3cret" not in str(c["args"])
        assert {"name": "WLMAP_STORE_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "valkey-auth", "key": "pw"}}} in c["env"]
        assert {"name": "WLMAP_STORE_STREAM_LENGTH", "value": "20000"} in c["env"]
    shard = workload(objs, "StatefulSet", SHARDS)
    assert shard["args"][-2:] == ["--shard-buckets", "4"]
    assert shard["resources"] == STORE_URL["shards"]["resources"]
    assert named(objs, "StatefulSet", SHARDS)["spec"]["replicas"] == 3

    # the HPA scales the API replicas (the Deployment then has no replica count)
    assert "replicas" not in named(objs, "Deployment", API)["spec"]
    hpa = named(objs, "HorizontalPodAutoscaler", API)["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": API}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 9)
    assert hpa["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    assert named(objs, "PodDisruptionBudget", API)["spec"]["minAvailable"] == 1

    egress = named(objs, "NetworkPolicy", FULLNAME)["spec"]["egress"]
    assert egress[-1] == {"ports": [{"port": 6380, "protocol": "TCP"}], "to": [{"ipBlock": {"cidr": "10.9.0.0/16"}}]}
    plain = named(objects(render({"store": {"url": "redis://valkey"}})), "NetworkPolicy", FULLNAME)["spec"]
    assert plain["egress"][-1] == {"ports": [{"port": 6379, "protocol": "TCP"}]}  # the default port, any address


def test_one_shard_or_api_replica_gets_no_pdb() -> None:
    objs = objects(render({"store": {"bundled": True}, "shards": {"replicas": 1}, "api": {"replicas": 1}}))
    assert "PodDisruptionBudget" not in kinds(objs)
    objs = objects(render({"store": {"bundled": True}, "shards": {"podDisruptionBudget": {"enabled": False}}}))
    assert [p["metadata"]["name"] for p in objs if p["kind"] == "PodDisruptionBudget"] == [API]


def test_bundled_redis_with_a_password_and_persistence() -> None:
    objs = objects(render({"store": {"bundled": True, "passwordSecret": {"name": "redis-auth"},
                                     "redis": {"persistence": {"enabled": True, "size": "2Gi",
                                                               "storageClass": "fast", "save": "60 100"}}}}))
    rs = named(objs, "StatefulSet", REDIS)["spec"]
    (redis,) = rs["template"]["spec"]["containers"]
    assert redis["args"] == ["--port", "6379", "--protected-mode", "no", "--save", "60 100", "--appendonly", "no",
                             "--requirepass", "$(REDIS_PASSWORD)"]  # the kubelet expands it; the manifest holds none
    ref = {"secretKeyRef": {"name": "redis-auth", "key": "password"}}
    assert redis["env"] == [{"name": "REDIS_PASSWORD", "valueFrom": ref}, {"name": "REDISCLI_AUTH", "valueFrom": ref}]
    assert "volumes" not in rs["template"]["spec"]
    (claim,) = rs["volumeClaimTemplates"]
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                             "resources": {"requests": {"storage": "2Gi"}}}
    for kind, name in (("Deployment", API), ("StatefulSet", SHARDS)):
        assert {"name": "WLMAP_STORE_PASSWORD", "valueFrom": ref} in workload(objs, kind, name)["env"]


def test_the_roles_command_lines_are_what_serve_takes() -> None:
    """Each role's args and environment, through the real `wlmap serve` parser, give the role,
    store, buckets, stream length and password the values say, and Settings.check accepts them."""
    objs = objects(render(STORE_URL))
    secrets = {"valkey-auth/pw": "s3cret"}
    shard = serve_settings(workload(objs, "StatefulSet", SHARDS), secrets)
    api = serve_settings(workload(objs, "Deployment", API), secrets)
    assert (shard.role, shard.store, shard.shard_buckets, shard.store_stream_length, shard.store_password) == (
        "shard", URL, 4, 20000, "s3cret")
    assert (api.role, api.store, api.store_stream_length, api.store_password) == ("api", URL, 20000, "s3cret")
    for s in (shard, api):
        assert (s.namespace, s.cache, s.auth, s.host, s.port) == (RELEASE_NS, True, "kubernetes", "0.0.0.0", 8080)
        in_a_pod(s)
    bundled = objects(render(BUNDLED))
    shard = serve_settings(workload(bundled, "StatefulSet", SHARDS))
    assert (shard.role, shard.store, shard.shard_buckets, shard.store_password) == ("shard", BUNDLED_URL, 1, None)
    assert shard.shard_lease == 6
    in_a_pod(shard)
    in_a_pod(serve_settings(workload(bundled, "Deployment", API)))


def test_api_replicas_hold_no_workload_reads_or_leases() -> None:
    objs = objects(render(dict(BUNDLED, clusters={"secrets": {"enabled": True}}, kartas={"manage": True})))
    api_rules = rule_set(named(objs, "ClusterRole", API)["rules"])
    assert api_rules == {("run.ai", "kartas", v) for v in ("get", "list", "watch")} | {
        ("authentication.k8s.io", "tokenreviews", "create"), ("authorization.k8s.io", "subjectaccessreviews", "create")}
    api_sa = {"kind": "ServiceAccount", "name": API, "namespace": RELEASE_NS}
    shard_sa = {"kind": "ServiceAccount", "name": FULLNAME, "namespace": RELEASE_NS}
    assert named(objs, "ClusterRoleBinding", API)["subjects"] == [api_sa]
    assert named(objs, "ClusterRoleBinding", FULLNAME)["subjects"] == [shard_sa]  # the catalog reads: shards only
    assert named(objs, "RoleBinding", SHARDS)["subjects"] == [shard_sa]
    assert rule_set(named(objs, "Role", SHARDS)["rules"]) == {("coordination.k8s.io", "leases", v) for v in LEASE_VERBS}
    # definitions (ConfigMaps) and cluster Secrets (to reach each cluster's SubjectAccessReviews): both
    for binding in (FULLNAME, f"{FULLNAME}-cluster-secrets"):
        assert named(objs, "RoleBinding", binding)["subjects"] == [shard_sa, api_sa]
    for binding in (f"{FULLNAME}-karta-manager",):  # Karta status is written by a shard
        assert named(objs, "RoleBinding", binding)["subjects"] == [shard_sa]
    env = {e["name"] for e in workload(objs, "Deployment", API)["env"]}
    assert "WLMAP_MANAGE_KARTAS" not in env
    assert "WLMAP_MANAGE_KARTAS" in {e["name"] for e in workload(objs, "StatefulSet", SHARDS)["env"]}

    # an existing service account (serviceAccount.create false) serves both roles
    objs = objects(render(dict(BUNDLED, serviceAccount={"create": False, "name": "platform"})))
    assert "ServiceAccount" not in kinds(objs) and not [o for o in objs if o["metadata"]["name"] == API
                                                            and o["kind"].startswith("ClusterRole")]
    assert named(objs, "Deployment", API)["spec"]["template"]["spec"]["serviceAccountName"] == "platform"
    assert named(objs, "RoleBinding", SHARDS)["subjects"][0]["name"] == "platform"


# -- on a real API server ---------------------------------------------------------------------

def _allowed(apiserver: ApiServer, sa: str, verb: str, resource: str, group: str = "",
             namespace: str | None = STORE_NS) -> bool:
    attrs = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attrs["namespace"] = namespace
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": f"system:serviceaccount:{STORE_NS}:{sa}",
                       "groups": ["system:serviceaccounts", f"system:serviceaccounts:{STORE_NS}",
                                  "system:authenticated"],
                       "resourceAttributes": attrs}}
    return bool(apiserver.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                               review)["status"].get("allowed"))


def _lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": STORE_NS}, "spec": {"holderIdentity": name}}


def test_both_layouts_are_accepted_by_the_server(apiserver: ApiServer, kubectl: Kubectl) -> None:
    """Every object of both layouts, rendered for this server (v1.20: policy/v1beta1,
    autoscaling/v2beta2), is stored as sent; then the shards' service account may claim Leases in
    the release namespace and the API replicas' may not, nor read a workload."""
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    kubectl.ensure_namespace(STORE_NS)
    bundled = {"store": {"bundled": True, "passwordSecret": {"name": "redis-auth"},
                         "redis": {"persistence": {"enabled": True}}}}
    for release, values in ((f"{STORE_RELEASE}-url", STORE_URL), (STORE_RELEASE, bundled)):
        applied = install(cluster, render(values, name=release, namespace=STORE_NS,
                                          kube_version=kube_version, api_versions=api_versions))
        assert {o["kind"] for o, _ in applied} >= {"StatefulSet", "Deployment", "PodDisruptionBudget", "Role"}
        for sent, stored in applied:
            assert dropped(sent, stored) == [], f"{sent['kind']}/{sent['metadata']['name']}"
    sent = {o["metadata"]["name"]: o for o, _ in applied if o["kind"] == "PodDisruptionBudget"}
    assert {p["apiVersion"] for p in sent.values()} == {"policy/v1beta1"}

    shard_sa, api_sa = f"{STORE_RELEASE}-workload-map", f"{STORE_RELEASE}-workload-map-api"
    eventually(lambda: _allowed(apiserver, shard_sa, "create", "leases", "coordination.k8s.io"),
               what="the shards' RoleBinding in force")
    for verb in LEASE_VERBS:
        assert _allowed(apiserver, shard_sa, verb, "leases", "coordination.k8s.io"), verb
        assert not _allowed(apiserver, api_sa, verb, "leases", "coordination.k8s.io"), verb
        assert not _allowed(apiserver, shard_sa, verb, "leases", "coordination.k8s.io", namespace="default"), verb
    for verb in ("list", "watch"):
        for group, resource in (("", "pods"), ("jobset.x-k8s.io", "jobsets"), ("batch", "jobs")):
            assert _allowed(apiserver, shard_sa, verb, resource, group, namespace=None), (verb, resource)
            assert not _allowed(apiserver, api_sa, verb, resource, group, namespace=None), (verb, resource)
    for sa in (shard_sa, api_sa):  # each checks its callers and reads the definition ConfigMaps
        assert _allowed(apiserver, sa, "create", "subjectaccessreviews", "authorization.k8s.io", namespace=None)
        assert _allowed(apiserver, sa, "list", "configmaps")

    # and with the service accounts' own tokens: the shard creates and renews a Lease, the API may not
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{STORE_NS}/leases"
    shard_token, api_token = sa_token(apiserver, STORE_NS, shard_sa), sa_token(apiserver, STORE_NS, api_sa)
    made = apiserver.call("POST", leases, _lease("shard-probe"), token=shard_token)
    apiserver.call("PUT", f"{leases}/shard-probe", made, token=shard_token)
    for method, path, body in (("POST", leases, _lease("api-probe")), ("GET", f"{leases}/shard-probe", None),
                               ("GET", "/api/v1/pods", None)):
        with pytest.raises(urllib.error.HTTPError) as e:
            apiserver.call(method, path, body, token=api_token)
        assert e.value.code == 403, (method, path)
    apiserver.call("DELETE", f"{leases}/shard-probe", token=shard_token)
    remove_workloads(apiserver, STORE_NS)


def test_with_actions_the_api_replicas_may_read_and_patch_the_root_kinds() -> None:
    """Suspend, resume and applied updates run on the API replica that takes the request: it
    reads the object from the API server and patches it, so with config.actions its account gets
    the catalog's reads and the root kinds' patch, and without, neither."""
    on = rule_set(named(objects(render(dict(BUNDLED, config={"actions": True}))), "ClusterRole", API)["rules"])
    off = rule_set(named(objects(render(BUNDLED)), "ClusterRole", API)["rules"])
    assert ("jobset.x-k8s.io", "jobsets", "patch") in on and ("jobset.x-k8s.io", "jobsets", "get") in on
    assert not {r for r in off if r[0] == "jobset.x-k8s.io"}


LIVE_STORE_NS = "chart-store-live"


def remove_workloads(apiserver: ApiServer, namespace: str) -> None:
    """The Deployments and StatefulSets a test installed: they are workloads every later list on
    this shared API server would show (and page through); the API server alone runs no namespace
    controller to remove them with their namespace."""
    for plural in ("deployments", "statefulsets"):
        base = f"/apis/apps/v1/namespaces/{namespace}/{plural}"
        for item in apiserver.call("GET", base)["items"]:
            apiserver.call("DELETE", f"{base}/{item['metadata']['name']}")


def _serve_args(c: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A rendered container as a `wlmap serve` of this test: its args (without `serve` and the
    address, which the test picks) and its literal environment, POD_NAME as the downward API gives."""
    args = list(c["args"])
    assert args[0] == "serve"
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("--host", "--port"):
            skip = True
            continue
        out.append(a)
    env = {e["name"]: e["value"] for e in c["env"] if "value" in e}
    return out, env


@pytest.mark.redis  # its own store
def test_shards_and_api_replicas_run_with_the_chart_rbac(apiserver: ApiServer, kubectl: Kubectl,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The store layout installed, then a shard and an API replica run as the chart's two service
    accounts with their rendered args and environment, against this API server and a real Redis:
    the shard claims the cluster with its Lease rights and writes it; the API replica, holding no
    workload read, answers a caller (authorized by SubjectAccessReview) from the store."""
    from ..service.conftest import Server
    from ..store.redis_server import RedisServer

    redis = RedisServer().start()
    cluster = Cluster(apiserver)
    kube_version, api_versions = cluster.capabilities()
    kubectl.ensure_namespace(LIVE_STORE_NS)
    release = "wlmap-live-store"
    values = {"store": {"url": redis.url}, "config": {"kartaResources": False}}
    objs = [o for o, _ in install(cluster, render(values, name=release, namespace=LIVE_STORE_NS,
                                                  kube_version=kube_version, api_versions=api_versions))]
    fullname = f"{release}-workload-map"
    tmp = tmp_path_factory.mktemp("chart-store-live")
    servers: list[Any] = []
    try:
        for kind, name, sa, pod in (("StatefulSet", f"{fullname}-shards", fullname, f"{fullname}-shards-0"),
                                    ("Deployment", f"{fullname}-api", f"{fullname}-api", None)):
            args, env = _serve_args(workload(objs, kind, name))
            kc = apiserver.write_kubeconfig(tmp / f"{sa}.kubeconfig", sa_token(apiserver, LIVE_STORE_NS, sa), sa)
            servers.append(Server(*args, "--kubeconfig", str(kc), env={**env, **({"POD_NAME": pod} if pod else {})}))
        shard, api = servers
        admin = {"Authorization": f"Bearer {TOKENS['admin'][0]}"}

        def listed() -> bool:
            r = httpx.get(api.url + "/workloads", headers=admin, timeout=10)
            return r.status_code == 200 and r.json()["freshness"]["source"] == "store"

        eventually(listed, timeout=60, what="the API replica answers from the store")
        st = httpx.get(api.url + "/model", headers=admin, timeout=10).json()
        assert st["store"]["role"] == "api" and st["units"][0]["owner"].startswith(f"{fullname}-shards-0_")
        assert httpx.get(shard.url + "/model", headers=admin, timeout=10).json()["store"]["role"] == "shard"
        assert httpx.get(api.url + "/workloads", timeout=10).status_code == 401  # no token: refused
        # (a refusal of some other kind may show: other tests leave pods owned by kinds outside the catalog)
        refused = [ln for ln in shard.output().splitlines() if "forbidden" in ln.lower() and "lease" in ln.lower()]
        assert refused == [], refused
    finally:
        for s in servers:
            s.stop()
        redis.stop()
        remove_workloads(apiserver, LIVE_STORE_NS)
