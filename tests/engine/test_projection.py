"""Input projection never changes an answer: jq over the projected input gives exactly what it
gives over the full input (differential, seeded), and every catalog fixture interprets the same
with projection on and off."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import jq
import orjson
import pytest

from app.casefiles import case_folders
from app.documents import parse_documents
from app.engine import compiled as compiled_mod
from app.engine.interpret import InterpretationError, interpret
from app.jqlang import parse
from app.jqlang.paths import needs, project
from app.karta.load import load_builtin
from app.karta.registry import Registry

EXPRESSIONS = [
    ".spec.replicatedJobs[].name", "(.spec.x // [])[] | .a", ".status.conditions | length", ".a as $x | .b[] | $x",
    'any((.status.conditions // [])[]; .type=="Ready")', "{a, b: .c.d}", ".spec.services | to_entries[] | .key",
    ".spec.services[] | .replicas", "[.spec.a[] | select(.x == 1) | .y] | length", "first(.a[] | .b)", ".b[] | 1",
    "any(.a[]; true)", ".c.d.e", ".a[0]", '.a["k"]', "(.a // .b) | 5", 'try (.a.b.c) catch "err"', "[.b[]?.z]",
    ".a | map(1)", ".a | map(.x)", "if .a then .b else .c end", '"\\(.a)-\\(.c.d)"', ".b | length", "[limit(2; .b[])]",
    "reduce .b[] as $v (0; . + 1)", ".spec.services | keys", '(.spec.services[] | select(.replicas > 1) | .name) // "none"',
    ".a[.b]", ".a[1:]", "[.a[]?] | length", ".a | any(.x)", ".a | all", "(.a | length) > 0 and .b == null",
    ".a | to_entries | map(.value)", "[.c[]? | .d?] | add", ".a.b // .c.d // .e", "isempty(.a[]?)",
    ".a as [$p, $q] | $q", ".a as {b: $v} | $v", "[.a, .b] | tostring", "(.a | type) + (.b | type)",
    ". as $r | $r.spec.services[] | .replicas", ".a[] as $x | .b | $x", ". as $r | .c | $r.a",
    "def f($u): .a + $u; .spec | f(.x)", "def g: .b; .c | g", "def h: .a[]; [h] | length",
    ". as $r | [$r.b[]?] | length", "def f($a): $a; . as $a | f(1) + ($a.x // 0)",
]
KEYS = ["a", "b", "c", "d", "e", "x", "y", "k", "replicas", "name", "type", "spec", "services", "status",
        "conditions", "replicatedJobs"]


def _rand(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([None, 0, 1, 2.5, "s", "", True, False, [], {}])
    if r < 0.6:
        return [_rand(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {k: _rand(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 5))}


_PROGRAMS: dict[str, object] = {}


def _run(expr: str, obj) -> tuple:
    prog = _PROGRAMS.get(expr) or _PROGRAMS.setdefault(expr, jq.compile(expr))
    try:
        return ("ok", prog.input_text(json.dumps(obj, sort_keys=True)).all())
    except ValueError as e:
        return ("error", str(e).split(" at <")[0])


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_projection_is_invisible_to_the_expression(expr: str):
    rng = random.Random(expr)
    tree = needs(parse(expr))
    for _ in range(300):
        obj = _rand(rng)
        if not isinstance(obj, dict):
            obj = {k: _rand(rng) for k in ("a", "b", "c", "spec", "status")} | {"z": obj}
        assert _run(expr, project(obj, tree)) == _run(expr, obj), (expr, obj, tree)


def test_whole_input_cases_are_recognised():
    for expr in (". as $x | $x", "keys", "if .a then .b end", "def f: .; f", "..|.a?", "tostring", "@json",
                 ".a |= 1", "select(.a)"):
        assert needs(parse(expr)) is True, expr


CATALOG = Path(__file__).resolve().parents[2] / "definitions"


def _catalog_inputs():
    for folder in case_folders(CATALOG):
        for f in sorted((folder / "testdata").glob("*.yaml")):
            for doc in parse_documents(f.read_text()):
                if isinstance(doc, dict) and doc.get("kind") != "Pod":
                    yield pytest.param(doc, id=str(f.relative_to(CATALOG)))


_UNPROJECTED: dict[str, compiled_mod.CompiledDefinition] = {}
_REGISTRY = Registry.of(load_builtin())


@pytest.mark.parametrize("obj", list(_catalog_inputs()))
def test_catalog_fixtures_interpret_the_same_without_projection(obj):
    d = _REGISTRY.resolve_object(obj)
    if d is None:
        pytest.fail(f"no definition for {obj.get('apiVersion')} {obj.get('kind')}")

    def outcome():
        try:
            return interpret(obj, d)
        except InterpretationError as e:
            return str(e)

    projected_cd = compiled_mod.compiled(d)
    assert projected_cd.projection is not True, f"{d.name}: no projection (an expression reads the whole input)"
    projected = outcome()
    full_cd = _UNPROJECTED.get(d.digest)
    if full_cd is None:
        full_cd = _UNPROJECTED[d.digest] = dataclasses.replace(projected_cd, projection=True, strip_noise=False)
    compiled_mod._cache.put(d.digest, full_cd, 0)
    try:
        full = outcome()
    finally:
        compiled_mod._cache.put(d.digest, projected_cd, 0)
    assert projected == full


def _with_pods() -> list[Any]:
    """Each catalog definition with its fixtures' workloads and all their pods."""
    out = []
    for folder in case_folders(CATALOG):
        objs, pods = [], []
        for f in sorted((folder / "testdata").glob("*.yaml")):
            for doc in parse_documents(f.read_text()):
                if not isinstance(doc, dict):
                    continue
                (pods if doc.get("kind") == "Pod" else objs).append(doc)
        if objs and pods:
            out.append(pytest.param(objs, pods, id=str(folder.relative_to(CATALOG))))
    return out


@pytest.mark.parametrize("objs, pods", _with_pods())
def test_pods_interpret_the_same_without_their_projection(objs: list[Any], pods: list[Any]):
    """Pods are read only where the pod expressions look (`metadata.labels[...]`): the same
    interpretations, with pods, as from whole pods."""
    for obj in objs:
        d = _REGISTRY.resolve_object(obj)
        assert d is not None, (obj.get("apiVersion"), obj.get("kind"))
        projected_cd = compiled_mod.compiled(d)
        assert projected_cd.pod_projection is not True, d.name

        def outcome():
            try:
                return orjson.dumps(interpret(obj, d, pods))
            except InterpretationError as e:
                return str(e)

        projected = outcome()
        compiled_mod._cache.put(d.digest, dataclasses.replace(projected_cd, pod_projection=True), 0)
        try:
            full = outcome()
        finally:
            compiled_mod._cache.put(d.digest, projected_cd, 0)
        assert projected == full, d.name
