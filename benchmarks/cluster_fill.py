"""Fill a real kube-apiserver with what a JobSet controller, the Job controller and kubelets leave
behind: per JobSet, the JobSet (status through /status), its Jobs (owned by it, status through
/status) and their pods (owned by the Jobs, scheduled on a node, status written as a kubelet
writes it).  Used by `benchmarks/cluster_bench.py`; can also be run alone against a running
ApiServer directory (see `--help`).

Objects are named deterministically (`bench-07/llm-00042`, `llm-00042-trainer-1`,
`llm-00042-trainer-1-3-x7k2q`), so an interrupted fill resumes: an object that exists (409) is
read back and its uid used.  Writes go over keep-alive HTTPS connections, one per thread, with
the User-Agent of the component that makes them (kubectl, the JobSet controller `manager`,
`kube-controller-manager`, `kubelet`), so `managedFields` look like a real cluster's.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import queue
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.cluster.apiserver import TOKENS, ApiServer  # noqa: E402
from tests.cluster.kubeobjects import Kubectl, crd, service_rbac  # noqa: E402

SERVICE_USER, SERVICE_NS = "wlmap-service", "wlmap-system"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
RJ = "trainer"  # the one replicated job

UA_KUBECTL = "kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19"
UA_JOBSET = "manager/v0.0.0 (linux/amd64) kubernetes/$Format"  # the JobSet controller binary
UA_KCM = "kube-controller-manager/v1.20.2 (linux/amd64) kubernetes/faecb19/system:serviceaccount:kube-system:job-controller"
UA_KUBELET = "kubelet/v1.20.2 (linux/amd64) kubernetes/faecb19"
UA_SCHED = "kai-scheduler/v0.0.0 (linux/amd64) kubernetes/$Format"

FILL_MARKER = "cluster-bench-fill.json"
FILL_VERSION = 1


@dataclass(frozen=True)
class FillSpec:
    workloads: int = 1000
    namespaces: int = 20
    pods_per_job: int = 4
    jobs_per_jobset: int = 2

    def as_dict(self) -> dict[str, int]:
        return {"version": FILL_VERSION, "workloads": self.workloads, "namespaces": self.namespaces,
                "podsPerJob": self.pods_per_job, "jobsPerJobSet": self.jobs_per_jobset}

    def namespace(self, i: int) -> str:
        return f"bench-{i % self.namespaces:02d}"

    def name(self, i: int) -> str:
        return f"llm-{i:05d}"

    def workload_refs(self) -> list[tuple[str, str]]:
        return [(self.namespace(i), self.name(i)) for i in range(self.workloads)]

    def namespaces_list(self) -> list[str]:
        return sorted({self.namespace(i) for i in range(min(self.workloads, self.namespaces) or 1)})


# -- helpers ------------------------------------------------------------------------------

def _h(*parts: object, n: int = 64) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


def _suffix(*parts: object) -> str:
    """A 5-character generateName suffix (the API server's alphabet), deterministic."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    v = int(_h(*parts, n=16), 16)
    return "".join(alphabet[(v >> (5 * k)) % len(alphabet)] for k in range(5))


def _uuidish(*parts: object) -> str:
    h = _h(*parts, n=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _ts(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def pod_kind(ns: str, name: str, job_idx: int, pod_idx: int) -> str:
    """`running` for 49 of 50 pods; the others `unschedulable` (no node) or `creating` (image pull)."""
    v = int(_h("state", ns, name, job_idx, pod_idx, n=8), 16)
    if v % 50:
        return "running"
    return "unschedulable" if (v // 50) % 2 else "creating"


# -- objects ------------------------------------------------------------------------------

def _pod_template_spec(name: str, spec: FillSpec, gpus: int) -> dict[str, Any]:
    """The pod template the user writes (inside the JobSet, copied into the Job)."""
    return {
        "restartPolicy": "Never",
        "schedulerName": "kai-scheduler",
        "priorityClassName": "train",
        "subdomain": name,
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "command": ["torchrun"],
             "args": ["--nnodes=$(NNODES)", f"--nproc-per-node={gpus}", "--node-rank=$(JOB_COMPLETION_INDEX)",
                      "/workspace/train.py"],
             "env": [{"name": "NCCL_DEBUG", "value": "WARN"},
                     {"name": "NNODES", "value": str(spec.pods_per_job * spec.jobs_per_jobset)},
                     {"name": "MASTER_ADDR", "value": f"{name}-{RJ}-0-0.{name}"},
                     {"name": "MASTER_PORT", "value": "29500"},
                     {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
             "resources": {"requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": str(gpus)},
                           "limits": {"memory": "256Gi", "nvidia.com/gpu": str(gpus)}},
             "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                              {"name": "data", "mountPath": "/data", "readOnly": True}],
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "imagePullPolicy": "IfNotPresent"},
            {"name": "metrics-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04",
             "env": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                     ],
             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "imagePullPolicy": "IfNotPresent"},
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "pretrain-data", "readOnly": True}}],
    }


GPUS_PER_POD = 4


def jobset(ns: str, name: str, spec: FillSpec) -> dict[str, Any]:
    """The JobSet as `kubectl apply` creates it (with the last-applied annotation)."""
    labels = {"kueue.x-k8s.io/queue-name": ns, "app.kubernetes.io/name": name}
    body = {
        "apiVersion": JOBSET_API, "kind": "JobSet",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "failurePolicy": {"maxRestarts": 3},
            "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [RJ]},
            "suspend": False,
            "replicatedJobs": [{
                "name": RJ, "replicas": spec.jobs_per_jobset,
                "template": {"metadata": {}, "spec": {
                    "parallelism": spec.pods_per_job, "completions": spec.pods_per_job, "backoffLimit": 0,
                    "completionMode": "Indexed", "suspend": False,
                    "template": {"metadata": {"labels": {"app": name, "role": RJ}},
                                 "spec": _pod_template_spec(name, spec, GPUS_PER_POD)}}}}],
        },
    }
    body["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": compact(body) + "\n"}
    return body


def _jobset_labels(js: dict[str, Any], job_idx: int, spec: FillSpec) -> dict[str, str]:
    name, ns = js["metadata"]["name"], js["metadata"]["namespace"]
    job_name = f"{name}-{RJ}-{job_idx}"
    return {"jobset.sigs.k8s.io/jobset-name": name,
            "jobset.sigs.k8s.io/replicatedjob-name": RJ,
            "jobset.sigs.k8s.io/replicatedjob-replicas": str(spec.jobs_per_jobset),
            "jobset.sigs.k8s.io/job-index": str(job_idx),
            "jobset.sigs.k8s.io/restart-attempt": "0",
            "jobset.sigs.k8s.io/job-key": hashlib.sha1(f"{ns}/{job_name}".encode()).hexdigest()}


def job(js: dict[str, Any], job_idx: int, spec: FillSpec) -> dict[str, Any]:
    """A child Job as the JobSet controller builds it (constructJob)."""
    name, ns = js["metadata"]["name"], js["metadata"]["namespace"]
    rj = js["spec"]["replicatedJobs"][0]
    jl = _jobset_labels(js, job_idx, spec)
    tmpl = json.loads(compact(rj["template"]["spec"]["template"]))
    tmpl["metadata"]["labels"] = {**tmpl["metadata"].get("labels", {}), **jl}
    tmpl["metadata"]["annotations"] = dict(jl)
    tmpl["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}]}]}}}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"{name}-{RJ}-{job_idx}", "namespace": ns,
                     "labels": dict(jl), "annotations": dict(jl),
                     "ownerReferences": [{"apiVersion": JOBSET_API, "kind": "JobSet", "name": name,
                                          "uid": js["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {**{k: v for k, v in rj["template"]["spec"].items() if k != "template"}, "template": tmpl},
    }


def _node(ns: str, name: str, job_idx: int, pod_idx: int) -> str:
    return f"gpu-node-{int(_h('node', ns, name, job_idx, pod_idx, n=8), 16) % 4096:04d}"


def pod(jb: dict[str, Any], js: dict[str, Any], job_idx: int, pod_idx: int) -> dict[str, Any]:
    """A pod as the Job controller creates it (Indexed completion mode), already bound to a node
    (there is no scheduler: the binding is in the create) unless it is to stay unschedulable."""
    ns, js_name, job_name = js["metadata"]["namespace"], js["metadata"]["name"], jb["metadata"]["name"]
    t = jb["spec"]["template"]
    uid = jb["metadata"]["uid"]
    labels = {**t["metadata"]["labels"], "controller-uid": uid, "job-name": job_name,
              "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": job_name,
              "batch.kubernetes.io/job-completion-index": str(pod_idx)}
    annotations = {**t["metadata"].get("annotations", {}), "batch.kubernetes.io/job-completion-index": str(pod_idx)}
    pspec = json.loads(compact(t["spec"]))
    pspec["hostname"] = f"{job_name}-{pod_idx}"
    pspec["serviceAccountName"] = "default"
    pspec["serviceAccount"] = "default"
    pspec["enableServiceLinks"] = True
    pspec["securityContext"] = {}
    pspec["preemptionPolicy"] = "PreemptLowerPriority"
    # (no projected token volume: this server runs without the ServiceAccount admission plugin)
    for c in pspec["containers"]:
        if c["name"] == "trainer":
            c["env"].append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
    if pod_kind(ns, js_name, job_idx, pod_idx) != "unschedulable":
        pspec["nodeName"] = _node(ns, js_name, job_idx, pod_idx)
    gen = f"{job_name}-{pod_idx}-"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": gen + _suffix("pod", ns, job_name, pod_idx), "generateName": gen, "namespace": ns,
                     "labels": labels, "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": uid,
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": pspec,
    }


def pod_status(p: dict[str, Any], kind: str, now: datetime, ready: bool = True) -> dict[str, Any]:
    """Status as a kubelet writes it (or the scheduler, for an unschedulable pod)."""
    ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
    start = now - timedelta(seconds=300 + int(_h("age", ns, name, n=4), 16) % 3600)
    if kind == "unschedulable":
        return {"phase": "Pending", "qosClass": "Burstable", "conditions": [
            {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": _ts(start),
             "reason": "Unschedulable", "message": "0/512 nodes are available: 512 Insufficient nvidia.com/gpu."}]}
    h = int(_h("ip", ns, name, n=8), 16)
    host_ip, pod_ip = f"10.0.{(h >> 8) % 256}.{h % 254 + 1}", f"10.244.{(h >> 16) % 256}.{(h >> 4) % 254 + 1}"
    running = kind == "running"
    t_ready = start + timedelta(seconds=40)

    def cstatus(c: dict[str, Any]) -> dict[str, Any]:
        image = c["image"]
        digest = _h("img", image)
        out: dict[str, Any] = {"name": c["name"], "image": image, "restartCount": 0, "lastState": {},
                               "ready": running and ready, "started": running}
        if running:
            out["state"] = {"running": {"startedAt": _ts(start + timedelta(seconds=35))}}
            out["imageID"] = image.rsplit(":", 1)[0] + "@sha256:" + digest
            out["containerID"] = "containerd://" + _h("ctr", ns, name, c["name"])
        else:
            out["state"] = {"waiting": {"reason": "ContainerCreating"}}
            out["imageID"] = ""
        return out

    ok = "True" if running and ready else "False"
    not_ready = {} if ok == "True" else {
        "reason": "ContainersNotReady",
        "message": "containers with unready status: [" + " ".join(c["name"] for c in p["spec"]["containers"]) + "]"}
    return {
        "phase": "Running" if running else "Pending", "qosClass": "Burstable",
        "hostIP": host_ip, "podIP": pod_ip if running else None, "podIPs": [{"ip": pod_ip}] if running else None,
        "startTime": _ts(start),
        "conditions": [
            {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": _ts(start)},
            {"type": "Ready", "status": ok, "lastProbeTime": None, "lastTransitionTime": _ts(t_ready), **not_ready},
            {"type": "ContainersReady", "status": ok, "lastProbeTime": None, "lastTransitionTime": _ts(t_ready),
             **not_ready},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": _ts(start)}],
        "containerStatuses": [cstatus(c) for c in p["spec"]["containers"]],
    }


def ready_patch(ready: bool, when: datetime) -> dict[str, Any]:
    """A kubelet-style strategic merge patch flipping Ready/ContainersReady (readiness probe)."""
    s = "True" if ready else "False"
    extra = ({"reason": None, "message": None} if ready else
             {"reason": "ContainersNotReady", "message": "containers with unready status: [trainer]"})
    return {"status": {"conditions": [
        {"type": "Ready", "status": s, "lastTransitionTime": _ts(when), **extra},
        {"type": "ContainersReady", "status": s, "lastTransitionTime": _ts(when), **extra}]}}


def job_status(n_pods: int, n_ready: int, start: datetime) -> dict[str, Any]:
    return {"startTime": _ts(start), "active": n_pods, "ready": n_ready, "succeeded": 0, "failed": 0,
            "uncountedTerminatedPods": {}}


def jobset_status(jobs_ready: int, jobs: int, when: datetime) -> dict[str, Any]:
    return {"restarts": 0, "restartsCountTowardsMax": 0,
            "conditions": [{"type": "StartupPolicyCompleted", "status": "True", "reason": "AllJobsReady",
                            "message": "All replicated jobs are ready", "lastTransitionTime": _ts(when)}],
            "replicatedJobsStatus": [{"name": RJ, "ready": jobs_ready, "active": jobs, "succeeded": 0, "failed": 0,
                                      "suspended": 0}]}


# -- a keep-alive client --------------------------------------------------------------------

class ApiError(RuntimeError):
    def __init__(self, status: int, body: bytes, what: str):
        super().__init__(f"{what}: HTTP {status}: {body[:300]!r}")
        self.status = status


class Client:
    """One keep-alive HTTPS connection to the API server (use one per thread)."""

    def __init__(self, server: ApiServer, token: str | None = None):
        self.host, self.port = "127.0.0.1", server.port
        self.ctx = ssl.create_default_context(cafile=str(server.ca))
        self.token = token or TOKENS["admin"][0]
        self.conn: http.client.HTTPSConnection | None = None
        self.requests = 0

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def raw(self, method: str, path: str, body: Any = None, *, ctype: str = "application/json",
            agent: str = UA_KUBECTL, accept: str = "application/json") -> tuple[int, bytes]:
        data = None if body is None else (body if isinstance(body, bytes) else compact(body).encode())
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept, "User-Agent": agent}
        if data is not None:
            headers["Content-Type"] = ctype
        delay = 0.1
        for attempt in range(8):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                out = r.read()
                self.requests += 1
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 7:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            if r.status == 429 or r.status >= 500:
                time.sleep(float(r.getheader("Retry-After") or delay))
                delay = min(delay * 2, 5)
                continue
            return r.status, out
        return r.status, out

    def call(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, out = self.raw(method, path, body, **kw)
        if status >= 400:
            raise ApiError(status, out, f"{method} {path}")
        return json.loads(out) if out else None

    def create(self, collection: str, obj: dict[str, Any], agent: str) -> tuple[dict[str, Any], bool]:
        """POST, or read back the object when it exists already (a resumed fill)."""
        status, out = self.raw("POST", collection, obj, agent=agent)
        if status == 409:
            return self.call("GET", f"{collection}/{obj['metadata']['name']}"), False
        if status >= 400:
            raise ApiError(status, out, f"POST {collection}")
        return json.loads(out), True

    def status(self, path: str, status: dict[str, Any], agent: str, strategic: bool = True) -> dict[str, Any]:
        ctype = "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        return self.call("PATCH", path + "/status", {"status": status}, ctype=ctype, agent=agent)


def jobset_path(ns: str, name: str | None = None) -> str:
    return f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets" + (f"/{name}" if name else "")


def jobs_path(ns: str) -> str:
    return f"/apis/batch/v1/namespaces/{ns}/jobs"


def pods_path(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


# -- the fill -----------------------------------------------------------------------------

def prepare(server: ApiServer, spec: FillSpec) -> None:
    """CRD, namespaces, the service user's RBAC, the PriorityClass the pods name."""
    kc = Kubectl(server)
    try:
        kc.create(crd("jobset.x-k8s.io", "JobSet", "jobsets", ["v1alpha2"]))
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise
    kc.wait_crds(["jobsets.jobset.x-k8s.io"])
    for ns in [SERVICE_NS, *spec.namespaces_list()]:
        kc.ensure_namespace(ns)
    for doc in service_rbac(SERVICE_USER, SERVICE_NS):
        kc.apply(doc)
    try:
        server.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"},
            "value": 1000, "preemptionPolicy": "PreemptLowerPriority", "description": "training jobs"})
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise


@dataclass
class FillResult:
    seconds: float = 0.0
    creates: int = 0
    existing: int = 0
    status_writes: int = 0
    requests: int = 0
    pods_not_ready: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return self.creates + self.status_writes


def fill_one(c: Client, ns: str, name: str, spec: FillSpec, now: datetime, res: FillResult, lock: threading.Lock) -> None:
    js, made = c.create(jobset_path(ns), jobset(ns, name, spec), UA_KUBECTL)
    creates, existing, status_writes, not_ready = int(made), int(not made), 0, 0
    jobs_ready = 0
    for j in range(spec.jobs_per_jobset):
        jb, made = c.create(jobs_path(ns), job(js, j, spec), UA_JOBSET)
        creates += made
        existing += not made
        ready = 0
        for k in range(spec.pods_per_job):
            p, made = c.create(pods_path(ns), pod(jb, js, j, k), UA_KCM)
            creates += made
            existing += not made
            kind = pod_kind(ns, name, j, k)
            st = pod_status(p, kind, now)
            c.status(f"{pods_path(ns)}/{p['metadata']['name']}", st, UA_SCHED if kind == "unschedulable" else UA_KUBELET)
            status_writes += 1
            ready += kind == "running"
            not_ready += kind != "running"
        c.status(f"{jobs_path(ns)}/{jb['metadata']['name']}", job_status(spec.pods_per_job, ready, now - timedelta(minutes=10)),
                 UA_KCM)
        status_writes += 1
        jobs_ready += ready == spec.pods_per_job
    c.status(jobset_path(ns, name), jobset_status(jobs_ready, spec.jobs_per_jobset, now - timedelta(minutes=9)),
             UA_JOBSET, strategic=False)
    status_writes += 1
    with lock:
        res.creates += creates
        res.existing += existing
        res.status_writes += status_writes
        res.pods_not_ready += not_ready


def fill(server: ApiServer, spec: FillSpec, threads: int = 16,
         progress: Callable[[str], None] | None = print, progress_every: float = 15.0) -> FillResult:
    """Create every JobSet chain; JobSets are spread over `threads` threads (one JobSet's objects
    in one thread, in the order the controllers create them)."""
    prepare(server, spec)
    todo: queue.Queue[int] = queue.Queue()
    for i in range(spec.workloads):
        todo.put(i)
    res, lock = FillResult(), threading.Lock()
    now = datetime.now(UTC)
    clients: list[Client] = []

    def worker() -> None:
        c = Client(server)
        clients.append(c)
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                break
            try:
                fill_one(c, spec.namespace(i), spec.name(i), spec, now, res, lock)
            except Exception as e:  # noqa: BLE001 - reported, and the fill goes on
                with lock:
                    res.errors.append(f"{spec.namespace(i)}/{spec.name(i)}: {e}")
        c.close()

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    last = t0
    while any(t.is_alive() for t in ts):
        for t in ts:
            t.join(0.5)
        if progress and time.perf_counter() - last >= progress_every:
            last = time.perf_counter()
            el = last - t0
            progress(f"  fill: {res.creates + res.existing} objects, {res.writes} writes in {el:.0f} s "
                     f"({res.writes / el:.0f} writes/s), {todo.qsize()} JobSets to go")
    res.seconds = time.perf_counter() - t0
    res.requests = sum(c.requests for c in clients)
    return res


def object_sizes(server: ApiServer, spec: FillSpec, samples: int = 5) -> dict[str, dict[str, float]]:
    """Bytes of compact JSON of objects as the API server returns them (with managedFields)."""
    c = Client(server)
    sizes: dict[str, list[int]] = {"jobset": [], "job": [], "pod": []}
    step = max(1, spec.workloads // samples)
    for i in range(0, spec.workloads, step)[:samples]:
        ns, name = spec.namespace(i), spec.name(i)
        sizes["jobset"].append(len(compact(c.call("GET", jobset_path(ns, name)))))
        sel = f"jobset.sigs.k8s.io/jobset-name={name}"
        for j in c.call("GET", f"{jobs_path(ns)}?labelSelector={sel}")["items"][:1]:
            sizes["job"].append(len(compact({"apiVersion": "batch/v1", "kind": "Job", **j})))
        for p in c.call("GET", f"{pods_path(ns)}?labelSelector={sel}")["items"]:
            sizes["pod"].append(len(compact({"apiVersion": "v1", "kind": "Pod", **p})))
    c.close()
    return {k: {"mean": sum(v) / len(v), "min": min(v), "max": max(v), "n": len(v)} for k, v in sizes.items() if v}


def run_dir(reuse_dir: Path | None, spec: FillSpec, prefix: str) -> tuple[Path, dict[str, Any] | None]:
    """The data directory of a benchmark run (`--reuse-dir`, else a new temporary one) and its
    fill marker; a directory that holds another fill is refused."""
    run = reuse_dir.resolve() if reuse_dir else Path(tempfile.mkdtemp(prefix=prefix))
    run.mkdir(parents=True, exist_ok=True)
    marker = read_marker(run)
    if marker and marker.get("complete") and {k: v for k, v in marker.items() if k in spec.as_dict()} != spec.as_dict():
        raise SystemExit(f"{run} holds another fill ({marker}); use a different --reuse-dir or the same fill options")
    return run, marker


def read_marker(run: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run / FILL_MARKER).read_text())
    except (OSError, ValueError):
        return None


def write_marker(run: Path, spec: FillSpec, complete: bool, result: FillResult | None = None) -> None:
    doc: dict[str, Any] = {**spec.as_dict(), "complete": complete}
    if result is not None:
        doc.update({"seconds": round(result.seconds, 1), "writes": result.writes, "creates": result.creates})
    (run / FILL_MARKER).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="fill a running test ApiServer (use cluster_bench.py normally)")
    ap.add_argument("--workloads", type=int, default=30)
    ap.add_argument("--namespaces", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16)
    a = ap.parse_args()
    srv = ApiServer().start()
    try:
        sp = FillSpec(a.workloads, a.namespaces)
        r = fill(srv, sp, a.threads)
        print(f"{r.writes} writes in {r.seconds:.1f} s = {r.writes / r.seconds:.0f}/s; errors {len(r.errors)}")
        print(object_sizes(srv, sp))
    finally:
        srv.stop()
