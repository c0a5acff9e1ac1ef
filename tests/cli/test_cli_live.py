"""`wlmap describe` and `wlmap get` against a real kube-apiserver, run as the installed CLI.

Only the API server runs (no controllers), so the JobSet's Jobs and pods are created here with
owner references, and their status is written through the status subresource.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.cli.live import age
from app.cli.main import main

from ..cluster.apiserver import ApiServer
from ..cluster.kubeobjects import Kubectl, owner_ref, pod, reader_rbac, running, unschedulable
from ..cluster.util import fixture_object

ROOT = Path(__file__).resolve().parents[2]
WLMAP = Path(sys.executable).parent / "wlmap"
JOBSET = ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
PYTORCHJOB = ROOT / "definitions/kubeflow.org/PyTorchJob/v1/testdata/running.yaml"
NS = "cli-jobset"


def pythonpath() -> dict[str, str]:
    """The caller's PYTHONPATH: the installed `wlmap` is an editable install of one checkout, so a
    worktree's tests run its own code only through it."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def wlmap(*args: str, kubeconfig: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}  # no stray ~/.kube/config or $KUBECONFIG
    env |= pythonpath()
    cmd = [str(WLMAP), *args] + (["--kubeconfig", str(kubeconfig)] if kubeconfig else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def manifest(path: Path, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A testdata object ready to apply in `namespace`, and the status it was recorded with."""
    return fixture_object(str(path.relative_to(ROOT)), namespace)


def make_jobset(kubectl: Kubectl, ns: str) -> dict[str, Any]:
    """JobSet llm-pretrain (coordinator x1, trainer 2 jobs x 2 pods, evaluator 1 job x 2 pods:
    7 pods, 12 GPUs) with 6 pods: trainer-1-1 is missing and evaluator-0-1 is unschedulable."""
    kubectl.ensure_namespace(ns)
    doc, status = manifest(JOBSET, ns)
    js = kubectl.apply(doc)
    kubectl.set_status(js, status)
    placement = {("coordinator", 0, 0): "cpu-node-1", ("trainer", 0, 0): "gpu-node-1",
                 ("trainer", 0, 1): "gpu-node-1", ("trainer", 1, 0): "gpu-node-2",
                 ("evaluator", 0, 0): "gpu-node-3", ("evaluator", 0, 1): None}
    gpus = {"coordinator": 0, "trainer": 2, "evaluator": 2}
    for rj in doc["spec"]["replicatedJobs"]:
        for i in range(rj["replicas"]):
            job = kubectl.apply({"apiVersion": "batch/v1", "kind": "Job",
                                 "metadata": {"name": f"llm-pretrain-{rj['name']}-{i}", "namespace": ns,
                                              "ownerReferences": [owner_ref(js)]},
                                 "spec": copy.deepcopy(rj["template"]["spec"])})
            for (name, ji, pi), node in placement.items():
                if name != rj["name"] or ji != i:
                    continue
                p = kubectl.apply(pod(ns, f"llm-pretrain-{name}-{ji}-{pi}", job, gpus=gpus[name], node=node,
                                      labels={"jobset.sigs.k8s.io/replicatedjob-name": name,
                                              "jobset.sigs.k8s.io/job-index": str(ji)}))
                kubectl.set_status(p, running(node) if node else unschedulable())
    # A pod of nobody in the same namespace: a workload of its own (Pod), never one of the JobSet's.
    stray = kubectl.apply(pod(ns, "debug-shell", None, node="cpu-node-2"))
    kubectl.set_status(stray, running("cpu-node-2"))
    return js


@pytest.fixture(scope="module")
def jobset(apiserver: ApiServer, kubectl: Kubectl) -> dict[str, Any]:
    return make_jobset(kubectl, NS)


@pytest.fixture(scope="module")
def admin(apiserver: ApiServer) -> Path:
    return apiserver.kubeconfig("admin")


def tree_rows(lines: list[str]) -> list[list[str]]:
    """Tree rows as [branch + name, cells...]; cells are separated by 3+ spaces."""
    out = []
    for line in lines:
        m = re.match(r"^((?:\|   |    )*(?:\|-- |`-- )\S+)(.*)$", line)
        assert m, line
        out.append([m[1]] + ([c for c in re.split(r"\s{3,}", m[2].strip()) if c]))
    return out


def kubeconfig_with(apiserver: ApiServer, path: Path, *, server: str | None = None,
                    namespace: str | None = None) -> Path:
    doc = json.loads(apiserver.kubeconfig("admin").read_text())
    if server:
        doc["clusters"][0]["cluster"]["server"] = server
    if namespace:
        doc["contexts"][0]["context"]["namespace"] = namespace
    path.write_text(json.dumps(doc))
    return path


# -- describe ------------------------------------------------------------------------------

def test_describe_tree_shows_live_components_instances_and_pods(jobset: dict[str, Any], admin: Path) -> None:
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.match(r"^JobSet/llm-pretrain   namespace: cli-jobset   definition: jobset-x-k8s-io-jobset-v1alpha2 "
                    r"\(builtin\)   age: \d+s$", lines[0]), lines[0]
    rows = tree_rows(lines[2:lines.index("", 2)])
    assert rows == [
        ["`-- replicated-job", "5/7 ready", "gpu: 12", "cpu-node-1,gpu-node-1,gpu-node-2,gpu-node-3"],
        ["    |-- coordinator", "1/1 ready", "cpu-node-1"],
        ["    |   `-- llm-pretrain-coordinator-0-0", "Running", "cpu-node-1"],
        ["    |-- evaluator", "1/2 ready", "gpu: 4", "gpu-node-3"],
        ["    |   |-- llm-pretrain-evaluator-0-0", "Running", "gpu: 2", "gpu-node-3"],
        ["    |   `-- llm-pretrain-evaluator-0-1", "Pending (Unschedulable)", "gpu: 2", "<none>"],
        ["    `-- trainer", "3/4 ready", "gpu: 8", "gpu-node-1,gpu-node-2"],
        ["        |-- llm-pretrain-trainer-0-0", "Running", "gpu: 2", "gpu-node-1"],
        ["        |-- llm-pretrain-trainer-0-1", "Running", "gpu: 2", "gpu-node-1"],
        ["        `-- llm-pretrain-trainer-1-0", "Running", "gpu: 2", "gpu-node-2"],
    ]
    assert "debug-shell" not in r.stdout  # not owned by the JobSet
    tail = lines[lines.index("", 2):]
    assert "Phase: Running" in tail
    res = tail[tail.index("Resources:") + 1:]
    assert [line.split() for line in res] == [
        ["COMPONENT", "REPLICAS", "GPU", "CPU", "MEMORY"],
        ["replicated-job/coordinator", "1", "0", "2", "8Gi"],
        ["replicated-job/evaluator", "2", "4", "16", "128Gi"],
        ["replicated-job/trainer", "4", "8", "64", "512Gi"],
        ["TOTAL", "7", "12", "82", "648Gi"],
    ]


def test_describe_accepts_type_and_name_as_two_args_and_kubectl_type_spellings(jobset: dict[str, Any],
                                                                              admin: Path) -> None:
    outs = set()
    for target in (["JobSet", "llm-pretrain"], ["jobsets/llm-pretrain"], ["jobsets.jobset.x-k8s.io/llm-pretrain"]):
        r = wlmap("describe", *target, "-n", NS, kubeconfig=admin)
        assert r.returncode == 0, (target, r.stderr)
        outs.add(r.stdout.split("\n", 1)[1])  # the header's age may tick
    assert len(outs) == 1


def test_describe_workload_whose_root_bears_pods(kubectl: Kubectl, admin: Path) -> None:
    ns = "cli-job"
    kubectl.ensure_namespace(ns)
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
    job = kubectl.apply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl", "namespace": ns},
                         "spec": {"parallelism": 2, "completions": 2,
                                  "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}})
    labels = {"batch.kubernetes.io/job-name": "etl"}  # what the Job controller sets, and its definition reads
    kubectl.set_status(kubectl.apply(pod(ns, "etl-0", job, labels, node="cpu-node-1")), running("cpu-node-1"))
    kubectl.set_status(kubectl.apply(pod(ns, "etl-1", job, labels, node="cpu-node-2")), {
        "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"},
                                           {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
        "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
                               "state": {"waiting": {"reason": "ImagePullBackOff"}}}]})
    r = wlmap("describe", "job", "etl", "-n", ns, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    assert tree_rows(r.stdout.splitlines()[2:5]) == [
        ["`-- job", "1/2 ready", "cpu-node-1,cpu-node-2"],
        ["    |-- etl-0", "Running", "cpu-node-1"],
        ["    `-- etl-1", "Pending (ContainersNotReady)", "cpu-node-2"]]
    assert r.stdout.endswith("Resources:\nCOMPONENT   REPLICAS   GPU   CPU   MEMORY\n"
                             "job         2          0     1     2Gi\nTOTAL       2          0     1     2Gi\n")


def test_describe_json_and_yaml_are_the_service_response(jobset: dict[str, Any], admin: Path, service: Any) -> None:
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, "-o", "json", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert set(got) >= {"workload", "definition", "status", "tree", "totals", "gang", "warnings", "live"}
    assert got["live"]["current"] == 6 and got["live"]["ready"] == 5 and got["live"]["desired"] == 7
    assert {p["name"]: p["reason"] for p in got["live"]["pods"] if not p["ready"]} == {
        "llm-pretrain-evaluator-0-1": "Unschedulable"}
    with service.client() as c:
        api = c.get(f"/workloads/{NS}/llm-pretrain", params={"kind": "jobset"})
    assert api.status_code == 200, api.text
    want = api.json()
    # The CLI reads the API server (freshness "direct"); the service answers from its model.
    assert got.pop("freshness")["source"] == "direct" and want.pop("freshness")["source"] in ("model", "direct")
    for doc in (got, want):  # gang.pods follows the API server's list order, which a cached list does not fix
        doc["gang"]["pods"].sort(key=lambda p: p["pod"])
    assert got == want
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, "-o", "yaml", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    doc.pop("freshness")
    doc["gang"]["pods"].sort(key=lambda p: p["pod"])
    assert doc == got


def test_describe_exit_codes(jobset: dict[str, Any], admin: Path) -> None:
    r = wlmap("describe", "jobset/missing", "-n", NS, kubeconfig=admin)
    assert (r.returncode, r.stdout, r.stderr) == (3, "", f'error: JobSet "missing" not found in namespace {NS}\n')
    r = wlmap("describe", "rayjob/x", "-n", NS, kubeconfig=admin)  # a definition, but no CRD
    assert r.returncode == 3 and "not served" in r.stderr, r.stderr
    r = wlmap("describe", "nosuchkind/x", "-n", NS, kubeconfig=admin)
    assert r.returncode == 4 and 'no Karta definition covers "nosuchkind"' in r.stderr, r.stderr
    r = wlmap("describe", "jobset", "-n", NS, kubeconfig=admin)
    assert (r.returncode, r.stderr) == (2, "error: a NAME is required: give it as TYPE/NAME or as TYPE NAME\n")
    for bad in (["jobset/"], ["jobset/a", "b"], ["jobset", "a/b"]):
        assert wlmap("describe", *bad, kubeconfig=admin).returncode == 2, bad
    assert wlmap("describe", "jobset/llm-pretrain", "-o", "wide", kubeconfig=admin).returncode == 2


def test_describe_as_a_user_without_rights_is_forbidden(jobset: dict[str, Any], apiserver: ApiServer) -> None:
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, kubeconfig=apiserver.kubeconfig("bob"))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: ") and "forbidden" in r.stderr and 'User "bob"' in r.stderr, r.stderr


def test_unreachable_server_bad_credentials_and_missing_kubeconfig_are_exit_1(apiserver: ApiServer,
                                                                             tmp_path: Path) -> None:
    from ..cluster.apiserver import _free_port

    cfg = kubeconfig_with(apiserver, tmp_path / "closed", server=f"https://127.0.0.1:{_free_port()}")
    for args in (["describe", "jobset/llm-pretrain", "-n", NS], ["get", "-n", NS], ["get", "-A"]):
        r = wlmap(*args, kubeconfig=cfg)
        assert r.returncode == 1 and r.stdout == "", (args, r.stdout)
        assert r.stderr.startswith("error: ") and "reach the API server" in r.stderr, r.stderr
    doc = json.loads(apiserver.kubeconfig("admin").read_text())
    doc["users"][0]["user"]["token"] = "not-a-token"
    (tmp_path / "bad-token").write_text(json.dumps(doc))
    for args in (["describe", "jobset/llm-pretrain", "-n", NS], ["get", "-A"]):
        r = wlmap(*args, kubeconfig=tmp_path / "bad-token")
        assert (r.returncode, r.stderr) == (1, "error: the API server rejected the credentials (Unauthorized)\n")
    r = wlmap("get", kubeconfig=tmp_path / "nothing-here")
    assert r.returncode == 1 and "no such file" in r.stderr


# -- get -----------------------------------------------------------------------------------

def test_get_lists_top_level_workloads_with_ready_and_gpus(jobset: dict[str, Any], admin: Path) -> None:
    r = wlmap("get", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows[0] == ["NAME", "NAMESPACE", "KIND", "PHASE", "READY", "GPUS", "AGE"]
    # The JobSet's Jobs and pods are part of it; the ownerless pod is a workload of its own.
    assert [r[:6] for r in rows[1:]] == [["debug-shell", NS, "Pod", "Running", rows[1][4], "0"],
                                         ["llm-pretrain", NS, "JobSet", "Running", "5/7", "12"]]
    assert all(re.fullmatch(r"\d+s|\d+m(\d+s)?", r[6]) for r in rows[1:]), rows
    r = wlmap("get", "jobsets", "-n", NS, kubeconfig=admin)
    assert [line.split()[:3] for line in r.stdout.splitlines()[1:]] == [["llm-pretrain", NS, "JobSet"]]


def test_get_json_is_the_service_response_and_yaml_the_same(jobset: dict[str, Any], admin: Path,
                                                            service: Any) -> None:
    r = wlmap("get", "-n", NS, "-o", "json", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    with service.client() as c:
        want = c.get("/workloads", params={"namespace": NS}).json()
    # The CLI reads the API server (freshness "direct"); the service answers from its model.
    assert got.pop("freshness")["source"] == "direct" and want.pop("freshness")["source"] in ("model", "direct")
    # ...and gives the token its list stream resumes from (a model's; a direct read has none)
    if want.get("metadata", {}).pop("resumeFrom", None) is not None and not want["metadata"]:
        del want["metadata"]
    assert got == want
    js = next(i for i in got["items"] if i["workload"]["kind"] == "JobSet")
    assert js["pods"] == {"ready": 5, "desired": 7} and js["gpus"] == 12 and js["phase"] == "Running"
    r = wlmap("get", "-n", NS, "-o", "yaml", kubeconfig=admin)
    doc = yaml.safe_load(r.stdout)
    doc.pop("freshness")
    assert doc == got


def test_get_all_namespaces_and_default_namespace(jobset: dict[str, Any], kubectl: Kubectl, apiserver: ApiServer,
                                                  tmp_path: Path) -> None:
    doc, status = manifest(PYTORCHJOB, "cli-other")
    kubectl.ensure_namespace("cli-other")
    kubectl.set_status(kubectl.apply(doc), status)
    name = doc["metadata"]["name"]
    r = wlmap("get", "-A", kubeconfig=apiserver.kubeconfig("admin"))
    assert r.returncode == 0, r.stderr
    rows = [line.split()[:3] for line in r.stdout.splitlines()[1:]]
    assert ["llm-pretrain", NS, "JobSet"] in rows and [name, "cli-other", "PyTorchJob"] in rows
    r = wlmap("get", "pytorchjob", "-A", kubeconfig=apiserver.kubeconfig("admin"))
    typed = [line.split()[:3] for line in r.stdout.splitlines()[1:]]
    # the suite shares one API server: other tests' PyTorchJobs may be listed too, but nothing else
    assert [name, "cli-other", "PyTorchJob"] in typed and {t[2] for t in typed} == {"PyTorchJob"}, typed
    # Without -n: the kubeconfig context's namespace.
    r = wlmap("get", kubeconfig=kubeconfig_with(apiserver, tmp_path / "kc", namespace="cli-other"))
    assert [line.split()[:2] for line in r.stdout.splitlines()[1:]] == [[name, "cli-other"]]


def test_get_empty_namespace_and_unknown_type(apiserver: ApiServer, kubectl: Kubectl) -> None:
    kubectl.ensure_namespace("cli-empty")
    admin = apiserver.kubeconfig("admin")
    r = wlmap("get", "-n", "cli-empty", kubeconfig=admin)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "No workloads found in namespace cli-empty.\n")
    r = wlmap("get", "-n", "cli-empty", "-o", "json", kubeconfig=admin)
    out = json.loads(r.stdout)
    assert (r.returncode, out["items"], out["warnings"], out["freshness"]["source"]) == (0, [], [], "direct")
    r = wlmap("get", "rayjob", "-n", "cli-empty", kubeconfig=admin)  # defined but not served: a warning
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == ["No workloads found in namespace cli-empty.",
                                     'warning: no served kind with a definition matches "rayjob"']
    r = wlmap("get", "nosuchkind", "-n", "cli-empty", kubeconfig=admin)
    assert r.returncode == 4 and 'no Karta definition covers "nosuchkind"' in r.stderr
    assert wlmap("get", "-n", "x", "-A", kubeconfig=admin).returncode == 2
    assert wlmap("get", "jobset/x", kubeconfig=admin).returncode == 2


def test_get_as_a_user_without_rights_is_forbidden(jobset: dict[str, Any], apiserver: ApiServer) -> None:
    for args in (["get", "-n", NS], ["get", "jobset", "-n", NS]):
        r = wlmap(*args, kubeconfig=apiserver.kubeconfig("bob"))
        assert r.returncode == 1 and r.stdout == "", args
        assert r.stderr.startswith("error: ") and "forbidden" in r.stderr, r.stderr


def test_user_definitions_from_a_folder(kubectl: Kubectl, admin: Path) -> None:
    """A kind only a --definition folder covers: evaluated in a worker, under the deadline."""
    ns = "cli-batchtask"
    kubectl.ensure_namespace(ns)
    doc, status = manifest(ROOT / "examples/definitions/acme.example.com/BatchTask/v1/testdata/running.yaml", ns)
    kubectl.set_status(kubectl.apply(doc), status)
    defs = ["--definition", "examples/definitions"]
    r = wlmap("describe", "batchtask/nightly", "-n", ns, "-o", "json", *defs, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert (res["definition"]["source"], res["status"]["phase"], res["totals"]["gpus"]) == ("directory", "Running", 3)
    r = wlmap("get", "-n", ns, *defs, kubeconfig=admin)
    assert [line.split()[:6] for line in r.stdout.splitlines()[1:]] == [
        ["nightly", ns, "BatchTask", "Running", "0/3", "3"]]
    # Without the folder nothing covers BatchTask.
    assert wlmap("describe", "batchtask/nightly", "-n", ns, kubeconfig=admin).returncode == 4
    r = wlmap("get", "-n", ns, kubeconfig=admin)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", f"No workloads found in namespace {ns}.\n")


def test_karta_resources_of_the_cluster_are_used(kubectl: Kubectl, admin: Path, apiserver: ApiServer) -> None:
    """As the reference CLI: Karta resources in the cluster cover kinds the catalog does not;
    a user who may not list them gets the catalog and a warning."""
    ns = "cli-karta"
    kubectl.ensure_namespace(ns)
    doc, status = manifest(ROOT / "examples/definitions/acme.example.com/BatchTask/v1/testdata/running.yaml", ns)
    kubectl.set_status(kubectl.apply(doc), status)
    karta = yaml.safe_load((ROOT / "examples/definitions/acme.example.com/BatchTask/v1/definition.yaml").read_text())
    kubectl.apply(karta)
    try:
        r = wlmap("describe", "batchtask/nightly", "-n", ns, "-o", "json", kubeconfig=admin)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["definition"]["source"] == "cluster"
        r = wlmap("get", "batchtasks", "-n", ns, kubeconfig=apiserver.kubeconfig("bob"))
        assert r.returncode == 4
        assert 'not allowed to list kartas.run.ai; showing built-in definitions only' in r.stderr
    finally:
        kubectl.delete("run.ai/v1alpha1", "Karta", None, karta["metadata"]["name"])


# -- pieces without a cluster ----------------------------------------------------------------

def test_age_is_kubectl_human_duration() -> None:
    now = datetime(2025, 6, 2, 12, 0, 0, tzinfo=UTC)

    def ago(**kw: float) -> str:
        return age((now - timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ"), now)

    assert [ago(seconds=5), ago(seconds=119), ago(minutes=5), ago(minutes=9, seconds=30), ago(minutes=90),
            ago(hours=3, minutes=20), ago(hours=30), ago(days=3), ago(days=3, hours=4), ago(days=40),
            ago(days=800)] == ["5s", "119s", "5m", "9m30s", "90m", "3h20m", "30h", "3d", "3d4h", "40d", "2y70d"]
    assert age(None) == "<unknown>"


def test_ambiguous_workload_is_a_usage_error_listing_the_candidates() -> None:
    from app.cli.live import _Kube, lookup_error
    from app.cluster.workloads import LookupFailed

    e = LookupFailed(409, "ambiguous-workload", '2 workloads are named "x"', [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "ns", "name": "x"},
        {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "x"}])
    err = lookup_error(e, _Kube(None))
    assert err.code == 2
    assert str(err).splitlines()[1:] == ["  jobset.jobset.x-k8s.io/x", "  pod.v1/x"]


def test_describe_without_arguments_is_usage() -> None:
    with pytest.raises(SystemExit) as e:
        main(["describe"])
    assert e.value.code == 2


# -- issue 22: kubectl habits (names, --phase, -l, -o wide, --sort-by, auth flags, describe limits) ------

STYLE = "cli-k8s-style"


@pytest.fixture(scope="module")
def labelled(apiserver: ApiServer, kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    """Three workloads with labels in their own namespace: a running and a failed JobSet, a
    running PyTorchJob (no pods: the rows come from the objects alone)."""
    kubectl.ensure_namespace(STYLE)
    made = {}
    for name, path, labels in (
            ("js-running", JOBSET, {"team": "a", "tier": "gpu"}),
            ("js-failed", ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/failed.yaml", {"team": "b"}),
            ("pt-running", PYTORCHJOB, {"team": "a", "app.kubernetes.io/name": "trainer"})):
        doc, status = fixture_object(str(path.relative_to(ROOT)), STYLE, name)
        doc["metadata"]["labels"] = labels
        made[name] = kubectl.set_status(kubectl.apply(doc), status)
    return made


def names_of(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.split()[0] for line in r.stdout.splitlines()[1:]]


def test_get_type_and_names_prints_those_found_and_fails_3_for_the_others(labelled: Any, admin: Path) -> None:
    r = wlmap("get", "jobset", "js-failed", "js-running", "-n", STYLE, kubeconfig=admin)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert names_of(r) == ["js-failed", "js-running"]
    r = wlmap("get", "jobset", "js-running", "nope", "pt-running", "-n", STYLE, kubeconfig=admin)
    assert r.returncode == 3
    assert names_of(r) == ["js-running"]  # pt-running is a PyTorchJob, not a JobSet
    assert r.stderr.splitlines() == [f'error: jobset "nope" not found in namespace {STYLE}',
                                     f'error: jobset "pt-running" not found in namespace {STYLE}']
    r = wlmap("get", "jobsets", "nope", "-n", STYLE, "-o", "json", kubeconfig=admin)
    assert r.returncode == 3 and json.loads(r.stdout)["items"] == []
    assert r.stderr == f'error: jobsets "nope" not found in namespace {STYLE}\n'


def test_get_phase_repeatable_and_comma_separated(labelled: Any, admin: Path) -> None:
    r = wlmap("get", "-n", STYLE, "--phase", "Failed", kubeconfig=admin)
    assert (r.returncode, names_of(r)) == (0, ["js-failed"])
    r = wlmap("get", "-n", STYLE, "--phase", "running", kubeconfig=admin)
    assert names_of(r) == ["js-running", "pt-running"]
    for args in (["--phase", "Failed,Running"], ["--phase", "Failed", "--phase", "Running"]):
        assert names_of(wlmap("get", "-n", STYLE, *args, kubeconfig=admin)) == ["js-failed", "js-running",
                                                                                 "pt-running"]
    r = wlmap("get", "-n", STYLE, "--phase", "Succeeded", kubeconfig=admin)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", f"No workloads found in namespace {STYLE}.\n")


@pytest.mark.parametrize(("selector", "expected"), [
    ("team=a", ["js-running", "pt-running"]),
    ("team==a,tier=gpu", ["js-running"]),
    ("team!=a", ["js-failed"]),
    ("team in (b, c)", ["js-failed"]),
    ("team notin (a)", ["js-failed"]),
    ("tier", ["js-running"]),
    ("!tier", ["js-failed", "pt-running"]),
    ("app.kubernetes.io/name=trainer", ["pt-running"]),
])
def test_get_label_selector_on_the_workloads_labels(labelled: Any, admin: Path, selector: str,
                                                    expected: list[str]) -> None:
    r = wlmap("get", "-n", STYLE, "-l", selector, kubeconfig=admin)
    assert (r.returncode, names_of(r)) == (0, expected), r.stderr
    r = wlmap("get", "-n", STYLE, "--selector", selector, "-o", "json", kubeconfig=admin)
    assert [i["workload"]["name"] for i in json.loads(r.stdout)["items"]] == expected


def test_get_bad_selector_is_a_usage_error(labelled: Any, admin: Path) -> None:
    r = wlmap("get", "-n", STYLE, "-l", "team in (a", kubeconfig=admin)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith('error: invalid label selector "team in (a": ') and "expected" in r.stderr


def test_get_wide_adds_components_and_reason(labelled: Any, admin: Path) -> None:
    r = wlmap("get", "-n", STYLE, "-o", "wide", kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.splitlines()
    assert head.split() == ["NAME", "NAMESPACE", "KIND", "PHASE", "READY", "GPUS", "AGE", "COMPONENTS", "REASON"]
    at = head.index("COMPONENTS")
    cells = {row.split()[0]: row[at:].strip() for row in rows}
    assert cells["pt-running"] == "master(1), worker(3)"
    assert cells["js-running"] == "replicated-job(7)", cells


def test_get_sort_by(labelled: Any, admin: Path) -> None:
    gpus = {i["workload"]["name"]: i["gpus"] for i in json.loads(wlmap("get", "-n", STYLE, "-o", "json",
                                                                       kubeconfig=admin).stdout)["items"]}
    assert gpus == {"js-failed": 12, "js-running": 12, "pt-running": 32}
    for spelling in (["--sort-by", "-gpus"], ["--sort-by=-gpus"]):  # equal keys keep the listing's order
        r = wlmap("get", "-n", STYLE, *spelling, kubeconfig=admin)
        assert names_of(r) == ["pt-running", "js-failed", "js-running"], r.stderr
    assert names_of(wlmap("get", "-n", STYLE, "--sort-by", "gpus", kubeconfig=admin)) == \
        ["js-failed", "js-running", "pt-running"]
    assert names_of(wlmap("get", "-n", STYLE, "--sort-by", "-name", kubeconfig=admin)) == \
        ["pt-running", "js-running", "js-failed"]
    assert names_of(wlmap("get", "-n", STYLE, "--sort-by", "phase", kubeconfig=admin))[0] == "js-failed"
    r = wlmap("get", "-n", STYLE, "--sort-by", "-gpus", "-o", "json", kubeconfig=admin)
    assert [i["workload"]["name"] for i in json.loads(r.stdout)["items"]] == ["pt-running", "js-failed", "js-running"]
    assert wlmap("get", "-n", STYLE, "--sort-by", "size", kubeconfig=admin).returncode == 2


@pytest.fixture()
def grant(kubectl: Kubectl) -> Iterator[Callable[[list[dict[str, Any]]], None]]:
    """Applies RBAC for one test and removes it afterwards: the API server is shared, and what
    alice may read here must not show in another module's test (tests/cluster/test_access.py)."""
    applied: list[dict[str, Any]] = []

    def apply(docs: list[dict[str, Any]]) -> None:
        for doc in docs:
            kubectl.apply(doc)
            applied.append(doc)

    yield apply
    for doc in reversed(applied):
        kubectl.delete(doc["apiVersion"], doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])


def _group_binding(namespace: str, group: str, resources: list[tuple[str, str]]) -> list[dict[str, Any]]:
    role, binding = reader_rbac(f"group-{group}", namespace, resources, pods=True)
    binding["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]
    return [role, binding]


def test_impersonation_sees_only_what_the_user_may(labelled: Any, grant: Callable[[list[dict[str, Any]]], None],
                                                   admin: Path, apiserver: ApiServer) -> None:
    grant(reader_rbac("alice", STYLE, [("jobset.x-k8s.io", "jobsets")])
          + _group_binding(STYLE, "ml-platform", [("kubeflow.org", "pytorchjobs")]))
    everything = names_of(wlmap("get", "-n", STYLE, kubeconfig=admin))
    assert everything == ["js-failed", "js-running", "pt-running"]
    r = wlmap("get", "-n", STYLE, "--as", "alice", kubeconfig=admin)
    assert (r.returncode, names_of(r)) == (0, ["js-failed", "js-running"]), r.stderr
    assert "warning: cannot list PyTorchJob: " in r.stderr and 'User "alice"' in r.stderr
    # Groups are impersonated with the user (several --as-group: several headers).
    r = wlmap("get", "-n", STYLE, "--as", "someone", "--as-group", "ml-platform", "--as-group", "other",
              kubeconfig=admin)
    assert (r.returncode, names_of(r)) == (0, ["pt-running"]), r.stderr
    r = wlmap("describe", "jobset/js-running", "-n", STYLE, "--as", "alice", "-o", "json", kubeconfig=admin)
    assert r.returncode == 0 and json.loads(r.stdout)["workload"]["name"] == "js-running", r.stderr
    r = wlmap("describe", "pytorchjob/pt-running", "-n", STYLE, "--as", "alice", kubeconfig=admin)
    assert r.returncode == 1 and 'User "alice"' in r.stderr and "forbidden" in r.stderr, r.stderr
    r = wlmap("get", "-n", STYLE, "--as", "bob", kubeconfig=admin)
    assert r.returncode == 1 and r.stdout == "" and "forbidden" in r.stderr, r.stderr


def test_token_overrides_the_kubeconfig_user(labelled: Any, grant: Callable[[list[dict[str, Any]]], None],
                                             apiserver: ApiServer) -> None:
    from ..cluster.apiserver import TOKENS

    grant(reader_rbac("alice", STYLE, [("jobset.x-k8s.io", "jobsets")]))
    bob = apiserver.kubeconfig("bob")
    assert wlmap("get", "-n", STYLE, kubeconfig=bob).returncode == 1  # bob may read nothing
    r = wlmap("get", "-n", STYLE, "--token", TOKENS["alice"][0], kubeconfig=bob)
    assert (r.returncode, names_of(r)) == (0, ["js-failed", "js-running"]), r.stderr
    r = wlmap("get", "-n", STYLE, "--token", TOKENS["admin"][0], kubeconfig=bob)
    assert names_of(r) == ["js-failed", "js-running", "pt-running"], r.stderr
    r = wlmap("get", "-n", STYLE, "--token", "not-a-token", kubeconfig=apiserver.kubeconfig("admin"))
    assert (r.returncode, r.stderr) == (1, "error: the API server rejected the credentials (Unauthorized)\n")


def test_insecure_skip_tls_verify_and_request_timeout(labelled: Any, apiserver: ApiServer, tmp_path: Path) -> None:
    import socket

    doc = json.loads(apiserver.kubeconfig("admin").read_text())
    del doc["clusters"][0]["cluster"]["certificate-authority"]  # the server's CA is not trusted
    (tmp_path / "no-ca").write_text(json.dumps(doc))
    r = wlmap("get", "-n", STYLE, kubeconfig=tmp_path / "no-ca")
    assert r.returncode == 1 and "certificate" in r.stderr.lower(), r.stderr
    r = wlmap("get", "-n", STYLE, "--insecure-skip-tls-verify", kubeconfig=tmp_path / "no-ca")
    assert (r.returncode, names_of(r)) == (0, ["js-failed", "js-running", "pt-running"]), r.stderr
    # A server that accepts the connection and never answers: --request-timeout bounds the wait.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        cfg = kubeconfig_with(apiserver, tmp_path / "silent", server=f"https://127.0.0.1:{port}")
        r = wlmap("get", "-n", STYLE, "--request-timeout", "1s", kubeconfig=cfg)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith("error: ") and "did not answer in time" in r.stderr, r.stderr


def test_describe_pod_and_component_limits(jobset: dict[str, Any], admin: Path) -> None:
    full = wlmap("describe", "jobset/llm-pretrain", "-n", NS, kubeconfig=admin).stdout
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, "--pod-limit", "1", "--component-limit", "2",
              kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    tree = r.stdout.split("\n\n")[1].splitlines()
    assert len(re.findall(r"llm-pretrain-\w+-\d-\d", r.stdout)) < len(re.findall(r"llm-pretrain-\w+-\d-\d", full))
    # Two of the three replicated jobs, each with at most one pod, then what was left out.
    labels = [re.match(r"^((?:\|   |    )*(?:\|-- |`-- )(?:… \d+ more \w+|\S+))", line)[1] for line in tree]
    assert labels == [
        "`-- replicated-job", "    |-- coordinator", "    |   `-- llm-pretrain-coordinator-0-0", "    |-- evaluator",
        "    |   |-- llm-pretrain-evaluator-0-0", "    |   `-- … 1 more pods", "    `-- … 1 more instances"], tree
    resources = r.stdout.split("Resources:\n")[1].splitlines()
    assert [line.split()[0] for line in resources] == ["COMPONENT", "replicated-job/coordinator",
                                                       "replicated-job/evaluator", "…", "TOTAL"]
    assert resources[3].startswith("… 1 more")
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, "--pod-limit", "0", kubeconfig=admin)
    assert "… 3 more pods" in r.stdout and "llm-pretrain-trainer-0-0" not in r.stdout


def test_definitions_list_with_a_kubeconfig_shows_cluster_definitions(kubectl: Kubectl, admin: Path,
                                                                      apiserver: ApiServer, tmp_path: Path) -> None:
    karta = yaml.safe_load((ROOT / "examples/definitions/acme.example.com/BatchTask/v1/definition.yaml").read_text())
    kubectl.apply(karta)
    try:
        assert wlmap("definitions", "list", "--kind", "BatchTask").stderr == "No Karta definitions found.\n"
        r = wlmap("definitions", "list", "--kind", "batchtask", kubeconfig=admin)
        assert r.returncode == 0, r.stderr
        head, row = (line.split() for line in r.stdout.splitlines())
        assert (head[3], row[1], row[3]) == ("ORIGIN", "BatchTask", "cluster")
        r = wlmap("definitions", "list", "--group", "acme.example.com", "-o", "json", "--as", "alice", kubeconfig=admin)
        assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout  # alice may not list kartas.run.ai
        assert "not allowed to list kartas.run.ai" in r.stderr
        r = wlmap("definitions", "list", "--kind", "batchtask", "--token", "not-a-token", kubeconfig=admin)
        assert (r.returncode, r.stdout, r.stderr) == (
            1, "", "error: the API server rejected the credentials (Unauthorized)\n")
    finally:
        kubectl.delete("run.ai/v1alpha1", "Karta", None, karta["metadata"]["name"])
    from ..cluster.apiserver import _free_port

    closed = kubeconfig_with(apiserver, tmp_path / "closed", server=f"https://127.0.0.1:{_free_port()}")
    r = wlmap("definitions", "list", kubeconfig=closed)
    assert r.returncode == 1 and r.stdout == "" and "reach the API server" in r.stderr, r.stderr


def test_describe_and_get_wide_say_why_it_is_not_running(jobset: dict[str, Any], admin: Path) -> None:
    """The JobSet runs 5 of 7 pods: one evaluator pod is short of GPUs (the scheduler's message),
    the other missing pod was never created.  describe explains it; get -o wide names the reason."""
    r = wlmap("describe", "jobset/llm-pretrain", "-n", NS, kubeconfig=admin)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    why = lines[lines.index("Why it is not running:") + 1:lines.index("Resources:") - 1]
    if why[0].startswith("  Error    NoCapacity"):  # it depends on the nodes other tests hold: test_cli_capacity_live
        why = why[2:]
    assert re.match(r"^  Error    Unschedulable   \(replicated-job \[evaluator\]; 1 pod; short of nvidia.com/gpu", why[0]), why
    assert why[1].strip() == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    r = wlmap("get", "jobset", "-n", NS, "-o", "wide", kubeconfig=admin)
    head, *rows = r.stdout.splitlines()
    assert [row.split()[-1] for row in rows if row.startswith("llm-pretrain ")] == ["Unschedulable"], r.stdout
