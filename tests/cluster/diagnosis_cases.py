"""Pod statuses and Events as the scheduler, the kubelet and the controllers write them, for the
diagnosis tests (the rules in isolation, and on a real API server).

The texts follow the components' own formats: kube-scheduler's FitError message (`0/N nodes are
available: ...` and its `preemption:` half), the kubelet's container waiting reasons and
messages, and a job controller's FailedCreate after a ResourceQuota admission refusal.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

T0 = "2026-12-01T10:00:00Z"
T1 = "2026-12-01T10:05:00Z"

UNSCHEDULABLE_MSG = ("0/12 nodes are available: 12 Insufficient nvidia.com/gpu. preemption: 0/12 nodes are "
                     "available: 12 No preemption victims found for incoming pod.")
PVC_MSG = ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are "
           "available: 3 Preemption is not helpful for scheduling.")
QUOTA_MSG = ('Error creating: pods "stuck-coordinator-0-0-x7k2p" is forbidden: exceeded quota: gpu-quota, '
             "requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, limited: "
             "requests.nvidia.com/gpu=16")
IMAGE = "nvcr.io/nvidia/pytorch:99.99-py3"


def unschedulable(message: str = UNSCHEDULABLE_MSG) -> dict[str, Any]:
    return {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
         "lastTransitionTime": T0, "lastProbeTime": None}], "qosClass": "Burstable"}


def _started(container: str, state: dict[str, Any], phase: str = "Pending", last: dict[str, Any] | None = None,
             restarts: int = 0) -> dict[str, Any]:
    cs = {"name": container, "image": IMAGE, "imageID": "", "ready": False, "started": False,
          "restartCount": restarts, "state": state, "lastState": last or {}}
    return {"phase": phase, "hostIP": "10.0.0.7", "podIP": "10.244.1.9", "startTime": T0, "conditions": [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": T0},
        {"type": "Initialized", "status": "True", "lastTransitionTime": T0},
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
         "message": f"containers with unready status: [{container}]", "lastTransitionTime": T0},
        {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
         "message": f"containers with unready status: [{container}]", "lastTransitionTime": T0},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": T0}],
        "containerStatuses": [cs]}


def image_pull_backoff(container: str = "trainer") -> dict[str, Any]:
    return _started(container, {"waiting": {"reason": "ImagePullBackOff",
                                            "message": f'Back-off pulling image "{IMAGE}"'}})


def oom_crash_loop(container: str = "trainer") -> dict[str, Any]:
    return _started(container, {"waiting": {"reason": "CrashLoopBackOff",
                                            "message": "back-off 2m40s restarting failed container=trainer "
                                                       "pod=stuck-trainer-1-0_wl-diag(0b9a)"}},
                    phase="Running", restarts=4,
                    last={"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": T0, "finishedAt": T1,
                                         "containerID": "containerd://4f1e"}})


def crash_loop(container: str = "trainer") -> dict[str, Any]:
    return _started(container, {"waiting": {"reason": "CrashLoopBackOff",
                                            "message": "back-off 5m0s restarting failed container"}},
                    phase="Running", restarts=7,
                    last={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": T0, "finishedAt": T1}})


def now(ago: float = 0.0) -> str:
    return (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(name: str, namespace: str, about: dict[str, Any], reason: str, message: str,
          component: str, count: int = 1, ago: float = 0.0) -> dict[str, Any]:
    """A core/v1 Warning Event as a controller's recorder writes it, last seen `ago` seconds ago."""
    meta = about["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"apiVersion": about["apiVersion"], "kind": about["kind"], "name": meta["name"],
                               "namespace": namespace, "uid": meta["uid"],
                               "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message, "type": "Warning", "count": count,
            "firstTimestamp": now(ago + 60), "lastTimestamp": now(ago), "source": {"component": component},
            "reportingComponent": component, "reportingInstance": ""}
