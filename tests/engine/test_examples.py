"""The three worked examples of docs/karta-format.md "Worked examples", end to end: each "Expected results"
paragraph becomes assertions on `interpret` output (status, instances, gang, pods)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from app.engine.interpret import interpret
from app.karta.load import Definition, load_path

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"
GPU = "nvidia.com/gpu"


def example(name: str) -> Definition:
    [d] = load_path(EXAMPLES / f"{name}.karta.yaml")
    return d


@pytest.mark.parametrize("name", ["batchtask", "pipeline", "servinggraph"])
def test_examples_are_valid(name):
    d = example(name)
    assert d.valid, [f.message for f in d.findings if f.level == "error"]
    assert not [f for f in d.findings if f.level == "warning" and "unknown field" in f.message]


# -- §14.1 BatchTask ------------------------------------------------------------------------------------

def batchtask(spec: dict | None = None, status: dict | None = None) -> dict:
    base_spec = {"workers": 4, "podTemplate": {"metadata": {"labels": {"app": "bt"}}, "spec": {"containers": [
        {"name": "trainer", "image": "trainer:1", "resources": {"requests": {GPU: "2", "cpu": "4", "memory": "8Gi"}}}]}}}
    base_spec.update(spec or {})
    obj = {"apiVersion": "acme.example.com/v1", "kind": "BatchTask",
           "metadata": {"name": "bt-1", "namespace": "team", "uid": "bt-uid"}, "spec": base_spec}
    if status is not None:
        obj["status"] = status
    return obj


def bt(spec=None, status=None, pods=None) -> dict:
    return interpret(batchtask(spec, status), example("batchtask"), pods)


def test_batchtask_active_is_running():
    s = bt(status={"state": "Active"})["status"]
    assert s["matched"] == ["Running"]
    assert s["phase"] == "Running"
    assert s["rawPhase"] == "Active"


def test_batchtask_paused_with_active_workers_is_suspending():
    s = bt({"paused": True}, {"state": "Active", "activeWorkers": 2})["status"]
    assert s["matched"] == ["Suspending"]


def test_batchtask_paused_without_active_workers_is_suspended():
    assert bt({"paused": True}, {"state": "Active", "activeWorkers": 0})["status"]["matched"] == ["Suspended"]


def test_batchtask_finished_some_failed_and_error_is_failed_once():
    s = bt(status={"state": "Error", "conditions": [{"type": "Finished", "status": "True", "reason": "SomeFailed"}]})["status"]
    assert s["matched"] == ["Failed"]
    assert s["phase"] == "Failed"
    assert s["conditions"] == [{"type": "Finished", "status": "True", "reason": "SomeFailed", "message": ""}]


def test_batchtask_completed():
    s = bt(status={"state": "Done", "conditions": [{"type": "Finished", "status": "True", "reason": "AllSucceeded"}]})["status"]
    assert s["matched"] == ["Completed"]


def test_batchtask_queued_is_initializing():
    assert bt(status={"state": "Queued"})["status"]["matched"] == ["Initializing"]


def test_batchtask_nothing_is_undefined():
    s = bt(status={})["status"]
    assert s["matched"] == ["Undefined"]
    assert s["rawPhase"] == ""


def test_batchtask_running_and_error_phase_overlap():
    # Active + SomeFailed: running holds (phase Active, not paused) and failed holds via conditions.
    s = bt(status={"state": "Active", "conditions": [{"type": "Finished", "status": "True", "reason": "SomeFailed"}]})["status"]
    assert s["matched"] == ["Running", "Failed"]
    assert s["phase"] == "Failed"


def test_batchtask_scale_and_totals():
    out = bt({"elastic": {"minWorkers": 2}}, {"state": "Active"})
    [i] = out["tree"]["instances"]
    assert (i["id"], i["replicas"], i["minReplicas"], i["maxReplicas"]) == (None, 4, 2, None)
    assert out["totals"] == {"pods": 4, "gpus": 8, "accelerators": {GPU: 8},
                             "requests": {"cpu": "16", "memory": "32Gi", GPU: "8"},
                             "requestValues": {"cpu": 16000, "memory": 32 * 2**30, GPU: 8}}
    assert out["tree"]["podBearing"] is True
    assert i["pod"]["containers"] == [{"name": "trainer", "image": "trainer:1"}]


def test_batchtask_workers_default_to_1():
    out = bt({"workers": None}, {})
    assert out["tree"]["instances"][0]["replicas"] == 1
    assert out["gang"]["podGroup"]["minAvailable"] == 1


@pytest.mark.parametrize("spec,expected", [
    ({"elastic": {"minWorkers": 2}}, 2),
    ({}, 4),
    ({"elastic": {"minWorkers": 0}}, 4),
])
def test_batchtask_v2_gang_minimum(spec, expected):
    pg = bt(spec, {"state": "Active"})["gang"]["podGroup"]
    assert pg["name"] == "pg-bt-uid-task"
    assert pg["minAvailable"] == expected
    assert pg.get("subGroups") == []


def test_batchtask_single_leaf_claims_all_pods():
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bt-1-{i}", "namespace": "team"},
             "spec": {"containers": [{"name": "trainer"}]},
             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if i else "False"}]}}
            for i in range(3)]
    out = bt(None, {"state": "Active"}, pods)
    assert out["live"]["current"] == 3 and out["live"]["ready"] == 2 and out["live"]["desired"] == 4
    assert [r["component"] for r in out["gang"]["pods"]] == ["task"] * 3
    assert {r["podGroup"] for r in out["gang"]["pods"]} == {"pg-bt-uid-task"}


# -- §14.2 Pipeline -------------------------------------------------------------------------------------

def stage(name: str | None, parallelism: int | None, gpus: int = 0) -> dict:
    res = {"limits": {GPU: str(gpus)}} if gpus else {}
    s = {"template": {"metadata": {}, "spec": {"containers": [{"name": "step", "image": f"{name}:1", "resources": res}]}}}
    if name is not None:
        s["name"] = name
    if parallelism is not None:
        s["parallelism"] = parallelism
    return s


def pipeline(stages: list[dict] | None, status: dict | None = None) -> dict:
    spec = {"schedulerName": "kai-scheduler",
            "coordinator": {"container": {"name": "coord", "image": "coord:1"},
                            "resources": {"requests": {"cpu": "500m"}}, "podLabels": {"tier": "control"}}}
    if stages is not None:
        spec["stages"] = stages
    return {"apiVersion": "acme.example.com/v1alpha1", "kind": "Pipeline",
            "metadata": {"name": "mypipe", "namespace": "ml", "uid": "pl-uid"}, "spec": spec, "status": status or {}}


STAGES = [stage("prep", 2), stage("train", 4, gpus=1)]


def pl(stages=STAGES, status=None, pods=None) -> dict:
    return interpret(pipeline(copy.deepcopy(stages), status), example("pipeline"), pods)


def pl_pod(name: str, role: str, stage_name: str | None = None, gpus: int = 0) -> dict:
    labels = {"acme.example.com/role": role, "acme.example.com/pipeline-name": "mypipe"}
    if stage_name:
        labels["acme.example.com/stage"] = stage_name
    res = {"limits": {GPU: str(gpus)}} if gpus else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {"containers": [{"name": "step", "resources": res}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def child_node(out: dict, name: str) -> dict:
    [n] = [c for c in out["tree"]["children"] if c["name"] == name]
    return n


def test_pipeline_stage_instances_and_replicas():
    out = pl()
    st = child_node(out, "stage")
    assert [(i["id"], i["replicas"]) for i in st["instances"]] == [("prep", 2), ("train", 4)]


def test_pipeline_coordinator_literal_string_replicas():
    out = pl()
    [c] = child_node(out, "coordinator")["instances"]
    assert c["replicas"] == 1
    assert c["pod"]["schedulerName"] == "kai-scheduler"
    assert c["pod"]["requests"] == {"cpu": "500m"}
    assert c["pod"]["labels"] == {"tier": "control"}


def test_pipeline_totals():
    out = pl()
    assert out["totals"]["pods"] == 2 + 4 + 1
    assert out["totals"]["gpus"] == 4
    assert out["totals"]["requests"] == {"cpu": "500m", GPU: "4"}


def test_pipeline_pod_label_maps_to_instance_train():
    out = pl(pods=[pl_pod("train-0", "stage", "train", gpus=1)])
    [row] = out["gang"]["pods"]
    assert row["component"] == "stage"
    assert row["instance"] == "train"
    [live] = out["live"]["pods"]
    assert (live["component"], live["instance"]) == ("stage", "train")


def test_pipeline_gpu_pod_of_train_lands_in_gpu_stages_with_min_4():
    [row] = pl(pods=[pl_pod("train-0", "stage", "train", gpus=1)])["gang"]["pods"]
    assert row["podGroupDefinition"] == "gpu-stages"
    assert row["effectiveComponent"] == "stage"
    assert row["groupKeys"] == ["mypipe", "gpu"]
    assert row["podGroup"] == "pg-pl-uid-mypipe-gpu"
    assert row["minAvailable"] == 4


def test_pipeline_cpu_pod_lands_in_cpu_stages():
    [row] = pl(pods=[pl_pod("prep-0", "stage", "prep")])["gang"]["pods"]
    assert row["podGroupDefinition"] == "cpu-stages"
    assert row["groupKeys"] == ["mypipe", "cpu"]
    assert row["podGroup"] == "pg-pl-uid-mypipe-cpu"
    assert row["minAvailable"] == 2


def test_pipeline_coordinator_pod_lands_in_control():
    [row] = pl(pods=[pl_pod("coord-0", "coordinator")])["gang"]["pods"]
    assert row["component"] == "coordinator"
    assert row["podGroupDefinition"] == "control"
    assert row["podGroup"] == "pg-pl-uid-mypipe-control"
    assert row["minAvailable"] == 1
    assert row["instance"] is None


def test_pipeline_groups_collect_pods():
    pods = [pl_pod("t0", "stage", "train", 1), pl_pod("t1", "stage", "train", 1), pl_pod("p0", "stage", "prep"),
            pl_pod("c0", "coordinator")]
    groups = {g["name"]: (g["minAvailable"], g["pods"]) for g in pl(pods=pods)["gang"]["groups"]}
    assert groups == {"pg-pl-uid-mypipe-gpu": (4, ["t0", "t1"]), "pg-pl-uid-mypipe-cpu": (2, ["p0"]),
                      "pg-pl-uid-mypipe-control": (1, ["c0"])}


def test_pipeline_workload_level_gang_members():
    g = pl()["gang"]
    assert g["mode"] == "podGroups"
    assert [(grp["name"], [(m["component"], m["minAvailable"]) for m in grp["members"]]) for grp in g["podGroups"]] == [
        ("gpu-stages", [("stage", 6)]), ("cpu-stages", [("stage", 6)]), ("control", [("coordinator", 1)])]


def test_pipeline_stage_without_name_fails_with_empty_id_error():
    out = pl([stage("prep", 2), stage(None, 1)])
    assert out["complete"] is False and out["totals"] is None
    assert out["status"] == pl([stage("prep", 2), stage("train", 1)])["status"]  # status does not read stages
    assert any(x["message"] == "instance id path contained empty string values [prep,]" and x["component"] == "stage"
               for x in out["errors"])
    assert child_node(out, "stage")["error"]["message"] == "instance id path contained empty string values [prep,]"


def test_pipeline_without_stages_key_cannot_iterate_over_null():
    out = pl(None)
    assert out["complete"] is False
    assert any("cannot iterate over: null" in x["message"] for x in out["errors"])
    assert child_node(out, "stage")["instances"] == []


def test_pipeline_default_parallelism_is_1():
    out = pl([stage("only", None)])
    assert [(i["id"], i["replicas"]) for i in child_node(out, "stage")["instances"]] == [("only", 1)]


def test_pipeline_status_initializing_without_started():
    assert pl(status={})["status"]["matched"] == ["Initializing"]


def test_pipeline_status_running():
    conds = [{"type": "Started", "status": "True"}, {"type": "Done", "status": "False"}]
    assert pl(status={"conditions": conds})["status"]["matched"] == ["Running"]


def test_pipeline_status_running_needs_done_to_exist():
    assert pl(status={"conditions": [{"type": "Started", "status": "True"}]})["status"]["matched"] == ["Undefined"]


def test_pipeline_status_completed():
    conds = [{"type": "Started", "status": "True"}, {"type": "Done", "status": "True"}]
    assert pl(status={"conditions": conds})["status"]["matched"] == ["Completed"]


def test_pipeline_status_degraded_with_running():
    conds = [{"type": "Started", "status": "True"}, {"type": "Done", "status": "False"}]
    s = pl(status={"conditions": conds, "failedStages": 1, "activeStages": 2})["status"]
    assert s["matched"] == ["Running", "Degraded"]
    assert s["phase"] == "Degraded"


def test_pipeline_has_no_raw_phase():
    assert "rawPhase" not in pl()["status"]


# -- §14.3 ServingGraph ---------------------------------------------------------------------------------

def graph(models: dict | None = None, status: dict | None = None, gateway_replicas: int | None = 3) -> dict:
    gw = {"podSpec": {"containers": [{"name": "gw", "image": "gw:1", "resources": {"requests": {"cpu": "1"}}}]},
          "podMetadata": {"labels": {"app.kubernetes.io/name": "servinggraph", "app.kubernetes.io/component": "gateway"}}}
    if gateway_replicas is not None:
        gw["replicas"] = gateway_replicas
    return {"apiVersion": "acme.example.com/v1", "kind": "ServingGraph",
            "metadata": {"name": "sg", "namespace": "serve", "uid": "sg-uid"},
            "spec": {"gateway": gw, "models": models if models is not None else MODELS},
            "status": status or {}}


# insertion order is NOT sorted on purpose
MODELS = {
    "prefill": {"replicas": 1, "nodesPerReplica": 4, "podLabels": {"m": "prefill"},
                "engine": {"name": "engine", "image": "prefill:1", "resources": {"limits": {GPU: "8"}}}},
    "decode": {"replicas": 2, "nodesPerReplica": 2, "autoscale": {"min": 1, "max": 4}, "podLabels": {"m": "decode"},
               "engine": {"name": "engine", "image": "decode:1", "resources": {"limits": {GPU: "4"}}},
               "placement": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}},
}


def sg(models=None, status=None, pods=None, gateway_replicas=3) -> dict:
    return interpret(graph(copy.deepcopy(models if models is not None else MODELS), status, gateway_replicas),
                     example("servinggraph"), pods)


def test_servinggraph_model_instances_are_map_keys_in_sorted_order():
    model = child_node(sg(), "model")
    assert [(i["id"], i["replicas"], i["minReplicas"], i["maxReplicas"]) for i in model["instances"]] == [
        ("decode", 4, 1, 4), ("prefill", 4, None, None)]
    assert [i["pod"]["containers"][0]["image"] for i in model["instances"]] == ["decode:1", "prefill:1"]
    assert [i["pod"]["labels"] for i in model["instances"]] == [{"m": "decode"}, {"m": "prefill"}]


def test_servinggraph_one_pod_group_with_two_subgroups():
    pg = sg()["gang"]["podGroup"]
    assert pg["name"] == "pg-sg-uid-graph"
    assert pg["minSubGroup"] == 2
    assert pg["minAvailable"] == 0
    assert pg["topology"] == {"topologyName": "cluster-topology", "preferredTopologyLevel": "rack",
                              "requiredTopologyLevel": "zone"}


def test_servinggraph_subgroup_minimums():
    subs = {s["name"]: s for s in sg()["gang"]["podGroup"]["subGroups"]}
    assert subs["gateway"]["minAvailable"] == 3
    # decode: autoscale min 1 overrides 2 x 2; prefill: 1 x 4
    assert subs["model"]["minAvailable"] == 1 + 4
    assert subs["model"]["topology"] == {"topologyName": "cluster-topology", "preferredTopologyLevel": "host",
                                         "requiredTopologyLevel": "rack"}
    assert "topology" not in subs["gateway"]


def test_servinggraph_gateway_default_replicas():
    subs = {s["name"]: s for s in sg(gateway_replicas=None)["gang"]["podGroup"]["subGroups"]}
    assert subs["gateway"]["minAvailable"] == 1


def test_servinggraph_totals():
    out = sg()
    gw = child_node(out, "gateway")
    assert gw["totals"] == {"pods": 3, "gpus": 0, "accelerators": {}, "requests": {"cpu": "3"},
                            "requestValues": {"cpu": 3000}}
    model = child_node(out, "model")
    assert model["totals"]["pods"] == 8
    assert model["totals"]["gpus"] == 4 * 4 + 4 * 8
    assert out["totals"]["pods"] == 11


def test_servinggraph_gateway_metadata_path():
    [i] = child_node(sg(), "gateway")["instances"]
    assert i["pod"]["labels"] == {"app.kubernetes.io/name": "servinggraph", "app.kubernetes.io/component": "gateway"}


def sg_pod(name: str, labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "serve", "labels": labels},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


GW_LABELS = {"app.kubernetes.io/name": "servinggraph", "app.kubernetes.io/component": "gateway"}


def test_servinggraph_selectors_are_mutually_exclusive():
    pods = [sg_pod("gw-0", GW_LABELS), sg_pod("decode-0-0", {"acme.example.com/model": "decode"}),
            sg_pod("prefill-0-1", {"acme.example.com/model": "prefill", "acme.example.com/replica": "0"})]
    out = sg(pods=pods)
    rows = {r["pod"]: r for r in out["gang"]["pods"]}
    assert rows["gw-0"]["component"] == "gateway" and rows["gw-0"]["subGroups"] == ["gateway"]
    assert rows["decode-0-0"]["component"] == "model" and rows["decode-0-0"]["subGroups"] == ["model"]
    assert {r["podGroup"] for r in rows.values()} == {"pg-sg-uid-graph"}
    live = {p["name"]: (p["component"], p["instance"]) for p in out["live"]["pods"]}
    assert live == {"gw-0": ("gateway", None), "decode-0-0": ("model", "decode"), "prefill-0-1": ("model", "prefill")}


def test_servinggraph_gateway_pod_with_partial_labels_is_not_gateway():
    out = sg(pods=[sg_pod("x", {"app.kubernetes.io/name": "servinggraph"})])
    assert out["live"]["unplaced"] == ["x"]
    assert out["gang"]["pods"][0]["error"] == "no component found for pod x"


@pytest.mark.parametrize("cond,expected", [
    ({"type": "Ready", "status": "True"}, ["Running"]),
    ({"type": "Ready", "status": "Unknown"}, ["Initializing"]),
    ({"type": "Ready", "status": "False", "reason": "PartiallyAvailable"}, ["Degraded"]),
    ({"type": "Ready", "status": "False", "reason": "CrashLoop"}, ["Failed"]),
    ({"type": "Ready", "status": "False"}, ["Failed"]),
])
def test_servinggraph_status(cond, expected):
    assert sg(status={"conditions": [cond]})["status"]["matched"] == expected


def test_servinggraph_no_conditions_is_undefined():
    assert sg(status={})["status"]["matched"] == ["Undefined"]
