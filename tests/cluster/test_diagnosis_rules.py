"""The diagnosis rules on their own: what each pod state and Warning Event becomes, how entries
group and order, when there is nothing to explain, and the bounds of the model's Event store."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from app.cluster.diagnosis import (
    Context,
    PodFacts,
    diagnose,
    explain,
    pod_symptoms,
    warning_event,
)
from app.model.warnings import WarningEvents

from .diagnosis_cases import (
    PVC_MSG,
    QUOTA_MSG,
    UNSCHEDULABLE_MSG,
    crash_loop,
    event,
    image_pull_backoff,
    now,
    oom_crash_loop,
    unschedulable,
)

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "stuck-coordinator-0", "uid": "job-1"}}


def _pod(name: str, status: dict[str, Any], node: str | None = None, claims: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "trainer", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    if claims:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec,
            "status": status}


def _facts(pod: dict[str, Any], component: str | None = "trainer", chain: frozenset[str] = frozenset()) -> PodFacts:
    return PodFacts(pod["metadata"]["uid"], pod["metadata"]["name"], component, pod_symptoms(pod),
                    bool(pod["spec"].get("nodeName")), chain | {pod["metadata"]["uid"]})


def test_unschedulable_keeps_the_schedulers_message_and_names_the_missing_resource() -> None:
    [s] = pod_symptoms(_pod("a", unschedulable()))
    assert (s.severity, s.reason, s.message) == ("error", "Unschedulable", UNSCHEDULABLE_MSG)
    assert s.insufficient == ("nvidia.com/gpu",)  # read from the decisive half, not the preemption half
    both = unschedulable("0/8 nodes are available: 3 Insufficient cpu, 5 Insufficient nvidia.com/gpu. preemption: "
                         "0/8 nodes are available: 8 Insufficient memory.")
    assert pod_symptoms(_pod("b", both))[0].insufficient == ("cpu", "nvidia.com/gpu")


def test_an_unbound_claim_is_a_pending_volume_claim_naming_the_claims() -> None:
    [s] = pod_symptoms(_pod("a", unschedulable(PVC_MSG), claims=("data", "ckpt")))
    assert s.reason == "PendingVolumeClaim" and s.severity == "error"
    assert "claims: data, ckpt" in s.message and PVC_MSG in s.message


def test_container_states() -> None:
    [pull] = pod_symptoms(_pod("p", image_pull_backoff(), node="n1"))
    assert (pull.reason, pull.severity) == ("ImagePullBackOff", "error") and "Back-off pulling image" in pull.message
    err = image_pull_backoff()
    err["containerStatuses"][0]["state"]["waiting"]["reason"] = "ErrImagePull"  # the kubelet alternates the two
    assert pod_symptoms(_pod("q", err, node="n1"))[0].reason == "ImagePullBackOff"
    [oom] = pod_symptoms(_pod("o", oom_crash_loop(), node="n1"))  # the cause beats the back-off
    assert oom.reason == "OOMKilled" and "exit code 137" in oom.message and "restarted 4 times" in oom.message
    [loop] = pod_symptoms(_pod("c", crash_loop(), node="n1"))
    assert loop.reason == "CrashLoopBackOff" and "Error with code 1" in loop.message


def test_pods_on_their_way_or_done_have_nothing_to_explain() -> None:
    creating = image_pull_backoff()
    creating["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    assert pod_symptoms(_pod("a", creating, node="n1")) == ()
    assert pod_symptoms(_pod("b", {"phase": "Succeeded"})) == ()
    assert pod_symptoms(_pod("c", {"phase": "Pending"})) == ()  # not looked at by a scheduler yet
    gone = _pod("d", unschedulable())
    gone["metadata"]["deletionTimestamp"] = now()
    assert pod_symptoms(gone) == ()


def test_failed_pods_say_how_they_failed() -> None:
    evicted = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}
    [s] = pod_symptoms(_pod("a", evicted, node="n1"))
    assert (s.severity, s.reason, s.message) == ("error", "Evicted", "The node was low on resource: memory.")
    exited = {"phase": "Failed", "containerStatuses": [{"name": "trainer", "restartCount": 0, "state": {
        "terminated": {"exitCode": 3, "reason": "Error", "finishedAt": now()}}}]}
    [e] = pod_symptoms(_pod("b", exited, node="n1"))
    assert (e.reason, e.message) == ("Error", "container trainer exited with code 3")


def test_entries_group_by_reason_and_component_most_severe_first() -> None:
    pods = [_facts(_pod(f"t{i}", unschedulable())) for i in range(3)]
    pods.append(_facts(_pod("t3", image_pull_backoff(), node="n1")))
    ready = image_pull_backoff()
    ready["conditions"][2] = {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                              "message": "containers with unready status: [server]"}
    ready["containerStatuses"][0]["state"] = {"running": {"startedAt": now()}}
    ready["phase"] = "Running"
    pods.append(_facts(_pod("s0", ready, node="n1"), component="server"))
    out = diagnose(pods, [], phase="Initializing", ready=0, desired=5)
    assert [(e["severity"], e["reason"], e["component"], e["pods"]) for e in out] == [
        ("error", "Unschedulable", "trainer", 3), ("error", "ImagePullBackOff", "trainer", 1),
        ("warning", "ContainersNotReady", "server", 1)]
    assert out[0]["insufficient"] == ["nvidia.com/gpu"] and out[0]["since"] == "2026-12-01T10:00:00Z"


def test_events_of_owners_are_placed_and_repeats_of_pod_state_left_out() -> None:
    stuck = _pod("t0", unschedulable())
    pods = [_facts(stuck, chain=frozenset({"job-2"}))]
    evs = [warning_event(event("e1", "ns", JOB, "FailedCreate", QUOTA_MSG, "job-controller")),
           warning_event(event("e2", "ns", stuck, "FailedScheduling", UNSCHEDULABLE_MSG, "default-scheduler")),
           warning_event(event("e3", "ns", {"apiVersion": "batch/v1", "kind": "Job",
                                            "metadata": {"name": "stuck-trainer-0", "uid": "job-2"}},
                               "FailedCreate", "Error creating: admission webhook denied the request", "job-controller"))]
    ctx = Context({"t0": ("trainer", None)}, "Initializing", 0, 5, None)
    out = explain(ctx, pods, [e for e in evs if e])
    assert [(e["reason"], e["component"], e["pods"]) for e in out] == [
        ("Unschedulable", "trainer", 1), ("FailedCreate", None, 0), ("FailedCreate", "trainer", 0)]
    assert out[1]["message"] == "Job stuck-coordinator-0: " + QUOTA_MSG


def test_a_gang_short_of_its_minimum() -> None:
    pods = [_facts(_pod("a", unschedulable())), _facts(_pod("b", crash_loop(), node="n1"))]
    out = diagnose(pods, [], phase="Initializing", ready=0, desired=4, gang_min=4)
    gang = next(e for e in out if e["reason"] == "GangMinimumNotMet")
    assert gang["severity"] == "warning"
    assert gang["message"] == ("1 of the 4 pods the gang needs to start together are scheduled "
                               "(only 2 of the 4 pods exist)")
    assert not any(e["reason"] == "GangMinimumNotMet"
                   for e in diagnose(pods, [], phase="Initializing", ready=0, desired=4, gang_min=1))
    assert diagnose([], [], phase="Running", ready=0, desired=4, gang_min=4) == []  # no member waits yet


@pytest.mark.parametrize(("phase", "ready", "desired", "explained"), [
    ("Running", 4, 4, False), ("Completed", 0, 4, False), ("Suspended", 0, 4, False),
    ("Running", 3, 4, True), ("Degraded", 4, 4, True), ("Failed", 0, 4, True), ("Running", None, None, True)])
def test_when_there_is_something_to_explain(phase: str, ready: int | None, desired: int | None,
                                            explained: bool) -> None:
    pods = [_facts(_pod("a", crash_loop(), node="n1"))]
    assert bool(diagnose(pods, [], phase=phase, ready=ready, desired=desired)) is explained


def test_event_forms() -> None:
    assert warning_event({"type": "Normal", "involvedObject": {"uid": "x"}}) is None
    assert warning_event({"type": "Warning", "involvedObject": {}}) is None
    # events.k8s.io/v1 written through the core view: regarding/note/series
    ev = warning_event({"type": "Warning", "regarding": {"uid": "u", "kind": "Pod", "name": "p", "apiVersion": "v1"},
                        "reason": "FailedMount", "note": "MountVolume.SetUp failed", "eventTime": now(30),
                        "series": {"count": 12, "lastObservedTime": now()}})
    assert ev is not None and (ev.reason, ev.message, ev.count) == ("FailedMount", "MountVolume.SetUp failed", 12)
    assert ev.last is not None and ev.first is not None and ev.first < ev.last
    long = warning_event(event("e", "ns", JOB, "FailedCreate", "x" * 5000, "job-controller"))
    assert long is not None and len(long.message) == 1024


def _store(**kw: Any) -> tuple[WarningEvents, list[Any]]:
    forgotten: list[Any] = []
    return WarningEvents(forget=forgotten.append, **kw), forgotten


def _about(uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": uid, "uid": uid}}


def test_the_event_store_is_bounded_per_object_in_total_and_by_age() -> None:
    async def run() -> None:
        store, forgotten = _store(per_object=3, max_events=10, max_age=600)
        for i in range(5):  # one object: the three most recent stay
            rec = store.keep(event(f"a{i}", "ns", _about("pod-a"), "BackOff", f"m{i}", "kubelet", ago=100 - i))
            assert store.on_event("ADDED", ("ns", f"a{i}"), None, rec) >= {"pod-a"}
        assert sorted(e.message for e in store.of({"pod-a"})) == ["m2", "m3", "m4"]
        for i in range(20):  # many objects: the total bound evicts the least recently seen
            rec = store.keep(event(f"b{i}", "ns", _about(f"pod-{i}"), "Unhealthy", "probe", "kubelet"))
            store.on_event("ADDED", ("ns", f"b{i}"), None, rec)
        assert len(store) == 10 and not store.of({"pod-a"}) and store.of({"pod-19"})
        await asyncio.sleep(0)  # the informer's copy drops them too (after its own walk)
        assert ("ns", "a0") in forgotten and ("ns", "b0") in forgotten and ("ns", "b19") not in forgotten
        assert store.keep(event("old", "ns", _about("pod-x"), "BackOff", "m", "kubelet", ago=700)) is None
        changed = store.prune(now=time.time() + 601)
        assert len(store) == 0 and "pod-19" in changed
        rec = store.keep(event("c", "ns", _about("pod-c"), "BackOff", "m", "kubelet"))
        store.on_event("ADDED", ("ns", "c"), None, rec)
        assert store.on_event("DELETED", ("ns", "c"), rec, None) == {"pod-c"} and len(store) == 0

    asyncio.run(run())
