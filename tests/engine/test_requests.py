"""Tests for app.engine.requests (kube-scheduler PodRequests semantics)."""

import pytest

from app.engine.quantity import QuantityError, parse_quantity
from app.engine.requests import (
    GPU,
    add,
    container_requests,
    cpu_millis,
    fragmented_requests,
    gpu_count,
    memory_bytes,
    multiply,
    pod_requests,
    to_strings,
)

GI, MI = 2**30, 2**20


def ctr(requests=None, limits=None, **extra):
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def sidecar(requests):
    return ctr(requests, restartPolicy="Always")


# --- container_requests ---------------------------------------------------------------


def test_container_requests_prefers_requests_then_limits():
    reqs = container_requests({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi", GPU: 2}})
    assert to_strings(reqs) == {"cpu": "500m", "memory": "1Gi", GPU: "2"}


def test_limits_only_gpu_counts():
    assert gpu_count(pod_requests({"containers": [ctr(limits={GPU: 2})]})) == 2


def test_explicit_zero_request_is_respected():
    reqs = container_requests({"requests": {GPU: 0}, "limits": {GPU: 1}})
    assert gpu_count(reqs) == 0
    assert to_strings(reqs) == {GPU: "0"}


@pytest.mark.parametrize("resources", [None, {}, {"requests": None, "limits": None}, "junk"])
def test_container_requests_empty(resources):
    assert container_requests(resources) == {}


def test_every_resource_name_is_carried_through():
    resources = {
        "requests": {"amd.com/gpu": "1", "nvidia.com/mig-1g.5gb": 2, "ephemeral-storage": "10Gi"},
        "limits": {"hugepages-2Mi": "100Mi", "amd.com/gpu": "4", "nvidia.com/mig-1g.5gb": 7},
    }
    assert to_strings(container_requests(resources)) == {
        "amd.com/gpu": "1",
        "ephemeral-storage": "10Gi",
        "hugepages-2Mi": "100Mi",
        "nvidia.com/mig-1g.5gb": "2",
    }
    pod = pod_requests({"containers": [ctr(resources["requests"], resources["limits"])] * 2})
    assert to_strings(pod)["nvidia.com/mig-1g.5gb"] == "4"
    assert to_strings(pod)["amd.com/gpu"] == "2"


def test_whitespace_and_null_like_json_decoding():
    reqs = container_requests({"requests": {"cpu": " 250m ", GPU: None}, "limits": {GPU: 1}})
    assert to_strings(reqs) == {"cpu": "250m", GPU: "0"}


def test_invalid_quantity_raises():
    with pytest.raises(QuantityError):
        container_requests({"requests": {"cpu": "one"}})


# --- pod_requests -----------------------------------------------------------------------


def test_deployment_pod_with_overhead_and_pod_level_requests():
    spec = {
        "overhead": {"cpu": "100m", "memory": "128Mi"},
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
        "containers": [ctr({"cpu": "500m", "memory": "1Gi", GPU: "1"})],
    }
    per_pod = pod_requests(spec)
    assert to_strings(per_pod) == {"cpu": "2100m", "memory": "4224Mi", GPU: "1"}
    assert cpu_millis(per_pod) == 2100
    assert memory_bytes(per_pod) == 4 * GI + 128 * MI
    assert gpu_count(per_pod) == 1

    replicas = 2
    total = multiply(per_pod, replicas)
    assert cpu_millis(total) == 4200
    assert memory_bytes(total) == 2 * (4 * GI + 128 * MI)
    assert gpu_count(total) == 2
    assert to_strings(total) == {"cpu": "4200m", "memory": "8448Mi", GPU: "2"}


def test_containers_are_summed():
    spec = {"containers": [ctr({"cpu": "1", "memory": "1Gi"}), ctr({"cpu": "500m", "memory": "512Mi"})]}
    assert to_strings(pod_requests(spec)) == {"cpu": "1500m", "memory": "1536Mi"}


def test_init_container_larger_than_containers():
    spec = {"initContainers": [ctr({"cpu": "4"})], "containers": [ctr({"cpu": "1"}), ctr({"cpu": "1"})]}
    assert cpu_millis(pod_requests(spec)) == 4000


def test_sidecar_adds_to_running_containers():
    spec = {"initContainers": [sidecar({"cpu": "1"})], "containers": [ctr({"cpu": "2"})]}
    assert cpu_millis(pod_requests(spec)) == 3000


def test_init_container_after_sidecar_counts_the_sidecar():
    # init needs 1 + sidecar 1 = 2 while initialising; steady state is 2 + 1 = 3.
    spec = {
        "initContainers": [sidecar({"cpu": "1"}), ctr({"cpu": "1"})],
        "containers": [ctr({"cpu": "2"})],
    }
    assert cpu_millis(pod_requests(spec)) == max(1 + 1, 2 + 1) * 1000


def test_big_init_container_after_sidecar():
    # init 3 + sidecar 1 = 4 beats steady state 1 + 1 = 2.
    spec = {"initContainers": [sidecar({"cpu": "1"}), ctr({"cpu": "3"})], "containers": [ctr({"cpu": "1"})]}
    assert cpu_millis(pod_requests(spec)) == 4000


def test_sidecar_declared_after_init_container_does_not_count_for_it():
    # the init container (3) runs before the sidecar starts: max(3, 1 + 1) = 3.
    spec = {"initContainers": [ctr({"cpu": "3"}), sidecar({"cpu": "1"})], "containers": [ctr({"cpu": "1"})]}
    assert cpu_millis(pod_requests(spec)) == 3000


def test_init_max_is_per_resource():
    spec = {
        "initContainers": [ctr({"cpu": "4", "memory": "100Mi"}), ctr({"cpu": "100m", "memory": "8Gi"})],
        "containers": [ctr({"cpu": "1", "memory": "1Gi", GPU: 1})],
    }
    assert to_strings(pod_requests(spec)) == {"cpu": "4", "memory": "8Gi", GPU: "1"}


def test_pod_level_limits_default_pod_level_requests():
    spec = {
        "resources": {"limits": {"cpu": "3", "memory": "2Gi"}, "requests": {"memory": "1Gi"}},
        "containers": [ctr({"cpu": "1", "memory": "512Mi", GPU: 1})],
    }
    assert to_strings(pod_requests(spec)) == {"cpu": "3", "memory": "1Gi", GPU: "1"}


def test_pod_level_resources_only_replace_cpu_and_memory():
    spec = {
        "resources": {"requests": {"cpu": "2", GPU: 8, "ephemeral-storage": "1Ti"}},
        "containers": [ctr({"cpu": "500m", "memory": "1Gi", GPU: 1})],
    }
    assert to_strings(pod_requests(spec)) == {"cpu": "2", "memory": "1Gi", GPU: "1"}


def test_overhead_adds_new_names_too():
    spec = {"overhead": {"cpu": "250m", "memory": "120Mi"}, "containers": [ctr({GPU: 1})]}
    assert to_strings(pod_requests(spec)) == {"cpu": "250m", "memory": "120Mi", GPU: "1"}


@pytest.mark.parametrize("spec", [None, {}, {"containers": None}, {"containers": [{"name": "x"}]}])
def test_empty_pod(spec):
    assert pod_requests(spec) == {}


# --- fragmented_requests ---------------------------------------------------------------


def test_fragmented_sums_containers_and_container():
    got = fragmented_requests([ctr({GPU: 2})], ctr({GPU: 3}), {"requests": {GPU: 99}})
    assert gpu_count(got) == 5


def test_fragmented_falls_back_to_resources():
    got = fragmented_requests(None, {"name": "worker"}, {"limits": {GPU: 4}})
    assert gpu_count(got) == 4
    assert gpu_count(fragmented_requests([ctr({GPU: 0})], None, {"requests": {GPU: 4}})) == 4


def test_fragmented_without_resources_keeps_zero_sum():
    assert to_strings(fragmented_requests([ctr({GPU: 0})], None, None)) == {GPU: "0"}
    assert fragmented_requests(None, None, None) == {}


# --- helpers ------------------------------------------------------------------------------


def test_half_gpu_rounds_up():
    assert gpu_count(container_requests({"requests": {GPU: "500m"}})) == 1


def test_tiny_cpu_rounds_up_to_one_millicore():
    assert cpu_millis(container_requests({"requests": {"cpu": "0.0001"}})) == 1
    assert cpu_millis(container_requests({"requests": {"cpu": 0.0001}})) == 1


def test_memory_bytes_exact():
    assert memory_bytes(container_requests({"requests": {"memory": "1.5Gi"}})) == 1610612736
    assert memory_bytes(container_requests({"requests": {"memory": "129e6"}})) == 129_000_000


def test_missing_resources_are_zero():
    assert gpu_count({}) == 0
    assert cpu_millis({}) == 0
    assert memory_bytes({}) == 0


def test_add_and_multiply():
    a = {"cpu": parse_quantity("1"), "memory": parse_quantity("1Gi")}
    b = {"cpu": parse_quantity("500m"), GPU: parse_quantity("1")}
    assert to_strings(add(a, b)) == {"cpu": "1500m", "memory": "1Gi", GPU: "1"}
    assert to_strings(multiply(b, 3)) == {"cpu": "1500m", GPU: "3"}
    assert to_strings(multiply(a, 0)) == {"cpu": "0", "memory": "0"}
    assert to_strings(a) == {"cpu": "1", "memory": "1Gi"}  # inputs untouched


def test_to_strings_sorted_and_keeps_zero():
    reqs = {"memory": parse_quantity("0"), "cpu": parse_quantity("1000m"), "amd.com/gpu": parse_quantity("1")}
    assert list(to_strings(reqs).items()) == [("amd.com/gpu", "1"), ("cpu", "1"), ("memory", "0")]
