"""What a workload's pods need besides themselves: the named objects its pod definitions refer
to, which must exist in any cluster the workload runs in (docs/api-contract.md, "Dependencies").

Read from every pod definition of the tree (a template, a pod spec, or a fragmented definition
as the pod view assembles it): volumes (projected sources included), `env` and `envFrom`
references of every container, `imagePullSecrets`, the service account, the priority class and
DRA resource claims.  Objects the cluster provides everywhere (the `default` service account,
the `system-*` priority classes) and objects created with the pod (ephemeral volumes, claims
from a template are the template's) are not listed.

`optional` is the pod's own word: a reference marked `optional: true` lets the pod start without
it; an image pull secret is needed whenever the image is private, so it is not optional.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

# Volume sources that name a Secret: field -> the key holding its name (kubelet mounts with them).
_SECRET_REF_VOLUMES = {
    "csi": ("nodePublishSecretRef", "name"),
    "cephfs": ("secretRef", "name"),
    "rbd": ("secretRef", "name"),
    "flexVolume": ("secretRef", "name"),
    "iscsi": ("secretRef", "name"),
    "scaleIO": ("secretRef", "name"),
    "storageos": ("secretRef", "name"),
}
_BUILT_IN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

Ref = tuple[str, str, bool]  # (kind, name, optional)


def _name(d: Any, key: str = "name") -> str | None:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, str) and v else None


def _dicts(v: Any) -> Iterator[dict[str, Any]]:
    return (x for x in (v if isinstance(v, list) else []) if isinstance(x, dict))


def _volume_refs(vol: dict[str, Any]) -> Iterator[Ref]:
    if (n := _name(vol.get("configMap"))) is not None:
        yield "ConfigMap", n, bool(vol["configMap"].get("optional"))
    if (n := _name(vol.get("secret"), "secretName")) is not None:
        yield "Secret", n, bool(vol["secret"].get("optional"))
    if (n := _name(vol.get("persistentVolumeClaim"), "claimName")) is not None:
        yield "PersistentVolumeClaim", n, False
    if (n := _name(vol.get("azureFile"), "secretName")) is not None:
        yield "Secret", n, False
    for field, (ref, key) in _SECRET_REF_VOLUMES.items():
        src = vol.get(field)
        if isinstance(src, dict) and (n := _name(src.get(ref), key)) is not None:
            yield "Secret", n, False
    projected = vol.get("projected")
    for src in _dicts(projected.get("sources") if isinstance(projected, dict) else None):
        for field, kind in (("configMap", "ConfigMap"), ("secret", "Secret")):
            if (n := _name(src.get(field))) is not None:
                yield kind, n, bool(src[field].get("optional"))


def _container_refs(c: dict[str, Any]) -> Iterator[Ref]:
    for env in _dicts(c.get("env")):
        source = env.get("valueFrom")
        if not isinstance(source, dict):
            continue
        for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
            if (n := _name(source.get(field))) is not None:
                yield kind, n, bool(source[field].get("optional"))
    for env_from in _dicts(c.get("envFrom")):
        for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if (n := _name(env_from.get(field))) is not None:
                yield kind, n, bool(env_from[field].get("optional"))


def pod_spec_refs(spec: dict[str, Any]) -> Iterator[Ref]:
    """Every object one pod spec refers to by name."""
    for vol in _dicts(spec.get("volumes")):
        yield from _volume_refs(vol)
    for field in ("initContainers", "containers"):
        for c in _dicts(spec.get(field)):
            yield from _container_refs(c)
    for s in _dicts(spec.get("imagePullSecrets")):
        if (n := _name(s)) is not None:
            yield "Secret", n, False
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(sa, str) and sa and sa != "default":
        yield "ServiceAccount", sa, False
    pc = spec.get("priorityClassName")
    if isinstance(pc, str) and pc and pc not in _BUILT_IN_PRIORITY_CLASSES:
        yield "PriorityClass", pc, False
    for claim in _dicts(spec.get("resourceClaims")):
        # The 1.26-1.30 API nested the reference under `source`.
        src = claim.get("source") if isinstance(claim.get("source"), dict) else claim
        if (n := _name(src, "resourceClaimTemplateName")) is not None:
            yield "ResourceClaimTemplate", n, False
        elif (n := _name(src, "resourceClaimName")) is not None:
            yield "ResourceClaim", n, False


def dependencies(refs: Iterable[tuple[str, Ref]]) -> list[dict[str, Any]]:
    """The `dependencies` of an interpretation from (component, reference) pairs (each pod
    spec's `pod_spec_refs`): one entry per object, sorted by kind then name, naming the
    components that need it (in the order given); optional only when every reference to it is."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for component, (kind, name, optional) in refs:
        entry = found.get((kind, name))
        if entry is None:
            found[(kind, name)] = {"kind": kind, "name": name, "components": [component], "optional": optional}
            continue
        if component not in entry["components"]:
            entry["components"].append(component)
        entry["optional"] = entry["optional"] and optional
    return [found[k] for k in sorted(found)]
