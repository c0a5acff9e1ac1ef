"""Fixture cases for definitions: one folder per definition, a `cases.yaml` beside it.

    definitions/<group>/<Kind>/<version>/
      definition.yaml        the Karta
      cases.yaml             cases: [{name, input, pods?, expect: {<dotted.path>: value}, error?}]
      testdata/*.yaml        manifests as a real controller leaves them in each state

`expect` keys are paths into the interpretation JSON (`status.phase`, `totals.gpus`,
`tree.children[0].instances[1].replicas`, `gang.podGroup.subGroups[0].minAvailable`); `error`
expects a failure with a message containing that text: either no result at all, or a partial
one (`complete: false`), whose shape `expect` can then assert (`status.phase`, `totals: null`,
`errors[0].component`, `tree.children[1].error.message`).  A partial result is a failure of
the case unless the case expects it (`error`, or `complete: false` in `expect`).
`wlmap definitions test DIR` and the catalog test both run these, so users get the same
harness as the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .documents import parse_documents
from .engine.interpret import InterpretationError, interpret
from .engine.options import DEFAULT_OPTIONS, EngineOptions
from .karta.load import Definition, load_path
from .karta.registry import Registry

CASES_FILE = "cases.yaml"
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_MISSING = object()


def lookup(doc: Any, dotted: str) -> Any:
    cur = doc
    for name, index in _TOKEN.findall(dotted):
        if name:
            if not isinstance(cur, dict) or name not in cur:
                return _MISSING
            cur = cur[name]
        else:
            i = int(index)
            if not isinstance(cur, list) or i >= len(cur):
                return _MISSING
            cur = cur[i]
    return cur


@dataclass
class CaseResult:
    folder: str
    name: str
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def case_folders(root: Path) -> list[Path]:
    root = Path(root)
    if (root / CASES_FILE).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(CASES_FILE) if "testdata" not in p.parts)


def run_folder(folder: Path, base: Registry, options: EngineOptions = DEFAULT_OPTIONS) -> list[CaseResult]:
    folder = Path(folder)
    local = [d for d in load_path(folder, "directory") if Path(d.origin.split("#")[0]).parent == folder]
    out: list[CaseResult] = []
    bad = [d for d in local if not d.valid]
    for d in bad:
        out.append(
            CaseResult(
                str(folder),
                f"definition {d.name or d.origin}",
                [f"invalid: {f.message}" for f in d.findings if f.level == "error"],
            )
        )
    registry = base.with_layer([d for d in local if d.valid])
    spec = parse_documents((folder / CASES_FILE).read_text())
    cases = (spec[0] or {}).get("cases", []) if spec else []
    for case in cases:
        out.append(_run_case(folder, case, registry, options))
    return out


def _load_objects(folder: Path, ref: str | None) -> list[dict[str, Any]] | None:
    if ref is None:
        return None
    return [d for d in parse_documents((folder / ref).read_text()) if isinstance(d, dict)]


def _run_case(folder: Path, case: dict[str, Any], registry: Registry, options: EngineOptions) -> CaseResult:
    res = CaseResult(str(folder), str(case.get("name") or case.get("input")))
    try:
        objs = _load_objects(folder, case["input"]) or []
        if len(objs) != 1:
            res.failures.append(f"{case['input']}: expected exactly one object, found {len(objs)}")
            return res
        obj = objs[0]
        pods = _load_objects(folder, case.get("pods"))
        definition: Definition | None = registry.resolve_object(obj)
        if definition is None:
            res.failures.append(f"no definition covers {obj.get('apiVersion')} {obj.get('kind')}")
            return res
        want_def = case.get("definition")
        if want_def and definition.name != want_def:
            res.failures.append(f"resolved definition {definition.name}, expected {want_def}")
        result = interpret(obj, definition, pods, options=options)
    except InterpretationError as e:
        if case.get("error") and case["error"] in str(e):
            return res
        res.failures.append(f"interpretation failed: {e}")
        return res
    except (OSError, ValueError, KeyError) as e:
        res.failures.append(f"cannot run case: {e}")
        return res
    expect = case.get("expect") or {}
    messages = [e["message"] for e in result.get("errors") or []]
    if case.get("error"):
        if not any(case["error"] in m for m in messages):
            res.failures.append(
                f"expected an error containing {case['error']!r}, but "
                + (f"the errors were: {'; '.join(messages)}" if messages else "it succeeded")
            )
    elif result.get("complete") is False and expect.get("complete") is not False:
        res.failures.append(
            "interpretation incomplete: "
            + "; ".join(
                f"{e['part']}{' ' + e['component'] if e.get('component') else ''}: {e['message']}"
                for e in result["errors"]
            )
        )
    for path, want in expect.items():
        got = lookup(result, path)
        if got is _MISSING:
            res.failures.append(f"{path}: missing in result")
        elif got != want:
            res.failures.append(f"{path}: got {got!r}, expected {want!r}")
    return res
