"""`wlmap` (docs/api-contract.md "CLI"): interpret in every output format, definitions
list/show/validate, exit codes, and `--definition` taking precedence over a built-in one.

In-process runs replace the built-in catalog with a controlled one (the real catalog is being
edited concurrently); one subprocess run checks the installed entry point end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import app.cli.main as cli
from app.cli import common
from app.karta.load import load_path
from tests.cli.test_cli_live import pythonpath
from tests.required import missing

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"
WLMAP = Path(sys.executable).parent / "wlmap"

BT1 = {"apiVersion": "acme.example.com/v1", "kind": "BatchTask",
       "metadata": {"name": "bt-1", "namespace": "team", "uid": "bt-uid"},
       "spec": {"workers": 2, "podTemplate": {"spec": {"containers": [
           {"name": "t", "image": "t:1", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}},
       "status": {"state": "Active"}}
BT2 = {"apiVersion": "acme.example.com/v1", "kind": "BatchTask",
       "metadata": {"name": "bt-2", "namespace": "team", "uid": "bt-uid2"},
       "spec": {"workers": 3}, "status": {"state": "Queued"}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}


@pytest.fixture
def builtin(monkeypatch):
    """The built-in catalog, controlled: by default empty; `builtin.set([...])` to fill it."""
    state = {"defs": []}
    monkeypatch.setattr(common, "load_builtin", lambda: list(state["defs"]))

    class Handle:
        @staticmethod
        def set(defs):
            state["defs"] = defs

    return Handle


def write(path: Path, *docs) -> str:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


def main(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def defs_dir(tmp_path: Path, *names: str) -> str:
    d = tmp_path / "defs"
    d.mkdir(exist_ok=True)
    for n in names:
        shutil.copy(EXAMPLES / f"{n}.karta.yaml", d / f"{n}.karta.yaml")
    return str(d)


# -- interpret --------------------------------------------------------------------------------------

def test_interpret_json_one_document_is_an_object(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert isinstance(doc, dict)
    assert doc["workload"] == {"apiVersion": "acme.example.com/v1", "kind": "BatchTask", "namespace": "team",
                               "name": "bt-1", "uid": "bt-uid"}
    assert doc["definition"]["name"] == "acme-example-com-batchtask-v1"
    assert doc["definition"]["source"] == "directory"
    assert doc["definition"]["digest"].startswith("sha256:")
    assert doc["status"]["phase"] == "Running"
    assert doc["totals"]["gpus"] == 2
    assert doc["gang"]["podGroup"]["name"] == "pg-bt-uid-task"


def test_interpret_json_several_documents_is_an_array(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1, BT2)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 0
    docs = json.loads(out)
    assert isinstance(docs, list)
    assert [d["workload"]["name"] for d in docs] == ["bt-1", "bt-2"]
    assert [d["status"]["phase"] for d in docs] == ["Running", "Initializing"]


def test_interpret_json_several_files(builtin, capsys, tmp_path):
    a, b = write(tmp_path / "a.yaml", BT2), write(tmp_path / "b.yaml", BT1)
    code, out, _ = main(capsys, "interpret", a, b, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 0
    assert [d["workload"]["name"] for d in json.loads(out)] == ["bt-2", "bt-1"]


def test_interpret_jsonl_one_line_per_document_in_order(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT2, BT1)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "jsonl")
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert [json.loads(x)["workload"]["name"] for x in lines] == ["bt-2", "bt-1"]


def test_interpret_jsonl_error_lines_and_exit_1(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", CONFIGMAP, BT1, {"foo": "bar"})
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "jsonl")
    assert code == 1
    lines = [json.loads(x) for x in out.strip().splitlines()]
    assert len(lines) == 3
    assert set(lines[0]) == {"error"}
    for key in ("type", "title", "status", "detail"):
        assert key in lines[0]["error"]
    assert "ConfigMap" in lines[0]["error"]["detail"]
    assert lines[1]["workload"]["name"] == "bt-1"
    assert set(lines[2]) == {"error"}


def test_interpret_jsonl_partial_line_lists_errors(builtin, capsys, tmp_path):
    bad = dict(BT1, status={"state": 5})  # the phase cannot be read; the tree still can
    f = write(tmp_path / "w.yaml", bad)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "jsonl")
    assert code == 1
    [line] = [json.loads(x) for x in out.strip().splitlines()]
    assert line["complete"] is False and line["status"] is None and line["totals"]["pods"] >= 1
    assert any("failed to extract phase" in e["message"] and e["part"] == "status" for e in line["errors"])
    assert all("path" in e for e in line["errors"])


def test_interpret_yaml(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1, BT2)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "yaml")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["workload"]["name"] for d in docs] == ["bt-1", "bt-2"]
    assert docs[0]["tree"]["instances"][0]["replicas"] == 2


def test_interpret_tree_is_the_default(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"))
    assert code == 0
    assert "BatchTask team/bt-1" in out
    assert "definition: acme-example-com-batchtask-v1 (directory)" in out
    assert "phase: Running" in out
    assert "task" in out
    assert "total: 2 pods, 2 GPUs" in out
    assert "pg-bt-uid-task" in out


def test_interpret_tree_of_multi_instance_example(builtin, capsys, tmp_path):
    obj = {"apiVersion": "acme.example.com/v1alpha1", "kind": "Pipeline", "metadata": {"name": "p", "uid": "u"},
           "spec": {"stages": [{"name": "train", "parallelism": 4}, {"name": "prep", "parallelism": 2}]}}
    f = write(tmp_path / "w.yaml", obj)
    code, out, _ = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "pipeline"), "-o", "tree")
    assert code == 0
    assert out.index("prep") < out.index("train")
    assert "stage" in out and "coordinator" in out


def test_interpret_stdin(builtin, capsys, tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(BT1).encode())))
    code, out, _ = main(capsys, "interpret", "-", "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 0
    assert json.loads(out)["workload"]["name"] == "bt-1"


def test_interpret_no_definition_exit_4(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1)
    code, _, err = main(capsys, "interpret", f, "-o", "json")
    assert code == 4
    assert "no Karta definition covers acme.example.com/v1 BatchTask" in err


def test_interpret_mixed_results_exit_1(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1, CONFIGMAP)
    code, out, err = main(capsys, "interpret", f, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 1
    assert "error:" in err


def test_interpret_unreadable_file_exit_2(builtin, capsys, tmp_path):
    code, _, err = main(capsys, "interpret", str(tmp_path / "missing.yaml"), "-o", "json")
    assert code == 2
    assert err.startswith("error: ")


def test_interpret_with_pods(builtin, capsys, tmp_path):
    f = write(tmp_path / "w.yaml", BT1)
    p = write(tmp_path / "pods.yaml", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bt-1-0"},
                                       "spec": {"containers": [{"name": "t"}]},
                                       "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    code, out, _ = main(capsys, "interpret", f, "--pods", p, "--definition", defs_dir(tmp_path, "batchtask"), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["live"]["current"] == 1 and doc["live"]["ready"] == 1


def test_invalid_extra_definition_is_not_used_and_warned(builtin, capsys, tmp_path):
    d = tmp_path / "defs"
    d.mkdir()
    bad = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())
    del bad["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]
    write(d / "bad.yaml", bad)
    f = write(tmp_path / "w.yaml", BT1)
    code, _, err = main(capsys, "interpret", f, "--definition", str(d), "-o", "json")
    assert code == 4
    assert "root component must have status definition" in err


# -- --definition over a built-in -----------------------------------------------------------------------

def _override(tmp_path: Path) -> str:
    doc = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())
    doc["metadata"]["name"] = "my-batchtask"
    doc["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"] = {"degraded": [{}]}
    d = tmp_path / "override"
    d.mkdir()
    write(d / "def.yaml", doc)
    return str(d)


def test_definition_overrides_builtin_for_same_gvk(builtin, capsys, tmp_path):
    builtin.set(load_path(EXAMPLES / "batchtask.karta.yaml", "builtin"))
    f = write(tmp_path / "w.yaml", BT1)
    code, out, _ = main(capsys, "interpret", f, "-o", "json")
    assert code == 0
    base = json.loads(out)
    assert (base["definition"]["source"], base["status"]["phase"]) == ("builtin", "Running")

    code, out, _ = main(capsys, "interpret", f, "--definition", _override(tmp_path), "-o", "json")
    assert code == 0
    over = json.loads(out)
    assert over["definition"]["name"] == "my-batchtask"
    assert over["definition"]["source"] == "directory"
    assert over["status"]["matched"] == ["Degraded"]


def test_definitions_list_shows_the_override(builtin, capsys, tmp_path):
    builtin.set(load_path(EXAMPLES / "batchtask.karta.yaml", "builtin") + load_path(EXAMPLES / "pipeline.karta.yaml", "builtin"))
    code, out, _ = main(capsys, "definitions", "list", "-o", "json", "--definition", _override(tmp_path))
    assert code == 0
    rows = json.loads(out)
    by_kind = {r["kind"]: r for r in rows}
    assert by_kind["BatchTask"]["name"] == "my-batchtask"
    assert by_kind["BatchTask"]["source"] == "directory"
    assert by_kind["Pipeline"]["source"] == "builtin"
    assert len([r for r in rows if r["kind"] == "BatchTask"]) == 1


# -- definitions list / show ------------------------------------------------------------------------

def test_definitions_list_json_fields(builtin, capsys, tmp_path):
    code, out, _ = main(capsys, "definitions", "list", "-o", "json", "--definition",
                        defs_dir(tmp_path, "batchtask", "pipeline", "servinggraph"))
    assert code == 0
    rows = json.loads(out)
    assert isinstance(rows, list) and len(rows) == 3
    for r in rows:
        assert set(r) >= {"name", "group", "version", "kind", "source", "digest"}
        assert r["source"] == "directory"
        assert r["digest"].startswith("sha256:")
    assert {(r["name"], r["group"], r["version"], r["kind"]) for r in rows} == {
        ("acme-example-com-batchtask-v1", "acme.example.com", "v1", "BatchTask"),
        ("acme-example-com-pipeline-v1alpha1", "acme.example.com", "v1alpha1", "Pipeline"),
        ("acme-example-com-servinggraph-v1", "acme.example.com", "v1", "ServingGraph"),
    }


def test_definitions_list_empty(builtin, capsys):
    code, out, err = main(capsys, "definitions", "list", "-o", "json")
    assert code == 0
    assert json.loads(out) == []
    code, out, err = main(capsys, "definitions", "list")
    assert code == 0
    assert "No Karta definitions found." in err


def test_definitions_list_table(builtin, capsys, tmp_path):
    code, out, _ = main(capsys, "definitions", "list", "--definition", defs_dir(tmp_path, "pipeline"))
    assert code == 0
    header, row = out.strip().splitlines()[:2]
    assert header.split()[0] == "NAME"
    assert "acme-example-com-pipeline-v1alpha1" in row and "Pipeline" in row
    assert "pipeline, stage, coordinator" in row


def test_definitions_show_yaml_and_json(builtin, capsys, tmp_path):
    d = defs_dir(tmp_path, "pipeline")
    code, out, _ = main(capsys, "definitions", "show", "acme-example-com-pipeline-v1alpha1", "--definition", d)
    assert code == 0
    shown = yaml.safe_load(out)
    assert shown == yaml.safe_load((EXAMPLES / "pipeline.karta.yaml").read_text())
    code, out, _ = main(capsys, "definitions", "show", "acme-example-com-pipeline-v1alpha1", "--definition", d, "-o", "json")
    assert code == 0
    assert json.loads(out)["kind"] == "Karta"


def test_definitions_show_unknown_name(builtin, capsys):
    code, _, err = main(capsys, "definitions", "show", "nope")
    assert code == 1
    assert 'no Karta definition named "nope"' in err


# -- definitions validate -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,gvk", [("batchtask", "acme.example.com/v1/BatchTask"),
                                      ("pipeline", "acme.example.com/v1alpha1/Pipeline"),
                                      ("servinggraph", "acme.example.com/v1/ServingGraph")])
def test_validate_ok(capsys, name, gvk):
    f = str(EXAMPLES / f"{name}.karta.yaml")
    code, out, _ = main(capsys, "definitions", "validate", f)
    assert code == 0
    assert out == f"OK: {f} is a valid Karta definition (GVK: {gvk})\n"


def test_validate_invalid_prints_every_finding(capsys, tmp_path):
    doc = yaml.safe_load((EXAMPLES / "pipeline.karta.yaml").read_text())
    sd = doc["spec"]["structureDefinition"]
    del sd["rootComponent"]["statusDefinition"]
    sd["childComponents"][0]["ownerRef"] = "ghost"
    sd["childComponents"][1]["scaleDefinition"]["replicasPath"] = "del(.a)"
    doc["spec"]["optimizationInstructions"]["gangScheduling"]["podGroups"][0]["members"][0]["componentName"] = "nobody"
    f = write(tmp_path / "bad.yaml", doc)
    code, out, err = main(capsys, "definitions", "validate", f)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"INVALID: {f}"
    findings = [x for x in lines[1:] if x.startswith("  ")]
    assert "  root component must have status definition" in findings
    assert "  child component 'stage' has owner ref to non-existing component 'ghost'" in findings
    assert "  pod-group member component 'nobody' is not defined (should be a root or child component)" in findings
    assert ("  JQ expression 'del(.a)' at 'Spec.StructureDefinition.ChildComponents[1].ScaleDefinition.ReplicasPath' "
            "failed validation: del function is not allowed") in findings
    assert len(findings) == 4
    assert f"4 finding(s) in {f}" in err


def test_validate_exit_2_unreadable(capsys, tmp_path):
    code, _, err = main(capsys, "definitions", "validate", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert err.startswith("error: ")


def test_validate_exit_2_unparsable(capsys, tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("apiVersion: run.ai/v1alpha1\nkind: Karta\nspec: [unclosed\n")
    code, _, _ = main(capsys, "definitions", "validate", str(f))
    assert code == 2


def test_validate_exit_2_not_a_karta(capsys, tmp_path):
    f = write(tmp_path / "cm.yaml", CONFIGMAP)
    code, _, _ = main(capsys, "definitions", "validate", f)
    assert code == 2


def test_validate_worst_exit_code_over_several_files(capsys, tmp_path):
    bad = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())
    bad["spec"]["structureDefinition"]["rootComponent"]["ownerRef"] = ""
    b = write(tmp_path / "bad.yaml", bad)
    ok = str(EXAMPLES / "batchtask.karta.yaml")
    code, out, _ = main(capsys, "definitions", "validate", ok, b)
    assert code == 1
    assert out.startswith(f"OK: {ok}")
    assert f"INVALID: {b}\n  root component cannot have owner ref\n" in out


def test_validate_warnings_go_to_stderr(capsys):
    f = str(EXAMPLES / "pipeline.karta.yaml")
    code, out, err = main(capsys, "definitions", "validate", f)
    assert code == 0
    assert "warning:" not in out
    assert "warning:" in err


# -- the installed entry point ---------------------------------------------------------------------

def test_installed_wlmap_interprets_an_example(tmp_path):
    assert WLMAP.exists(), f"{WLMAP}: the entry point `pip install -e '.[test]'` installs"
    f = write(tmp_path / "w.yaml", BT1, BT2)
    r = subprocess.run([str(WLMAP), "interpret", f, "--definition", str(EXAMPLES / "batchtask.karta.yaml"), "-o", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [d["status"]["matched"] for d in json.loads(r.stdout)] == [["Running"], ["Initializing"]]


def test_installed_wlmap_validate_exit_codes(tmp_path):
    assert WLMAP.exists(), f"{WLMAP}: the entry point `pip install -e '.[test]'` installs"
    ok = subprocess.run([str(WLMAP), "definitions", "validate", str(EXAMPLES / "batchtask.karta.yaml")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.startswith("OK: ")
    missing = subprocess.run([str(WLMAP), "definitions", "validate", str(tmp_path / "none.yaml")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2


# -- partial interpretations (docs/api-contract.md "Partial interpretations") --------------------

PARTIAL = Path(__file__).resolve().parent.parent / "data" / "partial"
GROVE = [str(PARTIAL / "grove" / "testdata" / "cliques-only.yaml"), "--definition", str(PARTIAL / "grove" / "definition.yaml")]


def test_interpret_prints_the_partial_tree_marks_the_failed_component_and_exits_1(capsys):
    code, out, _ = main(capsys, "interpret", *GROVE)
    assert code == 1
    assert "phase: Running" in out
    assert "scaling-group ✗ FAILED" in out and "│   ├── engine" in out
    assert "total: unknown" in out and "subgroups: clique>=3" in out
    assert "INCOMPLETE: 1 part could not be computed" in out
    assert "at spec.structureDefinition.childComponents[1].instanceIdPath" in out


@pytest.mark.parametrize("fmt", ["json", "jsonl", "yaml"])
def test_interpret_machine_outputs_are_the_partial_object(capsys, fmt):
    code, out, _ = main(capsys, "interpret", *GROVE, "-o", fmt)
    assert code == 1
    doc = yaml.safe_load(out) if fmt == "yaml" else json.loads(out)
    assert doc["complete"] is False and doc["totals"] is None and doc["status"]["phase"] == "Running"
    assert doc["errors"][0]["component"] == "scaling-group"


def test_definitions_test_cases_assert_the_partial_shape(capsys):
    code, out, err = main(capsys, "definitions", "test", str(PARTIAL))
    assert code == 0, out + err
    assert "4 passed, 0 failed" in out + err


def test_definitions_test_fails_a_case_that_does_not_expect_a_partial_result(capsys, tmp_path):
    folder = tmp_path / "grove"
    shutil.copytree(PARTIAL / "grove", folder)
    (folder / "cases.yaml").write_text("cases:\n- name: silently-partial\n  input: testdata/cliques-only.yaml\n"
                                       "  expect: {status.phase: Running}\n")
    code, out, err = main(capsys, "definitions", "test", str(folder))
    assert code == 1
    assert "interpretation incomplete: component scaling-group: JQ execution error" in out + err


# -- issue 22: definitions filters, --version, completion, get's usage errors ---------------------

def test_definitions_list_filters_by_group_kind_version_with_an_origin_column(builtin, capsys, tmp_path):
    builtin.set(load_path(EXAMPLES / "batchtask.karta.yaml", "builtin"))
    extra = ["--definition", defs_dir(tmp_path, "pipeline", "servinggraph")]
    code, out, _ = main(capsys, "definitions", "list", *extra)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "GROUP/VERSION", "ORIGIN", "COMPONENTS"]
    origin = {line.split()[1]: line.split()[3] for line in lines[1:]}
    assert origin == {"BatchTask": "builtin", "Pipeline": "directory", "ServingGraph": "directory"}
    code, out, _ = main(capsys, "definitions", "list", "--kind", "pipeline", "-o", "json", *extra)
    assert [r["kind"] for r in json.loads(out)] == ["Pipeline"]
    code, out, _ = main(capsys, "definitions", "list", "--version", "v1", "-o", "yaml", *extra)
    assert sorted(r["kind"] for r in yaml.safe_load(out)) == ["BatchTask", "ServingGraph"]
    code, out, _ = main(capsys, "definitions", "list", "--group", "acme.example.com", "--version", "v1alpha1",
                        "-o", "json", *extra)
    assert [r["name"] for r in json.loads(out)] == ["acme-example-com-pipeline-v1alpha1"]
    code, out, err = main(capsys, "definitions", "list", "--group", "nowhere.io", *extra)
    assert (code, out, err) == (0, "", "No Karta definitions found.\n")


def test_version_is_the_package_version(capsys):
    from app import __version__

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"wlmap {__version__}\n"


def _completion(shell: str) -> str:
    r = subprocess.run([str(WLMAP), "completion", shell], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def test_bash_completion_registers_and_completes_commands_flags_and_choices(tmp_path):
    script = tmp_path / "t.sh"
    script.write_text('source <(wlmap completion bash) && complete -p wlmap\n'
                      't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _wlmap;'
                      ' echo "${COMPREPLY[*]}"; }\n'
                      't wlmap g\nt wlmap get -n team -o ""\nt wlmap get --sort-by -g\nt wlmap describe --pod\n'
                      't wlmap definitions list --ki\nt wlmap completion ""\n'
                      't wlmap fit tr\nt wlmap fit x --policy ""\nt wlmap capacity -o ""\n')
    (tmp_path / "train.yaml").touch()  # fit's one FILE completes as a path
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, check=False,
                       env={"PATH": f"{WLMAP.parent}:/usr/bin:/bin", **pythonpath()}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["complete -o filenames -F _wlmap wlmap", "get", "table wide json yaml", "-gpus",
                                     "--pod-limit", "--kind", "bash zsh fish", "train.yaml", "pack spread",
                                     "table wide json yaml"]


def test_zsh_completion_is_valid_and_registers(tmp_path):
    """Run by zsh (`make tools` installs it; a failure without it under `make test`)."""
    text = _completion("zsh")
    assert text.startswith("#compdef wlmap\n") and "bashcompinit" in text and "_wlmap() {" in text
    if shutil.which("zsh") is None:
        missing("zsh is not installed (apt-get install zsh, or `make tools`)")
    (tmp_path / "c.zsh").write_text(text)
    assert subprocess.run(["zsh", "-n", str(tmp_path / "c.zsh")], capture_output=True, timeout=60,
                          check=False).returncode == 0
    r = subprocess.run(["zsh", "-c", f"source {tmp_path / 'c.zsh'} && print -r -- $_comps[wlmap]"], capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, check=False)
    assert r.stdout.strip() == "_bash_complete -o filenames -F _wlmap", r.stderr


def test_fish_completion_is_valid_and_completes(tmp_path):
    """Run by fish (`make tools` installs it; a failure without it under `make test`)."""
    text = _completion("fish")
    lines = text.splitlines()
    assert all(line.startswith(("#", "complete -c wlmap ")) for line in lines)
    assert "complete -c wlmap -n '__fish_seen_subcommand_from get' -s o -l output -x -a 'table wide json yaml'" \
        in text
    if shutil.which("fish") is None:
        missing("fish is not installed (apt-get install fish, or `make tools`)")
    (tmp_path / "c.fish").write_text(text)
    assert subprocess.run(["fish", "-n", str(tmp_path / "c.fish")], capture_output=True, timeout=60,
                          check=False).returncode == 0
    script = f"source {tmp_path / 'c.fish'}; complete -C 'wlmap get -o '; complete -C 'wlmap definitions l'"
    r = subprocess.run(["fish", "-c", script],
                       capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                       check=False)
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["json", "table", "wide", "yaml", "list"], r.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (["get", "jobset", "-l", "team in a"], 'error: invalid label selector "team in a": "(" expected after "team in"'),
    (["get", "-l", "Bad_Prefix/x=1"], 'error: invalid label selector "Bad_Prefix/x=1": invalid label key'),
    (["get", "--as-group", "team-a"], "error: --as-group needs --as"),
    (["describe", "jobset/x", "--as-group", "team-a"], "error: --as-group needs --as"),
])
def test_get_and_describe_usage_errors_before_any_request(capsys, argv, message):
    code, out, err = main(capsys, *argv, "--kubeconfig", "/nonexistent")
    assert (code, out) == (2, "")
    assert err.startswith(message), err


@pytest.mark.parametrize("argv", [["get", "--sort-by", "size"], ["get", "--request-timeout", "soon"],
                                  ["describe", "jobset/x", "--pod-limit", "-1"], ["completion", "tcsh"]])
def test_bad_flag_values_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2


def test_request_timeout_takes_kubectl_durations():
    assert [common.request_timeout(t) for t in ("5", "1.5", "30s", "2m", "1h", "1m30s", "500ms", "0")] == \
        [5, 1.5, 30, 120, 3600, 90, 0.5, None]


def test_get_filters_and_sort_keys():
    from app.cli import listing
    from app.cluster.workloads import components_of
    from app.cluster.selectors import parse

    def row(name, phase, gpus, created, labels):
        return {"workload": {"name": name, "namespace": "ns", "kind": "JobSet"}, "phase": phase, "gpus": gpus,
                "createdAt": created, "labels": labels, "pods": {"ready": 0, "desired": 1}}

    rows = [row("a", "Running", 8, "2026-01-02T00:00:00Z", {"team": "x"}),
            row("b", "Failed", None, "2026-01-01T00:00:00Z", {"team": "y"}),
            row("c", "Pending", 16, "2026-01-03T00:00:00Z", {})]
    names = lambda rs: [r["workload"]["name"] for r in rs]
    assert names(listing.select(rows, None, listing.phases(["running", "Failed,Pending"]), None)) == ["a", "b", "c"]
    assert names(listing.select(rows, None, listing.phases(["Running"]), None)) == ["a"]
    assert names(listing.select(rows, ["c", "a"], set(), parse("team notin (y)"))) == ["a", "c"]
    assert names(listing.sort(rows, "-gpus")) == ["c", "a", "b"]  # unknown GPUs last
    assert names(listing.sort(rows, "gpus")) == ["a", "c", "b"]
    assert names(listing.sort(rows, "-age")) == ["b", "a", "c"]  # oldest first
    assert names(listing.sort(rows, "age")) == ["c", "a", "b"]
    assert names(listing.sort(rows, "phase")) == ["b", "c", "a"]
    tree = {"name": "js", "podBearing": False, "totals": {"pods": 5}, "children": [
        {"name": "master", "podBearing": True, "totals": {"pods": 1}, "children": []},
        {"name": "worker", "podBearing": True, "totals": {"pods": 4}, "children": []},
        {"name": "broken", "podBearing": True, "error": "x", "totals": None, "children": []}]}
    comps = components_of({"tree": tree})
    assert comps == [{"name": "master", "pods": 1}, {"name": "worker", "pods": 4}, {"name": "broken", "pods": None}]
    assert listing.components_cell({"components": comps}) == "master(1), worker(4), broken(?)"
