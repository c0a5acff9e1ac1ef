"""Manifests a user writes before the API server names them: every fixture of the catalog, with
`metadata.name` replaced by `generateName` and no `uid`, `namespace` or `resourceVersion`,
interprets as the named one does: the same totals, phase and gang minimum, and no error the
named one does not have (fixtures that test an error keep it). An instance named after the
object is then named after the `generateName` prefix (docs/catalog.md says so)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.common import build_registry
from app.engine.interpret import InterpretationError, interpret

CATALOG = Path(__file__).resolve().parent.parent / "definitions"
REGISTRY = build_registry(None)
FIXTURES = sorted(CATALOG.glob("*/*/*/testdata/*.yaml"))


def _workloads(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")
            and REGISTRY.resolve_object(d) is not None]


def _unnamed(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    meta = out.setdefault("metadata", {})
    name = meta.pop("name", None) or "workload"
    for key in ("uid", "namespace", "resourceVersion"):  # what the API server assigns on create
        meta.pop(key, None)
    meta["generateName"] = f"{name}-"
    return out


def _facts(doc: dict[str, Any]) -> dict[str, Any]:
    d = REGISTRY.resolve_object(doc)
    assert d is not None
    try:
        out = interpret(doc, d)
    except InterpretationError as e:
        return {"failed": str(e)}
    gang = out.get("gang") or {}
    return {
        "totals": out.get("totals"),
        "phase": (out.get("status") or {}).get("phase"),
        "gang": (gang.get("podGroup") or {}).get("minAvailable"),
        "errors": sorted((e.get("part"), e.get("component")) for e in out.get("errors") or []),
    }


def test_there_are_fixtures():
    assert len(FIXTURES) > 300


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(CATALOG)))
def test_an_unnamed_manifest_interprets_as_the_named_one(path: Path):
    for doc in _workloads(path):
        named, unnamed = _facts(doc), _facts(_unnamed(doc))
        assert unnamed == named, (unnamed, named)
