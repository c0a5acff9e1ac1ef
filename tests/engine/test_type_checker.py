"""The template type check made once per Go type (instances.type_checker) finds the same first
error as a plain walk of the shape (the code it replaced, kept here as the oracle), on the
catalog's kind of templates with their values' JSON kinds changed at random places."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

from app.engine.instances import _CHECKS, _GO_NAMES, _SHAPES, _where
from app.jqlang.values import go_json_type

ROOT = Path(__file__).resolve().parents[2]
JOBSET = json.loads((ROOT / "benchmarks" / "data" / "jobset-16k.json").read_text())


def walk(v: Any, spec: Any, where: Any) -> str | None:
    """The first encoding/json type error of v against spec, or None: a walk of the shape."""
    if v is None:
        return None
    if type(spec) is str:
        t = type(v)
        ok = t is str if spec == "string" else t is str or t is int or t is float
        return None if ok else f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type {_GO_NAMES[spec]}"
    kind, inner = spec
    if kind == "object":
        if type(v) is not dict:
            return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type object"
        if type(inner) is dict:
            for field, (struct, sub) in inner.items():
                x = v.get(field)
                if x is not None and (err := walk(x, sub, ("field", struct, field))):
                    return err
            return None
        for key, item in v.items():
            if err := walk(item, inner, ("key", key)):
                return err
        return None
    if type(v) is not list:
        return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type array"
    for item in v:
        if err := walk(item, inner, where):
            return err
    return None


OTHERS: list[Any] = [None, 0, 1.5, -3, True, False, "x", "", [], [1, "a"], {}, {"a": 1}, [None], {"k": None}]


def _places(v: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _places(x, (*path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _places(x, (*path, i))
    return out


def _set(v: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = v
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = new
    return v


def _values() -> list[tuple[str, Any]]:
    templates = [rj["template"]["spec"]["template"] for rj in JOBSET["spec"]["replicatedJobs"]]
    out: list[tuple[str, Any]] = []
    for t in templates:
        spec = t["spec"]
        out += [("v1.PodTemplateSpec", t), ("v1.PodSpec", spec), ("v1.ObjectMeta", t.get("metadata") or {}),
                ("[]v1.Container", spec["containers"]), ("v1.Container", spec["containers"][0]),
                ("v1.ResourceRequirements", spec["containers"][0].get("resources") or {}),
                ("map[string]string", (t.get("metadata") or {}).get("labels") or {}),
                ("[]v1.Toleration", spec.get("tolerations") or [{"key": "a", "operator": "Exists"}])]
    return out


def test_same_first_error_as_a_walk_of_the_shape() -> None:
    assert set(_CHECKS) == set(_SHAPES)
    rng = random.Random(33)
    cases = errors = 0
    for go_type, value in _values():
        assert _CHECKS[go_type](value, "value") is None is walk(value, _SHAPES[go_type], "value")
        for _ in range(300):
            v = copy.deepcopy(value)
            for _ in range(rng.choice((1, 1, 2, 3))):  # one change, or several (the first error counts)
                v = _set(v, rng.choice(_places(v)), copy.deepcopy(rng.choice(OTHERS)))
            want = walk(v, _SHAPES[go_type], "value")
            assert _CHECKS[go_type](v, "value") == want, (go_type, v)
            cases += 1
            errors += want is not None
    assert errors > cases // 4  # the changes do hit typed fields
