"""Accelerators and integer units (issue 22, docs/api-contract.md "What schedulers and platforms read"):
`accelerators` counts every accelerator resource by pattern, `gpus` counts whole devices across
vendors (never MIG slices or other partitions), `requestValues` is every request as an integer
in base units, rounded up.  Checked per pod, per instance, per component and per workload."""

from __future__ import annotations

import pytest
from ..karta_kit import child, karta, node, root, run, workload

from app.engine.accelerators import resource_rules
from app.engine.options import DEFAULT_OPTIONS, EngineOptions
from app.engine.quantity import QuantityError
from app.engine.totals import add_totals

GPU = "nvidia.com/gpu"


def deployment_doc() -> dict:
    return karta(root("deployment", kind={"group": "apps", "version": "v1", "kind": "Deployment"},
                      specDefinition={"podTemplateSpecPath": ".spec.template"},
                      scaleDefinition={"replicasPath": ".spec.replicas"}))


def deploy(requests: dict, replicas: int = 2, limits: dict | None = None,
           options: EngineOptions = DEFAULT_OPTIONS) -> dict:
    res = {"requests": requests} | ({"limits": limits} if limits else {})
    return run(deployment_doc(), workload({"replicas": replicas, "template": {"spec": {"containers": [
        {"name": "main", "image": "img", "resources": res}]}}}), options=options)


# -- vendors ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("resource", "gpus_per_pod"), [
    ("amd.com/gpu", 2), ("gpu.intel.com/i915", 2), ("gpu.intel.com/xe", 2), ("habana.ai/gaudi", 2),
    ("aws.amazon.com/neuron", 0), ("aws.amazon.com/neuroncore", 0), ("google.com/tpu", 0),
    ("gpu.intel.com/millicores", 0), ("nvidia.com/mig-3g.20gb", 0)])
def test_vendor_accelerators(resource, gpus_per_pod):
    out = deploy({resource: "2", "cpu": "1"}, replicas=3)
    assert out["totals"]["accelerators"] == {resource: 6}
    assert out["totals"]["gpus"] == 3 * gpus_per_pod
    [inst] = out["tree"]["instances"]
    assert inst["pod"]["accelerators"] == {resource: 2}
    assert inst["pod"]["gpus"] == gpus_per_pod
    assert inst["totals"]["accelerators"] == {resource: 6}
    assert out["tree"]["totals"]["accelerators"] == {resource: 6}


def test_mig_slices_are_accelerators_never_gpus():
    out = deploy({"nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-3g.20gb": "1"}, replicas=4)
    assert out["totals"]["gpus"] == 0
    assert out["totals"]["accelerators"] == {"nvidia.com/mig-1g.5gb": 8, "nvidia.com/mig-3g.20gb": 4}


def test_nvidia_only_workload_answers_as_before():
    out = deploy({GPU: "500m", "cpu": "2"}, replicas=3)  # a fractional GPU rounds up per pod (Value())
    assert out["totals"]["gpus"] == 3
    assert out["totals"]["accelerators"] == {GPU: 3}
    assert out["totals"]["requests"] == {"cpu": "6", GPU: "1500m"}


def test_mixed_workload_across_components():
    doc = karta(root("job", kind={"group": "acme.example.com", "version": "v1", "kind": "Thing"}),
                children=[child(name, owner="job", specDefinition={"podTemplateSpecPath": f".spec.{name}"},
                                scaleDefinition={"replicasPath": f".spec.n{name}"})
                          for name in ("trainer", "infer", "slice")])

    def tpl(req: dict) -> dict:
        return {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": req}}],
                         "initContainers": [{"name": "init", "image": "i",
                                             "resources": {"requests": {"amd.com/gpu": "1"}}}]}}
    out = run(doc, workload({"trainer": tpl({GPU: "8", "habana.ai/gaudi": "1"}), "ntrainer": 2,
                             "infer": tpl({"amd.com/gpu": "2", "example.com/fpga": "1"}), "ninfer": 3,
                             "slice": tpl({"nvidia.com/mig-1g.5gb": "1"}), "nslice": 5}))
    t = out["totals"]
    # trainer 2 x (8 + 1 + 1 init amd), infer 3 x 2 amd (init max 1 < 2), slice 5 x 1 init amd
    assert t["gpus"] == 2 * 10 + 3 * 2 + 5 * 1
    assert t["accelerators"] == {"amd.com/gpu": 2 + 6 + 5, "habana.ai/gaudi": 2, "nvidia.com/mig-1g.5gb": 5,
                                 GPU: 16}
    assert "example.com/fpga" not in t["accelerators"] and t["requestValues"]["example.com/fpga"] == 3
    assert node(out["tree"], "slice")["totals"]["accelerators"] == {"amd.com/gpu": 5, "nvidia.com/mig-1g.5gb": 5}
    assert out["tree"]["totals"] == t


def test_custom_patterns_replace_the_lists():
    fpga = EngineOptions(resource_rules(["example.com/fpga", "nvidia.com/mig-*"], ["example.com/fpga"]))
    requests = {"example.com/fpga": "1", GPU: "4", "nvidia.com/mig-2g.10gb": "1"}
    out = deploy(requests, replicas=2, options=fpga)
    assert out["totals"]["accelerators"] == {"example.com/fpga": 2, "nvidia.com/mig-2g.10gb": 2}
    assert out["totals"]["gpus"] == 2
    # the same pod definition with the default rules (its facts are cached by resources and rules)
    assert deploy(requests, replicas=2)["totals"]["accelerators"] == {GPU: 8, "nvidia.com/mig-2g.10gb": 2}
    reference = EngineOptions(resource_rules(gpus=[GPU]))  # the reference library's rule: only nvidia.com/gpu
    out = deploy({"amd.com/gpu": "1", GPU: "4"}, replicas=2, options=reference)
    assert out["totals"]["gpus"] == 8
    assert out["totals"]["accelerators"] == {"amd.com/gpu": 2, GPU: 8}
    assert deploy({"amd.com/gpu": "1", GPU: "4"}, replicas=2)["totals"]["gpus"] == 10


def test_bad_pattern_is_refused():
    with pytest.raises(ValueError, match="not a resource name"):
        resource_rules(["nvidia.com/[gpu]"])
    with pytest.raises(ValueError, match="at least one"):
        resource_rules(gpus=[" "])


# -- integer units --------------------------------------------------------------------------------

def test_request_values_round_up_in_base_units():
    out = deploy({"cpu": "100m", "memory": "1.5Gi", "ephemeral-storage": "1k", "hugepages-2Mi": "250Mi",
                  GPU: "1", "example.com/widget": "1500m"}, replicas=1)
    [inst] = out["tree"]["instances"]
    assert inst["pod"]["requestValues"] == {"cpu": 100, "ephemeral-storage": 1000, "example.com/widget": 2,
                                            "hugepages-2Mi": 250 * 2**20, "memory": 3 * 2**29, GPU: 1}
    assert out["totals"]["requestValues"] == inst["pod"]["requestValues"]


@pytest.mark.parametrize(("resource", "quantity", "value"), [
    ("cpu", "100m", 100), ("cpu", "0.5", 500), ("cpu", "13", 13000), ("cpu", "0.0001", 1), ("cpu", "1500u", 2),
    ("memory", "1.5Gi", 1610612736), ("memory", "1k", 1000), ("memory", "250Mi", 262144000), ("memory", "1.5", 2),
    ("memory", "100m", 1), ("hugepages-1Gi", "2Gi", 2 * 2**30), ("storage", "1e3", 1000),
    (GPU, "1", 1), ("example.com/foo", "0.2", 1)])
def test_request_value_of_each_quantity(resource, quantity, value):
    out = deploy({resource: quantity}, replicas=1)
    assert out["totals"]["requestValues"] == {resource: value}
    [inst] = out["tree"]["instances"]
    assert inst["pod"]["requestValues"] == {resource: value}


def test_request_values_are_the_exact_sum_rounded_once():
    out = deploy({"cpu": "13"}, replicas=1)
    assert out["totals"]["requestValues"]["cpu"] == 13000
    out = deploy({"cpu": "0.0004", "memory": "0.5"}, replicas=4)  # 4 x 0.4 millicores is 1.6 -> 2
    assert out["totals"]["requests"] == {"cpu": "1600u", "memory": "2"}
    assert out["totals"]["requestValues"] == {"cpu": 2, "memory": 2}


def test_limits_only_and_zero_requests():
    out = deploy({GPU: "0"}, limits={"amd.com/gpu": "1", GPU: "2"}, replicas=2)  # an explicit 0 keeps 0
    assert out["totals"]["accelerators"] == {"amd.com/gpu": 2, GPU: 0}
    assert out["totals"]["requestValues"] == {"amd.com/gpu": 2, GPU: 0}
    assert out["totals"]["gpus"] == 2


def test_huge_quantity_is_clamped_to_int64():
    out = deploy({"memory": "9Ei", "amd.com/gpu": "1E30"}, replicas=2)
    assert out["totals"]["requestValues"]["memory"] == 2**63 - 1
    assert out["totals"]["accelerators"] == {"amd.com/gpu": 2**63 - 1}


# -- summing totals (a batch's, a group's) ----------------------------------------------------------

def test_add_totals_sums_interpretations():
    a = deploy({GPU: "1", "cpu": "500m", "nvidia.com/mig-1g.5gb": "1"}, replicas=3)["totals"]
    b = deploy({"amd.com/gpu": "2", "cpu": "0.5", "memory": "1Gi"}, replicas=1)["totals"]
    s = add_totals(a, b)
    assert s == {"pods": 4, "gpus": 5, "accelerators": {"amd.com/gpu": 2, "nvidia.com/mig-1g.5gb": 3, GPU: 3},
                 "requests": {"amd.com/gpu": "2", "cpu": "2", "memory": "1Gi", "nvidia.com/mig-1g.5gb": "3",
                              GPU: "3"},
                 "requestValues": {"amd.com/gpu": 2, "cpu": 2000, "memory": 2**30, "nvidia.com/mig-1g.5gb": 3,
                                   GPU: 3}}
    assert add_totals(a, None) is None
    with pytest.raises(QuantityError):
        add_totals(a, {"pods": 1, "gpus": 0, "requests": {"cpu": "lots"}})


# -- the CLI ------------------------------------------------------------------------------------

def test_interpret_takes_the_flags_in_its_evaluation_worker(tmp_path):
    """`wlmap interpret` with a definition that is not built in evaluates in a spawned worker:
    the flags reach it."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    task = {"apiVersion": "acme.example.com/v1", "kind": "BatchTask", "metadata": {"name": "bt", "namespace": "t"},
            "spec": {"workers": 2, "podTemplate": {"spec": {"containers": [{"name": "t", "image": "t", "resources": {
                "requests": {"amd.com/gpu": "1", "google.com/tpu": "4", "cpu": "0.5"}}}]}}},
            "status": {"state": "Active"}}
    (tmp_path / "bt.json").write_text(json.dumps(task))
    wlmap = Path(sys.executable).parent / "wlmap"

    def totals(*flags: str) -> dict:
        r = subprocess.run([str(wlmap), "interpret", "--definition", str(root / "tests/data/examples/batchtask.karta.yaml"),
                            "-o", "json", *flags, str(tmp_path / "bt.json")], capture_output=True, text=True,
                           timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["totals"]

    t = totals()
    assert (t["gpus"], t["accelerators"]) == (2, {"amd.com/gpu": 2, "google.com/tpu": 8})
    assert t["requestValues"]["cpu"] == 1000
    t = totals("--gpu-resource", "google.com/tpu", "--accelerator-resource", "google.com/*")
    assert (t["gpus"], t["accelerators"]) == (8, {"google.com/tpu": 8})


def test_cached_totals_are_the_callers_to_keep_and_bounded():
    from app.engine import totals as totals_mod

    first = deploy({"amd.com/gpu": "1", "cpu": "1"}, replicas=3)
    first["totals"]["accelerators"]["amd.com/gpu"] = 99  # a caller editing its answer
    first["tree"]["instances"][0]["totals"]["requestValues"]["cpu"] = 0
    again = deploy({"amd.com/gpu": "1", "cpu": "1"}, replicas=3)
    assert again["totals"]["accelerators"] == {"amd.com/gpu": 3}
    assert again["tree"]["instances"][0]["totals"]["requestValues"]["cpu"] == 3000
    for n in range(totals_mod.SUMS_CACHE + 10):  # distinct sums never grow the cache past its bound
        totals_mod.Sums(1, 0, {}, {}) + totals_mod.Sums(n + 1, 0, {}, {})
    assert len(totals_mod._SUMS) <= totals_mod.SUMS_CACHE
