"""Schema-driven HTTP fuzzing of every operation in openapi.json against a real `wlmap serve`.

Schemathesis generates requests (valid and invalid) for each operation; every answer must be:
no 5xx, an error is `application/problem+json` matching `Problem` (with `status` equal to the
HTTP status), a 2xx matches its declared schema, and nothing of the server's environment leaks
(the server runs with CANARY_SECRET=zebra42).  Hand-picked hostile bodies follow, then a check
that the server is still healthy.  Generation is deterministic and bounded (< 60 s in all).

The `test_bug_*` tests pin inputs found this way as minimal reproductions; they fail until the
bug is fixed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.service.models import (
    BatchResponse,
    DefinitionList,
    FleetWorkload,
    Health,
    Interpretation,
    LiveInterpretation,
    Problem,
    UpdateResponse,
    ValidationResponse,
    WorkloadList,
)
from tests.fuzz.test_engine_properties import (
    KINDS,
    SETTINGS,
    examples,
    YAMLISH,
    _mutated_of,
    pods_lists,
    workloads,
)
from tests.properties import at_least
from tests.service.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "openapi.json"
CANARY = "zebra42"
PROBLEM_JSON = "application/problem+json"
JOBSET = (ROOT / "definitions" / "jobset.x-k8s.io" / "JobSet" / "v1alpha2" / "testdata" / "running.yaml").read_text()
EXAMPLE_KARTA = ROOT / "tests" / "data" / "examples" / "batchtask.karta.yaml"

schema = schemathesis.openapi.from_path(SPEC)
schema.config.generation.update(max_examples=examples(60), deterministic=True, database="none")
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
schema.config.update(suppress_health_check=[schemathesis.config.HealthCheck.all], request_timeout=30)

# The 2xx body of each operation, as the pydantic models of the contract (schemathesis checks
# the same against openapi.json; both must hold).
SUCCESS_MODELS: dict[str, type[BaseModel] | None] = {
    "POST /interpret": Interpretation,
    "POST /interpret/batch": BatchResponse,
    "POST /interpret/update": UpdateResponse,
    "GET /definitions": DefinitionList,
    "GET /definitions/{name}": None,
    "POST /definitions/validate": ValidationResponse,
    "GET /healthz": Health,
    "GET /readyz": Health,
    "GET /metrics": None,
    "GET /workloads/{namespace}/{name}": LiveInterpretation,
    "GET /fleet/workloads/{namespace}/{name}": FleetWorkload,
    "GET /workloads": WorkloadList,
}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server("--definitions", str(ROOT / "tests" / "data" / "examples"), "--eval-deadline", "2",
               env={"CANARY_SECRET": CANARY})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def check_answer(status: int, content_type: str, body: bytes, model: type[BaseModel] | None = None) -> Any:
    """The contract every answer keeps, whatever the request."""
    text = body.decode("utf-8", "replace")
    assert CANARY not in text, "the server's environment leaked into a response"
    # 501 is the documented answer to an object reference when no cluster is configured.
    no_cluster = status == 501 and "urn:wlmap:problem:no-cluster" in text
    assert status < 500 or no_cluster, f"{status}: {text[:500]}"
    ctype = content_type.split(";")[0].strip()
    if status >= 400:
        assert ctype == PROBLEM_JSON, f"{status} answered as {content_type!r}: {text[:300]}"
        problem = Problem.model_validate_json(body)
        assert problem.status == status, problem
        assert problem.detail and problem.title and problem.type
        assert "Traceback" not in text
        return problem
    if model is not None and ctype == "application/json":
        return model.model_validate_json(body)
    return None


@schema.parametrize()
def test_every_operation_keeps_the_contract(case: schemathesis.Case, server: Server) -> None:
    response = case.call(base_url=server.url, timeout=30)
    ctype = next((v[0] for k, v in response.headers.items() if k.lower() == "content-type" and v), "")
    check_answer(response.status_code, ctype, response.content, SUCCESS_MODELS.get(case.operation.label))
    # (schemathesis' own not_a_server_error would also flag the documented 501 no-cluster answer)
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance,
                                             response_schema_conformance])


# -- hand-picked hostile bodies ------------------------------------------------------------------

def _deep(n: int, leaf: str = "1") -> str:
    return "[" * n + leaf + "]" * n


def _deep_map(n: int) -> str:
    return '{"a":' * n + "1" + "}" * n


def _jobset_json() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(JOBSET)


HOSTILE: list[tuple[str, str, str, bytes]] = [
    # (id, path, content type, body)
    ("deep-10000-json", "/interpret", "application/json", _deep(10000).encode()),
    ("deep-10000-map-json", "/interpret", "application/json", _deep_map(10000).encode()),
    ("deep-10000-yaml", "/interpret", "application/yaml", _deep(10000).encode()),
    ("deep-10000-batch", "/interpret/batch", "application/json", ('{"items": ' + _deep(10000) + "}").encode()),
    ("deep-10000-validate", "/definitions/validate", "application/json", _deep(10000).encode()),
    ("deep-10000-validate-yaml", "/definitions/validate", "application/yaml", _deep_map(10000).encode()),
    ("invalid-utf8-json", "/interpret", "application/json", b'{"apiVersion": "v1", "kind": "Pod\xff\xfe"}'),
    ("invalid-utf8-yaml", "/interpret", "application/yaml", b"apiVersion: v1\nkind: Pod\xc3\x28\n"),
    ("invalid-utf8-validate", "/definitions/validate", "application/yaml", b"\xff\xfe\xfd"),
    ("invalid-utf8-batch", "/interpret/batch", "application/json", b'{"items": [{"object": "\xff"}]}'),
    ("huge-number-json", "/interpret", "application/json",
     b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"generation": 1e99999}}'),
    ("huge-int-json", "/interpret", "application/json",
     b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"generation": ' + b"9" * 4000 + b"}}"),
    ("huge-replicas-yaml", "/interpret", "application/yaml", JOBSET.replace("replicas: 2", "replicas: 1e400", 1)
     .encode()),
    ("nan-replicas-yaml", "/interpret", "application/yaml", JOBSET.replace("replicas: 2", "replicas: .nan", 1)
     .encode()),
    ("duplicate-keys-yaml", "/interpret", "application/yaml", b"apiVersion: v1\nkind: Pod\nkind: Pod\n"),
    ("duplicate-keys-json", "/interpret", "application/json", b'{"apiVersion": "v1", "kind": "Pod", "kind": "Pod"}'),
    ("duplicate-keys-validate", "/definitions/validate", "application/yaml",
     b"apiVersion: run.ai/v1alpha1\nkind: Karta\nkind: Karta\n"),
    ("billion-laughs", "/interpret", "application/yaml",
     (b"a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
      b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
      b"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
      b"apiVersion: v1\nkind: Pod\n")),
    ("empty-json", "/interpret", "application/json", b""),
    ("empty-yaml", "/interpret", "application/yaml", b""),
    ("null-json", "/interpret", "application/json", b"null"),
    ("array-json", "/interpret/batch", "application/json", b"[]"),
    ("items-not-list", "/interpret/batch", "application/json", b'{"items": {"a": 1}}'),
    ("unknown-media", "/interpret", "text/csv", b"a,b"),
    ("nul-bytes", "/interpret", "application/json", b"\x00" * 64),
    ("multi-doc-yaml", "/interpret", "application/yaml", b"apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n"),
    ("python-tag-yaml", "/interpret", "application/yaml", b"!!python/object/apply:os.system ['true']\n"),
    ("ref-without-cluster", "/interpret", "application/json",
     b'{"ref": {"apiVersion": "v1", "kind": "Pod", "name": "x"}}'),
]


@pytest.mark.parametrize(("path", "ctype", "body"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_body(client: httpx.Client, path: str, ctype: str, body: bytes) -> None:
    r = client.post(path, content=body, headers={"content-type": ctype})
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)


def test_body_of_4_mib_is_refused(client: httpx.Client) -> None:
    body = b'{"apiVersion": "v1", "kind": "Pod", "pad": "' + b"x" * (4 * 1024 * 1024) + b'"}'
    r = client.post("/interpret", content=body, headers={"content-type": "application/json"})
    problem = check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
    assert r.status_code == 413, problem


def padded_pod(chunks: int, size: int, envelope: tuple[str, str] = ("", "")) -> Iterator[bytes]:
    """A Pod manifest padded to `chunks` x `size` bytes, sent as it is generated (no length)."""
    yield envelope[0].encode() + b'{"apiVersion": "v1", "kind": "Pod", "pad": "'
    block = b"x" * size
    for _ in range(chunks):
        yield block
    yield b'"}' + envelope[1].encode()


@pytest.mark.parametrize("path", ["/interpret", "/definitions/validate"])
def test_body_of_4_mib_without_content_length_is_refused(server: Server, path: str) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        try:
            r = c.post(path, content=padded_pod(64, 64 * 1024), headers={"content-type": "application/json"})
        except httpx.HTTPError:
            return  # the server may close the connection once the limit is crossed
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
    assert r.status_code == 413


def _tree_rss_mb(pid: int) -> float:
    from benchmarks.soak import tree_rss_mb

    return tree_rss_mb(pid)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_body_of_100_mb_is_refused_without_buffering_it(server: Server, declared: bool) -> None:
    """100 MB at the service: a 413 (or the connection closed once the limit is crossed), the
    memory of the server stays where it was, and it keeps serving."""
    before = _tree_rss_mb(server.proc.pid)
    headers = {"content-type": "application/json"}
    if declared:
        headers["content-length"] = str(100 * 1024 * 1024 + 46)
    started = time.monotonic()
    with httpx.Client(base_url=server.url, timeout=60) as c:
        try:
            r = c.post("/interpret", content=padded_pod(100, 1024 * 1024), headers=headers)
            check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
            assert r.status_code == 413
        except httpx.HTTPError:
            pass  # the server may close the connection once the limit is crossed
    assert time.monotonic() - started < 30
    assert _tree_rss_mb(server.proc.pid) - before < 30, "the server buffered the oversized body"
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/healthz").status_code == 200


# -- the environment must not leak ---------------------------------------------------------------

LEAKY = ["env", "$ENV", "env.CANARY_SECRET", "$ENV.CANARY_SECRET", "env | tostring", "$ENV | tojson",
         "[env[]] | join(\",\")", "\"\\(env)\"", "env | keys", "$ENV | to_entries", "error(env | tostring)",
         "error($ENV.CANARY_SECRET)", "$__prog_args", "input_filename", "get_search_list", "$__loc__",
         "env.CANARY_SECRET // \"none\" | error", "(env, $ENV) | .CANARY_SECRET", "getpath([\"CANARY_SECRET\"])",
         "def env: 1; $ENV | tostring", "[splits(\"x\")]"]


def _karta_reading(expr: str) -> dict[str, Any]:
    return {
        "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "leaky"},
        "spec": {"structureDefinition": {"rootComponent": {
            "name": "root", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "specDefinition": {"podSpecPath": ".spec"},
            "statusDefinition": {
                "phaseDefinition": {"path": expr},
                "statusMappings": {"running": [{"byExpression": {"expression": expr, "expectedResult": "true"}}]},
                "conditionsDefinition": {"path": f"[{{type: ({expr} | tostring), status: \"True\"}}]",
                                         "typeFieldName": "type", "statusFieldName": "status"},
            },
        }}},
    }


@pytest.mark.parametrize("expr", LEAKY)
def test_definition_reading_the_environment_leaks_nothing(client: httpx.Client, expr: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    karta = _karta_reading(expr)
    for path, body in (("/interpret", {"object": pod, "definition": karta, "pods": [pod]}),
                       ("/interpret/batch", {"items": [{"object": pod, "definition": karta}]})):
        r = client.post(path, json=body)
        check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
    r = client.post("/definitions/validate", json=karta)
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, ValidationResponse)


def test_in_process_evaluation_leaks_nothing() -> None:
    """--isolation none evaluates inline definitions in the server process itself."""
    s = Server("--isolation", "none", env={"CANARY_SECRET": CANARY})
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
        with s.client() as c:
            for expr in LEAKY:
                r = c.post("/interpret", json={"object": pod, "definition": _karta_reading(expr), "pods": [pod]})
                check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
    finally:
        s.stop()


# -- the engine's strategies, over HTTP ----------------------------------------------------------

def _yaml(v: Any) -> bytes:
    import yaml

    return yaml.safe_dump(v, sort_keys=False, allow_unicode=True).encode()


@settings(max_examples=examples(120), **SETTINGS)
@given(data=st.data())
def test_mutated_manifests_over_http(client: httpx.Client, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    obj = data.draw(workloads(kind), label="manifest")
    form = data.draw(st.sampled_from(["json", "yaml", "envelope", "batch"]), label="form")
    if form == "json":
        r = client.post("/interpret", content=json.dumps(obj), headers={"content-type": "application/json"})
    elif form == "yaml":
        r = client.post("/interpret", content=_yaml(obj), headers={"content-type": "application/yaml"})
    elif form == "envelope":
        pods = data.draw(pods_lists(), label="pods")
        r = client.post("/interpret", json={"object": obj, "pods": pods})
    else:
        r = client.post("/interpret/batch", json={"items": [{"object": obj}, {"object": obj, "pods": []}]})
    model = BatchResponse if form == "batch" else Interpretation
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, model)


def test_mutated_inline_definitions_over_http(client: httpx.Client) -> None:
    """Inline definitions run in the supervised workers: a mutated one (random jq) must give a
    422 or a contract answer, never a 5xx; validation must agree with interpretation (both sides
    of that agreement met in some of the examples)."""
    seen: Counter[str] = Counter()

    @settings(max_examples=examples(40), **SETTINGS)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(KINDS), label="kind")
        karta = data.draw(_mutated_of(kind), label="definition")
        obj = data.draw(workloads(kind), label="manifest")
        r = client.post("/interpret", json={"object": obj, "definition": karta})
        check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)
        v = client.post("/definitions/validate", json=karta)
        report = check_answer(v.status_code, v.headers.get("content-type", ""), v.content, ValidationResponse)
        seen["examples"] += 1
        if r.status_code == 200:
            seen["answered"] += 1
            assert report.items[0].valid
        if not report.items[0].valid:
            seen["invalid"] += 1
            assert r.status_code == 422 and "invalid-definition" in r.text, r.text[:300]

    check()
    at_least(seen, answered=0.5, invalid=0.02)  # 38 and 1 of the 40 (derandomized) examples


@settings(max_examples=examples(60), **SETTINGS)
@given(path=st.sampled_from(["/interpret", "/interpret/batch", "/definitions/validate"]), body=YAMLISH)
def test_yaml_like_bodies_over_http(client: httpx.Client, path: str, body: str) -> None:
    note(f"POST {path} {body!r}")
    r = client.post(path, content=body.encode("utf-8", "surrogatepass"), headers={"content-type": "application/yaml"})
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)


# -- minimal reproductions of bugs found here (fail until fixed) ---------------------------------

def _post(client: httpx.Client, path: str, body: bytes | str, ctype: str) -> httpx.Response:
    return client.post(path, content=body, headers={"content-type": ctype})


@pytest.mark.parametrize("path", ["/interpret", "/definitions/validate"])
def test_bug_yaml_explicit_tag_is_a_500(client: httpx.Client, path: str) -> None:
    """`a: !!int x` (also `!!float x`, `!!bool x`, `!!map [1]`): PyYAML raises ValueError etc.,
    not DocumentError, so `_decode` lets it through: 500 instead of 400 malformed-body."""
    r = _post(client, path, "apiVersion: v1\nkind: Pod\na: !!int x\n", "application/yaml")
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)


def test_bug_yaml_integer_of_5000_digits_is_a_500(client: httpx.Client) -> None:
    """Python refuses int() of more than 4300 digits (ValueError): 500 instead of 400."""
    r = _post(client, "/interpret", "apiVersion: v1\nkind: Pod\na: " + "1" * 5000 + "\n", "application/yaml")
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)


def test_bug_yaml_integer_of_400_digits_is_a_500(client: httpx.Client) -> None:
    """An integer beyond float64 range where jq reads it: `normalize` raises OverflowError."""
    body = JOBSET.replace("replicas: 2", "replicas: " + "1" * 400, 1)
    r = _post(client, "/interpret", body, "application/yaml")
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)


def test_bug_yaml_values_that_are_not_json_are_a_500(client: httpx.Client) -> None:
    """`!!set`, `!!binary` and non-string keys parse into Python sets, bytes and int keys; any
    of them where jq reads (here `spec.suspend`) fails in orjson: 500."""
    body = JOBSET.replace("\n  suspend: false\n", "\n  suspend: !!set {a}\n", 1)
    assert body != JOBSET
    r = _post(client, "/interpret", body, "application/yaml")
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)


@pytest.mark.parametrize("path", ["/interpret", "/interpret/batch"])
def test_bug_json_nested_300_levels_is_a_500(client: httpx.Client, path: str) -> None:
    """JSON bodies have no depth bound below orjson's 1024; past 255 levels orjson cannot
    serialise the object again (`input_text`, the inline-definition cache key): 500."""
    obj = _jobset_json()
    body = json.dumps(obj)[:-1] + ', "status": {"conditions": ' + _deep(300) + "}}"
    if path == "/interpret/batch":
        body = '{"items": [{"object": ' + body + "}]}"
    r = _post(client, path, body, "application/json")
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)


def test_bug_quantity_of_1e308_is_a_500(client: httpx.Client) -> None:
    """A request of 1e308 (any number >= 2^64) becomes an integer orjson cannot serialise in
    the pod-facts cache key: 500 (a GPU quantity of "1e20" likewise, when the answer is sent)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 1e308}}}]}}
    r = client.post("/interpret", json=pod)
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)


def test_bug_non_mapping_metadata_is_a_500(client: httpx.Client) -> None:
    """`"metadata": true` on a workload (or `"metadata": "x"` on a supplied pod): AttributeError
    in the engine, 500 instead of 422."""
    obj = dict(_jobset_json(), metadata=True)
    r = client.post("/interpret", json=obj)
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)


def test_bug_non_string_metadata_name_breaks_the_response_schema(client: httpx.Client) -> None:
    """`metadata.name: true` is echoed as `workload.name: true`: a 200 that does not match
    openapi.json (WorkloadRef.name is a string or null)."""
    obj = _jobset_json()
    obj["metadata"]["name"] = True
    r = client.post("/interpret", json=obj)
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content, Interpretation)


def test_bug_chunked_oversized_batch_body_is_400_not_413(server: Server) -> None:
    """Without Content-Length, a body over --max-body-bytes is cut by the middleware while
    FastAPI reads it for /interpret/batch; FastAPI turns the exception into 400 "There was an
    error parsing the body" instead of the documented 413 (/interpret and /definitions/validate
    answer 413)."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        body = padded_pod(64, 64 * 1024, envelope=('{"items": [{"object": ', "}]}"))
        r = c.post("/interpret/batch", content=body, headers={"content-type": "application/json"})
    check_answer(r.status_code, r.headers.get("content-type", ""), r.content)
    assert r.status_code == 413, r.text


# -- and, after all of that ------------------------------------------------------------------------

def test_zz_server_is_still_healthy(server: Server, client: httpx.Client) -> None:
    assert server.proc.poll() is None, server.output()[-2000:]
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    r = _post(client, "/interpret", JOBSET, "application/yaml")
    assert r.status_code == 200, r.text
    assert r.json()["status"]["phase"] == "Running"
    karta = EXAMPLE_KARTA.read_text()
    r = _post(client, "/definitions/validate", karta, "application/yaml")
    assert r.status_code == 200 and r.json()["items"][0]["valid"], r.text
    assert CANARY not in server.output()
