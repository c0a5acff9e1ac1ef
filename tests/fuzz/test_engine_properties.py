"""Property tests of the engine, the definition loader and the document reader.

Every test is derandomized (same examples on every run, no example database), so CI is
deterministic; the whole file is budgeted well under 40 s.

(a) any JSON-like manifest of a built-in kind -> an `Interpretation` or `InterpretationError`;
(b) the same with arbitrary pods;
(c) definitions mutated from valid ones -> `definition_from_document` only raises `NotAKarta`,
    invalid ones carry error findings with messages, valid ones interpret or fail cleanly;
(d) `parse_documents` on arbitrary text/bytes only raises `DocumentError`;
(e) invariants of every interpretation (phase, pod and GPU totals).

The `test_bug_*` tests at the end pin inputs these properties found (or that the fuzzing of
tests/fuzz/test_http_schema.py led to) as minimal reproductions; they fail until the bug is fixed.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from app.documents import DocumentError, parse_documents
from app.engine.interpret import InterpretationError, interpret
from app.karta.load import (
    Definition,
    NotAKarta,
    definition_from_document,
    is_karta,
    load_builtin,
)
from app.karta.registry import Registry
from app.service.models import Interpretation
from tests.properties import at_least

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = load_builtin()
REGISTRY = Registry.of(BUILTIN)

# kind -> (apiVersion, catalog folder)
TARGETS = {
    "JobSet": ("jobset.x-k8s.io/v1alpha2", "definitions/jobset.x-k8s.io/JobSet/v1alpha2"),
    "PyTorchJob": ("kubeflow.org/v1", "definitions/kubeflow.org/PyTorchJob/v1"),
    "Deployment": ("apps/v1", "definitions/apps/Deployment/v1"),
    "RayCluster": ("ray.io/v1", "definitions/ray.io/RayCluster/v1"),
}
KINDS = sorted(TARGETS)


def _definition(kind: str) -> Definition:
    d = REGISTRY.resolve_object({"apiVersion": TARGETS[kind][0], "kind": kind})
    assert d is not None and d.valid, kind
    return d


DEFS = {k: _definition(k) for k in KINDS}


def _fixtures(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    workloads, pods = [], []
    for f in sorted((ROOT / TARGETS[kind][1] / "testdata").glob("*.yaml")):
        for doc in parse_documents(f.read_bytes()):
            if isinstance(doc, dict) and doc.get("kind") == kind:
                workloads.append(doc)
            elif isinstance(doc, dict) and doc.get("kind") == "Pod":
                pods.append(doc)
    assert workloads, kind
    return workloads, pods


FIXTURES = {k: _fixtures(k) for k in KINDS}
ALL_PODS = [p for k in KINDS for p in FIXTURES[k][1]]

# The long run (benchmarks/fuzz_long.py) multiplies every example budget: WLMAP_FUZZ_SCALE=8.
FUZZ_SCALE = float(os.environ.get("WLMAP_FUZZ_SCALE", "1"))


def examples(n: int) -> int:
    return max(1, round(n * FUZZ_SCALE))

# report_multiple_bugs=False: a failing property shrinks one counterexample, not one per
# distinct exception, which keeps the file fast while bugs are open.
SETTINGS: dict[str, Any] = {
    "deadline": None, "derandomize": True, "database": None, "report_multiple_bugs": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

# -- JSON-like values --------------------------------------------------------------------------

KEYS = st.sampled_from([
    "apiVersion", "kind", "metadata", "name", "namespace", "uid", "labels", "annotations", "generation",
    "deletionTimestamp", "spec", "status", "replicas", "minReplicas", "maxReplicas", "suspend", "template",
    "containers", "initContainers", "resources", "requests", "limits", "nvidia.com/gpu", "cpu", "memory",
    "conditions", "type", "reason", "message", "observedGeneration", "replicatedJobs", "parallelism",
    "completions", "pytorchReplicaSpecs", "Master", "Worker", "elasticPolicy", "headGroupSpec",
    "workerGroupSpecs", "groupName", "numOfHosts", "phase", "state", "readyReplicas", "availableReplicas",
    "terminalState", "replicatedJobsStatus", "ready", "active", "succeeded", "failed", "replicaStatuses",
    "overhead", "restartPolicy", "image", "nodeName", "ownerReferences", "podGroup", "minAvailable",
    "jobset.sigs.k8s.io/replicatedjob-name", "training.kubeflow.org/replica-type", "ray.io/node-type",
    "pod-template-hash", "schedulerName", "priorityClassName", "nodeSelector", "resourceClaims",
]) | st.text(max_size=6)

EDGE = st.sampled_from([
    None, True, False, 0, 1, -1, 2, -5, 2**31 - 1, 2**31, -(2**31) - 1, 2**53 + 1, 2**63 - 1, 1.5, -0.0, 1e-7, 1e21,
    "", "0", "1", "-1", "2", "1.5", "500m", "2Gi", "1e3", "0x10", "+1", " 1", "True", "False", "Running", "Failed",
    "Succeeded", "Pending", "Unknown", "null", [], {}, [None], [{}], {"": None},
]).map(copy.deepcopy)  # fresh containers: later edits must not change the strategy's own values
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10) | EDGE)
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(KEYS, c, max_size=5),
                    max_leaves=25)


def _paths(v: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(v, dict):
        for k, x in v.items():
            yield prefix + (k,)
            yield from _paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield prefix + (i,)
            yield from _paths(x, prefix + (i,))


def _get(v: Any, path: tuple) -> Any:
    for p in path:
        v = v[p]
    return v


NUMBERS = st.sampled_from([-3, -1, 0, 1, 2, 7, 2**31 - 1, -(2**31), 0.5, 1.5, -2.0, 10**30, 10**400, 1e300, "-1",
                           "0", "3", "1.5", "-2", "100m", "-1Gi", "1e20"]) | st.integers(-10, 10)


def _numeric(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or (
        isinstance(v, str) and v[:1].isdigit() and len(v) < 12)


@st.composite
def mutated(draw: st.DrawFn, base: Any, keep: tuple[str, ...] = ()) -> Any:
    """`base` with 1-3 random edits: a number (replica count, quantity) changed, a node replaced
    (edge value or random JSON), deleted, or given an extra random key."""
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(obj) if not (len(p) == 1 and p[0] in keep)]
        if not paths:
            break
        op = draw(st.sampled_from(["number", "number", "edge", "json", "delete", "add"]))
        numeric = [p for p in paths if _numeric(_get(obj, p))]
        if op == "number" and numeric:
            path = draw(st.sampled_from(numeric))
            _get(obj, path[:-1])[path[-1]] = draw(NUMBERS)
            continue
        path = draw(st.sampled_from(paths))
        parent, key = _get(obj, path[:-1]), path[-1]
        if op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][draw(KEYS)] = draw(JSON)
        else:
            parent[key] = draw(EDGE if op == "edge" else JSON)
    return obj


def workloads(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    api_version = TARGETS[kind][0]
    gvk = {"apiVersion": api_version, "kind": kind}
    arbitrary = st.dictionaries(KEYS, JSON, max_size=6).map(lambda d: {**d, **gvk})
    fixture = st.sampled_from(FIXTURES[kind][0])
    return st.one_of(arbitrary, fixture, fixture.flatmap(lambda f: mutated(f, keep=("apiVersion", "kind"))))


def pods_lists() -> st.SearchStrategy[list[dict[str, Any]]]:
    labels = st.dictionaries(KEYS, SCALARS, max_size=3) | st.sampled_from(
        [p["metadata"].get("labels") for p in ALL_PODS if isinstance(p.get("metadata"), dict)])
    meta = st.fixed_dictionaries({}, optional={"name": SCALARS, "namespace": SCALARS, "labels": labels | JSON,
                                                "annotations": JSON, "ownerReferences": JSON})
    pod = st.one_of(
        st.fixed_dictionaries({}, optional={"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                                            "metadata": meta | JSON, "spec": JSON, "status": JSON}),
        st.sampled_from(ALL_PODS),
        st.sampled_from(ALL_PODS).flatmap(mutated),
    )
    return st.lists(pod, max_size=4)


# -- checks ------------------------------------------------------------------------------------

def interpret_or_error(obj: dict[str, Any], d: Definition, pods: list[dict[str, Any]] | None = None
                       ) -> dict[str, Any] | None:
    """Property (a)/(b): a contract-valid result or InterpretationError, nothing else; the
    inputs are left as they were."""
    before = copy.deepcopy((obj, pods))
    try:
        out = interpret(obj, d, pods)
    except InterpretationError as e:
        assert (obj, pods) == before, "interpret changed its input"
        assert str(e)
        assert all(isinstance(x.get("message"), str) and x["message"] for x in e.errors), e.errors
        return None
    assert (obj, pods) == before, "interpret changed its input"
    assert isinstance(out, dict)
    Interpretation.model_validate(out)
    orjson.loads(orjson.dumps(out))  # the service sends it as it is
    return out


def result_or_none(obj: dict[str, Any], d: Definition, pods: list[dict[str, Any]] | None = None
                   ) -> dict[str, Any] | None:
    """For the invariant tests: crashes are property (a)'s business, not theirs."""
    try:
        return interpret(obj, d, pods)
    except Exception:  # noqa: BLE001
        return None


def _instances(node: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for inst in node["instances"]:
        yield node, inst
    for child in node["children"]:
        yield from _instances(child)


# -- (a) arbitrary manifests -------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(60), **SETTINGS)
@given(data=st.data())
def test_arbitrary_manifest_interprets_or_fails_cleanly(kind: str, data: st.DataObject) -> None:
    obj = data.draw(workloads(kind), label="manifest")
    interpret_or_error(obj, DEFS[kind])


# -- (b) arbitrary pods --------------------------------------------------------------------------

# Of the examples, at least this share has an answer with a gang (a Deployment has none).
GANG_SHARE = {"JobSet": 0.2, "PyTorchJob": 0.15, "RayCluster": 0.15}


@pytest.mark.parametrize("kind", KINDS)
def test_arbitrary_pods_interpret_or_fail_cleanly(kind: str) -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=examples(20), **SETTINGS)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        obj = data.draw(st.sampled_from(FIXTURES[kind][0]), label="manifest")
        pods = data.draw(pods_lists(), label="pods")
        out = interpret_or_error(obj, DEFS[kind], pods)
        seen["examples"] += 1
        if out is not None:
            seen["answered"] += 1
            assert "live" in out
            if out["gang"]:
                seen["gang"] += 1
                assert len(out["gang"]["pods"]) == len(pods)

    check()
    at_least(seen, answered=0.25)
    if kind in GANG_SHARE:
        at_least(seen, gang=GANG_SHARE[kind])


# -- (c) mutated definitions ---------------------------------------------------------------------

def _jq() -> st.SearchStrategy[str]:
    """Small jq grammar: paths, literals, pipes, alternatives, comparisons, a few builtins,
    the shadowed/forbidden ones, and some broken syntax."""
    atoms = st.sampled_from([
        ".", ".spec", ".status", ".metadata.name", ".spec.replicas", ".[]", ".spec.replicatedJobs[]", ".[0]",
        '.metadata.labels["x"]', ".status.conditions[]?", "null", "true", "false", "0", "1", "-1", "2.5", '"x"',
        '""', "[]", "{}", "env", "$ENV", "$ENV.PATH", "env.HOME", "input", "inputs", "$__loc__", "keys_unsorted",
        "..", "now", "infinite", "nan", "empty", "error", 'error("boom")', "input_filename", "$x", "halt",
        "del(.a)", "range(3)", "paths", "recurse", ".a = 1", ".a |= 1", "debug", "get_search_list",
        "(", ")", "|", "]", "{a:", "if", "end", "@base64d", "tojson", "tostring", "to_entries",
    ])
    unary = st.sampled_from(["length", "keys", "tostring", "tonumber", "not", "type", "add", "first", "last",
                             "floor", "sort", "unique", "tojson", "fromjson", "ascii_downcase", "to_entries",
                             "from_entries", "reverse", "min", "max", "any", "all", "flatten", "arrays",
                             "objects", "strings", "numbers", "values", "select(. != null)", "map(.)",
                             "test(\"a\")", "test(\"(?<=a)b\")", "splits(\"a\")", "ltrimstr(\"a\")",
                             "@base64", "@json", "@text", "tostream", "getpath([\"a\"])", "has(\"a\")"])
    binop = st.sampled_from(["|", "//", "+", "-", "*", "/", "%", "==", "!=", "<", ">=", "and", "or", ","])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, binop, inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            st.tuples(inner, unary).map(lambda t: f"{t[0]} | {t[1]}"),
            inner.map(lambda e: f"({e})"),
            inner.map(lambda e: f"[{e}]"),
            inner.map(lambda e: f"{{a: ({e})}}"),
            inner.map(lambda e: f"({e})?"),
            inner.map(lambda e: f"try ({e}) catch ."),
            st.tuples(inner, inner, inner).map(lambda t: f"if {t[0]} then {t[1]} else {t[2]} end"),
            inner.map(lambda e: f"({e}) as $x | $x"),
        )

    return st.recursive(atoms, extend, max_leaves=6)


JQ = _jq()
WRONG_TYPES = st.sampled_from([None, 0, -1, 1.5, True, "", "x", [], [None], {}, {"x": 1}, [{"name": 1}]]).map(
    copy.deepcopy)
BASE_DEFINITIONS = [copy.deepcopy(DEFS[k].raw) for k in KINDS]


def _string_leaves(v: Any) -> list[tuple]:
    return [p for p in _paths(v) if isinstance(_get(v, p), str)]


@st.composite
def mutated_definitions(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(draw(st.sampled_from(BASE_DEFINITIONS)))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["drop", "wrong-type", "jq", "jq", "rename"]))
        if op == "jq":
            leaves = _string_leaves(doc)
            if not leaves:
                continue
            path = draw(st.sampled_from(leaves))
            _get(doc, path[:-1])[path[-1]] = draw(JQ)
            continue
        paths = list(_paths(doc))
        if not paths:
            continue
        path = draw(st.sampled_from(paths))
        parent, key = _get(doc, path[:-1]), path[-1]
        if op == "drop":
            del parent[key]
        elif op == "rename" and isinstance(key, str):
            parent[draw(KEYS)] = parent.pop(key)
        else:
            parent[key] = draw(WRONG_TYPES)
    return doc


def _check_definition(doc: Any) -> Definition | None:
    try:
        d = definition_from_document(doc, "inline", "fuzz")
    except NotAKarta as e:
        assert not is_karta(doc), f"NotAKarta for a Karta: {e}"
        assert str(e)
        return None
    for f in d.findings:
        assert isinstance(f.message, str) and f.message.strip(), f
        assert f.level in ("error", "warning"), f
    if not d.valid:
        errs = [f for f in d.findings if f.level == "error"]
        assert errs and all(f.message.strip() for f in errs)
    return d


@settings(max_examples=examples(200), **SETTINGS)
@given(doc=mutated_definitions())
def test_mutated_definition_loads_with_findings(doc: dict[str, Any]) -> None:
    note(f"doc={doc!r}")
    _check_definition(doc)


@settings(max_examples=examples(60), **SETTINGS)
@given(doc=st.one_of(JSON, st.dictionaries(KEYS, JSON, max_size=4).map(
    lambda d: {**d, "apiVersion": "run.ai/v1alpha1", "kind": "Karta"})))
def test_arbitrary_document_as_definition(doc: Any) -> None:
    note(f"doc={doc!r}")
    _check_definition(doc)


@settings(max_examples=examples(50), **SETTINGS)
@given(data=st.data())
def test_mutated_valid_definition_interprets_or_fails_cleanly(data: st.DataObject) -> None:
    """A mutated definition that still validates must interpret a fixture of its kind (or
    fail with InterpretationError) - validation is the gate to evaluation."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    doc = data.draw(_mutated_of(kind), label="definition")
    d = _check_definition(doc)
    assume(d is not None and d.valid)
    obj = data.draw(st.sampled_from(FIXTURES[kind][0]), label="manifest")
    pods = FIXTURES[kind][1] or None
    interpret_or_error(obj, d, pods)


def _mutated_of(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """The kind's definition with 1-2 expressions of its structure replaced by random jq."""
    base = copy.deepcopy(DEFS[kind].raw)

    @st.composite
    def one(draw: st.DrawFn) -> dict[str, Any]:
        doc = copy.deepcopy(base)
        leaves = [p for p in _string_leaves(doc) if "structureDefinition" in p and p[-1] not in ("name", "ownerRef")
                  and "kind" not in p]
        for _ in range(draw(st.integers(1, 2))):
            path = draw(st.sampled_from(leaves))
            _get(doc, path[:-1])[path[-1]] = draw(JQ)
        return doc

    return one()


# -- (d) documents -------------------------------------------------------------------------------

YAMLISH = st.lists(st.sampled_from([
    "a: 1\n", "- x\n", "---\n", "...\n", "&a [1, 2]\n", "*a\n", "b: *a\n", "<<: {c: 1}\n", "? [1]\n: 2\n",
    "!!binary aGk=\n", "!!set {a, b}\n", "!!omap [a: 1]\n", "!!python/name:os.system\n", "!!float .nan\n",
    ".inf\n", "0x1F\n", "0o17\n", "1_000\n", "1:30\n", "2001-12-14\n", "{a: 1, a: 2}\n", '{"a": 1, "a": 2}\n',
    "[" * 40, "]" * 40, "{", "}", '"\\ud800"\n', "'x'\n", "|\n  text\n", "%YAML 1.2\n", "%TAG ! tag:x,2000:\n",
    "\t", "  ", "#c\n", "kind: List\nitems: [1, 2]\n", "apiVersion: v1\n", "\ufeff", "\x85", "\x00",
    "1" * 30 + "\n", "-1e400\n", "~\n", "a: b: c\n", "- - - -\n", "!!int x\n", "!!float ;\n", "!!bool maybe\n",
    "!!str\n", "!!timestamp 2001-13-45\n", "!!map\n",
]), max_size=8).map("".join)


@settings(max_examples=examples(250), **SETTINGS)
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200), YAMLISH, YAMLISH.map(str.encode),
                      JSON.map(lambda v: orjson.dumps(v).decode())))
def test_parse_documents_only_raises_document_error(text: str | bytes) -> None:
    note(f"text={text!r}")
    try:
        docs = parse_documents(text)
    except DocumentError as e:
        assert str(e)
        return
    assert isinstance(docs, list)
    assert _is_json(docs), docs  # JSON data, as sigs.k8s.io/yaml yields: what the engine and the service handle


def _is_json(v: Any) -> bool:
    """Plain JSON data: dicts with string keys, lists, strings, numbers, booleans, null."""
    if isinstance(v, dict):
        return all(isinstance(k, str) and _is_json(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_is_json(x) for x in v)
    return v is None or isinstance(v, (str, bool, int, float))


# -- (e) invariants ------------------------------------------------------------------------------

SCALE_KEYS = {"replicas", "minReplicas", "maxReplicas", "parallelism", "completions", "numOfHosts", "nvidia.com/gpu",
              "cpu", "memory"}


@st.composite
def renumbered(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """A fixture with 1-3 of its numbers (replica counts, sizes, quantities) changed."""
    obj = copy.deepcopy(base)
    numeric = [p for p in _paths(obj) if _numeric(_get(obj, p))]
    scale = [p for p in numeric if p[-1] in SCALE_KEYS] or numeric
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(scale) | st.sampled_from(numeric))
        _get(obj, path[:-1])[path[-1]] = draw(NUMBERS)
    return obj


INVARIANT_INPUTS = st.sampled_from(KINDS).flatmap(lambda k: st.tuples(st.just(k), st.one_of(
    workloads(k), st.sampled_from(FIXTURES[k][0]).flatmap(renumbered))))


def over_invariant_inputs(check: Callable[[dict[str, Any], Counter[str]], None]) -> Counter[str]:
    """`check(out, seen)` on every answer to INVARIANT_INPUTS; `seen` counts the examples and
    the answers, and what `check` counts."""
    seen: Counter[str] = Counter()

    @settings(max_examples=examples(100), **SETTINGS)
    @given(case=INVARIANT_INPUTS)
    def run(case: tuple[str, dict[str, Any]]) -> None:
        kind, obj = case
        note(f"{kind}: {obj!r}")
        seen["examples"] += 1
        out = result_or_none(obj, DEFS[kind])
        if out is not None:
            seen["answered"] += 1
            check(out, seen)

    run()
    return seen


def test_invariant_phase_is_matched_or_undefined() -> None:
    def check(out: dict[str, Any], seen: Counter[str]) -> None:
        if out["status"] is None:  # partial: the status part failed, and says so
            assert out["complete"] is False and any(e["part"] == "status" for e in out["errors"])
        else:
            seen["status"] += 1
            status = out["status"]
            assert status["phase"] in status["matched"] or status["phase"] == "Undefined", status

    at_least(over_invariant_inputs(check), status=0.8)


def test_invariant_total_pods_is_the_sum_of_pod_bearing_instances() -> None:
    def check(out: dict[str, Any], seen: Counter[str]) -> None:
        if out["totals"] is None:  # partial: no count may pass for the whole
            seen["partial"] += 1
            assert out["complete"] is False and any(e["part"] == "component" for e in out["errors"])
            assert out["tree"]["totals"] is None
        else:
            seen["totals"] += 1
            pods = sum(inst["totals"]["pods"] for node, inst in _instances(out["tree"]) if node["podBearing"])
            assert out["totals"]["pods"] == pods
            assert out["tree"]["totals"]["pods"] == pods

    at_least(over_invariant_inputs(check), totals=0.6, partial=0.05)


def test_invariant_gpus_are_not_negative() -> None:
    def check(out: dict[str, Any], seen: Counter[str]) -> None:
        assert out["totals"] is None or out["totals"]["gpus"] >= 0, out["totals"]
        for _, inst in _instances(out["tree"]):
            seen["instances"] += 1
            assert inst["totals"]["gpus"] >= 0, inst

    at_least(over_invariant_inputs(check), answered=0.9, instances=1.5)


# -- minimal reproductions of bugs these properties found (fail until fixed) ---------------------

def _jobset() -> dict[str, Any]:
    return copy.deepcopy(next(f for f in FIXTURES["JobSet"][0] if f["metadata"]["name"] == "llm-pretrain"))


POD_KARTA = REGISTRY.resolve_object({"apiVersion": "v1", "kind": "Pod"})
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}


def test_bug_non_mapping_workload_metadata_crashes() -> None:
    """interpret.py `_workload_ref`/`generic_flags` call `.get` on whatever `metadata` is (a
    bool, list, string or number): AttributeError (HTTP 500) instead of InterpretationError."""
    obj = dict(_jobset(), metadata=True)
    interpret_or_error(obj, DEFS["JobSet"])


@pytest.mark.parametrize("pod", [
    {"metadata": "x"},
    {"metadata": {"name": "p"}, "status": ["Running"]},
    {"metadata": {"name": "p"}, "status": True},
    {"metadata": {"name": "p"}, "status": {"containerStatuses": True}},
    {"metadata": {"name": "p"}, "spec": {"nodeName": ["n"]}},
], ids=["metadata-str", "status-list", "status-bool", "containerStatuses-bool", "nodeName-list"])
def test_bug_malformed_pod_crashes(pod: dict[str, Any]) -> None:
    """pods.py `PodInput.name`, attribution.py `pod_ready`, `container_waiting_reason` and the
    node set of `attribute_pods` assume a pod's metadata, status and their parts have the
    Kubernetes types: AttributeError / TypeError (HTTP 500) on any other (also
    `status.conditions: [1]`)."""
    interpret_or_error(POD, POD_KARTA, [pod])


@pytest.mark.parametrize(("obj", "pods"), [
    (dict(POD, metadata={"name": "p", "namespace": 3}), None),
    (POD, [{"metadata": {"name": "p"}, "status": {"phase": 5}}]),
], ids=["workload-namespace-int", "pod-phase-int"])
def test_bug_non_string_identity_fields_break_the_contract(obj: dict[str, Any], pods: list | None) -> None:
    """Values copied verbatim from the object into `workload` (name, namespace, uid) and
    `live.pods[]` (phase, reason) are not checked: the answer (HTTP 200) does not match
    `Interpretation`, whose WorkloadRef/LivePod fields are strings."""
    interpret_or_error(obj, POD_KARTA, pods)


def test_bug_negative_replicas_give_negative_totals() -> None:
    """A negative replica count flows into the totals: pods -3, gpus -8, cpu "-78"."""
    obj = _jobset()
    obj["spec"]["replicatedJobs"][1]["replicas"] = -3
    out = interpret_or_error(obj, DEFS["JobSet"])
    assert out is not None
    assert out["totals"]["gpus"] >= 0 and out["totals"]["pods"] >= 0, out["totals"]


def test_bug_integer_beyond_float_range_crashes() -> None:
    """An integer of 309-4300 digits (YAML reads it; JSON bodies refuse it) makes `normalize`
    (values.py) call float() on it: OverflowError (HTTP 500 for a YAML body)."""
    obj = _jobset()
    obj["spec"]["replicatedJobs"][1]["replicas"] = 10**400
    interpret_or_error(obj, DEFS["JobSet"])


@pytest.mark.parametrize("value", [1e308, "1e20"], ids=repr)
def test_bug_quantity_beyond_64_bits_crashes(value: Any) -> None:
    """A request of 2^64 or more (a JSON number, or a quantity string whose GPU count is that
    large) raises orjson's "Integer exceeds 64-bit range" TypeError (HTTP 500): in the pod
    facts cache key (interpret.py `_facts`), or when the answer is serialised."""
    obj = dict(POD, spec={"containers": [{"name": "c", "resources": {"requests": {
        "nvidia.com/gpu" if isinstance(value, str) else "cpu": value}}}]})
    interpret_or_error(obj, POD_KARTA)


def test_bug_nesting_deeper_than_255_crashes() -> None:
    """orjson refuses to serialise more than 255 levels (TypeError "Recursion limit reached");
    `input_text` catches TypeError as "an integer beyond 2^53" and serialises again: the error
    escapes (HTTP 500 for JSON bodies of 256-1024 levels, which orjson still parses; the same
    for a deep pod, or a deep inline definition through the inline cache key)."""
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    obj = _jobset()
    obj["status"] = {"conditions": deep}
    interpret_or_error(obj, DEFS["JobSet"])


@pytest.mark.parametrize(("text", "says"), [
    ("a: !!int x", "invalid YAML: invalid literal for int()"),
    ("a: " + "1" * 5000, "invalid YAML: Exceeds the limit (4300 digits)"),
    ("a: \ud800", "input is not valid Unicode text"),
], ids=["int-tag", "huge-int", "surrogate"])
def test_bug_parse_documents_raises_other_errors(text: str, says: str) -> None:
    """Found by the fuzzer: PyYAML's constructors raised ValueError for an explicit tag on the
    wrong scalar (`!!int x`), Python refuses int() of more than 4300 digits (ValueError), and
    libyaml cannot encode a lone surrogate of a str input (UnicodeEncodeError); each is now a
    DocumentError (HTTP 400, not 500), said in its own words."""
    with pytest.raises(DocumentError) as e:
        parse_documents(text)
    assert type(e.value) is DocumentError and str(e.value).startswith(says), str(e.value)


def test_bug_parse_documents_returns_non_json_values() -> None:
    """sigs.k8s.io/yaml (which documents.py follows) turns YAML into JSON: a set has no JSON
    equivalent (refused), a non-string key becomes its string (interpreting a set or an int key
    was an HTTP 500: orjson "Type is not JSON serializable" / "Dict key must be str")."""
    with pytest.raises(DocumentError, match="YAML tag !!set has no JSON equivalent"):
        parse_documents("a: !!set {x}")
    docs = parse_documents("a: {1: x}")
    assert docs == [{"a": {"1": "x"}}] and _is_json(docs), docs


@pytest.mark.parametrize("text", ["!!bool", '!!bool ""', "a: !!bool maybe", "!!int", "!!float"])
def test_bug_yaml_tagged_scalar_of_the_wrong_type_raises_key_error(text: str) -> None:
    """Found by the long fuzz run (scale 8): PyYAML's bool constructor raised KeyError('')."""
    with pytest.raises(DocumentError):
        parse_documents(text)
