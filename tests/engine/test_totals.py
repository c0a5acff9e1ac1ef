"""Effective requests and totals at the interpretation level (docs/karta-semantics.md "Requests and totals",
docs/api-contract.md `totals`): per pod, per instance, per component and per workload, from the desired scale."""

from __future__ import annotations

from ..karta_kit import child, instance, karta, node, pod, pod_template, root, run, workload

SEL = {"componentInstanceSelector": {"idPath": ".metadata.labels.inst"}}
GPU = "nvidia.com/gpu"


def template(containers: list[dict], **spec) -> dict:
    return {"metadata": {}, "spec": {"containers": containers, **spec}}


def ctr(name="main", requests=None, limits=None, **extra) -> dict:
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": name, "image": "img", "resources": res, **extra}


# -- PyTorchJob fixture: master 1 x 1 GPU, worker 4 x 8 GPUs -> 33 --------------------------------

def pytorch_doc() -> dict:
    def replica(role):
        return child(role, owner="pytorchjob", kind={"group": "", "version": "v1", "kind": "Pod"},
                     specDefinition={"podTemplateSpecPath": f".spec.pytorchReplicaSpecs.{role.title()}.template"},
                     scaleDefinition={"replicasPath": f".spec.pytorchReplicaSpecs.{role.title()}.replicas"},
                     podSelector={"componentTypeSelector": {"keyPath": '.metadata.labels["training.kubeflow.org/replica-type"]',
                                                            "value": role}})
    return karta(root("pytorchjob", kind={"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"}),
                 children=[replica("master"), replica("worker")])


def pytorch_obj() -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "llama", "namespace": "ml", "uid": "uid-1"},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template([ctr(requests={GPU: 1, "cpu": "4", "memory": "16Gi"})])},
                "Worker": {"replicas": 4, "template": template([ctr(requests={GPU: 8, "cpu": "4", "memory": "16Gi"})])}}}}


def test_pytorchjob_totals():
    out = run(pytorch_doc(), pytorch_obj())
    master, worker = node(out["tree"], "master"), node(out["tree"], "worker")
    assert (master["totals"]["pods"], master["totals"]["gpus"]) == (1, 1)
    assert (worker["totals"]["pods"], worker["totals"]["gpus"]) == (4, 32)
    assert out["totals"]["gpus"] == 33
    assert out["totals"]["pods"] == 5
    assert out["totals"]["requests"] == {"cpu": "20", "memory": "80Gi", GPU: "33"}


def test_pytorchjob_per_pod_requests():
    out = run(pytorch_doc(), pytorch_obj())
    [w] = node(out["tree"], "worker")["instances"]
    assert w["pod"]["requests"] == {"cpu": "4", "memory": "16Gi", GPU: "8"}
    assert w["pod"]["gpus"] == 8
    assert w["totals"] == {"pods": 4, "gpus": 32, "accelerators": {GPU: 32},
                           "requests": {"cpu": "16", "memory": "64Gi", GPU: "32"},
                           "requestValues": {"cpu": 16000, "memory": 64 * 2**30, GPU: 32}}


def test_grouping_root_sums_children():
    out = run(pytorch_doc(), pytorch_obj())
    assert out["tree"]["podBearing"] is False
    assert out["tree"]["totals"]["gpus"] == 33
    assert out["tree"]["instances"][0]["totals"] == {"pods": 0, "gpus": 0, "accelerators": {}, "requests": {},
                                                     "requestValues": {}}


def test_totals_do_not_change_with_live_pods():
    without = run(pytorch_doc(), pytorch_obj())
    with_pods = run(pytorch_doc(), pytorch_obj(), [pod("llama-worker-0", {"training.kubeflow.org/replica-type": "worker"})])
    assert with_pods["totals"] == without["totals"]
    assert with_pods["tree"]["totals"] == without["tree"]["totals"]


# -- Deployment facts -------------------------------------------------------------------------------

def deployment_doc() -> dict:
    return karta(root("deployment", kind={"group": "apps", "version": "v1", "kind": "Deployment"},
                      specDefinition={"podTemplateSpecPath": ".spec.template"},
                      scaleDefinition={"replicasPath": ".spec.replicas"}))


def test_deployment_limits_only_counts_gpus():
    out = run(deployment_doc(), workload({"replicas": 3, "template": template([ctr(limits={GPU: 2})])}))
    assert out["totals"]["gpus"] == 6
    assert out["totals"]["pods"] == 3


def test_deployment_cpu_and_memory_totals():
    out = run(deployment_doc(), workload({"replicas": 2, "template": template([ctr(requests={"cpu": "500m", "memory": "1Gi"})])}))
    assert out["totals"]["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert out["totals"]["gpus"] == 0
    [i] = out["tree"]["instances"]
    assert i["pod"]["requests"] == {"cpu": "500m", "memory": "1Gi"}


def test_deployment_overhead_and_pod_level_resources():
    spec = {"replicas": 2, "template": template(
        [ctr(requests={"cpu": "500m", "memory": "1Gi", GPU: 1})],
        overhead={"cpu": "100m", "memory": "128Mi"},
        resources={"requests": {"cpu": "2", "memory": "4Gi"}})}
    out = run(deployment_doc(), workload(spec))
    assert out["totals"]["requests"] == {"cpu": "4200m", "memory": "8448Mi", GPU: "2"}
    assert out["totals"]["gpus"] == 2


def test_request_wins_over_limit_even_when_zero():
    out = run(deployment_doc(), workload({"replicas": 1, "template": template([ctr(requests={GPU: 0}, limits={GPU: 4})])}))
    assert out["totals"]["gpus"] == 0


def test_fractional_gpu_rounds_up_per_pod():
    out = run(deployment_doc(), workload({"replicas": 3, "template": template([ctr(requests={GPU: "500m"})])}))
    [i] = out["tree"]["instances"]
    assert i["pod"]["gpus"] == 1
    assert out["totals"]["gpus"] == 3


def test_init_containers_by_max_sidecars_by_sum():
    spec = {"replicas": 1, "template": template(
        [ctr(requests={"cpu": "1"})],
        initContainers=[ctr("init", requests={"cpu": "3"}), ctr("side", requests={"cpu": "500m"}, restartPolicy="Always")])}
    out = run(deployment_doc(), workload(spec))
    # running = 1 + 0.5 (sidecar); init phase = 3 + 0 (sidecar starts after it) -> max 3
    assert out["totals"]["requests"]["cpu"] == "3"


def test_sidecar_adds_to_steady_state():
    spec = {"replicas": 2, "template": template(
        [ctr(requests={GPU: 1})], initContainers=[ctr("side", requests={GPU: 1}, restartPolicy="Always")])}
    assert run(deployment_doc(), workload(spec))["totals"]["gpus"] == 4


def test_whole_devices_count_as_gpus_slices_do_not_and_every_resource_is_carried():
    # issue 22: AMD GPUs are whole devices (the reference counts only nvidia.com/gpu; see
    # test_accelerators.py for --gpu-resource nvidia.com/gpu, the reference's rule); a MIG slice
    # is an accelerator, never a GPU.
    reqs = {"amd.com/gpu": "2", "nvidia.com/mig-1g.5gb": "1", "ephemeral-storage": "1Gi", "cpu": "1"}
    out = run(deployment_doc(), workload({"replicas": 3, "template": template([ctr(requests=reqs)])}))
    assert out["totals"]["gpus"] == 6
    assert out["totals"]["accelerators"] == {"amd.com/gpu": 6, "nvidia.com/mig-1g.5gb": 3}
    assert out["totals"]["requests"] == {"amd.com/gpu": "6", "cpu": "3", "ephemeral-storage": "3Gi",
                                         "nvidia.com/mig-1g.5gb": "3"}


def test_replicas_zero_gives_zero_totals_but_component_stays():
    out = run(deployment_doc(), workload({"replicas": 0, "template": template([ctr(requests={GPU: 1})])}))
    assert out["totals"] == {"pods": 0, "gpus": 0, "accelerators": {GPU: 0}, "requests": {GPU: "0"},
                             "requestValues": {GPU: 0}}
    assert out["tree"]["podBearing"] is True
    assert len(out["tree"]["instances"]) == 1


# -- fragmented specs ------------------------------------------------------------------------------

def frag_doc(frag: dict, scale: dict | None = None) -> dict:
    fields = {"specDefinition": {"fragmentedPodSpecDefinition": frag}}
    if scale:
        fields["scaleDefinition"] = scale
    return karta(children=[child("svc", **fields)])


def test_fragmented_containers_plus_container_ignore_resources():
    doc = frag_doc({"containersPath": ".spec.cs", "containerPath": ".spec.c", "resourcesPath": ".spec.r"})
    out = run(doc, workload({"cs": [ctr(requests={GPU: 2})], "c": ctr("x", requests={GPU: 3}),
                             "r": {"requests": {GPU: 99}}}))
    assert out["totals"]["gpus"] == 5


def test_fragmented_resources_used_when_containers_declare_nothing():
    doc = frag_doc({"containerPath": ".spec.c", "resourcesPath": ".spec.r"})
    out = run(doc, workload({"c": {"name": "main", "image": "frontend"}, "r": {"requests": {GPU: "4"}}}))
    assert out["totals"]["gpus"] == 4
    assert node(out["tree"], "svc")["instances"][0]["pod"]["requests"] == {GPU: "4"}


def test_fragmented_resources_limits_only():
    doc = frag_doc({"resourcesPath": ".spec.r"})
    assert run(doc, workload({"r": {"limits": {GPU: "2"}}}))["totals"]["gpus"] == 2


def dynamo_doc() -> dict:
    return karta(root("dgd", kind={"group": "nvidia.com", "version": "v1alpha1", "kind": "DynamoGraphDeployment"}),
                 children=[child("service", owner="dgd", instanceIdPath=".spec.services | to_entries[] | .key",
                                 podSelector=SEL,
                                 specDefinition={"fragmentedPodSpecDefinition": {
                                     "resourcesPath": ".spec.services[] | .resources",
                                     "containerPath": ".spec.services[] | .extraPodSpec.mainContainer"}},
                                 scaleDefinition={"replicasPath": ".spec.services[] | .replicas"})])


def test_dynamo_style_frontend_resources_count_when_container_declares_nothing():
    obj = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment", "metadata": {"name": "d", "uid": "x"},
           "spec": {"services": {"Frontend": {"replicas": 1, "resources": {"requests": {GPU: "4"}},
                                              "extraPodSpec": {"mainContainer": {"image": "frontend:1"}}}}}}
    out = run(dynamo_doc(), obj)
    fe = instance(node(out["tree"], "service"), "Frontend")
    assert fe["pod"]["gpus"] == 4
    assert out["totals"]["gpus"] == 4


def test_dynamo_totals_table():
    obj = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment", "metadata": {"name": "d", "uid": "x"},
           "spec": {"services": {
               "PrefillWorker": {"replicas": 4, "resources": {"limits": {GPU: "8"}}},
               "Frontend": {"replicas": 2, "resources": {"requests": {GPU: "1"}},
                            "extraPodSpec": {"mainContainer": {"image": "fe"}}}}}}
    out = run(dynamo_doc(), obj)
    svc = node(out["tree"], "service")
    fe, pw = instance(svc, "Frontend"), instance(svc, "PrefillWorker")
    assert (fe["totals"]["pods"], fe["totals"]["gpus"]) == (2, 2)
    assert (pw["totals"]["pods"], pw["totals"]["gpus"]) == (4, 32)
    assert svc["totals"]["gpus"] == 34 and svc["totals"]["pods"] == 6
    assert out["totals"]["gpus"] == 34


# -- component and workload totals ----------------------------------------------------------------------

def test_pod_bearing_component_includes_child_totals():
    doc = karta(root(specDefinition={"podTemplateSpecPath": ".spec.head"}, scaleDefinition={"replicasPath": '"1"'}),
                children=[child("worker", specDefinition={"podTemplateSpecPath": ".spec.w"},
                                scaleDefinition={"replicasPath": ".spec.n"})])
    out = run(doc, workload({"head": pod_template(gpus=1), "w": pod_template(gpus=2), "n": 3}))
    assert out["tree"]["instances"][0]["totals"]["gpus"] == 1
    assert out["tree"]["totals"] == {"pods": 4, "gpus": 7, "accelerators": {GPU: 7}, "requests": {GPU: "7"},
                                     "requestValues": {GPU: 7}}
    assert out["totals"]["gpus"] == 7


def test_grouping_component_scale_is_not_added():
    # LeaderWorkerSet-style: the virtual group's own scale does not count as pods.
    doc = karta(children=[
        child("group", scaleDefinition={"replicasPath": ".spec.replicas"}),
        child("leader", owner="group", specDefinition={"podTemplateSpecPath": ".spec.leader"},
              scaleDefinition={"replicasPath": ".spec.replicas"}),
        child("worker", owner="group", specDefinition={"podTemplateSpecPath": ".spec.worker"},
              scaleDefinition={"replicasPath": ".spec.replicas * (.spec.size - 1)"})])
    out = run(doc, workload({"replicas": 2, "size": 4, "leader": pod_template(gpus=1), "worker": pod_template(gpus=1)}))
    g = node(out["tree"], "group")
    assert g["totals"]["pods"] == 8
    assert g["instances"][0]["replicas"] == 2
    assert g["instances"][0]["totals"]["pods"] == 0
    assert out["totals"]["pods"] == 8 and out["totals"]["gpus"] == 8


def test_multi_instance_component_sums_instances():
    doc = karta(children=[child("job", instanceIdPath=".spec.jobs[].name", podSelector=SEL,
                                specDefinition={"podTemplateSpecPath": ".spec.jobs[].template"},
                                scaleDefinition={"replicasPath": ".spec.jobs[].replicas"})])
    jobs = [{"name": "indexer", "replicas": 2, "template": pod_template(gpus=1, cpu="1")},
            {"name": "processor", "replicas": 3, "template": pod_template(gpus=2, cpu="2")}]
    out = run(doc, workload({"jobs": jobs}))
    job = node(out["tree"], "job")
    assert instance(job, "indexer")["totals"] == {"pods": 2, "gpus": 2, "accelerators": {GPU: 2},
                                                  "requests": {"cpu": "2", GPU: "2"},
                                                  "requestValues": {"cpu": 2000, GPU: 2}}
    assert instance(job, "processor")["totals"] == {"pods": 3, "gpus": 6, "accelerators": {GPU: 6},
                                                    "requests": {"cpu": "6", GPU: "6"},
                                                    "requestValues": {"cpu": 6000, GPU: 6}}
    assert job["totals"] == {"pods": 5, "gpus": 8, "accelerators": {GPU: 8}, "requests": {"cpu": "8", GPU: "8"},
                             "requestValues": {"cpu": 8000, GPU: 8}}
    assert out["totals"] == job["totals"]


def test_totals_shape():
    out = run(deployment_doc(), workload({"replicas": 1, "template": template([ctr(requests={"cpu": "1"})])}))
    assert set(out["totals"]) >= {"pods", "gpus", "requests"}
    assert set(out["tree"]["instances"][0]["totals"]) >= {"pods", "gpus", "requests"}
    assert set(out["tree"]["instances"][0]["pod"]) >= {"requests", "containers", "schedulerName", "priorityClassName"}
