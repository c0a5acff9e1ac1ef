"""`wlmap update`: the rewritten object, its patch, the HTTP route's answer, and clean errors with
the CLI's exit codes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonpatch
import pytest
import yaml

import app.cli.main as cli

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
JOBSET = CATALOG / "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
WLMAP = Path(sys.executable).parent / "wlmap"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as e:  # argparse
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_update_prints_the_rewritten_object_and_its_patch(capsys):
    flags = ["--set-label", "kai.scheduler/queue=team-a", "--set-annotation", "a.example/b=c",
             "--scheduler-name", "kai-scheduler", "--priority-class", "high", "--node-selector", "pool=h100",
             "--toleration", "nvidia.com/gpu:NoSchedule", "--toleration", "team=a:NoExecute"]
    code, out, _ = _run(capsys, "update", str(JOBSET), *flags)
    assert code == 0
    obj = yaml.safe_load(out)
    tmpl = obj["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    assert tmpl["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
    assert tmpl["metadata"]["annotations"] == {"a.example/b": "c"}
    assert tmpl["spec"]["schedulerName"] == "kai-scheduler" and tmpl["spec"]["priorityClassName"] == "high"
    assert tmpl["spec"]["nodeSelector"] == {"pool": "h100"}
    assert {"key": "team", "operator": "Equal", "value": "a", "effect": "NoExecute"} in tmpl["spec"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tmpl["spec"]["tolerations"]

    code, out, _ = _run(capsys, "update", str(JOBSET), *flags, "-o", "patch")
    assert code == 0
    assert jsonpatch.apply_patch(yaml.safe_load(JOBSET.read_text()), json.loads(out)) == obj

    code, out, _ = _run(capsys, "update", str(JOBSET), *flags, "-o", "json", "--component", "replicated-job")
    body = json.loads(out)
    assert code == 0 and body["object"] == obj and body["changed"] == 3 and body["components"] == ["replicated-job"]


@pytest.mark.parametrize("argv,code,message", [
    (["update", str(JOBSET)], 2, "nothing to set"),
    (["update", str(JOBSET), "--set-label", "novalue"], 2, "--set-label takes KEY=VALUE"),
    (["update", str(JOBSET), "--toleration", "k:Sometimes"], 2, "the effect must be one of"),
    (["update", "/nonexistent.yaml", "--scheduler-name", "s"], 2, "read /nonexistent.yaml"),
    (["update", str(JOBSET), "--scheduler-name", "s", "--component", "nope"], 1, "unknown component 'nope'"),
    (["update", str(CATALOG / "trainer.kubeflow.org/TrainJob/v1alpha1/testdata/running.yaml"), "--set-label", "a=b"],
     1, "has no path for this fragment: labels"),
    (["update", str(CATALOG / "leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/leader-defaults-to-worker.yaml"),
      "--scheduler-name", "s", "--component", "leader"], 1, "would not read back as set"),
])
def test_update_errors_are_clean(capsys, argv, code, message):
    got, out, err = _run(capsys, *argv)
    assert got == code and message in err and "Traceback" not in err, err
    assert out == ""


def test_update_of_a_kind_without_definition_exits_4(capsys, tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "x.example/v1", "kind": "Nope", "metadata": {"name": "n"}}))
    code, _, err = _run(capsys, "update", str(f), "--scheduler-name", "s")
    assert code == 4 and "no Karta definition covers" in err


def test_update_entry_point_reads_stdin():
    obj = yaml.safe_load(JOBSET.read_text())
    r = subprocess.run([str(WLMAP), "update", "-", "--set-label", "q=1", "-o", "json"], input=json.dumps(obj),
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert jsonpatch.apply_patch(copy.deepcopy(obj), body["patch"]) == body["object"]


@pytest.mark.parametrize("text,message", [
    ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: oops\nspec: {replicatedJobs: 3}\n",
     "metadata must be an object"),  # read first, as POST /interpret/update does
    ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec: {replicatedJobs: 3}\n",
     "does not address writable locations"),
    (("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\n"
      "spec: {replicatedJobs: [{name: x, template: {spec: {template: 5}}}]}\n"), "holds a number, not an object"),
    ("- a\n", "declares no apiVersion and kind"),
])
def test_malformed_workloads_are_refused_cleanly(capsys, tmp_path, text, message):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    code, _, err = _run(capsys, "update", str(f), "--scheduler-name", "s")
    assert code == 1 and message in err and "Traceback" not in err, err
