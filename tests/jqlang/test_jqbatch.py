"""The jq runner (docs/karta-semantics.md "The jq runner"): result cap, zero outputs, no
environment, no further inputs, compile errors in gojq wording, gojq key order and number
printing - both on the batch runner directly and through `interpret`."""

from __future__ import annotations

import jq
import pytest

from ..karta_kit import child, error_messages, karta, root, run, run_error, status_def, workload, pod
from app.jqlang.jqbatch import MAX_RESULTS, Batch

SECRET_NAME, SECRET_VALUE = "WLMAP_TEST_SECRET_TOKEN", "s3cr3t-value-42"


def one(expr: str, text: str = "null"):
    [r] = Batch([expr]).run(text)
    return r


def by_expression(expr: str, expected: str) -> dict:
    return karta(root(statusDefinition=status_def(
        {"running": [{"byExpression": {"expression": expr, "expectedResult": expected}}]})))


def matched(expr: str, expected: str, spec: dict | None = None) -> list[str]:
    return run(by_expression(expr, expected), workload(spec if spec is not None else {}))["status"]["matched"]


def status_error(expr: str, spec: dict | None = None) -> str:
    e = run_error(by_expression(expr, "x"), workload(spec if spec is not None else {}))
    [msg] = error_messages(e)
    return msg


# -- result cap ------------------------------------------------------------------------------

def test_default_cap_is_1000():
    assert MAX_RESULTS == 1000


def test_999_outputs_are_accepted():
    r = one("range(999)")
    assert r.ok and len(r.values) == 999 and r.values[-1] == 998


def test_1000_outputs_fail():
    r = one("range(1000)")
    assert not r.ok
    assert r.error == "JQ execution error for expression 'range(1000)': query results exceed the allowed number 1000"


def test_far_more_outputs_fail_the_same_way():
    r = one("range(100000)")
    assert r.error.endswith("query results exceed the allowed number 1000")


def test_cap_through_interpret_999_items_ok():
    assert matched(".spec.items[]", "x", {"items": ["x"] * 999}) == ["Running"]


def test_cap_through_interpret_1000_items_fail():
    msg = status_error(".spec.items[]", {"items": ["x"] * 1000})
    assert "query results exceed the allowed number 1000" in msg
    assert msg.startswith("failed to match status: failed to evaluate matcher: failed to evaluate ByExpression: ")


def test_cap_on_instance_ids():
    doc = karta(children=[child("w", instanceIdPath=".spec.w[]",
                                podSelector={"componentInstanceSelector": {"idPath": ".metadata.name"}})])
    ok = run(doc, workload({"w": [f"i{n:04d}" for n in range(999)]}))
    assert len(ok["tree"]["children"][0]["instances"]) == 999
    e = run_error(doc, workload({"w": [f"i{n:04d}" for n in range(1000)]}))
    assert any("query results exceed the allowed number 1000" in m for m in error_messages(e))


# -- outputs -----------------------------------------------------------------------------------

def test_zero_outputs_is_an_empty_list_not_an_error():
    r = one("empty")
    assert r.ok and r.values == []


def test_missing_field_is_one_null():
    r = one(".a.b.c", '{"a": {}}')
    assert r.ok and r.values == [None]


def test_null_source_is_allowed():
    r = one(".", "null")
    assert r.values == [None]


def test_every_output_is_returned_in_order():
    assert one(".a[]", '{"a": [3, 1, 2]}').values == [3, 1, 2]


def test_runtime_error_wording():
    assert one(".a[]", "{}").error == "JQ execution error for expression '.a[]': cannot iterate over: null"


def test_user_error_message():
    assert one('error("boom")').error == "JQ execution error for expression 'error(\"boom\")': boom"


def test_one_failing_expression_does_not_hide_the_others():
    rows = Batch([".a", ".a[]", "gpu", ".b"]).run('{"a": 1, "b": 2}')
    assert rows[0].values == [1]
    assert rows[1].error is not None
    assert rows[2].error == "failed to compile JQ expression 'gpu': function not defined: gpu/0"
    assert rows[3].values == [2]


def test_run_many_keeps_documents_apart():
    rows = Batch([".n", "[.[]] | length"]).run_many(['{"n": 1}', '{"n": 2, "x": 0}', '{"n": 3}'])
    assert [[r.values for r in row] for row in rows] == [[[1], [1]], [[2], [2]], [[3], [1]]]


# -- compile errors --------------------------------------------------------------------------

def test_unknown_function_compile_error():
    assert one("gpu").error == "failed to compile JQ expression 'gpu': function not defined: gpu/0"


def test_unknown_function_arity_in_message():
    assert one("foo(1; 2)").error == "failed to compile JQ expression 'foo(1; 2)': function not defined: foo/2"


def test_bare_word_group_key_passes_validation_then_fails_at_evaluation():
    doc = karta(root(specDefinition={"podTemplateSpecPath": ".spec.t"}),
                gang={"podGroups": [{"name": "g", "members": [{"componentName": "root", "groupByKeyPaths": ["gpu"]}]}]})
    out = run(doc, workload({"t": {}}), [pod("p1")])
    [row] = out["gang"]["pods"]
    assert row["error"] == ('failed to extract group key from path "gpu": '
                            "failed to compile JQ expression 'gpu': function not defined: gpu/0")


def test_keys_unsorted_fails_to_compile_like_gojq():
    msg = status_error(".spec.m | keys_unsorted", {"m": {"b": 1, "a": 2}})
    assert msg.endswith("failed to compile JQ expression '.spec.m | keys_unsorted': "
                        "function not defined: keys_unsorted/0")


def test_keys_unsorted_in_a_workload_path_fails():
    doc = karta(children=[child("w", instanceIdPath=".spec.m | keys_unsorted[]",
                                podSelector={"componentInstanceSelector": {"idPath": ".x"}})])
    e = run_error(doc, workload({"m": {"b": 1}}))
    assert any("function not defined: keys_unsorted/0" in m for m in error_messages(e))


# -- no environment, no further inputs -----------------------------------------------------------

@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    # Control: plain libjq DOES see the variable, so the checks below can fail.
    assert jq.compile(f"env.{SECRET_NAME}").input_value(None).first() == SECRET_VALUE


@pytest.mark.parametrize("expr", ["env", "$ENV", f"env.{SECRET_NAME}", f"$ENV.{SECRET_NAME}", "[env[]]", "env | tostring",
                                  "$ENV | keys"])
def test_environment_does_not_leak(secret_env, expr):
    r = one(expr)
    assert r.ok
    assert SECRET_VALUE not in repr(r.values)
    assert SECRET_NAME not in repr(r.values)


def test_env_and_env_var_are_empty_objects(secret_env):
    assert one("env").values == [{}]
    assert one("$ENV").values == [{}]


def test_environment_does_not_leak_through_interpret(secret_env):
    assert matched(f"env.{SECRET_NAME} // \"none\"", "none") == ["Running"]
    assert matched(f"$ENV.{SECRET_NAME} // \"none\"", "none") == ["Running"]
    assert matched("env | length", "0") == ["Running"]


@pytest.mark.parametrize("expr", ["input", "[inputs]", "first(inputs)"])
def test_input_does_not_read_the_next_document(expr):
    rows = Batch([expr, ".n"]).run_many(['{"n": 1}', '{"n": 2}'])
    assert not rows[0][0].ok
    assert rows[0][1].values == [1]
    assert rows[1][1].values == [2]  # the second document was not consumed by the first


def test_optional_input_yields_nothing():
    rows = Batch(["[input?]", ".n"]).run_many(['{"n": 1}', '{"n": 2}'])
    assert rows[0][0].values == [[]]
    assert rows[1][1].values == [2]


def test_input_in_pod_expressions_does_not_see_other_pods():
    doc = karta(root(specDefinition={"podTemplateSpecPath": ".spec.t"}),
                gang={"podGroups": [{"name": "g", "members": [
                    {"componentName": "root", "groupByKeyPaths": ["[input?] | length | tostring"]}]}]})
    out = run(doc, workload({"t": {}}), [pod("p1"), pod("p2"), pod("p3")])
    assert [r["groupKeys"] for r in out["gang"]["pods"]] == [["0"], ["0"], ["0"]]
    assert [r["pod"] for r in out["gang"]["pods"]] == ["p1", "p2", "p3"]


@pytest.mark.parametrize("expr", ["halt", "halt_error", '"x" | halt_error(1)'])
def test_halt_cannot_stop_the_batch(expr):
    rows = Batch([expr, ".n"]).run_many(['{"n": 1}', '{"n": 2}'])
    assert not rows[0][0].ok
    assert rows[1][1].values == [2]


# -- gojq object key order -------------------------------------------------------------------------

def test_keys_and_values_iterate_in_sorted_key_order_for_unsorted_input():
    doc = karta(children=[child(
        "svc", instanceIdPath=".spec.services | to_entries[] | .key",
        specDefinition={"fragmentedPodSpecDefinition": {"imagePath": ".spec.services[] | .image"}},
        scaleDefinition={"replicasPath": ".spec.services[] | .replicas"},
        podSelector={"componentInstanceSelector": {"idPath": ".metadata.labels.svc"}})])
    services = {"zeta": {"image": "z", "replicas": 3}, "alpha": {"image": "a", "replicas": 1},
                "mid": {"image": "m", "replicas": 2}}
    assert list(services) == ["zeta", "alpha", "mid"]  # insertion order is NOT sorted
    out = run(doc, workload({"services": services}))
    insts = out["tree"]["children"][0]["instances"]
    assert [(i["id"], i["replicas"], i["pod"]["containers"][0]["image"]) for i in insts] == [
        ("alpha", 1, "a"), ("mid", 2, "m"), ("zeta", 3, "z")]


def test_keys_path_and_values_path_align_with_keys_builtin():
    doc = karta(children=[child(
        "m", instanceIdPath=".spec.m | keys[]", scaleDefinition={"replicasPath": ".spec.m | .[]"},
        podSelector={"componentInstanceSelector": {"idPath": ".x"}})])
    out = run(doc, workload({"m": {"b": 2, "c": 3, "a": 1}}))
    assert [(i["id"], i["replicas"]) for i in out["tree"]["children"][0]["instances"]] == [
        ("a", 1), ("b", 2), ("c", 3)]


def test_first_value_of_unsorted_object_is_the_smallest_key():
    assert matched("[.spec.m[]][0]", "first", {"m": {"z": "last", "a": "first"}}) == ["Running"]


def test_to_entries_first_key_sorted():
    assert matched(".spec.m | to_entries[0].key", "a", {"m": {"z": 1, "a": 2}}) == ["Running"]


def test_object_tostring_of_input_is_sorted_compact():
    assert matched(".spec.m | tostring", '{"a":2,"b":1}', {"m": {"b": 1, "a": 2}}) == ["Running"]


def test_object_result_compares_as_sorted_compact_json():
    assert matched(".spec.m", '{"a":[1,2],"b":{"c":null}}', {"m": {"b": {"c": None}, "a": [1, 2]}}) == ["Running"]


def test_constructed_object_tostring_is_sorted_like_gojq():
    # gojq objects are maps: every object (also one built in the query) prints with sorted keys.
    assert matched("{b: 1, a: 2} | tostring", '{"a":2,"b":1}') == ["Running"]


def test_constructed_object_result_is_sorted():
    assert matched("{b: 1, a: 2}", '{"a":2,"b":1}') == ["Running"]


def test_constructed_object_key_iteration_is_sorted_like_gojq():
    assert matched("[{b: 1, a: 2}[]] | tostring", "[2,1]") == ["Running"]


# -- numbers --------------------------------------------------------------------------------------

def test_tostring_of_whole_float_input_has_no_decimal_point():
    assert matched(".spec.x | tostring", "3", {"x": 3.0}) == ["Running"]


def test_tostring_of_literal_3_0_is_3():
    # docs/karta-semantics.md "The jq dialect": checked with gojq, `3.0|tostring` gives "3".
    assert matched("3.0 | tostring", "3") == ["Running"]


def test_whole_float_result_compares_without_decimal_point():
    assert matched(".spec.x", "3", {"x": 3.0}) == ["Running"]
    assert matched(".spec.x", "3.0", {"x": 3.0}) == ["Undefined"]


def test_string_interpolation_of_whole_float():
    assert matched('"\\(.spec.x)"', "3", {"x": 3.0}) == ["Running"]


def test_arithmetic_result_in_by_expression():
    assert matched(".spec.a / .spec.b", "1.5", {"a": 3, "b": 2}) == ["Running"]
    assert matched(".spec.a * 2", "6", {"a": 3.0}) == ["Running"]


def test_tostring_small_number_like_gojq():
    # gojq prints numbers below 1e-6 in exponent form with a one-digit exponent: 1e-7
    assert matched(".spec.x", "1e-7", {"x": 1e-7}) == ["Running"]
    assert matched(".spec.x | tostring", "1e-7", {"x": 1e-7}) == ["Running"]


def test_tostring_large_number_like_gojq():
    assert matched(".spec.x", "1e+21", {"x": 1e21}) == ["Running"]
    assert matched(".spec.x | tostring", "1e+21", {"x": 1e21}) == ["Running"]


def test_tostring_of_1e17_like_gojq():
    # float64 below 1e21 prints in plain 'f' format under gojq
    assert matched(".spec.x", "100000000000000000", {"x": 1e17}) == ["Running"]
    assert matched(".spec.x | tostring", "100000000000000000", {"x": 1e17}) == ["Running"]


def test_tostring_of_fraction():
    assert matched(".spec.x | tostring", "0.30000000000000004", {"x": 0.1 + 0.2}) == ["Running"]
    assert matched(".spec.x", "0.5", {"x": 0.5}) == ["Running"]


def test_number_versus_string_in_by_expression():
    assert matched(".spec.n", "5", {"n": 5}) == ["Running"]
    assert matched(".spec.n", "5", {"n": "5"}) == ["Running"]
    assert matched('.spec.n == "5"', "true", {"n": 5}) == ["Undefined"]
    assert matched(".spec.n == 5", "true", {"n": 5.0}) == ["Running"]


def test_tonumber_of_annotation():
    assert matched('.spec.a["x"] | tonumber', "2", {"a": {"x": "2"}}) == ["Running"]


def test_missing_array_iteration_is_gojq_error_text():
    msg = status_error(".spec.stages[] | .name")
    assert "cannot iterate over: null" in msg
