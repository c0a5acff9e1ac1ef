"""`wlmap interpret --format kueue|karmada|kai` (docs/cli.md): the consumer's shape in json,
jsonl and yaml (its default), the service's problems for a workload the shape cannot take, and a
usage error (exit 2) for an unknown format or `-o tree`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from app.karta.load import load_path
from tests.cli.test_cli import GROVE, builtin, main, write  # noqa: F401 (builtin: a fixture)

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
PYTORCH = CATALOG / "kubeflow.org/PyTorchJob/v1"
JOBSET = CATALOG / "jobset.x-k8s.io/JobSet/v1alpha2"


@pytest.fixture
def catalog(builtin):  # noqa: F811
    builtin.set(load_path(PYTORCH / "definition.yaml", "builtin") + load_path(JOBSET / "definition.yaml", "builtin"))


def test_each_format_prints_its_shape(catalog, capsys):
    f = str(PYTORCH / "testdata/elastic.yaml")
    code, out, _ = main(capsys, "interpret", f, "--format", "kueue", "-o", "json")
    assert code == 0
    assert [(s["name"], s["count"], s["minCount"]) for s in json.loads(out)["podSets"]] == [("worker", 3, 2)]
    code, out, _ = main(capsys, "interpret", f, "--format", "kai")  # yaml by default
    assert code == 0
    (group,) = yaml.safe_load(out)["podGroups"]
    assert group["spec"]["minMember"] == 2 and group["metadata"]["ownerReferences"][0]["kind"] == "PyTorchJob"
    code, out, _ = main(capsys, "interpret", f, "--format", "karmada", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out)["components"][0]["replicas"] == 3


def test_several_documents_one_line_each_and_an_error_line(catalog, capsys, tmp_path):
    jobset = yaml.safe_load((JOBSET / "testdata/running.yaml").read_text())
    nine = {**jobset, "spec": {**jobset["spec"], "replicatedJobs": [
        dict(jobset["spec"]["replicatedJobs"][0], name=f"j{i}") for i in range(9)]}}
    f = write(tmp_path / "w.yaml", jobset, nine)
    code, out, _ = main(capsys, "interpret", f, "--format", "kueue", "-o", "jsonl")
    assert code == 1
    first, second = (json.loads(line) for line in out.splitlines())
    assert [s["name"] for s in first["podSets"]] == ["coordinator", "evaluator", "trainer"]
    assert second["error"]["type"].endswith(":format-not-representable") and "at most 8" in second["error"]["detail"]


def test_partial_interpretation_is_refused_as_incomplete(capsys):
    code, out, err = main(capsys, "interpret", *GROVE, "--format", "kai", "-o", "json")
    assert code == 1 and json.loads(out) == []
    assert "the kai format needs the whole interpretation" in err and "instanceIdPath" in err


def test_unknown_format_and_tree_output_are_usage_errors(catalog, capsys):
    f = str(PYTORCH / "testdata/elastic.yaml")
    with pytest.raises(SystemExit) as e:
        main(capsys, "interpret", f, "--format", "volcano")
    assert e.value.code == 2
    assert "invalid choice: 'volcano' (choose from 'kueue', 'karmada', 'kai')" in capsys.readouterr().err
    code, out, err = main(capsys, "interpret", f, "--format", "kai", "-o", "tree")
    assert code == 2 and out == ""
    assert "-o tree does not apply with --format kai" in err
