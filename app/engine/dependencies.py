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

from collections.abc import Iterable
from typing import Any

_BUILT_IN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

Ref = tuple[str, str, bool]  # (kind, name, optional)

# Volume sources that name an object, by field: (kind, the key holding the name, the key of a
# nested reference holding it instead (kubelet mounts with those Secrets), whether the source
# may say `optional`).  Read by the volume's own keys (a volume has one source), not by trying
# every field on every volume: this runs for every new pod definition.
_VOLUME_SOURCES: dict[str, tuple[str, str, str | None, bool]] = {
    "configMap": ("ConfigMap", "name", None, True),
    "secret": ("Secret", "secretName", None, True),
    "persistentVolumeClaim": ("PersistentVolumeClaim", "claimName", None, False),
    "azureFile": ("Secret", "secretName", None, False),
    "csi": ("Secret", "name", "nodePublishSecretRef", False),
    "cephfs": ("Secret", "name", "secretRef", False),
    "rbd": ("Secret", "name", "secretRef", False),
    "flexVolume": ("Secret", "name", "secretRef", False),
    "iscsi": ("Secret", "name", "secretRef", False),
    "scaleIO": ("Secret", "name", "secretRef", False),
    "storageos": ("Secret", "name", "secretRef", False),
}
_PROJECTED = (("configMap", "ConfigMap"), ("secret", "Secret"))
_ENV_SOURCES = (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret"))
_ENV_FROM_SOURCES = (("configMapRef", "ConfigMap"), ("secretRef", "Secret"))


def _name(d: Any, key: str = "name") -> str | None:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, str) and v else None


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _volume_refs(vol: dict[str, Any], out: list[Ref]) -> None:
    for field, src in vol.items():
        if field == "projected":
            for p in _dicts(src.get("sources") if isinstance(src, dict) else None):
                for f, kind in _PROJECTED:
                    if (n := _name(p.get(f))) is not None:
                        out.append((kind, n, bool(p[f].get("optional"))))
            continue
        known = _VOLUME_SOURCES.get(field)
        if known is None or not isinstance(src, dict):
            continue
        kind, key, nested, may_be_optional = known
        if (n := _name(src.get(nested) if nested else src, key)) is not None:
            out.append((kind, n, may_be_optional and bool(src.get("optional"))))


def _container_refs(c: dict[str, Any], out: list[Ref]) -> None:
    env = c.get("env")
    if isinstance(env, list):
        for e in env:
            source = e.get("valueFrom") if isinstance(e, dict) else None
            if not isinstance(source, dict):
                continue
            for field, kind in _ENV_SOURCES:
                if (n := _name(source.get(field))) is not None:
                    out.append((kind, n, bool(source[field].get("optional"))))
    for env_from in _dicts(c.get("envFrom")):
        for field, kind in _ENV_FROM_SOURCES:
            if (n := _name(env_from.get(field))) is not None:
                out.append((kind, n, bool(env_from[field].get("optional"))))


def pod_spec_refs(spec: dict[str, Any]) -> list[Ref]:
    """Every object one pod spec refers to by name."""
    out: list[Ref] = []
    for vol in _dicts(spec.get("volumes")):
        _volume_refs(vol, out)
    for field in ("initContainers", "containers"):
        for c in _dicts(spec.get(field)):
            _container_refs(c, out)
    for s in _dicts(spec.get("imagePullSecrets")):
        if (n := _name(s)) is not None:
            out.append(("Secret", n, False))
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(sa, str) and sa and sa != "default":
        out.append(("ServiceAccount", sa, False))
    pc = spec.get("priorityClassName")
    if isinstance(pc, str) and pc and pc not in _BUILT_IN_PRIORITY_CLASSES:
        out.append(("PriorityClass", pc, False))
    for claim in _dicts(spec.get("resourceClaims")):
        # The 1.26-1.30 API nested the reference under `source`.
        src = claim.get("source") if isinstance(claim.get("source"), dict) else claim
        if (n := _name(src, "resourceClaimTemplateName")) is not None:
            out.append(("ResourceClaimTemplate", n, False))
        elif (n := _name(src, "resourceClaimName")) is not None:
            out.append(("ResourceClaim", n, False))
    return out


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
