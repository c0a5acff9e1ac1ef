"""Why a workload is not (fully) running, from what the cluster already says.

Two sources, read the way `kubectl describe` users read them:

* **pod symptoms** (`pod_symptoms`): the scheduler's `PodScheduled=False` condition (its
  message names what is missing: `0/12 nodes are available: 12 Insufficient nvidia.com/gpu`),
  the kubelet's container states (waiting: `ImagePullBackOff`, `CrashLoopBackOff`,
  `CreateContainerConfigError`...; terminated or last terminated: `OOMKilled`, a non-zero
  exit), the pod's own `status.reason` (`Evicted`...) and a Ready condition still False;
* **Warning Events** (`warning_event`) of the workload, its intermediate owners (Jobs,
  ReplicaSets, PodCliques...) and its pods: what controllers and the kubelet report and no
  status field carries (`FailedCreate` on a quota or an admission webhook, `FailedMount`...).

`diagnose` groups them by (reason, component) into the entries of the `diagnosis` field, most
severe first, and adds the one fact only the interpretation knows: a gang whose scheduled pods
are fewer than its minimum.  Nothing here reads the cluster: the live model computes pod
symptoms once per pod change and keeps Warning Events from its watch, a direct read lists them.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE = 1024  # characters kept of a message (a scheduler's message on a big cluster is long)
EVENT_MAX_AGE = 3600.0  # seconds: an Event last seen longer ago is history (the API server's default TTL)

# Container waiting reasons that stop a pod for good until someone acts (the others are steps of
# a normal start, or unknown: a warning).
_WAITING_ERRORS = {
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "PreCreateHookError",
    "PostStartHookError",
    "ErrImageInspect",
    "RegistryUnavailable",
}
_WAITING_NORMAL = {"ContainerCreating", "PodInitializing"}
# ErrImagePull and ImagePullBackOff alternate for one cause: one entry.
_SAME_AS = {"ErrImagePull": "ImagePullBackOff"}

# Warning Event reasons that mean something failed (the rest are warnings).
_EVENT_ERRORS = {
    "FailedCreate",
    "FailedMount",
    "FailedAttachVolume",
    "FailedScheduling",
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "Failed",
    "FailedCreatePodSandBox",
    "Evicted",
    "ProvisioningFailed",
    "FailedBinding",
    "FailedPostStartHook",
    "FailedValidation",
    "PodFailurePolicy",
    "MaxFailedIndexesExceeded",
    "FailedAdmission",
}
# Events on a pod that repeat what its state already says (kept out when the pod has an error).
_REPEATS_POD_STATE = {"FailedScheduling", "BackOff", "Failed"}

_INSUFFICIENT = re.compile(r"\bInsufficient ([A-Za-z0-9][A-Za-z0-9./_-]*)")
_UNBOUND_PVC = re.compile(
    r"unbound immediate PersistentVolumeClaims|persistentvolumeclaim \"[^\"]+\" "
    r"(?:not found|is being deleted|bound to non-existent)|PersistentVolumeClaim is not bound",
    re.IGNORECASE,
)

_SEVERITY = {"error": 0, "warning": 1}


@dataclass(frozen=True, slots=True)
class Symptom:
    """One problem of one pod."""

    severity: str  # error | warning
    reason: str
    message: str
    since: str | None  # RFC 3339, when the state began (as far as the pod says)
    insufficient: tuple[str, ...] = ()  # the resources the scheduler found short (Unschedulable)


@dataclass(frozen=True, slots=True)
class WarningEvent:
    """What is kept of one Warning Event."""

    uid: str  # of the object it is about (involvedObject / regarding)
    api_version: str
    kind: str
    name: str
    reason: str
    message: str
    count: int
    first: str | None
    last: str | None


NONE: tuple[Symptom, ...] = ()


def _cut(text: Any) -> str:
    s = str(text or "").strip()
    return s if len(s) <= MAX_MESSAGE else s[: MAX_MESSAGE - 1] + "…"


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # a condition without a type cannot be looked up by one
    return {t: c for c in status.get("conditions") or [] if isinstance(c, dict) and (t := c.get("type")) is not None}


def _claims(pod: dict[str, Any]) -> list[str]:
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        claim = (v or {}).get("persistentVolumeClaim") or {}
        if claim.get("claimName"):
            out.append(str(claim["claimName"]))
    return out


def _unschedulable(cond: dict[str, Any], pod: dict[str, Any]) -> Symptom:
    message = _cut(cond.get("message"))
    decisive = message.split(". preemption:")[0]  # the second half repeats the nodes for preemption
    since = cond.get("lastTransitionTime")
    if _UNBOUND_PVC.search(decisive):
        claims = _claims(pod)
        named = f" (claims: {', '.join(claims)})" if claims else ""
        return Symptom(
            "error", "PendingVolumeClaim", f"waiting for a volume claim to be bound{named}: {message}", since
        )
    wanting = tuple(sorted(set(_INSUFFICIENT.findall(decisive))))
    return Symptom("error", str(cond.get("reason") or "Unschedulable"), message, since, wanting)


def _container_symptoms(status: dict[str, Any], phase: str | None, since: str | None) -> list[Symptom]:
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        if not isinstance(cs, dict):
            continue
        name = cs.get("name") or "?"
        state, last = cs.get("state") or {}, (cs.get("lastState") or {}).get("terminated") or {}
        waiting, ended = state.get("waiting") or {}, state.get("terminated") or {}
        restarts = int(cs.get("restartCount") or 0) if str(cs.get("restartCount") or 0).isdigit() else 0
        again = f", restarted {restarts} time{'s' if restarts != 1 else ''}" if restarts else ""
        if ended.get("reason") == "OOMKilled" or (waiting and last.get("reason") == "OOMKilled"):
            when = ended.get("finishedAt") or last.get("finishedAt") or since
            out.append(
                Symptom(
                    "error",
                    "OOMKilled",
                    f"container {name} was killed for running out of memory "
                    f"(exit code {ended.get('exitCode', last.get('exitCode', 137))}{again})",
                    when,
                )
            )
            continue
        reason = waiting.get("reason")
        if reason and reason not in _WAITING_NORMAL:
            detail = _cut(waiting.get("message"))
            if reason == "CrashLoopBackOff" and last:
                detail = (
                    f"container {name} keeps exiting (last: {last.get('reason') or 'exit'} with code "
                    f"{last.get('exitCode')}{again})"
                )
            out.append(
                Symptom(
                    "error" if reason in _WAITING_ERRORS else "warning",
                    _SAME_AS.get(reason, reason),
                    detail or f"container {name} is waiting: {reason}",
                    since,
                )
            )
            continue
        code = ended.get("exitCode")
        if phase == "Failed" and ended and code not in (0, None):
            out.append(
                Symptom(
                    "error",
                    str(ended.get("reason") or "Error"),
                    _cut(ended.get("message")) or f"container {name} exited with code {code}",
                    ended.get("finishedAt") or since,
                )
            )
    return out


def pod_symptoms(pod: dict[str, Any]) -> tuple[Symptom, ...]:
    """What keeps this pod from running and being ready (empty: nothing, or it is on its way)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if not isinstance(status, dict) or meta.get("deletionTimestamp"):
        return NONE
    phase = status.get("phase")
    if phase == "Succeeded":
        return NONE
    conds = _conditions(status)
    sched = conds.get("PodScheduled")
    if sched and sched.get("status") == "False":
        return (_unschedulable(sched, pod),)
    ready = conds.get("Ready") or {}
    since = ready.get("lastTransitionTime") or status.get("startTime") or meta.get("creationTimestamp")
    out = []
    if status.get("reason") and phase in ("Failed", "Pending", "Unknown"):
        out.append(
            Symptom(
                "error" if phase == "Failed" else "warning",
                str(status["reason"]),
                _cut(status.get("message")) or f"pod is {phase}: {status['reason']}",
                since,
            )
        )
    out += _container_symptoms(status, phase, since)
    if not out and phase == "Running" and ready.get("status") == "False":
        out.append(
            Symptom(
                "warning",
                str(ready.get("reason") or "NotReady"),
                _cut(ready.get("message")) or "the pod is running but not ready",
                since,
            )
        )
    return tuple(out) if out else NONE


def seconds(ts: str | None) -> float:
    """An RFC 3339 time as epoch seconds (0: none, or unreadable)."""
    if not ts:
        return 0.0
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def recent(ev: WarningEvent, max_age: float = EVENT_MAX_AGE, now: float | None = None) -> bool:
    return seconds(ev.last) >= (now if now is not None else time.time()) - max_age


def warning_event(ev: dict[str, Any]) -> WarningEvent | None:
    """A core/v1 Warning Event as kept (None: not a Warning, or about no object)."""
    if ev.get("type") != "Warning":
        return None
    about = ev.get("involvedObject") or ev.get("regarding") or {}
    if not about.get("uid"):
        return None
    series = ev.get("series") or {}
    last = (
        series.get("lastObservedTime")
        or ev.get("lastTimestamp")
        or ev.get("eventTime")
        or (ev.get("metadata") or {}).get("creationTimestamp")
    )
    first = ev.get("firstTimestamp") or ev.get("eventTime") or last
    count = series.get("count") or ev.get("count") or 1
    return WarningEvent(
        str(about["uid"]),
        sys.intern(str(about.get("apiVersion") or "")),
        str(about.get("kind") or ""),
        str(about.get("name") or ""),
        str(ev.get("reason") or "Warning"),
        _cut(ev.get("message") or ev.get("note")),
        int(count) if isinstance(count, int) else 1,
        first,
        last,
    )


@dataclass(slots=True)
class PodFacts:
    """A pod as `diagnose` reads it."""

    uid: str
    name: str
    component: str | None
    symptoms: tuple[Symptom, ...]
    scheduled: bool
    chain: frozenset[str] = frozenset()  # the UIDs along its controller chain (its owners)
    instance: str | None = None  # the component instance it runs in (a JobSet's replicated job)


def pod_facts(pod: dict[str, Any], chain: frozenset[str] = frozenset()) -> PodFacts:
    meta = pod.get("metadata") or {}
    return PodFacts(
        str(meta.get("uid") or ""), str(meta.get("name") or ""), None, pod_symptoms(pod), scheduled(pod), chain
    )


@dataclass(frozen=True, slots=True)
class Context:
    """What `explain` needs of a live interpretation (small: the model keeps it with its answer)."""

    components: dict[str, tuple[str, str | None]]  # pod name -> (component, instance)
    phase: str | None
    ready: int | None
    desired: int | None
    gang_min: int | None


def context_of(result: dict[str, Any]) -> Context:
    live, st, totals = result.get("live") or {}, result.get("status"), result.get("totals")
    return Context(
        {r["name"]: (r["component"], r.get("instance")) for r in live.get("pods") or []},
        st["phase"] if st else None,
        live.get("ready"),
        totals["pods"] if totals else None,
        gang_minimum(result),
    )


def explain(ctx: Context, pods: list[PodFacts], events: list[WarningEvent]) -> list[dict[str, Any]]:
    """The diagnosis of a live interpretation: pods placed on their components, and each event
    on the component of the pods under the object it is about (when they share one)."""
    under: dict[str, set[str | None]] = {}
    for p in pods:
        p.component, p.instance = ctx.components.get(p.name, (None, None))
        for u in p.chain:
            under.setdefault(u, set()).add(p.component)
    placed = [(e, next(iter(under[e.uid])) if len(under.get(e.uid, ())) == 1 else None) for e in events]
    return diagnose(pods, placed, phase=ctx.phase, ready=ctx.ready, desired=ctx.desired, gang_min=ctx.gang_min)


def scheduled(pod: dict[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def settled(phase: str | None, ready: int | None, desired: int | None) -> bool:
    """Nothing to explain: finished, suspended on purpose, or running with every pod ready."""
    if phase in ("Completed", "Suspended"):
        return True
    return phase == "Running" and desired is not None and ready is not None and ready >= desired


def diagnose(
    pods: Iterable[PodFacts],
    events: Iterable[tuple[WarningEvent, str | None]],
    *,
    phase: str | None,
    ready: int | None,
    desired: int | None,
    gang_min: int | None = None,
) -> list[dict[str, Any]]:
    """The `diagnosis` entries: grouped by (severity, reason, component), most severe first, then
    by how many pods they concern.  `events` come with the component they concern (or None)."""
    if settled(phase, ready, desired):
        return []
    groups: dict[tuple[str, str, str | None], dict[str, Any]] = {}

    def add(
        severity: str,
        reason: str,
        component: str | None,
        message: str,
        since: str | None,
        pod: PodFacts | None,
        insufficient: tuple[str, ...] = (),
    ) -> None:
        g = groups.setdefault(
            (severity, reason, component),
            {"messages": {}, "pods": set(), "since": None, "insufficient": set(), "instances": set()},
        )
        seen = g["messages"].get(message)
        g["messages"][message] = (seen[0] + 1 if seen else 1, max(seen[1], since or "") if seen else since or "")
        if pod is not None:
            g["pods"].add(pod.uid)
            if pod.instance is not None:
                g["instances"].add(pod.instance)
        if since and (g["since"] is None or since < g["since"]):
            g["since"] = since
        g["insufficient"].update(insufficient)

    troubled: set[str] = set()
    pods = list(pods)
    for p in pods:
        for s in p.symptoms:
            add(s.severity, s.reason, p.component, s.message, s.since, p, s.insufficient)
            if s.severity == "error":
                troubled.add(p.uid)
    by_uid = {p.uid: p for p in pods}
    for ev, component in events:
        on_pod = by_uid.get(ev.uid)
        if on_pod is not None and on_pod.uid in troubled and ev.reason in _REPEATS_POD_STATE:
            continue
        where = "" if on_pod is not None else f"{ev.kind} {ev.name}: " if ev.kind else ""
        add(
            "error" if ev.reason in _EVENT_ERRORS else "warning",
            ev.reason,
            component,
            where + ev.message,
            ev.last or ev.first,
            on_pod,
        )
    if gang_min and gang_min > 0 and pods:  # members waiting (no pod at all: nothing is waiting yet)
        placed = sum(1 for p in pods if p.scheduled)
        if placed < gang_min:
            exist = len(pods)
            detail = (
                f"only {exist} of the {gang_min} pods exist"
                if exist < gang_min
                else f"{exist - placed} of {exist} pods are not scheduled yet"
            )
            add(
                "warning",
                "GangMinimumNotMet",
                None,
                f"{placed} of the {gang_min} pods the gang needs to start together are scheduled ({detail})",
                None,
                None,
            )
    out = []
    for (severity, reason, component), g in groups.items():
        # the message most pods share; among equals, the latest
        message = max(g["messages"].items(), key=lambda kv: (kv[1][0], kv[1][1]))[0]
        entry: dict[str, Any] = {
            "severity": severity,
            "reason": reason,
            "message": message,
            "component": component,
            "pods": len(g["pods"]),
            "since": g["since"],
        }
        if g["instances"]:
            entry["instances"] = sorted(g["instances"])
        if g["insufficient"]:
            entry["insufficient"] = sorted(g["insufficient"])
        out.append(entry)
    out.sort(key=lambda e: (_SEVERITY[e["severity"]], -e["pods"], e["reason"], e["component"] or ""))
    return out


def gang_minimum(result: dict[str, Any]) -> int | None:
    """The pods a workload's gang needs to start together (None: no gang)."""
    gang = result.get("gang") or {}
    if not isinstance(gang, dict):
        return None
    pg = gang.get("podGroup")
    if isinstance(pg, dict):
        return pg.get("minAvailable") or sum((s.get("minAvailable") or 0) for s in pg.get("subGroups") or []) or None
    if gang.get("podGroups"):
        return sum((m.get("minAvailable") or 0) for g in gang["podGroups"] for m in g.get("members") or []) or None
    return None


def row_reason(
    result: dict[str, Any],
    pods: Callable[[], list[PodFacts]],
    events: Callable[[], list[WarningEvent]],
    *,
    ready: int | None,
    gang_min: int | None,
) -> str | None:
    """A list row's `reason`: the top diagnosis entry of an interpretation without pods (its
    phase and desired count), its pods and Events, without placing pods on components.  Pods
    and Events are gathered only for a workload that is not settled (most rows are)."""
    st, totals = result.get("status"), result.get("totals")
    phase, desired = st["phase"] if st else None, totals["pods"] if totals else None
    if settled(phase, ready, desired):
        return None
    entries = diagnose(
        pods(),
        [(e, None) for e in events()],
        phase=phase,
        ready=ready,
        desired=desired,
        gang_min=gang_min,
    )
    return entries[0]["reason"] if entries else None
