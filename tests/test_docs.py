"""The README's runnable parts stay true: its catalog table matches the definitions, and the
worked definition example passes `wlmap definitions test` as shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WLMAP = Path(sys.executable).parent / "wlmap"


def test_readme_catalog_table_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "catalog_table.py"), "--check"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_readme_lists_every_builtin_kind_with_its_states():
    from app.karta.load import load_builtin

    readme = (ROOT / "README.md").read_text()
    for d in load_builtin():
        states = (d.raw["metadata"].get("annotations") or {}).get("workload-map.dev/states")
        assert states, f"{d.name} has no workload-map.dev/states annotation"
        assert f"`{d.name}`" in readme and states in readme


def test_worked_definition_example_runs_as_documented():
    r = subprocess.run([str(WLMAP), "definitions", "test", "examples/definitions", "-v"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "3 passed, 0 failed"
    r = subprocess.run([str(WLMAP), "interpret", "examples/definitions/acme.example.com/BatchTask/v1/testdata/"
                        "running.yaml", "--definition", "examples/definitions", "-o", "json"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert '"phase": "Running"' in r.stdout


def test_seed_platform_view_jobset_is_one_workload_with_12_gpus():
    import json

    r = subprocess.run([str(WLMAP), "interpret", "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml",
                        "-o", "json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["workload"]["kind"] == "JobSet"
    assert len(res["tree"]["children"][0]["instances"]) == 3  # three replicated jobs
    assert res["totals"]["gpus"] == 12


def test_configuration_reference_covers_every_serve_flag_and_chart_value():
    """The configuration reference (docs/configuration.md, generated) names every `wlmap serve`
    flag and the README every top-level chart value, so a newcomer never has to read code to
    find a setting."""
    import argparse

    import yaml

    from app.service.flags import add_serve_arguments

    readme = (ROOT / "README.md").read_text()
    p = argparse.ArgumentParser()
    add_serve_arguments(p)
    flags = [opt for a in p._actions for opt in a.option_strings if opt.startswith("--") and opt != "--help"]
    reference = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f for f in flags if f"`{f}" not in reference]
    assert not missing, f"flags missing from docs/configuration.md: {missing}"
    values = yaml.safe_load((ROOT / "helm" / "workload-map" / "values.yaml").read_text())
    config_keys = [f"config.{k}" for k in values["config"]]
    undocumented = [k for k in list(values) + config_keys
                    if f"`{k}" not in readme and f"`{k.split('.')[-1]}`" not in readme
                    and k not in ("imagePullSecrets", "nameOverride", "fullnameOverride")]
    assert not undocumented, f"chart values missing from the README: {undocumented}"


def test_security_promises_name_tests_that_exist():
    """Every test SECURITY.md says keeps a promise exists (a renamed or removed test must take
    its promise's wording with it)."""
    import re

    text = (ROOT / "SECURITY.md").read_text()
    refs = re.findall(r"(tests/[\w/]+\.py)(?:::\{([^}]*)\}|::(\w+))?", text)
    assert len(refs) >= 15
    for path, group, single in refs:
        source = (ROOT / path).read_text() if (ROOT / path).exists() else None
        assert source is not None, f"SECURITY.md names {path}, which does not exist"
        for name in filter(None, [single, *(n.strip() for n in group.split(","))]):
            assert re.search(rf"def {re.escape(name)}\b", source), f"SECURITY.md names {path}::{name}, not found"
    # the short form, a test named after a file already cited
    for path, name in re.findall(r"`(test_\w+\.py)::(\w+)`", text):
        hits = [p for p in ROOT.glob(f"tests/**/{path}") if re.search(rf"def {name}\b", p.read_text())]
        assert hits, f"SECURITY.md names {path}::{name}, not found"
