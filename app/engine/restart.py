"""Restart (`POST .../restart`, `wlmap restart`): what `kubectl rollout restart` writes, through the
definition's own pod paths.

A restart is the annotation `kubectl.kubernetes.io/restartedAt: <now, RFC 3339>` merged into
every pod of the workload (update.py's `set` of annotations: each component's pod template, or
pod metadata), so the controllers that roll their pods when the pod template changes replace
them.  Many do not: a Job's template is immutable, a JobSet, a training job or a RayCluster
keeps its running pods whatever the template says, a ReplicaSet replaces only pods that go
away.  Writing the annotation there would change nothing the caller can see, so it is refused.

Which kinds roll is data, not code: a definition marks it with the annotation
`workload-map.dev/restart: rollout` (docs/definitions.md, "Restart"); without it a restart is
refused, the definition named.  A ConfigMap definition can mark its own kind the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..karta.load import Definition

MARK = "workload-map.dev/restart"  # its value "rollout": the controller rolls pods on a template change
ROLLOUT = "rollout"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # what kubectl rollout restart writes


class NotRestartable(Exception):
    """The definition does not say its kind's controller rolls pods on a template change."""


def restartable(d: Definition) -> bool:
    ann = (d.raw.get("metadata") or {}).get("annotations") or {}
    return ann.get(MARK) == ROLLOUT


def restart_set(d: Definition, now: datetime | None = None) -> dict[str, Any]:
    """The `set` (update.py) that restarts a workload of `d`'s kind; NotRestartable when its
    controller would not replace the pods."""
    if not restartable(d):
        kind = d.gvk[2] if d.gvk else "this kind"
        raise NotRestartable(
            f"{kind} cannot be restarted: its controller does not replace running pods when their template "
            f"changes (the definition {d.name} is not marked {MARK}: {ROLLOUT})"
        )
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"annotations": {RESTARTED_AT: stamp}}
