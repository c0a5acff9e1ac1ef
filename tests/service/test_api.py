"""POST /interpret, batch and definitions endpoints over real HTTP, against the contract."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import yaml

from app.service.models import BatchResponse, DefinitionList, Interpretation, Problem, ValidationResponse

from .conftest import EXAMPLES, ROOT, Server

MANIFESTS = ROOT / "tests" / "data" / "manifests"
TASK_YAML = (MANIFESTS / "batchtask-running.yaml").read_text()
TASK = yaml.safe_load(TASK_YAML)
GRAPH = yaml.safe_load((MANIFESTS / "servinggraph.yaml").read_text())
GRAPH_PODS = list(yaml.safe_load_all((MANIFESTS / "servinggraph-pods.yaml").read_text()))
BATCHTASK_DEF = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())


def problem(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body = r.json()
    Problem.model_validate(body)
    assert body["status"] == status
    assert "Traceback" not in r.text
    return body


def test_interpret_yaml_manifest(client: httpx.Client):
    r = client.post("/interpret", content=TASK_YAML, headers={"content-type": "application/yaml"})
    assert r.status_code == 200, r.text
    body = Interpretation.model_validate(r.json()).model_dump()
    assert body["status"]["phase"] == "Running"
    assert body["totals"]["pods"] == 3 and body["totals"]["gpus"] == 3
    assert body["totals"]["requests"] == {"cpu": "6", "memory": "12Gi", "nvidia.com/gpu": "3"}
    assert body["definition"]["name"] == "acme-example-com-batchtask-v1"
    assert body["definition"]["source"] == "directory"
    assert body["gang"]["podGroup"]["name"] == "pg-1234-abcd-task"
    assert body["gang"]["podGroup"]["minAvailable"] == 3


def test_interpret_json_manifest_and_envelope_agree(client: httpx.Client):
    raw = client.post("/interpret", json=TASK)
    env = client.post("/interpret", json={"object": TASK})
    assert raw.status_code == env.status_code == 200
    assert raw.json() == env.json()


def test_interpret_with_pods_places_them_and_sizes_gang(client: httpx.Client):
    r = client.post("/interpret", json={"object": GRAPH, "pods": GRAPH_PODS})
    assert r.status_code == 200, r.text
    body = Interpretation.model_validate(r.json()).model_dump()
    live = body["live"]
    assert live["current"] == 2 and live["ready"] == 1 and live["desired"] == 7
    rows = {p["name"]: p for p in live["pods"]}
    assert rows["g1-decode-0"]["component"] == "model" and rows["g1-decode-0"]["instance"] == "decode"
    assert rows["g1-gw-0"]["reason"] == "Unschedulable"
    pg = body["gang"]["podGroup"]
    assert pg["minSubGroup"] == 2
    assert [(s["name"], s["minAvailable"]) for s in pg["subGroups"]] == [("gateway", 2), ("model", 5)]
    assert {p["pod"]: p["subGroups"] for p in body["gang"]["pods"]} == {"g1-decode-0": ["model"],
                                                                       "g1-gw-0": ["gateway"]}


def test_inline_definition_overrides_registry(client: httpx.Client):
    d = json.loads(json.dumps(BATCHTASK_DEF))
    d["metadata"]["name"] = "my-batchtask"
    d["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = ".spec.workers * 2"
    r = client.post("/interpret", json={"object": TASK, "definition": d})
    assert r.status_code == 200, r.text
    assert r.json()["definition"] == {"name": "my-batchtask", "source": "inline", "digest": r.json()["definition"]["digest"]}
    assert r.json()["totals"]["pods"] == 6


def test_invalid_inline_definition_lists_every_finding(client: httpx.Client):
    d = json.loads(json.dumps(BATCHTASK_DEF))
    root = d["spec"]["structureDefinition"]["rootComponent"]
    root["ownerRef"] = "x"
    root["instanceIdPath"] = ".spec.a[]"
    root["scaleDefinition"]["replicasPath"] = ".spec.workers |= 1"
    body = problem(client.post("/interpret", json={"object": TASK, "definition": d}), 422)
    messages = [e["message"] for e in body["errors"]]
    assert "root component cannot have owner ref" in messages
    assert "component 'task' has instance id path but no pod component instance selector" in messages
    assert ("JQ expression '.spec.workers |= 1' at 'Spec.StructureDefinition.RootComponent.ScaleDefinition."
            "ReplicasPath' failed validation: modifying operator '|=' is not allowed") in messages


def test_problem_cases(client: httpx.Client):
    problem(client.post("/interpret", content=b"{not json", headers={"content-type": "application/json"}), 400)
    problem(client.post("/interpret", content=b"a: [", headers={"content-type": "application/yaml"}), 400)
    problem(client.post("/interpret", content=b"x", headers={"content-type": "text/plain"}), 415)
    body = problem(client.post("/interpret", json={"apiVersion": "nope.io/v1", "kind": "Nothing"}), 404)
    assert "no Karta definition covers nope.io/v1 Nothing" in body["detail"]
    problem(client.post("/interpret", json={"object": {"kind": "X"}}), 422)
    problem(client.post("/interpret", json={"objekt": TASK}), 422)
    problem(client.post("/interpret", json=[1, 2]), 422)
    body = problem(client.post("/interpret", json={"ref": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}), 501)
    assert "cluster" in body["detail"]
    problem(client.get("/nope"), 404)
    problem(client.post("/interpret/batch", json={"items": "x"}), 422)
    problem(client.get("/definitions/does-not-exist"), 404)


def test_status_error_is_a_partial_result_naming_path_and_expression(client: httpx.Client):
    bad = json.loads(json.dumps(TASK))
    bad["status"]["state"] = 7  # the phase must be a string; the tree does not read it
    r = client.post("/interpret", json=bad)
    assert r.status_code == 200, r.text
    body = Interpretation.model_validate(r.json()).model_dump()
    assert body["complete"] is False and body["status"] is None
    assert body["totals"]["gpus"] == 3 and body["gang"]["podGroup"]["minAvailable"] == 3
    [err] = body["errors"]
    assert err["part"] == "status"
    assert err["path"] == "spec.structureDefinition.rootComponent.statusDefinition.phaseDefinition.path"
    assert err["expression"] == ".status.state"
    assert "failed to extract phase" in err["message"]


def test_interpretation_error_when_no_part_computes(client: httpx.Client):
    bad = json.loads(json.dumps(TASK))
    bad["status"]["state"] = 7
    bad["spec"]["podTemplate"] = "not a template"  # the only component fails too: nothing to give
    body = problem(client.post("/interpret", json=bad), 422)
    assert {e["part"] for e in body["errors"]} == {"status", "component"}
    comp = next(e for e in body["errors"] if e["part"] == "component")
    assert comp["component"] == "task" and comp["expression"] == ".spec.podTemplate"
    assert comp["path"] == "spec.structureDefinition.rootComponent.specDefinition.podTemplateSpecPath"


def test_body_limit(server: Server, client: httpx.Client):
    big = b'{"object": {"apiVersion": "v1", "kind": "Pod", "x": "' + b"a" * (3 * 1024 * 1024) + b'"}}'
    problem(client.post("/interpret", content=big, headers={"content-type": "application/json"}), 413)
    # the server is still healthy afterwards
    assert client.post("/interpret", json=TASK).status_code == 200


def test_batch_one_bad_item_never_fails_the_others(client: httpx.Client):
    items = [{"object": TASK}, {"object": {"apiVersion": "nope.io/v1", "kind": "X"}}, {"object": GRAPH}]
    r = client.post("/interpret/batch", json={"items": items})
    assert r.status_code == 200, r.text
    out = BatchResponse.model_validate(r.json()).model_dump()["items"]
    assert out[0]["workload"]["name"] == "t1"
    assert out[1]["error"]["status"] == 404
    assert out[2]["workload"]["name"] == "g1"


def test_batch_items_can_be_partial(client: httpx.Client):
    partial = json.loads(json.dumps(TASK))
    partial["status"]["state"] = 7  # status fails, the tree reads
    nothing = json.loads(json.dumps(partial))
    nothing["spec"]["podTemplate"] = "not a template"  # and now nothing computes
    r = client.post("/interpret/batch", json={"items": [{"object": partial}, {"object": nothing}, {"object": TASK}]})
    assert r.status_code == 200, r.text
    out = BatchResponse.model_validate(r.json()).model_dump()["items"]
    assert out[0]["complete"] is False and out[0]["status"] is None and out[0]["totals"]["gpus"] == 3
    assert out[0]["errors"][0]["part"] == "status"
    assert out[1]["error"]["status"] == 422
    assert out[2]["complete"] is True and out[2]["errors"] == []
    text = client.get("/metrics").text
    assert 'wlmap_interpretation_failed_parts_total{definition="acme-example-com-batchtask-v1",part="status"}' in text


def test_definitions_list_show_validate(client: httpx.Client):
    r = client.get("/definitions")
    items = DefinitionList.model_validate(r.json()).model_dump()["items"]
    mine = {i["name"]: i for i in items if i["source"] == "directory"}
    assert mine["acme-example-com-batchtask-v1"]["state"] == "active"
    assert mine["acme-example-com-batchtask-v1"]["digest"].startswith("sha256:")
    js = client.get("/definitions/acme-example-com-batchtask-v1")
    assert js.json()["metadata"]["name"] == "acme-example-com-batchtask-v1"
    ym = client.get("/definitions/acme-example-com-batchtask-v1", headers={"accept": "application/yaml"})
    assert ym.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(ym.text) == js.json()
    bad = json.loads(json.dumps(BATCHTASK_DEF))
    bad["spec"]["structureDefinition"]["childComponents"] = [{"name": "w", "ownerRef": "ghost"},
                                                            {"name": "w2", "ownerRef": "w"}]
    r = client.post("/definitions/validate", json=[BATCHTASK_DEF, bad])
    res = ValidationResponse.model_validate(r.json()).model_dump()["items"]
    assert res[0]["valid"] is True and res[0]["referenceText"] == ""
    assert res[1]["valid"] is False
    assert res[1]["referenceText"] == "child component 'w' has owner ref to non-existing component 'ghost'"


def test_health_and_metrics(client: httpx.Client):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ok"
    client.post("/interpret", json=TASK)
    text = client.get("/metrics").text
    assert 'wlmap_interpretations_total{definition="acme-example-com-batchtask-v1",phase="Running"}' in text
    assert "wlmap_http_request_duration_seconds_bucket" in text
    assert 'wlmap_definitions{state="served"}' in text


def test_access_log_is_json_per_request(server: Server, client: httpx.Client):
    client.post("/interpret", json=TASK)
    time.sleep(0.2)
    lines = [json.loads(x) for x in server.output().splitlines() if x.startswith("{")]
    hits = [x for x in lines if x.get("route") == "/interpret" and x.get("status") == 200]
    assert hits and hits[-1]["definition"] == "acme-example-com-batchtask-v1" and hits[-1]["phase"] == "Running"
    assert isinstance(hits[-1]["duration_ms"], float)


def test_inline_definitions_can_be_disabled(tmp_path: Path):
    s = Server("--allow-inline-definitions", "false")
    try:
        with s.client() as c:
            problem(c.post("/interpret", json={"object": TASK, "definition": BATCHTASK_DEF}), 403)
    finally:
        s.stop()


def test_concurrent_requests(client: httpx.Client, server: Server):
    def one(_: int) -> int:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            return c.post("/interpret", json={"object": GRAPH, "pods": GRAPH_PODS}).status_code

    with ThreadPoolExecutor(8) as ex:
        assert set(ex.map(one, range(64))) == {200}


def test_hostile_bodies_get_clear_client_errors(client: httpx.Client):
    # a YAML alias bomb: tiny on the wire, billions of nodes once expanded
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    body = problem(client.post("/interpret", content=bomb, headers={"content-type": "application/yaml"}), 400)
    assert "expands" in body["detail"]
    deep = "[" * 10000 + "]" * 10000
    problem(client.post("/interpret", content=deep, headers={"content-type": "application/json"}), 400)
    problem(client.post("/interpret", content="a:" + " [" * 10000, headers={"content-type": "application/yaml"}), 400)
    problem(client.post("/interpret", content=b"\xff\xfe{", headers={"content-type": "application/yaml"}), 400)
    problem(client.post("/interpret", content="a: 1\na: 2\n", headers={"content-type": "application/yaml"}), 400)
    huge = json.loads(json.dumps(TASK))
    huge["spec"]["workers"] = 10**30  # beyond 64 bits: no JSON the service writes can carry it
    body = problem(client.post("/interpret", json=huge), 422)
    assert body["errors"] == [{"path": "spec.workers", "message": "spec.workers holds an integer beyond 64 bits"}]
    huge["spec"]["workers"] = 2**40  # not an int32: a clear error on that component, not a crash
    r = client.post("/interpret", json=huge)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["complete"] is False and body["status"]["phase"] == "Running"
    assert "int32" in body["errors"][0]["message"] and body["totals"] is None
    assert client.post("/interpret", json=TASK).status_code == 200


def test_an_invalid_ref_is_a_422_whatever_the_configuration(client: httpx.Client):
    """Without a cluster a valid ref is 501 (nothing to read it from), but an invalid one is the
    caller's mistake first: 422 naming the fields, as it would be with a cluster."""
    for ref, fields in (({"apiVersion": "", "kind": "", "namespace": "a", "name": "x"}, {"ref.apiVersion", "ref.kind"}),
                        ({"apiVersion": "v1", "kind": "Pod", "name": ""}, {"ref.name"}),
                        ({"apiVersion": "v1", "kind": "Pod"}, {"ref.name"})):
        r = client.post("/interpret", json={"ref": ref})
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
        assert {e["path"] for e in r.json()["errors"]} == fields, r.json()
    r = client.post("/interpret", json={"ref": {"apiVersion": "v1", "kind": "Pod", "namespace": "a", "name": "x"}})
    assert r.status_code == 501 and r.json()["type"].endswith("no-cluster")


def test_the_root_sends_a_browser_to_the_web_ui(client: httpx.Client):
    """`/` is not a JSON 404: it redirects (307, method kept) to the pages, which answer HTML."""
    r = client.get("/")
    assert r.status_code == 307 and r.headers["location"] == "/ui/"
    page = client.get("/", follow_redirects=True)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert client.get("/no-such-route").headers["content-type"] == "application/problem+json"
