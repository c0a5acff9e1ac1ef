"""openapi.json is generated from the app, current, precise, and usable by a generated client."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, Server
from .test_api import GRAPH, GRAPH_PODS, TASK

SPEC = ROOT / "openapi.json"


def test_openapi_json_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_openapi.py"), "--check"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_openapi_describes_the_contract_precisely():
    spec = json.loads(SPEC.read_text())
    schemas = spec["components"]["schemas"]
    interp = schemas["Interpretation"]
    assert set(interp["required"]) >= {"workload", "definition", "status", "tree", "totals", "gang", "warnings"}
    assert schemas["Status"]["properties"]["phase"]["enum"] == [
        "Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming",
        "Undefined"]
    post = spec["paths"]["/interpret"]["post"]
    assert post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Interpretation")
    for code in ("400", "404", "413", "415", "422"):
        assert post["responses"][code]["content"]["application/problem+json"]["schema"]["$ref"].endswith("/Problem")
    assert "application/yaml" in post["requestBody"]["content"]
    # the tree is recursive and typed all the way down
    assert schemas["ComponentNode"]["properties"]["children"]["items"]["$ref"].endswith("/ComponentNode")


def test_capacity_and_fit_examples_are_valid_answers():
    """The examples openapi.json shows for capacity, nodes and fit are answers the models accept,
    with every field the contract names (extras allowed elsewhere are not silently invented)."""
    from app.service import models

    schemas = json.loads(SPEC.read_text())["components"]["schemas"]
    for name, example in (("ClusterCapacity", models.CAPACITY_EXAMPLE), ("NodeCapacity", models.NODE_EXAMPLE),
                          ("FitResponse", models.FIT_EXAMPLE)):
        model = getattr(models, name)
        assert schemas[name]["examples"] == [example], name
        parsed = model.model_validate(example)
        assert not parsed.model_extra, (name, parsed.model_extra)
    fit = models.FitResponse.model_validate(models.FIT_EXAMPLE)
    for row in fit.clusters:
        assert not row.model_extra
        for s in row.shortfall or ():
            assert not s.model_extra


@pytest.fixture(scope="module")
def generated_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = Path(sys.executable).parent / "openapi-python-client"
    assert exe.exists(), "openapi-python-client is a test dependency (pip install -e '.[test]')"
    out = tmp_path_factory.mktemp("client")
    r = subprocess.run([str(exe), "generate", "--path", str(SPEC), "--output-path", str(out / "wlmap_client"),
                        "--meta", "none"], capture_output=True, text=True, cwd=out)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_generated_client_round_trips(generated_client: Path):
    s = Server("--definitions", str(ROOT / "tests" / "data" / "examples"))
    code = f"""
import json, sys
sys.path.insert(0, {str(generated_client)!r})
from wlmap_client import Client
from wlmap_client.api.interpret import interpret, interpret_batch
from wlmap_client.api.definitions import list_definitions
from wlmap_client.models import InterpretRequest, InterpretRequestObjectType0, BatchRequest, Interpretation, Problem
from wlmap_client.models import KubernetesObject
c = Client(base_url={s.url!r}, raise_on_unexpected_status=True)
body = InterpretRequest(object_=InterpretRequestObjectType0.from_dict(json.loads({json.dumps(json.dumps(GRAPH))})))
res = interpret.sync(client=c, body=body)
assert isinstance(res, Interpretation), type(res)
print(res.status.phase, res.totals.pods, res.totals.gpus, res.tree.children[1].instances[0].id)
batch = interpret_batch.sync(client=c, body=BatchRequest(items=[body, body]), group_by="no-such-label")
print(len(batch.items), batch.totals.pods, batch.totals.gpus, batch.totals.failed, len(batch.groups))
missing = interpret.sync(client=c, body=KubernetesObject(api_version="nope.io/v1", kind="Nothing"))
assert isinstance(missing, Problem) and missing.status == 404, missing
defs = list_definitions.sync(client=c)
print(all(d.digest.startswith("sha256:") for d in defs.items))
"""
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    finally:
        s.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["Degraded", "7", "36", "decode", "2", "14", "72", "0", "1", "True"]
