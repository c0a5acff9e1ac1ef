"""Objects for the integration tests: CRDs, RBAC, workloads and pods, and a tiny kubectl over
the admin token (create-or-replace, merge patches, status subresource, delete)."""

from __future__ import annotations

import time
import urllib.error
from typing import Any

from ..consistency import wrote
from .apiserver import ApiServer

# plural and scope of every kind the tests touch (discovery would do, but this is a test helper)
PLURALS: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Namespace"): ("namespaces", False), ("", "ConfigMap"): ("configmaps", True),
    ("", "Pod"): ("pods", True), ("", "Event"): ("events", True), ("", "Secret"): ("secrets", True),
    ("", "ServiceAccount"): ("serviceaccounts", True), ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("apps", "Deployment"): ("deployments", True), ("apps", "ReplicaSet"): ("replicasets", True),
    ("batch", "Job"): ("jobs", True),
    ("apps", "StatefulSet"): ("statefulsets", True), ("apps", "DaemonSet"): ("daemonsets", True),
    ("", "Node"): ("nodes", False),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("run.ai", "Karta"): ("kartas", False), ("jobset.x-k8s.io", "JobSet"): ("jobsets", True),
    ("kubeflow.org", "PyTorchJob"): ("pytorchjobs", True), ("acme.example.com", "BatchTask"): ("batchtasks", True),
    ("serving.kserve.io", "InferenceService"): ("inferenceservices", True),
    ("ray.io", "RayCluster"): ("rayclusters", True), ("act.example.com", "Gadget"): ("gadgets", True),
    ("owners.example.com", "Pipeline"): ("pipelines", True), ("owners.example.com", "Stage"): ("stages", True),
}


def path_of(api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
    group, _, version = api_version.rpartition("/")
    plural, namespaced = PLURALS[(group, kind)]
    p = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespaced:
        p += f"/namespaces/{namespace}"
    p += f"/{plural}"
    return p + (f"/{name}" if name else "")


def obj_path(doc: dict[str, Any], name: bool = True) -> str:
    meta = doc.get("metadata") or {}
    return path_of(doc["apiVersion"], doc["kind"], meta.get("namespace"), meta.get("name") if name else None)


class Kubectl:
    def __init__(self, server: ApiServer):
        self.s = server

    def create(self, doc: dict[str, Any]) -> dict[str, Any]:
        out = self.s.call("POST", obj_path(doc, name=False), doc)
        wrote(out, self.s.url)
        return out

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Create, or replace the existing object of that name (spec and metadata; not status)."""
        try:
            return self.create(doc)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
        current = self.s.call("GET", obj_path(doc))
        doc = dict(doc, metadata=dict(doc.get("metadata") or {},
                                      resourceVersion=current["metadata"]["resourceVersion"]))
        out = self.s.call("PUT", obj_path(doc), doc)
        wrote(out, self.s.url)
        return out

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return self.s.call("GET", path_of(api_version, kind, namespace, name))

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        try:
            wrote(self.s.call("DELETE", path_of(api_version, kind, namespace, name)), self.s.url)
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise

    def patch(self, doc_or_path: dict[str, Any] | str, patch: dict[str, Any], status: bool = False) -> dict[str, Any]:
        path = doc_or_path if isinstance(doc_or_path, str) else obj_path(doc_or_path)
        out = self.s.call("PATCH", path + ("/status" if status else ""), patch,
                          content_type="application/merge-patch+json")
        wrote(out, self.s.url)
        return out

    def set_status(self, doc: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write status through the status subresource (as a controller does)."""
        return self.patch(doc, {"status": status}, status=True)

    def ensure_namespace(self, name: str) -> None:
        try:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise

    def wait_crds(self, names: list[str], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending and time.monotonic() < deadline:
            for n in list(pending):
                crd = self.s.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}")
                conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
                if conds.get("Established") == "True":
                    pending.discard(n)
            time.sleep(0.1)
        if pending:
            raise RuntimeError(f"CRDs not established: {sorted(pending)}")
        time.sleep(0.5)  # discovery documents follow establishment shortly


def crd(group: str, kind: str, plural: str, versions: list[str], scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD that stores any content (like a framework CRD installed without its controller)."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [{"name": v, "served": True, "storage": i == 0, "schema": schema,
                               "subresources": {"status": {}}} for i, v in enumerate(versions)]},
    }


def service_rbac(user: str, namespace: str) -> list[dict[str, Any]]:
    """What the service needs: read workloads, pods, owners and Kartas; read its ConfigMaps and
    post Events on them; review tokens and access."""
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "wlmap-service"},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
                   # what the chart grants with config.actions: true, for the kinds tests suspend
                   {"apiGroups": ["jobset.x-k8s.io", "ray.io", "acme.example.com", "act.example.com"],
                    "resources": ["*"], "verbs": ["patch"]},
                   {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                   {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": "wlmap-service"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wlmap-service"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "wlmap-events", "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "wlmap-events", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wlmap-events"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
    ]


def shard_lease_rbac(user: str, namespace: str) -> list[dict[str, Any]]:
    """What the chart grants shards (--role shard|all): Leases in the service namespace."""
    rbac = "rbac.authorization.k8s.io/v1"
    name = "wlmap-shard-leases"
    return [
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": name, "namespace": namespace},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
    ]


def reader_rbac(user: str, namespace: str, resources: list[tuple[str, str]], pods: bool = True) -> list[dict[str, Any]]:
    """A Role letting `user` get/list the given (group, plural) resources (and pods) in a namespace."""
    rbac = "rbac.authorization.k8s.io/v1"
    rules = [{"apiGroups": [g], "resources": [r], "verbs": ["get", "list"]} for g, r in resources]
    if pods:
        rules.append({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]})
    name = f"reader-{user}"
    return [
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
    ]


# -- workloads and pods ------------------------------------------------------------------

def owner_ref(obj: dict[str, Any], controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": controller, "blockOwnerDeletion": True}


def pod(namespace: str, name: str, owner: dict[str, Any] | None, labels: dict[str, str] | None = None,
        gpus: int = 0, node: str | None = None) -> dict[str, Any]:
    res = {"requests": {"cpu": "1", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})},
           **({"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {})}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox", "resources": res}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def running(node: str) -> dict[str, Any]:
    return {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                               {"type": "Ready", "status": "True"}]}


def unschedulable() -> dict[str, Any]:
    return {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]}
