"""The Grafana dashboard of the workload metrics (helm/workload-map/dashboards/workload-map.json):
it is what scripts/gen_dashboard.py builds with the Grafana Foundation SDK, its queries name only
the series of GET /metrics/workloads and labels those series carry, and every query, evaluated by
the real Prometheus engine (promtool) on the series as two replicas of the service export them,
gives the numbers a person reading the panel expects."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "helm" / "workload-map" / "dashboards" / "workload-map.json"
GENERATOR = ROOT / "scripts" / "gen_dashboard.py"

# The series of GET /metrics/workloads and their labels (one set per top-level workload).
KEY = {"namespace", "group", "kind", "name"}
SERIES: dict[str, set[str]] = {
    "wlmap_workload_info": KEY | {"definition"},
    "wlmap_workload_phase": KEY | {"phase"},
    "wlmap_workload_pods_desired": KEY,
    "wlmap_workload_pods_ready": KEY,
    "wlmap_workload_resource_requests": KEY | {"resource"},
    "wlmap_workload_gang_min_available": KEY,
}
PHASES = ["Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming",
          "Undefined"]
FUNCTIONS = {"sum", "max", "count", "topk", "label_replace"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool"}

PROMTOOL_HINT = ("promtool is required to evaluate the dashboard's queries but was not found on PATH; install it "
                 "with `apt-get install --no-install-recommends prometheus` (Debian; `make tools` does)")


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_dashboard", GENERATOR)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels(d: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, rows' nested panels included."""
    out = []
    for p in d["panels"]:
        out.append(p)
        out.extend(p.get("panels") or [])
    return out


def targets(d: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(p, t) for p in panels(d) for t in p.get("targets") or []]


# -- PromQL, read just enough to check names --------------------------------------------------

STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
IDENT = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?")
LABEL_REPLACE = re.compile(r'label_replace\(.*,\s*"([^"]*)",\s*"[^"]*",\s*"([^"]*)",\s*"[^"]*"\)', re.DOTALL)
LEGEND = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


def selectors(expr: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(metric, [(label, op, value)]) of every selector."""
    return [(m.group(1), MATCHER.findall(m.group(2))) for m in SELECTOR.finditer(expr)]


def names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, function names) an expression uses."""
    bare = GROUPING.sub(" ", STRING.sub('""', expr))
    bare = re.sub(r"\{[^}]*\}", " ", bare)
    metrics, functions = set(), set()
    for m in IDENT.finditer(bare):
        word, call = m.group(1), m.group(2)
        if word in KEYWORDS:
            continue
        (functions if call else metrics).add(word)
    return metrics, functions


def labels_of(expr: str) -> set[str]:
    """The labels the expression's series can carry: those of the metrics it reads, plus any
    label_replace destination."""
    metrics, _ = names(expr)
    out = set().union(*(SERIES.get(m, set()) for m in metrics))
    for dst, _src in LABEL_REPLACE.findall(expr):
        out.add(dst)
    return out


def check_expr(expr: str) -> None:
    metrics, functions = names(expr)
    assert metrics, f"no metric in {expr}"
    assert metrics <= set(SERIES), f"unknown series {sorted(metrics - set(SERIES))} in {expr}"
    assert functions <= FUNCTIONS, f"unexpected functions {sorted(functions - FUNCTIONS)} in {expr}"
    available = labels_of(expr)
    for metric, matchers in selectors(expr):
        assert metric in SERIES, f"selector of {metric} in {expr}"
        for label, op, value in matchers:
            assert label in SERIES[metric], f"{metric} has no label {label!r}: {expr}"
            if label == "phase":
                assert set(value.split("|")) <= set(PHASES), f"unknown phase in {value!r}: {expr}"
            if label == "resource":
                assert value == "nvidia.com/gpu", expr
    for _clause, body in GROUPING.findall(STRING.sub('""', expr)):
        used = {x.strip() for x in body.split(",") if x.strip()}
        assert used <= available, f"labels {sorted(used - available)} exist on none of {sorted(metrics)}: {expr}"
    for _dst, src in LABEL_REPLACE.findall(expr):
        assert src in available, expr


# -- the file is the generator's --------------------------------------------------------------

def test_shipped_dashboard_is_what_the_generator_writes() -> None:
    r = subprocess.run([sys.executable, str(GENERATOR), "--check"], check=False, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = _generator().render()
    assert text == DASHBOARD.read_text()
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"  # stable form


def test_check_fails_on_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    gen = _generator()
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "OUT", tmp_path / "dashboards" / "workload-map.json")
    monkeypatch.setattr(sys, "argv", ["gen_dashboard.py", "--check"])
    assert gen.main() == 1  # missing
    assert "dashboards/workload-map.json is stale" in capsys.readouterr().err
    gen.OUT.parent.mkdir()
    gen.OUT.write_text(DASHBOARD.read_text().replace("GPUs requested", "GPU requested", 1))
    assert gen.main() == 1  # edited by hand
    monkeypatch.setattr(sys, "argv", ["gen_dashboard.py"])
    assert gen.main() == 0 and gen.OUT.read_text() == DASHBOARD.read_text()
    monkeypatch.setattr(sys, "argv", ["gen_dashboard.py", "--check"])
    assert gen.main() == 0


def test_generator_uses_the_pinned_sdk_builders() -> None:
    """The generated file depends on the SDK build (its defaults, schemaVersion): the installed
    one is the build the test extras pin, and the script builds with the SDK, not JSON literals."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    (pin,) = [r for r in extras if r.startswith("grafana-foundation-sdk")]
    assert pin.startswith("grafana-foundation-sdk==")
    assert importlib.metadata.version("grafana-foundation-sdk") == pin.split("==", 1)[1]
    source = GENERATOR.read_text()
    assert "from grafana_foundation_sdk.builders import" in source and "dashboard.Dashboard(" in source
    assert '"panels"' not in source and '"targets"' not in source


# -- what the dashboard holds ---------------------------------------------------------------

def test_variables_and_layout() -> None:
    d = dashboard()
    assert d["uid"] == "workload-map" and d["schemaVersion"] >= 39
    var = {v["name"]: v for v in d["templating"]["list"]}
    assert list(var) == ["datasource", "namespace", "kind"]
    assert var["datasource"]["type"] == "datasource" and var["datasource"]["query"] == "prometheus"
    for name in ("namespace", "kind"):
        v = var[name]
        assert v["type"] == "query" and v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert v["multi"] is True and v["includeAll"] is True and v["allValue"] == ".*"
        m = re.fullmatch(r"label_values\((.+), (\w+)\)", v["query"])
        assert m and m.group(2) == name, v["query"]
        check_expr(m.group(1))
        assert names(m.group(1))[0] == {"wlmap_workload_info"}
    assert 'namespace=~"$namespace"' in var["kind"]["query"]  # kinds of the chosen namespaces

    ids = [p["id"] for p in panels(d)]
    assert len(ids) == len(set(ids)) and 0 not in ids
    boxes = [(p["gridPos"], p["title"]) for p in panels(d)]
    for i, (a, ta) in enumerate(boxes):
        assert a["x"] >= 0 and a["x"] + a["w"] <= 24, ta
        for b, tb in boxes[i + 1:]:
            overlap = (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
                       and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])
            assert not overlap, (ta, tb)
    rows = [p["title"] for p in panels(d) if p["type"] == "row"]
    assert rows == ["Overview", "GPUs", "Phases", "Pods"]
    titles = {p["title"]: p["type"] for p in panels(d) if p["type"] != "row"}
    assert titles == {
        "GPUs requested": "stat", "Workloads": "stat", "Pods ready / desired": "stat", "Failed or degraded": "stat",
        "GPUs requested by namespace": "timeseries", "GPUs requested by kind": "timeseries",
        "GPUs requested by phase": "timeseries", "Workloads with the most GPUs (top 20)": "table",
        "Workloads by phase": "bargauge", "Workloads by phase over time": "timeseries",
        "Pods ready vs desired": "timeseries", "Pods ready vs desired by namespace": "timeseries"}


def test_every_query_reads_only_workload_series_and_their_labels() -> None:
    d = dashboard()
    for p, t in targets(d):
        expr = t["expr"]
        check_expr(expr)
        assert p["datasource"] == t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        for metric, matchers in selectors(expr):  # the dashboard's filters apply to every series read
            assert ("namespace", "=~", "$namespace") in matchers and ("kind", "=~", "$kind") in matchers, expr
        legend = set(LEGEND.findall(t.get("legendFormat", "")))
        assert legend <= labels_of(expr), (p["title"], legend)
    refs = [(p["id"], t["refId"]) for p, t in targets(d)]
    assert len(refs) == len(set(refs)) and all(r for _, r in refs)


def test_phase_queries_join_the_current_phase() -> None:
    by_title = {p["title"]: p for p in panels(dashboard())}
    join = "* on(namespace, group, kind, name) group_left(phase) "
    current = "topk by (namespace, group, kind, name) (1, wlmap_workload_phase{"
    gpus_by_phase = by_title["GPUs requested by phase"]["targets"][0]["expr"]
    assert gpus_by_phase.startswith("sum by (phase) (") and join + current in gpus_by_phase
    assert 'resource="nvidia.com/gpu"' in gpus_by_phase and '} == 1)' in gpus_by_phase
    for t in by_title["Workloads with the most GPUs (top 20)"]["targets"]:
        assert join + current in t["expr"] and t["instant"] is True and t["format"] == "table"
    for title in ("GPUs requested by phase", "Workloads by phase", "Workloads by phase over time"):
        colored = {o["matcher"]["options"] for o in by_title[title]["fieldConfig"]["overrides"]}
        assert colored == set(PHASES), title


def test_gpu_table_merges_its_queries_into_named_columns() -> None:
    table = next(p for p in panels(dashboard()) if p["type"] == "table")
    assert [t["refId"] for t in table["targets"]] == ["A", "B", "C"]
    merge, organize = table["transformations"]
    assert merge["id"] == "merge" and organize["id"] == "organize"
    assert organize["options"]["renameByName"] == {"Value #A": "GPUs", "Value #B": "Pods ready",
                                                   "Value #C": "Pods desired"}
    assert organize["options"]["excludeByName"] == {"Time": True}
    assert table["options"]["sortBy"] == [{"desc": True, "displayName": "GPUs"}]


# -- the queries, evaluated by Prometheus -------------------------------------------------------

# (namespace, group, kind, name, phase, GPUs (None: no GPU series), pods desired, pods ready)
WORKLOADS = [
    ("team-a", "jobset.x-k8s.io", "JobSet", "train", "Running", 8, 5, 5),
    ("team-a", "kubeflow.org", "PyTorchJob", "finetune", "Failed", 4, 2, 0),
    ("team-a", "batch", "Job", "prep", "Completed", 0, 1, 0),
    ("team-b", "apps", "Deployment", "web", "Running", None, 2, 2),
    ("team-b", "", "Pod", "notebook", "Initializing", 1, 1, 0),
    ("team-b", "ray.io", "RayCluster", "serve", "Degraded", 2, 3, 1),
]
# Each replica of the service exports every series; Prometheus adds the target's labels.
REPLICAS = [{"job": "wlmap-workload-map", "instance": f"10.0.0.{i}:8080", "pod": f"wlmap-{i}",
             "metrics_path": "/metrics/workloads"} for i in (1, 2)]


def exposition() -> list[dict[str, str]]:
    """promtool input series: every workload as both replicas export it."""
    out = []

    def add(metric: str, labels: dict[str, str], value: float) -> None:
        for target in REPLICAS:
            ls = {**labels, **target}
            body = ",".join(f'{k}="{v}"' for k, v in sorted(ls.items()) if v != "")
            out.append({"series": f"{metric}{{{body}}}", "values": f"{value:g}x10"})

    for ns, group, kind, name, phase, gpus, desired, ready in WORKLOADS:
        w = {"namespace": ns, "group": group, "kind": kind, "name": name}
        add("wlmap_workload_info", {**w, "definition": kind.lower()}, 1)
        for p in PHASES:
            add("wlmap_workload_phase", {**w, "phase": p}, 1 if p == phase else 0)
        add("wlmap_workload_pods_desired", w, desired)
        add("wlmap_workload_pods_ready", w, ready)
        if gpus is not None:
            add("wlmap_workload_resource_requests", {**w, "resource": "nvidia.com/gpu"}, gpus)
        add("wlmap_workload_resource_requests", {**w, "resource": "cpu"}, 4 * desired)
        add("wlmap_workload_resource_requests", {**w, "resource": "memory"}, 2**30 * desired)
        add("wlmap_workload_gang_min_available", w, desired)
    return out


def _row(ns: str, group: str, kind: str, name: str, phase: str) -> dict[str, str]:
    return {"namespace": ns, "group": group, "kind": kind, "name": name, "phase": phase}


TRAIN = _row("team-a", "jobset.x-k8s.io", "JobSet", "train", "Running")
FINETUNE = _row("team-a", "kubeflow.org", "PyTorchJob", "finetune", "Failed")
NOTEBOOK = _row("team-b", "", "Pod", "notebook", "Initializing")
SERVE = _row("team-b", "ray.io", "RayCluster", "serve", "Degraded")
PHASE_COUNTS = [({"phase": p}, n) for p, n in zip(PHASES, [1, 2, 1, 1, 1, 0, 0, 0, 0])]

# (panel title, refId) -> the samples a reader of the panel expects (all namespaces and kinds):
# each workload counted once although two replicas export it.
EXPECTED: dict[tuple[str, str], list[tuple[dict[str, str], float]]] = {
    ("GPUs requested", "A"): [({}, 15)],
    ("Workloads", "A"): [({}, 6)],
    ("Pods ready / desired", "A"): [({}, 8)],
    ("Pods ready / desired", "B"): [({}, 14)],
    ("Failed or degraded", "A"): [({}, 2)],
    ("GPUs requested by namespace", "A"): [({"namespace": "team-a"}, 12), ({"namespace": "team-b"}, 3)],
    ("GPUs requested by kind", "A"): [({"group": "jobset.x-k8s.io", "kind": "JobSet"}, 8),
                                      ({"group": "kubeflow.org", "kind": "PyTorchJob"}, 4),
                                      ({"group": "batch", "kind": "Job"}, 0),
                                      ({"group": "core", "kind": "Pod"}, 1),
                                      ({"group": "ray.io", "kind": "RayCluster"}, 2)],
    ("GPUs requested by phase", "A"): [({"phase": "Running"}, 8), ({"phase": "Failed"}, 4),
                                       ({"phase": "Completed"}, 0), ({"phase": "Initializing"}, 1),
                                       ({"phase": "Degraded"}, 2)],
    ("Workloads with the most GPUs (top 20)", "A"): [(TRAIN, 8), (FINETUNE, 4), (NOTEBOOK, 1), (SERVE, 2)],
    ("Workloads with the most GPUs (top 20)", "B"): [(TRAIN, 5), (FINETUNE, 0), (NOTEBOOK, 0), (SERVE, 1)],
    ("Workloads with the most GPUs (top 20)", "C"): [(TRAIN, 5), (FINETUNE, 2), (NOTEBOOK, 1), (SERVE, 3)],
    ("Workloads by phase", "A"): PHASE_COUNTS,
    ("Workloads by phase over time", "A"): PHASE_COUNTS,
    ("Pods ready vs desired", "A"): [({}, 8)],
    ("Pods ready vs desired", "B"): [({}, 14)],
    ("Pods ready vs desired by namespace", "A"): [({"namespace": "team-a"}, 5), ({"namespace": "team-b"}, 3)],
    ("Pods ready vs desired by namespace", "B"): [({"namespace": "team-a"}, 8), ({"namespace": "team-b"}, 6)],
}
# With the filters set (Grafana writes a multi-value selection as a regex alternation).
FILTERED: list[tuple[dict[str, str], tuple[str, str], list[tuple[dict[str, str], float]]]] = [
    ({"namespace": "team-b", "kind": ".*"}, ("GPUs requested", "A"), [({}, 3)]),
    ({"namespace": ".*", "kind": "(JobSet|RayCluster)"}, ("GPUs requested", "A"), [({}, 10)]),
    ({"namespace": "team-b", "kind": ".*"}, ("Workloads", "A"), [({}, 3)]),
    ({"namespace": "team-a", "kind": ".*"}, ("Workloads with the most GPUs (top 20)", "A"), [(TRAIN, 8),
                                                                                             (FINETUNE, 4)]),
    ({"namespace": "team-b", "kind": "(Pod)"}, ("GPUs requested by phase", "A"), [({"phase": "Initializing"}, 1)]),
]


def _labels(ls: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(ls.items()) if v != "") + "}"


def _substitute(expr: str, variables: dict[str, str]) -> str:
    for name, value in variables.items():
        expr = expr.replace(f"${name}", value)
    assert "$" not in expr, expr
    return expr


def _case(expr: str, samples: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    return {"expr": expr, "eval_time": "5m",
            "exp_samples": [{"labels": _labels(ls), "value": v} for ls, v in samples]}


def test_every_query_gives_what_its_panel_promises(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail(PROMTOOL_HINT, pytrace=False)
    by_key = {(p["title"], t["refId"]): (p, t) for p, t in targets(dashboard())}
    assert set(by_key) == set(EXPECTED), "every query of the dashboard needs its expected samples here"
    everything = {"namespace": ".*", "kind": ".*"}
    cases = [_case(_substitute(by_key[k][1]["expr"], everything), samples) for k, samples in EXPECTED.items()]
    cases += [_case(_substitute(by_key[k][1]["expr"], variables), samples) for variables, k, samples in FILTERED]
    # the input really holds each workload twice: a bare sum counts both replicas
    cases.append(_case('sum(wlmap_workload_resource_requests{resource="nvidia.com/gpu"})', [({}, 30)]))
    for key, samples in EXPECTED.items():  # legends name labels the results carry
        legend = set(LEGEND.findall(by_key[key][1].get("legendFormat", "")))
        assert all(legend <= set(ls) for ls, _ in samples), key
    spec = {"rule_files": [], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": exposition(), "promql_expr_test": cases}]}
    path = tmp_path / "dashboard-test.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    r = subprocess.run([promtool, "test", "rules", str(path)], check=False, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_series_is_read_once_per_workload() -> None:
    """Every replica exports the same series (the ServiceMonitor scrapes each pod): each selector
    sits directly inside a `max by` (the workload's labels [, phase]) or the per-workload `topk`
    of the current phase, so nothing adds replicas up."""
    for p, t in targets(dashboard()):
        for metric, _ in selectors(t["expr"]):
            once = (rf"max by \(namespace, group, kind, name(, phase)?\) \({metric}\{{",
                    rf"topk by \(namespace, group, kind, name\) \(1, {metric}\{{")
            assert any(re.search(r, t["expr"]) for r in once), (p["title"], metric)
