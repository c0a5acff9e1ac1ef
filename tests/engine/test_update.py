"""Pod-template rewrites (issue 23 item 2): the path resolver against gojq's `path(...)`, and
the write plan over every fixture of the built-in catalog (the interpretation reads back the
same except the set fields, the patch reproduces the result, refusals leave the object alone)."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import lru_cache
from pathlib import Path

import jsonpatch
import pytest
from ..karta_kit import child, karta, load, root, workload

from app.documents import parse_documents
from app.engine.interpret import interpret
from app.engine.update import (
    SET_FIELDS,
    UpdateError,
    attempts,
    chosen_components,
    make_patch,
    read_back_problems,
    rewrite,
    targets,
)
from app.jqlang.writepaths import PathNotWritable, resolve_paths
from app.karta.load import load_builtin
from app.karta.model import FRAGMENT_FIELDS
from app.karta.registry import Registry

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
FIXTURES = sorted(CATALOG.glob("**/testdata/*.yaml"))
SET = {"labels": {"kai.scheduler/queue": "team-a", "app.kubernetes.io/part-of": "set-by-test"},
       "annotations": {"example.com/injected": "yes"},
       "schedulerName": "kai-scheduler", "priorityClassName": "train-high",
       "nodeSelector": {"pool": "h100"},
       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                       {"key": "team", "operator": "Equal", "value": "a", "effect": "NoExecute"}]}


@lru_cache(maxsize=1)
def _registry() -> Registry:
    return Registry.of(load_builtin())


def _workloads(path: Path) -> list[dict]:
    return [d for d in parse_documents(path.read_bytes()) if isinstance(d, dict) and _registry().resolve_object(d)]


def _supported(c, obj=None) -> list[str]:
    """The set fields a component has paths for; with `obj`, only those whose paths address
    writable locations in it (a fragment may be read through a computed expression, as Spark's
    merged nodeSelector: a write of that field is refused, see test_computed_fragment_is_refused)."""
    out = []
    for f in SET_FIELDS:
        try:
            ts = targets(c, {f: SET[f]})
            if obj is not None:
                for t in ts:
                    resolve_paths(t.expression, obj)
            out.append(f)
        except (UpdateError, PathNotWritable):
            pass
    return out


# -- the resolver ----------------------------------------------------------------------------

def _pod_paths(d) -> list[str]:
    out = []
    for c in d.karta.components:
        sd = c.spec_definition
        if sd is None:
            continue
        out += [p for p in (sd.pod_template_spec_path, sd.pod_spec_path, sd.metadata_path) if p]
        frag = sd.fragmented_pod_spec_definition
        out += [getattr(frag, a) for a, _, _ in FRAGMENT_FIELDS if frag is not None and getattr(frag, a)]
    return list(dict.fromkeys(out))


def test_resolve_paths_matches_gojq_path_on_the_catalog():
    """Every pod path of every catalog definition on every fixture: the locations are gojq's
    `[path(expr)]`; where gojq raises, ours refuses too, or (an empty literal fallback
    iterated) finds no location."""
    compared = 0
    for f in FIXTURES:
        for obj in _workloads(f):
            exprs = _pod_paths(_registry().resolve_object(obj))
            if not exprs:
                continue
            program = "[" + ", ".join(f'(try [path({e})] catch "error")' for e in exprs) + "]"
            out = subprocess.run(["gojq", "-c", program], input=json.dumps(obj), capture_output=True, text=True, check=False,
                                 timeout=30)
            assert out.returncode == 0, out.stderr
            for e, want in zip(exprs, json.loads(out.stdout)):
                try:
                    got = [list(p) for p in resolve_paths(e, obj)]
                except PathNotWritable:
                    got = "error"
                if want == "error":
                    assert got in ("error", []), (f, e, got)
                else:
                    assert got == want, (f, e)
                    compared += 1
    assert compared > 1000


def test_resolve_paths_rules():
    obj = {"spec": {"jobs": [{"name": "a"}, {"name": "b"}], "services": {"z": {}, "a": {}}, "replicas": 3}}
    assert resolve_paths(".spec.template", obj) == [("spec", "template")]  # an absent trailing key
    assert resolve_paths(".spec.jobs[] | select(.name == \"b\") | .template", obj) == [("spec", "jobs", 1, "template")]
    assert resolve_paths("(.spec.services // {})[] | .x", obj) == [("spec", "services", "a", "x"),
                                                                   ("spec", "services", "z", "x")]  # sorted
    assert resolve_paths("(.spec.workers // [])[] | .template", obj) == []
    assert resolve_paths(".spec.missing // .spec.other", obj) == [("spec", "other")]
    for expr, why in [("(.spec.size // 1)", "computed value 1"), (".spec.jobs[-1]", "non-negative"),
                      ("[.spec][0]", "`array` is not evaluated"), (".spec.jobs[1:]", "not a path"),
                      ("select(.spec.x | test(\"a+\")) | .y", "`test` is not evaluated"),
                      ("select(reduce .spec.jobs[] as $j ([1]; . + .) | length > 0) | .y", "`reduce` is not evaluated"),
                      (".spec.replicas.x", "a jq error"), ("..", "not a path"),
                      ("|".join(["(.,.)"] * 20), "values on the way")]:
        with pytest.raises(PathNotWritable) as e:
            resolve_paths(expr, obj)
        assert "does not address writable locations" in str(e.value) and why in str(e.value), (expr, str(e.value))


# -- the write plan over the catalog ---------------------------------------------------------

# Fixtures whose pod paths are computed, not plain paths, so a rewrite is refused naming the
# component: an AppWrapper wrapping a kind its controller does not infer podSets for, whose pod
# templates sit at the declared podSets' path strings.
REFUSED = {"workload.codeflare.dev/AppWrapper/v1beta2/testdata/other-kind.yaml": "podset"}


def _cases() -> list[tuple[Path, int]]:
    return [(f, i) for f in FIXTURES for i in range(len(_workloads(f)))]


@pytest.mark.parametrize("fixture,index", _cases(), ids=lambda v: str(v.relative_to(CATALOG)) if isinstance(v, Path)
                         else str(v))
def test_rewrite_reads_back_on_every_catalog_fixture(fixture: Path, index: int):
    obj = _workloads(fixture)[index]
    d = _registry().resolve_object(obj)
    before = interpret(obj, d)  # every catalog fixture interprets (a failure case here would need its own test)
    if not chosen_components(d, None):
        # No pod template at all (JobFlow: its pods are defined in the JobTemplates it names): a
        # rewrite changes nothing, and naming a component is refused.
        rw = rewrite(d, obj, {"labels": SET["labels"]}, None)
        assert (rw.changed, rw.patch, rw.object) == (0, [], obj)
        c = d.karta.components[-1]
        with pytest.raises(UpdateError, match=f"component '{c.name}' defines no pods"):
            rewrite(d, obj, {"labels": SET["labels"]}, [c.name])
        return
    refused = REFUSED.get(str(fixture.relative_to(CATALOG)))
    if refused:
        with pytest.raises(UpdateError, match=f"(?s)component {refused}: .* does not address writable locations"):
            rewrite(d, obj, {"labels": SET["labels"]}, None)
        return
    comps = [c for c in chosen_components(d, None) if _supported(c, obj)]
    if not comps:
        # A definition whose pods have none of the paths: the set field is refused, naming both.
        c = chosen_components(d, None)[0]
        with pytest.raises(UpdateError, match=f"component {c.name} has no path for this fragment: labels"):
            rewrite(d, obj, {"labels": SET["labels"]}, [c.name])
        return
    fields = [f for f in SET_FIELDS if all(f in _supported(c, obj) for c in comps)]
    if not fields:
        # No field every component takes (NIMService: its EPP takes only labels, its LWS workers no
        # labels): write the field most of them take, to those.
        best = max(SET_FIELDS, key=lambda f: sum(f in _supported(c, obj) for c in comps))
        comps, fields = [c for c in comps if best in _supported(c, obj)], [best]
    set_ = {f: SET[f] for f in fields}
    original = copy.deepcopy(obj)
    for rw in attempts(d, obj, set_, [c.name for c in comps]):
        assert obj == original  # the input is never modified
        after = interpret(rw.object, d)
        if not read_back_problems(before, after, set_, rw):
            break
    assert read_back_problems(before, after, set_, rw) == []
    # ... and the set values are there: in the pod views and, for annotations, at the locations
    written = [w for w in rw.writes if "skipped" not in w]
    if written:
        views = [i["pod"] for n in _nodes(after["tree"]) if n["name"] in rw.components
                 for i in n["instances"] if "pod" in i]
        fields = {f for w in written for f in w["fields"]}
        if views and "labels" in fields:
            assert any(v.get("labels", {}).items() >= set_["labels"].items() for v in views)
        if views and "schedulerName" in fields:
            assert any(v.get("schedulerName") == "kai-scheduler" for v in views)
        for w in written:
            if "annotations" in w["fields"]:
                value = jsonpatch.JsonPointer(w["path"]).resolve(rw.object) if w["path"] else rw.object
                held = value if w["form"] == "annotations" else (
                    value["metadata"]["annotations"] if w["form"] == "podTemplateSpec" else value["annotations"])
                assert held.items() >= set_["annotations"].items()
    # the patch turns the original into the rewritten object
    assert jsonpatch.apply_patch(original, rw.patch) == rw.object
    assert (rw.changed > 0) == bool(rw.patch)


def _nodes(tree: dict):
    yield tree
    for c in tree.get("children") or []:
        yield from _nodes(c)


# -- refusals --------------------------------------------------------------------------------

POD = {"spec": {"containers": [{"name": "main", "image": "x"}]}}


def _two_components(second_path: str) -> object:
    return load(karta(root(specDefinition={"podTemplateSpecPath": ".spec.template"}),
                      [child("side", specDefinition={"podTemplateSpecPath": second_path})]))


def test_a_refused_location_leaves_the_object_untouched():
    d = _two_components(".spec.side // {}")
    obj = workload({"template": copy.deepcopy(POD)})
    original = copy.deepcopy(obj)
    with pytest.raises(UpdateError) as e:
        rewrite(d, obj, {"labels": {"a": "b"}})
    assert "component side" in e.value.message and "does not address writable locations" in e.value.message
    assert obj == original


def test_a_location_of_the_wrong_type_is_refused():
    d = _two_components(".spec.side")
    obj = workload({"template": copy.deepcopy(POD), "side": {"metadata": {"labels": "not-a-map"}, **POD}})
    with pytest.raises(UpdateError, match="labels holds a string, not an object"):
        rewrite(d, obj, {"labels": {"a": "b"}})


def test_merges_keep_what_is_there():
    d = _two_components(".spec.side")
    tol = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    side = {"metadata": {"labels": {"keep": "1", "a": "old"}},
            "spec": {"containers": [], "nodeSelector": {"zone": "z1"}, "tolerations": [tol], "schedulerName": "s0"}}
    obj = workload({"template": copy.deepcopy(POD), "side": side})
    rw = rewrite(d, obj, {"labels": {"a": "new"}, "nodeSelector": {"pool": "p"}, "schedulerName": "s1",
                          "tolerations": [tol, {"key": "other", "operator": "Exists"}]}, ["side"])
    got = rw.object["spec"]["side"]
    assert got["metadata"]["labels"] == {"keep": "1", "a": "new"}
    assert got["spec"]["nodeSelector"] == {"zone": "z1", "pool": "p"}
    assert got["spec"]["tolerations"] == [tol, {"key": "other", "operator": "Exists"}]
    assert got["spec"]["schedulerName"] == "s1"
    assert rw.object["spec"]["template"] == POD  # not chosen
    assert {"op": "add", "path": "/spec/side/spec/tolerations/1", "value": {"key": "other", "operator": "Exists"}} \
        in rw.patch
    assert {"op": "replace", "path": "/spec/side/metadata/labels/a", "value": "new"} in rw.patch


def test_a_shared_location_written_for_one_component_does_not_read_back():
    """LeaderWorkerSet: the leader falls back to the worker template.  Writing the leader alone
    changes the worker's pods too: the read-back check names it."""
    f = CATALOG / "leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/leader-defaults-to-worker.yaml"
    obj = _workloads(f)[0]
    d = _registry().resolve_object(obj)
    set_ = {"schedulerName": "kai-scheduler"}
    rw = rewrite(d, obj, set_, ["leader"])
    problems = read_back_problems(interpret(obj, d), interpret(rw.object, d), set_, rw)
    assert problems and all(p.endswith("/pod/schedulerName") for p in problems)


@pytest.mark.parametrize("set_,components,message", [
    ({"labels": {"$patch": "delete"}}, None, r"starts with .\$."),
    ({"tolerations": [{"key": "k", "$retainKeys": []}]}, None, r"starts with .\$."),
    ({"queue": "a"}, None, "unknown set field 'queue'"),
    ({}, None, "at least one of"),
    ({"schedulerName": ""}, None, "non-empty string"),
    ({"nodeSelector": {"a": 1}}, None, "map of strings"),
    ({"tolerations": [{"key": "k", "operator": "Sometimes"}]}, None, "operator must be one of"),
    ({"labels": {"a": "b"}}, ["nope"], "unknown component 'nope'"),
])
def test_bad_requests_are_refused(set_, components, message):
    d = _two_components(".spec.side")
    with pytest.raises(UpdateError, match=message):
        rewrite(d, workload({"template": POD}), set_, components)


def test_a_write_at_the_root_keeps_the_identity():
    d = load(karta(root(specDefinition={"podTemplateSpecPath": "."})))
    obj = workload({"containers": []}, status={"phase": "Running"})
    rw = rewrite(d, obj, {"labels": {"a": "b"}, "schedulerName": "s"})
    assert rw.writes[0]["path"] == "" and rw.object["metadata"]["labels"] == {"a": "b"}
    for f in ("apiVersion", "kind", "status"):
        assert rw.object[f] == obj[f]
    assert rw.object["metadata"]["name"] == "w" and rw.object["metadata"]["uid"] == obj["metadata"]["uid"]
    assert jsonpatch.apply_patch(copy.deepcopy(obj), rw.patch) == rw.object


def test_make_patch_escapes_pointers():
    assert make_patch({"a": {}}, {"a": {"x/y~z": "1"}}) == [{"op": "add", "path": "/a/x~1y~0z", "value": "1"}]


def test_the_patch_holds_only_against_the_version_it_was_made_from():
    d = _two_components(".spec.side")
    obj = workload({"template": copy.deepcopy(POD)}, resourceVersion="41")
    rw = rewrite(d, obj, {"labels": {"a": "b"}})
    assert rw.patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}
    assert jsonpatch.apply_patch(copy.deepcopy(obj), rw.patch) == rw.object
    newer = copy.deepcopy(obj)
    newer["metadata"]["resourceVersion"] = "42"
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(newer, rw.patch)
    assert rewrite(d, rw.object, {"labels": {"a": "b"}}).patch == []  # nothing to change: no test either


def test_absent_fragments_are_created_unless_that_makes_a_pod():
    """Dynamo: a service without extraPodMetadata gets one (its pods show the label); Milvus: a
    component whose section is absent is skipped (creating it would add pods)."""
    dyn = _workloads(CATALOG / "nvidia.com/DynamoGraphDeployment/v1alpha1/testdata/running.yaml")[0]
    d = _registry().resolve_object(dyn)
    first = next(attempts(d, dyn, {"labels": {"q": "a"}}))
    assert any(w.get("created") for w in first.writes)
    views = [i["pod"] for n in _nodes(interpret(first.object, d)["tree"]) for i in n["instances"] if "pod" in i]
    assert views and all(v["labels"]["q"] == "a" for v in views)
    assert read_back_problems(interpret(dyn, d), interpret(first.object, d), {"labels": {"q": "a"}}, first) == []

    mil = _workloads(CATALOG / "milvus.io/Milvus/v1beta1/testdata/cluster-healthy.yaml")[0]
    d = _registry().resolve_object(mil)
    set_ = {"labels": {"q": "a"}}
    tries = list(attempts(d, mil, set_))
    assert len(tries) == 2
    before = interpret(mil, d)
    assert "/totals/pods" in read_back_problems(before, interpret(tries[0].object, d), set_, tries[0])
    assert read_back_problems(before, interpret(tries[1].object, d), set_, tries[1]) == []
    assert any("skipped" in w for w in tries[1].writes)


def test_fragment_tolerations_written_where_the_role_takes_them():
    """Spark's tolerationsPath: the role's own field without a pod template (the pod webhook
    appends it), the template's with one (the webhook then leaves the pod alone)."""
    base = CATALOG / "sparkoperator.k8s.io/SparkApplication/v1beta2/testdata"
    new = {"key": "team", "operator": "Equal", "value": "a", "effect": "NoExecute"}
    for name, where in [("placement-per-role.yaml", ("spec", "executor", "tolerations")),
                        ("placement-pod-templates.yaml", ("spec", "executor", "template", "spec", "tolerations"))]:
        obj = _workloads(base / name)[0]
        d = _registry().resolve_object(obj)
        rw = rewrite(d, obj, {"tolerations": [new]}, ["executor"])
        stored = rw.object
        for k in where:
            stored = stored[k]
        assert stored[-1] == new and stored[:-1] == _dig(obj, where)
        [view] = [i["pod"] for n in _nodes(interpret(rw.object, d)["tree"]) if n["name"] == "executor"
                  for i in n["instances"]]
        assert view["tolerations"][-1] == new
        assert read_back_problems(interpret(obj, d), interpret(rw.object, d), {"tolerations": [new]}, rw) == []


def test_computed_fragment_is_refused():
    """Spark's nodeSelector is read as Spark and the operator merge it (template, confs, app and
    role fields): a computed value, so a write of it is refused and the object left alone."""
    obj = _workloads(CATALOG / "sparkoperator.k8s.io/SparkApplication/v1beta2/testdata/placement-per-role.yaml")[0]
    d = _registry().resolve_object(obj)
    original = copy.deepcopy(obj)
    with pytest.raises(UpdateError, match="(?s)component driver: .* does not address writable locations"):
        rewrite(d, obj, {"nodeSelector": {"pool": "h100"}}, ["driver"])
    assert obj == original


def _dig(obj, where):
    for k in where:
        obj = obj[k]
    return obj
