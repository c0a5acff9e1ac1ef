"""tests/ mirrors app/: the tests of app/<pkg> live in tests/<pkg>, so a folder of tests names the
layer it tests.  The few folders that cut across the layers say what they hold here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CROSS_CUTTING = {
    "data": "fixtures: manifests, example definitions, partial objects",
    "fuzz": "property and schema-driven tests across the engine and the HTTP API",
    "ship": "what ships: the Helm chart, the Dockerfile, the Grafana dashboard",
}


def _folders(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}


def test_each_test_folder_names_an_app_package_or_says_why_not() -> None:
    strays = _folders(ROOT / "tests") - _folders(ROOT / "app") - set(CROSS_CUTTING)
    assert not strays, f"tests/{sorted(strays)} match no app/ package: move them, or add them to CROSS_CUTTING"


def test_the_cross_cutting_folders_exist() -> None:
    assert set(CROSS_CUTTING) <= _folders(ROOT / "tests")
