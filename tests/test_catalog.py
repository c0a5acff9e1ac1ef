"""The built-in catalog: every definition validates, sits in the folder its GVK names, and
every fixture case of every folder passes (the same harness as `wlmap definitions test`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.casefiles import case_folders, run_folder
from app.karta.load import load_builtin, load_path
from app.karta.model import conventional_name
from app.karta.registry import Registry

CATALOG = Path(__file__).resolve().parent.parent / "definitions"
FOLDERS = case_folders(CATALOG) if CATALOG.is_dir() else []


def _folder_id(p: Path) -> str:
    return str(p.relative_to(CATALOG))


def test_catalog_is_not_empty():
    assert FOLDERS, "the catalog has no definition folders"


@pytest.mark.parametrize("folder", FOLDERS, ids=_folder_id)
def test_folder_definition_is_valid_and_placed(folder: Path):
    defs = [d for d in load_path(folder / "definition.yaml", "builtin")]
    assert len(defs) == 1, "each folder holds exactly one definition.yaml with one Karta"
    d = defs[0]
    assert d.valid, [f.message for f in d.findings if f.level == "error"]
    warnings = [f.message for f in d.findings if f.level == "warning"]
    assert not warnings, warnings
    group, version, kind = d.gvk
    assert folder.relative_to(CATALOG).parts == (group or "core", kind, version)
    assert d.name == conventional_name(d.karta.root_gvk)


@pytest.mark.parametrize("folder", FOLDERS, ids=_folder_id)
def test_folder_cases(folder: Path):
    results = run_folder(folder, Registry.of(load_builtin()))
    assert len(results) >= 3, "each definition needs fixtures for several lifecycle states"
    failures = [f"{r.name}: {f}" for r in results for f in r.failures]
    assert not failures, "\n".join(failures)


def test_one_definition_per_gvk():
    defs = load_builtin()
    gvks = [d.gvk for d in defs]
    assert len(gvks) == len(set(gvks))
    Registry.of(defs).active()  # no ambiguity


@pytest.mark.parametrize("folder", FOLDERS, ids=_folder_id)
def test_helper_pods_name_pod_bearing_components(folder: Path):
    """The counted helper pods (docs/definitions.md, "Helper pods") are components of the definition."""
    (d,) = load_path(folder / "definition.yaml", "builtin")
    named = ((d.raw.get("metadata") or {}).get("annotations") or {}).get("workload-map.dev/helper-pods")
    if named is None:
        return
    names = [n.strip() for n in named.split(",")]
    bearing = {c.name for c in d.karta.components if c.pod_bearing}
    assert names and all(names), f"empty name in {named!r}"
    assert set(names) <= bearing, f"{sorted(set(names) - bearing)} are not pod-bearing components of {d.name}"
