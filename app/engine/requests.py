"""Effective per-pod resource requests, computed the way the kube-scheduler does.

Mirrors k8s.io/component-helpers/resource PodRequests (AggregateContainerRequests
with sidecar-aware init containers, pod-level resources, overhead) plus the API
server's defaulting of missing requests from limits. Inputs are the JSON form of
Kubernetes objects (plain dicts); quantities are exact :class:`Quantity` values.
Invalid quantities raise :class:`QuantityError`, as the API server would reject them.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from app.engine.quantity import Quantity, QuantityError, parse_quantity

Requests = dict[str, Quantity]

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
# Resource names Kubernetes honours in pod-level spec.resources.
POD_LEVEL_RESOURCES = frozenset({CPU, MEMORY})


def _quantity(raw: object) -> Quantity:
    if raw is None:
        return Quantity()  # a JSON null decodes to a zero Quantity in apimachinery
    if isinstance(raw, str):
        raw = raw.strip()  # Quantity.UnmarshalJSON trims surrounding whitespace
    return parse_quantity(raw)


def _resource_list(raw: object) -> Requests:
    if not isinstance(raw, Mapping):
        return {}
    out = {str(name): _quantity(value) for name, value in raw.items()}
    for name, q in out.items():
        if q.sign() < 0:  # the API server refuses these: they cannot reach a real pod
            raise QuantityError(f"resource {name!r}: {q} must be greater than or equal to 0")
    return out


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Requests:
    """Per-resource sum (addResourceList: a name only in b is copied as is)."""
    out = dict(a)
    for name, q in b.items():
        out[name] = out[name] + q if name in out else q
    return out


def _max(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Requests:
    """Per-resource maximum (maxResourceList: ties keep a's quantity)."""
    out = dict(a)
    for name, q in b.items():
        if name not in out or q > out[name]:
            out[name] = q
    return out


def multiply(requests: Mapping[str, Quantity], n: int) -> Requests:
    """Every quantity times n (e.g. per-pod requests times replicas)."""
    return {name: q * n for name, q in requests.items()}


def container_requests(resources: Mapping | None) -> Requests:
    """A container's effective requests: requests[name] if present (even 0), else limits[name]."""
    if not isinstance(resources, Mapping):
        return {}
    out = _resource_list(resources.get("limits"))  # API defaulting: a missing request takes its limit
    out.update(_resource_list(resources.get("requests")))  # an explicit request, even 0, wins
    return out


def _resources_of(container: object) -> Requests:
    return container_requests(container.get("resources")) if isinstance(container, Mapping) else {}


def _list(raw: object) -> list:
    return raw if isinstance(raw, list) else []


def pod_requests(pod_spec: Mapping | None) -> Requests:
    """PodRequests of a pod spec, as the kube-scheduler accounts it."""
    spec = pod_spec if isinstance(pod_spec, Mapping) else {}

    # (1) Regular containers run side by side, so their requests add up.
    running: Requests = {}
    for container in _list(spec.get("containers")):
        running = add(running, _resources_of(container))

    # (2) Init containers run one at a time, each alongside the sidecars started before it;
    #     sidecars (restartPolicy Always) also keep running next to the regular containers.
    sidecars: Requests = {}
    init_max: Requests = {}
    for container in _list(spec.get("initContainers")):
        req = _resources_of(container)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            running = add(running, req)  # a sidecar lives for the whole pod lifetime
            sidecars = add(sidecars, req)  # and is up while every later init container runs
            need = sidecars
        else:
            need = add(req, sidecars)  # its own request plus the sidecars already started
        init_max = _max(init_max, need)

    # (3) The pod needs whichever is larger: the busiest init phase or the steady state.
    total = _max(running, init_max)

    # (4) Pod-level requests (defaulted from pod-level limits) replace the container sum.
    pod_level = container_requests(spec.get("resources"))
    total.update({name: q for name, q in pod_level.items() if name in POD_LEVEL_RESOURCES})

    # (5) RuntimeClass overhead is charged on top of whatever the pod requests.
    return add(total, _resource_list(spec.get("overhead")))


def _resources_part(container: object) -> object:
    return container.get("resources") if isinstance(container, Mapping) else None


def _key_text(parts: tuple) -> bytes | None:
    try:
        return orjson.dumps(parts)
    except TypeError:  # an integer beyond 64 bits, a non-string map key: no key, not cached
        return None


def pod_requests_key(pod_spec: Mapping | None) -> bytes | None:
    """Exactly what pod_requests reads of a pod spec, as JSON text: equal keys, equal requests.
    A pod's requests depend on its containers' resources, its init containers' resources and
    which of them are sidecars, pod-level resources and overhead, not on names, images or env,
    so two workloads' pods that differ only in those share the key.  None when it cannot be
    printed (the requests are then computed uncached)."""
    spec = pod_spec if isinstance(pod_spec, Mapping) else {}
    inits = [
        (_resources_part(c), isinstance(c, Mapping) and c.get("restartPolicy") == "Always")
        for c in _list(spec.get("initContainers"))
    ]
    return _key_text(
        (
            "pod",
            [_resources_part(c) for c in _list(spec.get("containers"))],
            inits,
            spec.get("resources"),
            spec.get("overhead"),
        )
    )


def fragmented_requests_key(
    containers: list | None, container: Mapping | None, resources: Mapping | None
) -> bytes | None:
    """What fragmented_requests reads, as JSON text (see pod_requests_key)."""
    return _key_text(
        ("fragmented", [_resources_part(c) for c in _list(containers)], _resources_part(container), resources)
    )


def fragmented_requests(containers: list | None, container: Mapping | None, resources: Mapping | None) -> Requests:
    """Sum of `containers` plus `container`; if that is all zero, `resources` instead."""
    total: Requests = {}
    for c in [*_list(containers), container]:
        total = add(total, _resources_of(c))
    if isinstance(resources, Mapping) and resources and not any(total.values()):
        return container_requests(resources)
    return total


def gpu_count(requests: Mapping[str, Quantity]) -> int:
    """NVIDIA GPUs requested, rounded up like Value() (500m -> 1)."""
    q = requests.get(GPU)
    return q.value() if q is not None else 0


def cpu_millis(requests: Mapping[str, Quantity]) -> int:
    """CPU in millicores, rounded up like MilliValue() (0.0001 -> 1)."""
    q = requests.get(CPU)
    return q.milli_value() if q is not None else 0


def memory_bytes(requests: Mapping[str, Quantity]) -> int:
    """Memory in bytes, rounded up like Value()."""
    q = requests.get(MEMORY)
    return q.value() if q is not None else 0


def to_strings(requests: Mapping[str, Quantity]) -> dict[str, str]:
    """Canonical quantity strings keyed by sorted resource name; zeros stay "0"."""
    return {name: str(requests[name]) for name in sorted(requests)}
