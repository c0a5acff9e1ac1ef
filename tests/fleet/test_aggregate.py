"""The fleet aggregate's rules (app/fleet/aggregate.py), one test per rule of the phase table in
docs/api-contract.md ("Fleet aggregate"), then the parts and the summed totals."""

from __future__ import annotations

from typing import Any

import pytest

from app.fleet.aggregate import MixedKinds, aggregate, aggregate_phase


def test_rule_1_any_failed_is_failed() -> None:
    assert aggregate_phase(["Running", "Failed"]) == "Failed"
    assert aggregate_phase(["Degraded", "Failed", "Suspended"]) == "Failed"  # before Degraded


def test_rule_2_any_degraded_is_degraded() -> None:
    assert aggregate_phase(["Running", "Degraded"]) == "Degraded"
    assert aggregate_phase(["Completed", "Degraded"]) == "Degraded"
    assert aggregate_phase(["Initializing", "Degraded"]) == "Degraded"


def test_rule_3_all_completed_is_completed() -> None:
    assert aggregate_phase(["Completed", "Completed"]) == "Completed"
    assert aggregate_phase(["Completed"]) == "Completed"


def test_rule_4_suspended_with_the_rest_suspended_or_completed_is_suspended() -> None:
    assert aggregate_phase(["Suspended", "Completed"]) == "Suspended"
    assert aggregate_phase(["Suspended", "Suspended"]) == "Suspended"
    # a part still being suspended: the whole is not suspended yet
    assert aggregate_phase(["Suspending", "Suspended"]) == "Suspending"
    assert aggregate_phase(["Suspending", "Completed"]) == "Suspending"


def test_rule_5_any_resuming_is_resuming() -> None:
    assert aggregate_phase(["Resuming", "Suspended"]) == "Resuming"
    assert aggregate_phase(["Resuming", "Running", "Initializing"]) == "Resuming"


def test_rule_6_any_initializing_is_initializing() -> None:
    assert aggregate_phase(["Initializing", "Running"]) == "Initializing"
    assert aggregate_phase(["Initializing", "Completed"]) == "Initializing"


def test_rule_7_running_with_completed_or_suspended_parts_is_running() -> None:
    assert aggregate_phase(["Running", "Completed"]) == "Running"
    assert aggregate_phase(["Running", "Suspended"]) == "Running"
    assert aggregate_phase(["Running", "Undefined"]) == "Running"
    assert aggregate_phase(["Running", None]) == "Running"


def test_rule_8_otherwise_undefined() -> None:
    assert aggregate_phase([]) == "Undefined"
    assert aggregate_phase(["Undefined"]) == "Undefined"
    assert aggregate_phase([None, "Completed"]) == "Undefined"  # an unread status never passes for done
    assert aggregate_phase(["Undefined", "Suspended"]) == "Undefined"


def _answer(phase: str | None, ready: int | None, pods: int, gpus: int, kind: str = "JobSet",
            api: str = "jobset.x-k8s.io/v1alpha2", uid: str = "u") -> dict[str, Any]:
    totals = {"pods": pods, "gpus": gpus, "accelerators": {"nvidia.com/gpu": gpus} if gpus else {},
              "requests": {"cpu": str(pods), **({"nvidia.com/gpu": str(gpus)} if gpus else {})},
              "requestValues": {"cpu": pods * 1000, **({"nvidia.com/gpu": gpus} if gpus else {})}}
    out: dict[str, Any] = {"workload": {"apiVersion": api, "kind": kind, "namespace": "ns", "name": "w", "uid": uid},
                           "status": {"phase": phase} if phase else None, "totals": totals}
    if ready is not None:
        out["live"] = {"current": pods, "ready": ready, "desired": pods, "pods": []}
    return out


def test_parts_and_summed_totals() -> None:
    got = aggregate([("a", _answer("Running", 3, 4, 8, uid="ua")), ("b", _answer("Failed", None, 2, 0, uid="ub"))],
                    ["cluster c: did not answer; it is left out"])
    assert got["workload"] == {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "ns",
                               "name": "w", "uid": None}
    assert got["status"] == {"phase": "Failed"}
    assert got["totals"] == {"pods": 6, "gpus": 8, "accelerators": {"nvidia.com/gpu": 8},
                             "requests": {"cpu": "6", "nvidia.com/gpu": "8"},
                             "requestValues": {"cpu": 6000, "nvidia.com/gpu": 8}}
    assert got["clusters"] == [
        {"cluster": "a", "phase": "Running", "live": {"ready": 3, "desired": 4},
         "totals": _answer("", 0, 4, 8)["totals"], "uid": "ua"},
        # no live view (the caller may not list pods there): ready unknown, desired from the totals
        {"cluster": "b", "phase": "Failed", "live": {"ready": None, "desired": 2},
         "totals": _answer("", 0, 2, 0)["totals"], "uid": "ub"},
    ]
    assert got["warnings"] == ["cluster c: did not answer; it is left out"]


def test_an_unknown_total_makes_the_sum_unknown_and_an_unread_status_a_null_phase() -> None:
    broken = {**_answer(None, 0, 1, 0), "totals": None}
    got = aggregate([("a", _answer("Completed", 1, 1, 0)), ("b", broken)])
    assert got["totals"] is None
    assert [p["phase"] for p in got["clusters"]] == ["Completed", None]
    assert got["status"]["phase"] == "Undefined"


def test_versions_may_differ_kinds_may_not() -> None:
    same = aggregate([("a", _answer("Running", 1, 1, 0)), ("b", _answer("Running", 1, 1, 0, api="jobset.x-k8s.io/v1"))])
    assert same["status"]["phase"] == "Running" and same["workload"]["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    with pytest.raises(MixedKinds) as e:
        aggregate([("a", _answer("Running", 1, 1, 0)), ("b", _answer("Running", 1, 1, 0, kind="PyTorchJob",
                                                                        api="kubeflow.org/v1"))])
    assert [(c["cluster"], c["kind"]) for c in e.value.candidates] == [("a", "JobSet"), ("b", "PyTorchJob")]
    assert "different kind in different clusters (JobSet (jobset.x-k8s.io/v1alpha2), PyTorchJob (kubeflow.org/v1))" \
        in str(e.value)
