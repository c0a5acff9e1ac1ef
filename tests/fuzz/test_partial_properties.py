"""Partial interpretations as properties: break one random component of a random built-in
definition, interpret a random fixture of that kind, and the status must be exactly what the
intact definition gives; the broken component is named and marked, every other component is
computed as before, and no count is given that would be partial.

Breakers cover both shapes seen on real controllers: a jq error in a component path, and a
count mismatch (a path that yields nothing, as `// empty` on an absent field does).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from app.casefiles import case_folders
from app.documents import parse_documents
from app.engine.interpret import interpret
from app.karta.load import Definition, definition_from_document, load_builtin
from app.service.models import Interpretation

from .test_engine_properties import SETTINGS, examples

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "definitions"
BY_NAME = {d.name: d for d in load_builtin()}

# Every component path the extraction reads, as (key in the component, key below it).
PATHS = [("instanceIdPath", None), ("specDefinition", "podTemplateSpecPath"), ("specDefinition", "podSpecPath"),
         ("specDefinition", "metadataPath"), ("scaleDefinition", "replicasPath"),
         ("scaleDefinition", "minReplicasPath"), ("scaleDefinition", "maxReplicasPath")]
BREAKERS = ['error("broken on purpose")', "empty", ".no.such.field[]"]


def _cases() -> list[tuple[str, dict[str, Any]]]:
    """(definition name, fixture object) for every case input of the catalog."""
    out = []
    for folder in case_folders(CATALOG):
        [doc] = [d for d in parse_documents((folder / "definition.yaml").read_text()) if isinstance(d, dict)]
        spec = parse_documents((folder / "cases.yaml").read_text())[0] or {}
        for case in spec.get("cases", []):
            objs = [o for o in parse_documents((folder / case["input"]).read_text()) if isinstance(o, dict)]
            # (a definition that reads no component path, FlinkSessionJob's, has nothing to break)
            if len(objs) == 1 and not case.get("error") and _breakable(doc):
                out.append((doc["metadata"]["name"], objs[0]))
    return out



def _components(raw: dict[str, Any]) -> list[dict[str, Any]]:
    sd = raw["spec"]["structureDefinition"]
    return [sd["rootComponent"], *(sd.get("childComponents") or [])]


def _breakable(raw: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    out = []
    for i, c in enumerate(_components(raw)):
        for outer, inner in PATHS:
            v = c.get(outer)
            if inner is None and v or inner is not None and isinstance(v, dict) and v.get(inner):
                out.append((i, outer, inner))
    return out


CASES = _cases()


def _broken(d: Definition, where: tuple[int, str, str | None], breaker: str) -> Definition:
    raw = copy.deepcopy(d.raw)
    i, outer, inner = where
    comp = _components(raw)[i]
    if inner is None:
        comp[outer] = breaker
    else:
        comp[outer][inner] = breaker
    broken = definition_from_document(raw, "inline", "broken")
    assert broken.valid, [f.message for f in broken.findings if f.level == "error"]
    return broken


def _nodes(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {node["name"]: node}
    for c in node["children"]:
        out.update(_nodes(c))
    return out


@st.composite
def broken_cases(draw: st.DrawFn) -> tuple[Definition, dict[str, Any], Definition, str, str]:
    name, obj = draw(st.sampled_from(CASES))
    d = BY_NAME[name]
    where = draw(st.sampled_from(_breakable(d.raw)))
    breaker = draw(st.sampled_from(BREAKERS))
    comp = _components(d.raw)[where[0]]["name"]
    return d, obj, _broken(d, where, breaker), comp, breaker


@settings(max_examples=examples(150), **SETTINGS)
@given(case=broken_cases())
def test_breaking_one_component_leaves_status_and_the_others_unchanged(case: tuple) -> None:
    intact_def, obj, broken_def, comp, breaker = case
    note(f"{intact_def.name}: component {comp} broken with {breaker}; object {obj['metadata'].get('name')}")
    intact = interpret(copy.deepcopy(obj), intact_def)
    out = interpret(copy.deepcopy(obj), broken_def)
    Interpretation.model_validate(out)
    assert intact["complete"] is True
    assert out["status"] == intact["status"]  # the status never reads the tree

    failed = [e for e in out["errors"] if e["part"] == "component"]
    if breaker != "empty":  # a jq error always fails its component, whatever the counts
        assert [e["component"] for e in failed] == [comp]
    assert [e["component"] for e in failed] in ([], [comp])
    before, after = _nodes(intact["tree"]), _nodes(out["tree"])
    assert set(before) == set(after)  # every component keeps its node
    if not failed:  # `empty` where zero outputs are legal (no ids, or a min/max beside replicas)
        assert out["complete"] is True and out["errors"] == []
        return
    assert out["complete"] is False and out["totals"] is None
    assert after[comp]["instances"] == [] and after[comp]["totals"] is None
    assert after[comp]["error"] == failed[0]
    assert failed[0]["path"].startswith("spec.structureDefinition.")
    for name, node in after.items():
        if name != comp:  # the others are computed exactly as before
            assert node["instances"] == before[name]["instances"], name
            if comp not in _nodes(node):
                assert node["totals"] == before[name]["totals"], name
            else:
                assert node["totals"] is None, name  # an ancestor: no partial sum
    gang_errors = [e for e in out["errors"] if e["part"] == "gang"]
    if out["gang"] is None:
        assert [e["component"] for e in gang_errors] == [comp]
    else:
        assert out["gang"] == intact["gang"] and not gang_errors
