"""Gang scheduling (docs/karta-semantics.md "Gang hints"): CalculateSubtreeScale in both
modes, alpha candidates/filters/group keys, KAI names, v2 podGroup and subgroups."""

from __future__ import annotations

import pytest

from ..karta_kit import child, karta, load, pod, root, run, workload
from app.engine.compiled import compiled
from app.engine.gang import GangError, subtree_scale
from app.engine.instances import extract_component
from app.engine.interpret import _results, input_text

TPL = {"podTemplateSpecPath": ".spec.template"}
INST_SEL = {"componentInstanceSelector": {"idPath": ".metadata.labels.inst"}}


def role_sel(role: str) -> dict:
    return {"componentTypeSelector": {"keyPath": ".metadata.labels.role", "value": role}}


def leaf(name: str, owner: str = "root", scale: dict | None = None, **fields) -> dict:
    spec = TPL
    if "instanceIdPath" in fields:  # one (null) template per instance element
        spec = {"podTemplateSpecPath": fields["instanceIdPath"] + " | null"}
    c = child(name, owner=owner, specDefinition=spec, podSelector=fields.pop("podSelector", role_sel(name)), **fields)
    if scale is not None:
        c["scaleDefinition"] = scale
    return c


def members_for(*names: str) -> dict:
    return {"podGroups": [{"name": "all", "members": [{"componentName": n} for n in names]}]}


def min_available(doc: dict, spec: dict | None = None) -> dict[str, int | None]:
    out = run(doc, workload(spec or {"template": {}}))
    return {m["component"]: m["minAvailable"] for m in out["gang"]["podGroups"][0]["members"]}


def values_for(doc: dict, spec: dict):
    """The reference primitives directly: compiled definition + extracted component values."""
    d = load(doc)
    assert d.valid
    cd = compiled(d)
    results = _results(cd.workload_index, cd.workload.run(input_text(workload(spec), cd.strip_noise)))
    return cd, {n: extract_component(cd.components[n], results, n) for n in cd.order}


def pod_rows(doc: dict, spec: dict, pods: list[dict]) -> list[dict]:
    return run(doc, workload(spec), pods)["gang"]["pods"]


def R(n: int | str) -> dict:
    return {"replicasPath": f'"{n}"' if isinstance(n, str) else str(n)}


# -- CalculateSubtreeScale: by definition (test-fact table) ------------------------------------------

def test_leaf_replicas_5_min_3_is_3():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": "5", "minReplicasPath": "3"}),
                gang=members_for("root"))
    assert min_available(doc) == {"root": 3}


def parent_worker_master(parent_scale: dict | None) -> dict:
    r = root(scaleDefinition=parent_scale) if parent_scale else root()
    return karta(r, children=[leaf("worker", scale=R(4)), leaf("master", scale=R(1))],
                 gang=members_for("root", "worker", "master"))


def test_parent_2_times_worker_4_plus_master_1():
    assert min_available(parent_worker_master(R(2))) == {"root": 10, "worker": 4, "master": 1}


def test_parent_without_scale_sums_children():
    assert min_available(parent_worker_master(None)) == {"root": 5, "worker": 4, "master": 1}


def array_workers(parent_scale: dict | None) -> dict:
    r = root(scaleDefinition=parent_scale) if parent_scale else root()
    return karta(r, children=[leaf("workers", instanceIdPath=".spec.workers[].name",
                                   podSelector=dict(role_sel("workers"), **INST_SEL),
                                   scale={"replicasPath": ".spec.workers[].replicas"})],
                 gang=members_for("root", "workers"))


WORKERS = {"template": {}, "workers": [{"name": "a", "replicas": 3}, {"name": "b", "replicas": 2}]}


def test_array_workers_3_plus_2():
    assert min_available(array_workers(None), WORKERS) == {"root": 5, "workers": 5}


def test_array_workers_with_parent_2():
    assert min_available(array_workers(R(2)), WORKERS) == {"root": 10, "workers": 5}


def test_parent_scale_3_child_without_scale():
    doc = karta(root(scaleDefinition=R(3)), children=[leaf("worker")], gang=members_for("root", "worker"))
    assert min_available(doc) == {"root": 3, "worker": 0}


def test_min_0_replicas_5():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": "5", "minReplicasPath": "0"}),
                gang=members_for("root"))
    assert min_available(doc) == {"root": 5}


def test_neither_min_nor_replicas_is_0():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": ".spec.none", "minReplicasPath": ".spec.none"}),
                gang=members_for("root"))
    assert min_available(doc) == {"root": 0}


def test_negative_min_falls_back_to_replicas():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": "4", "minReplicasPath": "-1"}),
                gang=members_for("root"))
    assert min_available(doc) == {"root": 4}


def test_negative_replicas_is_0():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": "-2"}), gang=members_for("root"))
    assert min_available(doc) == {"root": 0}


def test_parent_zero_uses_children_sum():
    doc = karta(root(scaleDefinition=R(0)), children=[leaf("worker", scale=R(4))], gang=members_for("root"))
    assert min_available(doc) == {"root": 4}


def test_max_replicas_never_counts():
    doc = karta(root(specDefinition=TPL, scaleDefinition={"maxReplicasPath": "7"}), gang=members_for("root"))
    assert min_available(doc) == {"root": 0}


def test_nested_product():
    doc = karta(root(scaleDefinition=R(2)),
                children=[child("group", scaleDefinition=R(3)), leaf("worker", owner="group", scale=R(4))],
                gang=members_for("root", "group", "worker"))
    assert min_available(doc) == {"root": 24, "group": 12, "worker": 4}


def test_lws_counting_convention_golden():
    # docs/karta-semantics.md "Counting convention": replicas 2, size 2 read through the gang formula gives 8.
    doc = karta(root(),
                children=[child("group", scaleDefinition={"replicasPath": ".spec.size"}),
                          leaf("leader", owner="group", scale={"replicasPath": ".spec.replicas"}),
                          leaf("worker", owner="group", scale={"replicasPath": ".spec.replicas * (.spec.size - 1)"})],
                gang=members_for("root"))
    assert min_available(doc, {"template": {}, "replicas": 2, "size": 2}) == {"root": 8}


def test_scale_anywhere_switches_to_definition_mode():
    # leaves without scale count 0 in definition mode (they would count 1 each by leaves)
    doc = karta(children=[leaf("a"), leaf("b"), child("config", scaleDefinition=R(0))],
                gang=members_for("root", "a"))
    assert min_available(doc) == {"root": 0, "a": 0}


# -- CalculateSubtreeScale: by leaves -----------------------------------------------------------------

def test_no_scale_anywhere_root_with_two_leaves():
    doc = karta(children=[leaf("worker"), leaf("master")], gang=members_for("root", "worker", "master"))
    assert min_available(doc) == {"root": 2, "worker": 1, "master": 1}


def test_no_scale_anywhere_nested():
    doc = karta(root("cluster"),
                children=[child("job-group", owner="cluster"), leaf("worker", owner="job-group"),
                          leaf("master", owner="job-group"), leaf("storage", owner="cluster")],
                gang=members_for("cluster", "job-group"))
    assert min_available(doc) == {"cluster": 3, "job-group": 2}


def test_by_leaves_multi_instance_counts_ids():
    doc = karta(children=[leaf("w", instanceIdPath=".spec.w[]", podSelector=dict(role_sel("w"), **INST_SEL))],
                gang=members_for("root", "w"))
    assert min_available(doc, {"template": {}, "w": ["x", "y"]}) == {"root": 2, "w": 2}


def test_by_leaves_pod_bearing_with_children_does_not_recurse():
    doc = karta(root(specDefinition=TPL), children=[leaf("a"), leaf("b")], gang=members_for("root"))
    assert min_available(doc) == {"root": 1}


def test_by_leaves_multi_instance_each_instance_is_1():
    doc = karta(children=[leaf("w", instanceIdPath=".spec.w[]", podSelector=dict(role_sel("w"), **INST_SEL))],
                gang=members_for("w"))
    rows = pod_rows(doc, {"template": {}, "w": ["x", "y"]}, [pod("p", {"role": "w", "inst": "y"})])
    assert rows[0]["instance"] == "y"
    assert rows[0]["minAvailable"] == 1


# -- instance-specific minimum -----------------------------------------------------------------------

def job_doc() -> dict:
    return karta(children=[leaf("job", instanceIdPath=".spec.jobs[].name", podSelector=dict(role_sel("job"), **INST_SEL),
                                scale={"replicasPath": ".spec.jobs[].replicas", "minReplicasPath": ".spec.jobs[].min"})],
                 gang=members_for("job"))


JOBS = {"template": {}, "jobs": [{"name": "indexer", "replicas": 3}, {"name": "processor", "replicas": 4, "min": 2}]}


def test_instance_specific_all_instances():
    assert min_available(job_doc(), JOBS) == {"job": 5}


@pytest.mark.parametrize("inst,expected", [("indexer", 3), ("processor", 2)])
def test_instance_specific_per_pod(inst, expected):
    [row] = pod_rows(job_doc(), JOBS, [pod("p", {"role": "job", "inst": inst})])
    assert row["instance"] == inst
    assert row["effectiveComponent"] == "job"
    assert row["minAvailable"] == expected


@pytest.mark.parametrize("inst,expected", [("indexer", 3), ("processor", 2), (None, 5)])
def test_subtree_scale_direct(inst, expected):
    cd, values = values_for(job_doc(), JOBS)
    assert (subtree_scale(cd, values, "job") if inst is None else subtree_scale(cd, values, "job", inst)) == expected


def test_unknown_instance_id():
    cd, values = values_for(job_doc(), JOBS)
    with pytest.raises(GangError) as e:
        subtree_scale(cd, values, "job", "non-existent")
    assert "instance id non-existent not found" in str(e.value)


def test_unknown_instance_id_by_leaves():
    doc = karta(children=[leaf("w", instanceIdPath=".spec.w[]", podSelector=dict(role_sel("w"), **INST_SEL))])
    cd, values = values_for(doc, {"template": {}, "w": ["x"]})
    with pytest.raises(GangError) as e:
        subtree_scale(cd, values, "w", "non-existent")
    assert "instance id non-existent not found" in str(e.value)


def test_empty_instance_id():
    cd, values = values_for(job_doc(), JOBS)
    with pytest.raises(GangError) as e:
        subtree_scale(cd, values, "job", "")
    assert str(e.value) == "instance id is empty"


def test_instance_restriction_applies_only_at_start():
    doc = karta(children=[child("grp", instanceIdPath=".spec.g[].name", podSelector=INST_SEL,
                                scaleDefinition={"replicasPath": ".spec.g[].n"}),
                          leaf("w", owner="grp", instanceIdPath=".spec.w[].name",
                               podSelector=dict(role_sel("w"), **INST_SEL), scale={"replicasPath": ".spec.w[].n"})])
    spec = {"template": {}, "g": [{"name": "a", "n": 2}, {"name": "b", "n": 5}],
            "w": [{"name": "x", "n": 3}, {"name": "y", "n": 4}]}
    cd, values = values_for(doc, spec)
    assert subtree_scale(cd, values, "grp", "a") == 2 * 7
    assert subtree_scale(cd, values, "grp") == 7 * 7
    assert subtree_scale(cd, values, "root") == 49


# -- alpha candidates -------------------------------------------------------------------------------

def pytorch(groups: list[dict], children: list[dict] | None = None) -> dict:
    kids = children if children is not None else [leaf("worker", owner="pytorch-job", scale=R(4)),
                                                  leaf("master", owner="pytorch-job", scale=R(1))]
    return karta(root("pytorch-job", scaleDefinition=R(1)), children=kids, gang={"podGroups": groups})


def worker_pod(name="w0", **labels) -> dict:
    return pod(name, {"role": "worker", "job": "llama", **labels})


def row_for(doc: dict, p: dict) -> dict:
    [r] = pod_rows(doc, {"template": {}}, [p])
    return r


def test_own_member_before_ancestor_member():
    doc = pytorch([{"name": "job-group", "members": [{"componentName": "pytorch-job"}]},
                   {"name": "worker-group", "members": [{"componentName": "worker"}]}])
    r = row_for(doc, worker_pod())
    assert (r["effectiveComponent"], r["podGroupDefinition"]) == ("worker", "worker-group")
    assert r["minAvailable"] == 4


def test_definition_order_among_own_members():
    doc = pytorch([{"name": "b-group", "members": [{"componentName": "worker"}]},
                   {"name": "a-group", "members": [{"componentName": "worker"}]}])
    assert row_for(doc, worker_pod())["podGroupDefinition"] == "b-group"


def test_nearest_ancestor_before_farther_ancestor():
    kids = [child("grp", owner="pytorch-job", scaleDefinition=R(2)), leaf("worker", owner="grp", scale=R(4))]
    doc = pytorch([{"name": "top", "members": [{"componentName": "pytorch-job"}]},
                   {"name": "mid", "members": [{"componentName": "grp"}]}], kids)
    r = row_for(doc, worker_pod())
    assert (r["effectiveComponent"], r["podGroupDefinition"], r["minAvailable"]) == ("grp", "mid", 8)
    assert r["instance"] is None


def test_members_order_within_a_level():
    doc = pytorch([{"name": "g1", "members": [{"componentName": "master"}, {"componentName": "pytorch-job"}]},
                   {"name": "g2", "members": [{"componentName": "pytorch-job"}]}])
    assert row_for(doc, worker_pod())["podGroupDefinition"] == "g1"


def test_filters_route_gpu_and_cpu():
    doc = pytorch([{"name": "gpu-group", "members": [{"componentName": "worker", "filters": ['.metadata.labels.tier == "gpu"']}]},
                   {"name": "cpu-group", "members": [{"componentName": "worker", "filters": ['.metadata.labels.tier == "cpu"']}]}])
    rows = pod_rows(doc, {"template": {}}, [worker_pod("a", tier="gpu"), worker_pod("b", tier="cpu")])
    assert [r["podGroupDefinition"] for r in rows] == ["gpu-group", "cpu-group"]


def test_failing_direct_filter_falls_back_to_parent_member_without_filters():
    doc = pytorch([{"name": "gpu-group", "members": [{"componentName": "worker", "filters": ['.metadata.labels.tier == "gpu"']}]},
                   {"name": "fallback-group", "members": [{"componentName": "pytorch-job"}]}])
    r = row_for(doc, worker_pod(tier="cpu"))
    assert r["effectiveComponent"] == "pytorch-job"
    assert r["podGroupDefinition"] == "fallback-group"
    assert r["instance"] is None
    assert r["minAvailable"] == 5  # 1 x (4 + 1)


def test_all_filters_must_pass():
    doc = pytorch([{"name": "both", "members": [{"componentName": "worker", "filters": [
        '.metadata.labels.tier == "gpu"', '.metadata.labels.zone == "a"']}]},
        {"name": "rest", "members": [{"componentName": "worker"}]}])
    rows = pod_rows(doc, {"template": {}}, [worker_pod("a", tier="gpu", zone="a"), worker_pod("b", tier="gpu", zone="b")])
    assert [r["podGroupDefinition"] for r in rows] == ["both", "rest"]


@pytest.mark.parametrize("filter_expr", ['"true"', "1", '.metadata.labels.tier', "[true]", "{}", "false"])
def test_only_boolean_true_passes(filter_expr):
    doc = pytorch([{"name": "f", "members": [{"componentName": "worker", "filters": [filter_expr]}]},
                   {"name": "rest", "members": [{"componentName": "worker"}]}])
    assert row_for(doc, worker_pod(tier="gpu"))["podGroupDefinition"] == "rest"


def test_boolean_true_passes():
    doc = pytorch([{"name": "f", "members": [{"componentName": "worker", "filters": ["true"]}]},
                   {"name": "rest", "members": [{"componentName": "worker"}]}])
    assert row_for(doc, worker_pod())["podGroupDefinition"] == "f"


@pytest.mark.parametrize("filter_expr,tail", [
    (".metadata.labels.missing", "query result is empty"),
    ('""', "query result is empty"),
    ("(true, true)", "expected single query result, got 2"),
    ("empty", "expected single query result, got 0"),
    (".metadata.labels.role[]", "cannot iterate over"),
])
def test_filter_errors_are_wrapped(filter_expr, tail):
    doc = pytorch([{"name": "f", "members": [{"componentName": "worker", "filters": [filter_expr]}]},
                   {"name": "rest", "members": [{"componentName": "worker"}]}])
    r = row_for(doc, worker_pod())
    prefix = f'failed to evaluate filters for component worker in group f: failed to evaluate filter "{filter_expr}": '
    assert r["error"].startswith(prefix), r["error"]
    assert tail in r["error"]


def test_filter_error_on_ancestor_candidate_names_that_component():
    doc = pytorch([{"name": "g", "members": [{"componentName": "pytorch-job", "filters": [".metadata.labels.none"]}]}])
    r = row_for(doc, worker_pod())
    assert r["error"].startswith('failed to evaluate filters for component pytorch-job in group g: '
                                 'failed to evaluate filter ".metadata.labels.none": query result is empty')


def test_no_candidate_means_no_gang():
    doc = pytorch([{"name": "m", "members": [{"componentName": "master"}]}])
    assert row_for(doc, worker_pod("w0"))["error"] == "pod ns/w0 does not match any Karta pod group member definition"


def test_failing_filter_without_fallback_means_no_gang():
    doc = pytorch([{"name": "g", "members": [{"componentName": "worker", "filters": ["false"]}]}])
    assert row_for(doc, worker_pod("w0"))["error"] == "pod ns/w0 does not match any Karta pod group member definition"


def test_candidate_list_direct():
    doc = pytorch([{"name": "a", "members": [{"componentName": "pytorch-job"}, {"componentName": "master"}]},
                   {"name": "b", "members": [{"componentName": "worker"}]},
                   {"name": "c", "members": [{"componentName": "pytorch-job"}, {"componentName": "worker"}]}])
    cd = compiled(load(doc))
    assert [(c.effective_component, c.pod_group_name) for c in cd.candidates["worker"]] == [
        ("worker", "b"), ("worker", "c"), ("pytorch-job", "a"), ("pytorch-job", "c")]
    assert [(c.effective_component, c.pod_group_name) for c in cd.candidates["pytorch-job"]] == [
        ("pytorch-job", "a"), ("pytorch-job", "c")]


# -- group keys and KAI names -------------------------------------------------------------------------

def keyed(paths: list[str]) -> dict:
    return pytorch([{"name": "karta-group-name", "members": [{"componentName": "worker", "groupByKeyPaths": paths}]}])


def test_kai_name_with_keys():
    r = row_for(keyed([".metadata.labels.job", '"gpu"']), worker_pod())
    assert r["groupKeys"] == ["llama", "gpu"]
    assert r["podGroup"] == "pg-u1-llama-gpu"


def test_kai_name_without_keys():
    r = row_for(keyed([]), worker_pod())
    assert r["groupKeys"] == []
    assert r["podGroup"] == "pg-u1"


def test_karta_group_name_is_not_part_of_pod_group_name():
    r = row_for(keyed([".metadata.labels.job"]), worker_pod())
    assert "karta-group-name" not in r["podGroup"]
    assert r["podGroupDefinition"] == "karta-group-name"


@pytest.mark.parametrize("expr,key", [
    ("3", "3"), ("3.0", "3"), (".spec.priority", "7"), ("true", "true"), ("2.5", "2.5"),
])
def test_group_keys_use_go_v(expr, key):
    p = worker_pod()
    p["spec"]["priority"] = 7.0
    r = row_for(keyed([expr]), p)
    assert r["groupKeys"] == [key]


@pytest.mark.parametrize("expr,key", [("1e21", "1e+21"), ("1e6", "1e+06")])
def test_group_key_exponent_is_go_formatted(expr, key):
    r = row_for(keyed([expr]), worker_pod())
    # "pg-u1-1e+21" is not a DNS-1123 subdomain, so KAI rejects the name; the key text is Go %v.
    assert f'"pg-u1-{key}"' in r["error"]


@pytest.mark.parametrize("expr,tail", [
    (".metadata.labels.missing", "query result is empty"),
    ('""', "query result is empty"),
    (".metadata.labels | to_entries[] | .value", "expected single query result, got 2"),
    ("empty", "expected single query result, got 0"),
])
def test_group_key_errors(expr, tail):
    r = row_for(keyed([expr]), worker_pod())
    assert r["error"].startswith(f'failed to extract group key from path "{expr}": {tail}'), r["error"]


def test_group_name_must_be_dns_1123():
    r = row_for(keyed(['"GPU"']), worker_pod())
    assert "error" in r and "DNS-1123" in r["error"]


def test_equal_keys_share_a_gang():
    doc = keyed([".metadata.labels.job"])
    out = run(doc, workload({"template": {}}), [worker_pod("a"), worker_pod("b", job="other"), worker_pod("c")])
    groups = {g["name"]: g["pods"] for g in out["gang"]["groups"]}
    assert groups == {"pg-u1-llama": ["a", "c"], "pg-u1-other": ["b"]}


def test_uid_is_the_owner_id():
    out = run(keyed([]), workload({"template": {}}, uid="abc-123"), [worker_pod()])
    assert out["gang"]["pods"][0]["podGroup"] == "pg-abc-123"


def test_workload_level_alpha_view():
    doc = pytorch([{"name": "g", "members": [{"componentName": "worker", "groupByKeyPaths": [".metadata.labels.job"],
                                              "filters": ["true"]}, {"componentName": "pytorch-job"}]}])
    out = run(doc, workload({"template": {}}))
    assert out["gang"]["mode"] == "podGroups"
    [g] = out["gang"]["podGroups"]
    assert g["name"] == "g"
    assert [(m["component"], m["minAvailable"], m["groupByKeyPaths"]) for m in g["members"]] == [
        ("worker", 4, [".metadata.labels.job"]), ("pytorch-job", 5, [])]


def test_no_gang_instructions_is_empty():
    assert run(karta())["gang"] == {}


# -- pipeline-style member: effMin of the pod's instance --------------------------------------------

def test_effective_component_itself_uses_pod_instance():
    doc = karta(children=[leaf("stage", instanceIdPath=".spec.stages[].name",
                               podSelector=dict(role_sel("stage"), **INST_SEL),
                               scale={"replicasPath": ".spec.stages[] | (.parallelism // 1)"})],
                gang={"podGroups": [{"name": "g", "members": [{"componentName": "stage"}]}]})
    spec = {"template": {}, "stages": [{"name": "prep", "parallelism": 2}, {"name": "train", "parallelism": 4}]}
    rows = pod_rows(doc, spec, [pod("t0", {"role": "stage", "inst": "train"}), pod("p0", {"role": "stage", "inst": "prep"})])
    assert [(r["instance"], r["minAvailable"]) for r in rows] == [("train", 4), ("prep", 2)]


# -- v2 podGroup ---------------------------------------------------------------------------------------

TOPO = {"topologyName": "cluster-topology", "preferredTopologyLevel": "rack", "requiredTopologyLevel": "zone"}


def v2(sub_groups: list[dict] | None, **extra) -> dict:
    pg = {"name": "train", **extra}
    if sub_groups is not None:
        pg["subGroups"] = sub_groups
    return karta(root(scaleDefinition=R(2)),
                 children=[leaf("ps", scale=R(2)), leaf("worker", scale=R(4)),
                           child("grp"), leaf("inner", owner="grp", scale=R(3)), leaf("idle")],
                 gang={"podGroup": pg})


def test_v2_subgroups():
    out = run(v2([{"componentName": "ps"}, {"componentName": "worker", "topology": TOPO}], topology=TOPO),
              workload({"template": {}}))
    pg = out["gang"]["podGroup"]
    assert out["gang"]["mode"] == "podGroup"
    assert pg["name"] == "pg-u1-train"
    assert pg["minAvailable"] == 0
    assert pg["minSubGroup"] == 2
    assert pg["topology"] == TOPO
    assert [(s["name"], s["minAvailable"]) for s in pg["subGroups"]] == [("ps", 2), ("worker", 4)]
    assert "topology" not in pg["subGroups"][0]
    assert pg["subGroups"][1]["topology"] == TOPO
    assert not any("error" in s for s in pg["subGroups"])


def test_v2_without_subgroups_uses_root_subtree():
    out = run(v2(None), workload({"template": {}}))
    pg = out["gang"]["podGroup"]
    assert pg["minAvailable"] == 2 * (2 + 4 + 3 + 0)
    assert pg.get("minSubGroup", 0) == 0


def test_v2_grouping_subgroup_sums_descendants():
    out = run(v2([{"componentName": "grp"}]), workload({"template": {}}))
    assert out["gang"]["podGroup"]["subGroups"][0]["minAvailable"] == 3


def test_v2_subgroup_minimum_zero_is_an_error():
    out = run(v2([{"componentName": "ps"}, {"componentName": "idle"}]), workload({"template": {}}))
    idle = out["gang"]["podGroup"]["subGroups"][1]
    assert idle["error"] == "component idle must expose a replica scale definition"


def test_v2_subgroup_of_undefined_component_reports_error():
    out = run(v2([{"componentName": "ghost"}]), workload({"template": {}}))
    assert "error" in out["gang"]["podGroup"]["subGroups"][0]


def test_v2_pod_membership_by_component_or_descendant_selector():
    out = run(v2([{"componentName": "ps"}, {"componentName": "grp"}]), workload({"template": {}}),
              [pod("a", {"role": "ps"}), pod("b", {"role": "inner"}), pod("c", {"role": "worker"})])
    rows = {r["pod"]: r for r in out["gang"]["pods"]}
    assert rows["a"]["subGroups"] == ["ps"]
    assert rows["b"]["subGroups"] == ["grp"]
    assert rows["c"]["subGroups"] == []
    assert {r["podGroup"] for r in rows.values()} == {"pg-u1-train"}


def test_v2_takes_precedence_over_alpha():
    doc = karta(root(specDefinition=TPL, scaleDefinition=R(3)),
                gang={"podGroup": {"name": "main"},
                      "podGroups": [{"name": "old", "members": [{"componentName": "root", "groupByKeyPaths": ['"x"']}]}]})
    out = run(doc, workload({"template": {}}), [pod("p")])
    assert out["gang"]["mode"] == "podGroup"
    assert out["gang"]["podGroup"]["name"] == "pg-u1-main"
    assert out["gang"]["podGroup"]["minAvailable"] == 3
    assert out["gang"]["pods"][0]["podGroup"] == "pg-u1-main"
    assert "groups" not in out["gang"]


def test_v2_candidates_do_not_come_from_pod_group():
    doc = karta(root(specDefinition=TPL), gang={"podGroup": {"name": "main", "subGroups": [{"componentName": "root"}]}})
    cd = compiled(load(doc))
    assert all(c == [] for c in cd.candidates.values())
