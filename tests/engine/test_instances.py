"""Instance ids, per-field extraction and the positional zip (docs/karta-semantics.md "Instances",
docs/karta-format.md "Instances")."""

from __future__ import annotations

import pytest

from ..karta_kit import child, error_messages, instance, karta, node, root, run, run_error, workload

SEL = {"componentInstanceSelector": {"idPath": ".metadata.labels.inst"}}


def multi(id_path: str = ".spec.w[].name", **fields) -> dict:
    return karta(children=[child("w", instanceIdPath=id_path, podSelector=SEL, **fields)])


def single(**fields) -> dict:
    return karta(children=[child("w", **fields)])


def insts(doc: dict, spec: dict) -> list[dict]:
    return node(run(doc, workload(spec))["tree"], "w")["instances"]


def ids(doc: dict, spec: dict) -> list:
    return [i["id"] for i in insts(doc, spec)]


def failure(doc: dict, spec: dict) -> dict:
    e = run_error(doc, workload(spec))
    assert len(e.errors) == 1, e.errors
    return e.errors[0]


# -- instance ids ------------------------------------------------------------------------------

def test_no_instance_id_path_is_one_implicit_instance_with_null_id():
    assert ids(single(), {}) == [None]


def test_array_form_ids():
    assert ids(multi(), {"w": [{"name": "indexer"}, {"name": "processor"}]}) == ["indexer", "processor"]


def test_map_form_ids():
    doc = multi(".spec.services | to_entries[] | .key")
    assert ids(doc, {"services": {"worker": {}, "api": {}, "cache": {}}}) == ["api", "cache", "worker"]


def test_empty_id_error_with_first_of_two_empty():
    err = failure(multi(), {"w": [{"name": ""}, {"name": "processor"}]})
    assert err["message"] == "instance id path contained empty string values [,processor]"
    assert err["path"] == "spec.structureDefinition.childComponents[0].instanceIdPath"
    assert err["expression"] == ".spec.w[].name"


def test_null_id_becomes_empty_and_fails():
    err = failure(multi(), {"w": [{"name": "a"}, {}]})
    assert err["message"] == "instance id path contained empty string values [a,]"


def test_all_ids_listed_in_empty_id_error():
    err = failure(multi(), {"w": [{"name": "a"}, {"name": ""}, {"name": "c"}, {}]})
    assert err["message"] == "instance id path contained empty string values [a,,c,]"


@pytest.mark.parametrize("value,word,index", [(1, "number", 0), (True, "bool", 0), ({"x": 1}, "object", 0)])
def test_non_string_ids_fail_conversion(value, word, index):
    err = failure(multi(), {"w": [{"name": value}, {"name": "b"}]})
    assert err["message"] == (f"failed to extract instance ids for component w: failed to convert object at index "
                              f"{index} to type string: json: cannot unmarshal {word} into Go value of type string")


def test_numeric_id_at_second_position_names_index_1():
    err = failure(multi(), {"w": [{"name": "a"}, {"name": 2}]})
    assert "failed to convert object at index 1 to type string" in err["message"]


def test_zero_instances_are_legal():
    doc = multi("(.spec.w // [])[] | .name", scaleDefinition={"replicasPath": "(.spec.w // [])[] | .replicas"},
                specDefinition={"podTemplateSpecPath": "(.spec.w // [])[] | .template"})
    out = run(doc, workload({}))
    w = node(out["tree"], "w")
    assert w["instances"] == []
    assert w["totals"]["pods"] == 0
    assert out["totals"]["pods"] == 0


def test_iterating_missing_array_is_an_error():
    err = failure(multi(".spec.stages[].name"), {})
    assert "cannot iterate over: null" in err["message"]


def test_duplicate_ids_are_not_rejected_and_later_value_wins():
    doc = multi(".spec.w[]", scaleDefinition={"replicasPath": ".spec.r[]"})
    got = insts(doc, {"w": ["b", "a", "b"], "r": [1, 2, 3]})
    by_id = {i["id"]: i["replicas"] for i in got}
    assert by_id == {"a": 2, "b": 3}


def test_duplicate_ids_produce_duplicate_nodes():
    # docs/karta-semantics.md "Instances": one InstanceNode per key, duplicate ids produce duplicate nodes (same value).
    doc = multi(".spec.w[]", scaleDefinition={"replicasPath": ".spec.r[]"})
    got = insts(doc, {"w": ["b", "a", "b"], "r": [1, 2, 3]})
    assert [(i["id"], i["replicas"]) for i in got] == [("a", 2), ("b", 3), ("b", 3)]


def test_instance_keys_sorted_as_byte_strings():
    doc = multi(".spec.w[]")
    assert ids(doc, {"w": ["b", "a", "_x", "Zeta", "9", "10", "B"]}) == ["10", "9", "B", "Zeta", "_x", "a", "b"]


def test_instance_values_follow_their_ids_after_sorting():
    doc = multi(".spec.w[].name", scaleDefinition={"replicasPath": ".spec.w[].replicas"})
    got = insts(doc, {"w": [{"name": "zeta", "replicas": 1}, {"name": "alpha", "replicas": 7}]})
    assert [(i["id"], i["replicas"]) for i in got] == [("alpha", 7), ("zeta", 1)]


def test_root_may_have_instance_id_path():
    doc = karta(root(instanceIdPath=".spec.r[]", podSelector=SEL, scaleDefinition={"replicasPath": ".spec.n[]"}))
    out = run(doc, workload({"r": ["y", "x"], "n": [1, 2]}))
    assert [(i["id"], i["replicas"]) for i in out["tree"]["instances"]] == [("x", 2), ("y", 1)]


# -- zip ----------------------------------------------------------------------------------------

def test_single_instance_path_with_two_outputs():
    err = failure(single(specDefinition={"podTemplateSpecPath": ".spec.t[]"}), {"t": [{}, {}]})
    assert err["message"] == "failed to get pod template specs: instance ids count (1) does not match results count (2)"
    assert err["path"] == "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"


@pytest.mark.parametrize("path", [".spec.t[]", ".spec.t // empty", ".spec.t[] | select(.x)"])
def test_single_instance_path_with_zero_outputs(path):
    err = failure(single(specDefinition={"podTemplateSpecPath": path}), {"t": []} if "[]" in path else {})
    assert err["message"] == "failed to get pod template specs: instance ids count (1) does not match results count (0)"


def test_missing_field_is_one_null_and_fine():
    got = insts(single(specDefinition={"podTemplateSpecPath": ".spec.nothing"}), {})
    assert len(got) == 1
    assert got[0]["pod"]["containers"] == []


@pytest.mark.parametrize("field,wrap", [
    ("podSpecPath", "failed to get pod specs"),
    ("podTemplateSpecPath", "failed to get pod template specs"),
])
def test_multi_instance_count_mismatch(field, wrap):
    doc = multi(".spec.w[]", specDefinition={field: ".spec.specs[]"})
    err = failure(doc, {"w": ["a", "b"], "specs": [{}, {}, {}]})
    assert err["message"] == f"{wrap}: instance ids count (2) does not match results count (3)"


def test_metadata_count_mismatch():
    doc = multi(".spec.w[]", specDefinition={"podSpecPath": ".spec.s[]", "metadataPath": ".spec.m[]"})
    err = failure(doc, {"w": ["a", "b"], "s": [{}, {}], "m": [{}]})
    assert "instance ids count (2) does not match results count (1)" in err["message"]


def test_scale_count_mismatch_multi():
    doc = multi(".spec.w[]", scaleDefinition={"replicasPath": ".spec.r[]"})
    err = failure(doc, {"w": ["a", "b"], "r": [1]})
    assert "instance ids count (2) does not match results count (1)" in err["message"]


def test_per_element_fallback_breaks_alignment():
    # `.spec.tasks[].replicas // 0` yields ONE output for the whole stream when every value is null.
    doc = multi(".spec.tasks[].name", scaleDefinition={"replicasPath": ".spec.tasks[].replicas // 0"})
    err = failure(doc, {"tasks": [{"name": "a"}, {"name": "b"}]})
    assert "instance ids count (2) does not match results count (1)" in err["message"]


def test_per_element_path_keeps_alignment_with_nulls():
    doc = multi(".spec.tasks[].name", scaleDefinition={"replicasPath": ".spec.tasks[].replicas"})
    got = insts(doc, {"tasks": [{"name": "a"}, {"name": "b", "replicas": 3}]})
    assert [(i["id"], i["replicas"]) for i in got] == [("a", None), ("b", 3)]


def test_unset_path_contributes_nothing():
    doc = multi(".spec.w[]", scaleDefinition={"replicasPath": ".spec.r[]", "minReplicasPath": ""})
    got = insts(doc, {"w": ["a", "b"], "r": [1, 2]})
    assert [i["minReplicas"] for i in got] == [None, None]


# -- conversions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("field,go_type,wrap", [
    ("podTemplateSpecPath", "v1.PodTemplateSpec", "failed to get pod template specs"),
    ("podSpecPath", "v1.PodSpec", "failed to get pod specs"),
])
@pytest.mark.parametrize("value,word", [(5, "number"), ("x", "string"), ([1], "array"), (True, "bool")])
def test_pod_spec_type_mismatch(field, go_type, wrap, value, word):
    err = failure(single(specDefinition={field: ".spec.t"}), {"t": value})
    assert err["message"] == (f"{wrap}: failed to convert object at index 0 to type {go_type}: json: cannot "
                              f"unmarshal {word} into Go value of type {go_type}")


def test_metadata_type_mismatch():
    err = failure(single(specDefinition={"podSpecPath": ".spec.s", "metadataPath": ".spec.m"}), {"s": {}, "m": "x"})
    assert "failed to convert object at index 0 to type v1.ObjectMeta" in err["message"]


@pytest.mark.parametrize("frag,value", [
    ("labelsPath", 5), ("annotationsPath", "x"), ("resourcesPath", [1]), ("containersPath", {"a": 1}),
    ("containerPath", "c"), ("schedulerNamePath", 1), ("imagePath", {}), ("priorityClassNamePath", []),
    ("resourceClaimsPath", {}), ("podAffinityPath", 3), ("nodeAffinityPath", True),
])
def test_fragment_type_mismatch(frag, value):
    err = failure(single(specDefinition={"fragmentedPodSpecDefinition": {frag: ".spec.v"}}), {"v": value})
    assert err["message"].startswith("failed to get fragmented pod specs: failed to convert object at index 0 to type ")


def test_null_pod_template_is_zero_value():
    got = insts(single(specDefinition={"podTemplateSpecPath": ".spec.t"}), {"t": None})
    assert got[0]["pod"]["requests"] == {}
    assert got[0]["pod"]["containers"] == []


def test_null_fragments_are_zero_values():
    frag = {k: f".spec.{k}" for k in ("labelsPath", "containerPath", "resourcesPath", "schedulerNamePath",
                                      "containersPath", "imagePath")}
    got = insts(single(specDefinition={"fragmentedPodSpecDefinition": frag}), {})
    assert got[0]["pod"]["requests"] == {}
    assert got[0]["pod"]["containers"] == []
    assert got[0]["pod"]["schedulerName"] is None


# -- fragmented specs --------------------------------------------------------------------------------

def test_fragment_count_is_the_maximum_and_shorter_lists_pad():
    doc = multi(".spec.w[]", specDefinition={"fragmentedPodSpecDefinition": {
        "imagePath": ".spec.img[]", "schedulerNamePath": ".spec.sched[]"}})
    got = insts(doc, {"w": ["a", "b"], "img": ["x", "y"], "sched": ["s1"]})
    assert [(i["id"], i["pod"]["schedulerName"]) for i in got] == [("a", "s1"), ("b", None)]


def test_fragment_maximum_must_match_ids():
    doc = multi(".spec.w[]", specDefinition={"fragmentedPodSpecDefinition": {"imagePath": ".spec.img[]"}})
    err = failure(doc, {"w": ["a", "b"], "img": ["x", "y", "z"]})
    assert err["message"] == ("failed to get fragmented pod specs: instance ids count (2) does not match results "
                              "count (3)")


def test_empty_fragmented_definition_yields_zero_specs_and_fails_the_zip():
    err = failure(single(specDefinition={"fragmentedPodSpecDefinition": {}}), {})
    assert "instance ids count (1) does not match results count (0)" in err["message"]


def test_fragment_fields_land_in_pod_view():
    doc = single(specDefinition={"fragmentedPodSpecDefinition": {
        "containerPath": ".spec.c", "schedulerNamePath": ".spec.s", "priorityClassNamePath": ".spec.p",
        "labelsPath": ".spec.l", "imagePath": ".spec.i"}})
    [i] = insts(doc, {"c": {"name": "engine"}, "s": "kai", "p": "high", "l": {"a": "b"}, "i": "img:1"})
    assert i["pod"]["containers"] == [{"name": "engine", "image": "img:1"}]
    assert i["pod"]["schedulerName"] == "kai"
    assert i["pod"]["priorityClassName"] == "high"
    assert i["pod"]["labels"] == {"a": "b"}


def test_pod_template_fields_land_in_pod_view():
    t = {"metadata": {"labels": {"x": "1"}}, "spec": {"schedulerName": "kai", "priorityClassName": "p",
                                                     "containers": [{"name": "a", "image": "i"}]}}
    [i] = insts(single(specDefinition={"podTemplateSpecPath": ".spec.t"}), {"t": t})
    assert i["pod"]["containers"] == [{"name": "a", "image": "i"}]
    assert i["pod"]["schedulerName"] == "kai" and i["pod"]["priorityClassName"] == "p"
    assert i["pod"]["labels"] == {"x": "1"}


def test_pod_spec_with_metadata_path():
    doc = single(specDefinition={"podSpecPath": ".spec.s", "metadataPath": ".spec.m"})
    [i] = insts(doc, {"s": {"containers": [{"name": "a"}]}, "m": {"labels": {"k": "v"}}})
    assert i["pod"]["labels"] == {"k": "v"}


# -- tree shape ------------------------------------------------------------------------------------

def test_non_pod_component_has_no_pod_view():
    out = run(karta(children=[child("group")]))
    g = node(out["tree"], "group")
    assert g["podBearing"] is False
    assert "pod" not in g["instances"][0]


def test_logical_component_has_null_kind():
    out = run(karta(children=[child("group"), child("job", kind={"group": "batch", "version": "v1", "kind": "Job"})]))
    assert node(out["tree"], "group")["kind"] is None
    assert node(out["tree"], "job")["kind"] == {"group": "batch", "version": "v1", "kind": "Job"}


def test_children_nest_in_definition_order():
    out = run(karta(children=[child("b"), child("a"), child("a1", owner="a"), child("b1", owner="b")]))
    assert [c["name"] for c in out["tree"]["children"]] == ["b", "a"]
    assert [c["name"] for c in node(out["tree"], "a")["children"]] == ["a1"]
    assert [c["name"] for c in node(out["tree"], "b")["children"]] == ["b1"]


def test_tree_root_is_the_root_component():
    out = run(karta())
    assert out["tree"]["name"] == "root"
    assert out["tree"]["kind"] == {"group": "acme.example.com", "version": "v1", "kind": "Thing"}


def test_error_reports_every_failing_component():
    doc = karta(children=[child("a", specDefinition={"podTemplateSpecPath": ".spec.a[]"}),
                          child("b", scaleDefinition={"replicasPath": ".spec.b"})])
    e = run_error(doc, workload({"a": [], "b": "x"}))
    msgs = error_messages(e)
    assert len(msgs) == 2
    assert "instance ids count (1) does not match results count (0)" in msgs[0]
    assert 'replicas value "x" at index 0 is not a number' in msgs[1]


def test_instance_lookup_helper_finds_by_id():
    doc = multi(".spec.w[]", scaleDefinition={"replicasPath": ".spec.r[]"})
    out = run(doc, workload({"w": ["x", "y"], "r": [4, 5]}))
    assert instance(node(out["tree"], "w"), "y")["replicas"] == 5


# -- deep conversion into the Go types (JSON round trip into typed structs) ----------------------------

def test_fragment_labels_with_non_string_value_fail_conversion():
    # map[string]string: a number value is "a number where a string is expected" for encoding/json
    err = failure(single(specDefinition={"fragmentedPodSpecDefinition": {"labelsPath": ".spec.l"}}), {"l": {"a": 1}})
    assert err["message"].startswith("failed to get fragmented pod specs: failed to convert object at index 0 to type ")


def test_pod_template_with_mistyped_containers_fails_conversion():
    # v1.PodTemplateSpec: spec.containers must be a list of Container
    err = failure(single(specDefinition={"podTemplateSpecPath": ".spec.t"}), {"t": {"spec": {"containers": "x"}}})
    assert err["message"].startswith("failed to get pod template specs: failed to convert object at index 0 to type ")


# -- the type check's cache (outcomes by the value's JSON text) --------------------------------------

BAD_TEMPLATE = {"spec": {"containers": [{"name": 5}]}}
BAD_TEMPLATE_TEXT = ("failed to get pod template specs: failed to convert object at index {} to type "
                     "v1.PodTemplateSpec: json: cannot unmarshal number into Go struct field Container.name of "
                     "type string")


def test_a_bad_template_fails_the_same_way_every_time():
    doc = single(specDefinition={"podTemplateSpecPath": ".spec.t"})
    first, again = failure(doc, {"t": BAD_TEMPLATE}), failure(doc, {"t": BAD_TEMPLATE})
    assert first == again
    assert first["message"] == BAD_TEMPLATE_TEXT.format(0)
    assert first["path"] == "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"


def test_a_cached_outcome_names_the_index_it_is_found_at():
    doc = multi(".spec.w[]", specDefinition={"podTemplateSpecPath": ".spec.t[]"})
    assert failure(doc, {"w": ["a"], "t": [BAD_TEMPLATE]})["message"] == BAD_TEMPLATE_TEXT.format(0)
    assert failure(doc, {"w": ["a", "b"], "t": [{}, BAD_TEMPLATE]})["message"] == BAD_TEMPLATE_TEXT.format(1)


@pytest.mark.parametrize("order", [["x", "y"], ["y", "x"]])
def test_values_that_print_alike_get_one_outcome_and_others_their_own(order):
    from app.engine.instances import _CHECKS, ConversionError, _convert

    def walked(v: dict) -> str | None:  # the outcome without the cache
        return _CHECKS["v1.PodTemplateSpec"](v, "value")

    # 1, "1" and true differ for the check; so does key order (the first bad key is reported).
    for labels in ({"a": "1"}, {"a": 1}, {"a": True}, {k: 1 for k in order}):
        v = {"metadata": {"labels": labels}}
        for _ in range(2):
            try:
                _convert(v, 0, "object", "v1.PodTemplateSpec")
                got = None
            except ConversionError as e:
                got = str(e).split("json: ", 1)[1]
            assert got == walked(v)


def test_an_integer_beyond_64_bits_is_checked_without_the_cache():
    from app.engine.instances import ConversionError, ExtractedInstance, _convert
    from app.engine.accelerators import DEFAULT_RULES
    from app.engine.interpret import _facts
    from app.engine.requests import pod_requests_key

    good = {"spec": {"containers": [{"resources": {"requests": {"cpu": 2**70}}}]}}
    bad = {"metadata": {"labels": {"a": 2**70}}}
    for _ in range(2):
        assert _convert(good, 0, "object", "v1.PodTemplateSpec") == (good, None)
        with pytest.raises(ConversionError, match="cannot unmarshal number into Go value of map key 'a'"):
            _convert(bad, 0, "object", "v1.PodTemplateSpec")
    inst = ExtractedInstance("", pod_template_spec=good)
    assert pod_requests_key(good["spec"]) is None
    assert _facts(inst, DEFAULT_RULES).strings == {"cpu": "1180591620717411303424"}


def test_pod_views_are_cached_per_key_order():
    from app.engine.instances import ExtractedInstance
    from app.engine.accelerators import DEFAULT_RULES
    from app.engine.interpret import _pod

    def labels(*keys: str) -> list[str]:
        inst = ExtractedInstance("", pod_template_spec={"metadata": {"labels": {k: "v" for k in keys}}})
        return list(_pod(inst, DEFAULT_RULES)[1]["labels"])

    assert labels("b", "a") == ["b", "a"] and labels("a", "b") == ["a", "b"] and labels("b", "a") == ["b", "a"]
