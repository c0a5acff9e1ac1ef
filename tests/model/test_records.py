"""What the model keeps of an object is enough: interpreting the kept (projected) object, with
kept pods, gives exactly what the full object and pods give, for every catalog fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.documents import parse_documents
from app.engine.interpret import interpret
from app.jqlang.paths import merge
from app.karta.load import load_builtin
from app.karta.registry import Registry
from app.model.packing import Packer
from app.model.records import (
    POD_BASE,
    covers,
    pod_expression_projection,
    record,
    workload_projection,
)

ROOT = Path(__file__).resolve().parents[2]
DEFS = Registry.of(load_builtin())
CASES = []
for cases_file in sorted((ROOT / "definitions").rglob("cases.yaml")):
    for case in yaml.safe_load(cases_file.read_text())["cases"]:
        CASES.append((cases_file.parent, case))


def _docs(path: Path) -> list[dict]:
    return [d for d in parse_documents(path.read_text()) if isinstance(d, dict)]


@pytest.mark.parametrize("folder,case", CASES, ids=[f"{f.relative_to(ROOT / 'definitions')}:{c['name']}"
                                                     for f, c in CASES])
def test_kept_objects_interpret_as_the_full_ones(folder: Path, case: dict) -> None:
    obj = _docs(folder / case["input"])[0]
    d = DEFS.resolve_object(obj)
    assert d is not None, f"{folder}: the built-in registry resolves no definition for {case['input']}"
    obj.setdefault("metadata", {}).setdefault("uid", "uid-1")
    obj["metadata"].setdefault("name", "x")
    pods = None
    if case.get("pods"):
        pods = _docs(folder / case["pods"])
        for i, p in enumerate(pods):
            p.setdefault("metadata", {}).setdefault("uid", f"pod-{i}")
            p["metadata"].setdefault("name", f"pod-{i}")
    g = d.gvk
    kept = record(obj, g[0], g[2], workload_projection([d]), packer=Packer())  # packed, as the model keeps it
    assert kept is not None
    pod_tree = merge(POD_BASE, pod_expression_projection(DEFS.active()))
    kept_pods = None
    if pods is not None:
        packer = Packer()
        kept_pods = [record(p, "", "Pod", pod_tree, is_pod=True, packer=packer).object()  # type: ignore[union-attr]
                     for p in pods]
    try:
        want = interpret(obj, d, pods)
    except Exception as e:  # noqa: BLE001 - then the kept object must fail the same way
        with pytest.raises(type(e)):
            interpret(kept.object(), d, kept_pods)
        return
    assert interpret(kept.object(), d, kept_pods) == want


def test_projection_cover() -> None:
    assert covers(True, {"a": True}) and not covers({"a": True}, True)
    assert covers({"a": True, "b": {"c": True}}, {"b": {"c": True}})
    assert not covers({"a": True}, {"b": {}})
    assert covers({None: True}, {"x": {"y": True}})
    assert covers({"a": {}}, {"a": {}}) and not covers(None, {"a": True}) and covers(None, None)
