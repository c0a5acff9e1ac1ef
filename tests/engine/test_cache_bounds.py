"""The engine's caches hold what a caller sends (objects, pod templates): bounded by bytes, not
entry counts, so distinct megabyte-sized objects cannot pile up (issue 21)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from app.engine import interpret as interpret_mod
from app.engine.interpret import interpret
from app.engine.memo import ByteLRU, Memo
from app.engine.options import DEFAULT_OPTIONS, EngineOptions
from app.karta.load import load_builtin
from app.karta.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
JOBSET = json.loads((ROOT / "benchmarks" / "data" / "jobset-16k.json").read_text())
DEFINITION = Registry.of(load_builtin()).resolve_object(JOBSET)
MiB = 1024 * 1024


def _big_jobset(i: int, size: int) -> dict:
    """The JobSet with a container argument of `size` bytes, distinct per `i`: the pod template
    is read by the definition's expressions, so it is part of every cache key."""
    obj = copy.deepcopy(JOBSET)
    obj["metadata"]["name"] = f"big-{i}"
    for rj in obj["spec"]["replicatedJobs"]:
        c = rj["template"]["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [f"{i}:" + "x" * size]
    return obj


@pytest.fixture()
def small_caches(monkeypatch: pytest.MonkeyPatch) -> tuple[EngineOptions, ByteLRU, Memo]:
    results: ByteLRU = ByteLRU(16 * MiB)  # no bound per entry: the test holds entries of several MiB
    facts: Memo = Memo(maxsize=4096, max_bytes=64 * MiB)
    monkeypatch.setattr(interpret_mod, "_pod_facts", facts)
    return EngineOptions(jq_results=results), results, facts


def test_jq_results_are_accounted_by_key_and_value_bytes(small_caches: tuple[EngineOptions, ByteLRU, Memo]):
    options, results, facts = small_caches
    assert DEFINITION is not None
    first = interpret(_big_jobset(0, 50_000), DEFINITION, options=options)
    assert len(results) == 1 and results.bytes > 3 * 50_000  # the key alone holds the three templates
    assert 0 < facts.bytes < 10_000  # the pod facts, keyed by resources: the 50 KB args are not in the key
    again = interpret(_big_jobset(0, 50_000), DEFINITION, options=options)
    assert again == first and len(results) == 1  # the same object again: the results are reused


def test_distinct_big_objects_stay_within_the_bounds(small_caches: tuple[EngineOptions, ByteLRU, Memo]):
    options, results, facts = small_caches
    assert DEFINITION is not None
    for i in range(40):  # 40 x 300 KB of keys, ~2.7 MB each with the results that hold the templates
        interpret(_big_jobset(i, 100_000), DEFINITION, options=options)
        assert results.bytes <= 16 * MiB and facts.bytes <= 64 * MiB
    assert 0 < len(results) < 40


def test_the_default_bounds_are_in_bytes():
    cache = DEFAULT_OPTIONS.jq_results
    assert isinstance(cache, ByteLRU) and cache.max_bytes == 80 * MiB
    assert EngineOptions().jq_results is not cache  # options made apart share no results
    assert interpret_mod._pod_facts.max_bytes == 64 * MiB and interpret_mod._pod_views.max_bytes == 64 * MiB


def test_a_giant_is_not_kept():
    """An object whose results would take over 1 MiB is a caller's giant, not a scheduler's
    workload: keeping it would only push the everyday entries out."""
    options = EngineOptions()
    cache = options.jq_results
    assert cache is not None and len(cache) == 0
    assert DEFINITION is not None
    interpret(_big_jobset(99, 400_000), DEFINITION, options=options)
    assert (cache.bytes, len(cache)) == (0, 0)
    interpret(_big_jobset(98, 0), DEFINITION, options=options)
    assert len(cache) == 1  # an everyday object is kept


def test_without_a_cache_every_call_evaluates():
    """--jq-result-cache false: nothing is kept, and the answer is the cached one's."""
    assert DEFINITION is not None
    cached = EngineOptions()
    assert interpret(JOBSET, DEFINITION, options=EngineOptions(jq_results=None)) == interpret(
        JOBSET, DEFINITION, options=cached)
    assert cached.jq_results is not None and len(cached.jq_results) == 1


def test_status_plans_are_bounded_by_the_bytes_of_their_definitions(monkeypatch: pytest.MonkeyPatch):
    """Each plan holds its status definition: definitions sent in requests can be megabytes."""
    import yaml

    from app.engine import status as status_mod
    from app.karta.load import definition_from_document

    plans: Memo = Memo(maxsize=1024, max_bytes=16 * MiB)
    monkeypatch.setattr(status_mod, "_plans", plans)
    doc = yaml.safe_load((ROOT / "tests" / "data" / "examples" / "batchtask.karta.yaml").read_text())
    task = yaml.safe_load((ROOT / "tests" / "data" / "manifests" / "batchtask-running.yaml").read_text())
    root = doc["spec"]["structureDefinition"]["rootComponent"]
    for i in range(100):  # 100 x ~200 KB accounted
        d = copy.deepcopy(doc)
        d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"] = dict(
            root["statusDefinition"], padding=f"{i}" + "x" * 20_000)
        definition = definition_from_document(d, "inline", "inline")
        assert definition.valid, definition.findings
        assert interpret(task, definition)["status"]["phase"] == "Running"
        assert plans.bytes <= 16 * MiB
    assert 0 < len(plans) < 100
