"""Schema-driven fuzzing of the cluster endpoints against a service backed by the real API server
(tests/fuzz fuzzes every operation against a service without a cluster, where they answer 501)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, \
    status_code_conformance

from tests.fuzz.test_engine_properties import examples
from tests.fuzz.test_http_schema import SPEC, SUCCESS_MODELS, check_answer

from ..service.conftest import Server
from .kubeobjects import Kubectl
from .util import fixture_object

NS = "fuzz-live"

schema = schemathesis.openapi.from_path(SPEC)
schema.config.generation.update(max_examples=examples(40), deterministic=True, database="none")
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
schema.config.update(suppress_health_check=[schemathesis.config.HealthCheck.all], request_timeout=30)
cluster_ops = schema.include(path_regex=r"^/(fleet/)?workloads")


TRUE = {"1", "true", "on", "yes", "t", "y"}


def check_stream(case: schemathesis.Case, url: str) -> None:
    """A `watch=true` case streams forever: read up to the end of its initial state, each line
    one watch event, or the problem it was refused with."""
    query = {k: v for k, v in (case.query or {}).items() if v is not None}
    with httpx.Client(timeout=30) as c, c.stream("GET", url + case.formatted_path, params=query) as r:
        if r.status_code != 200:
            assert 400 <= r.status_code < 500, r.read()
            assert r.headers["content-type"] == "application/problem+json"
            return
        assert r.headers["content-type"].startswith("application/json;stream=watch")
        for n, line in enumerate(r.iter_lines()):
            ev = json.loads(line)
            assert ev["type"] in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") and ev["id"], ev
            if ev.get("initialEventsEnd") or n > 5000:
                return


@cluster_ops.parametrize()
def test_cluster_operations_keep_the_contract(case: schemathesis.Case, service: Server, kubectl: Kubectl,
                                              seeded: Any) -> None:
    if str((case.query or {}).get("watch", "")).lower() in TRUE:
        check_stream(case, service.url)
        return
    response = case.call(base_url=service.url, timeout=30)
    ctype = next((v[0] for k, v in response.headers.items() if k.lower() == "content-type" and v), "")
    check_answer(response.status_code, ctype, response.content, SUCCESS_MODELS.get(case.operation.label))
    assert response.status_code < 500, response.text  # with a cluster, no 5xx is expected at all
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance,
                                             response_schema_conformance])


@pytest.fixture(scope="module")
def seeded(kubectl: Kubectl) -> None:
    """Something to find: a JobSet in a namespace the fuzzer may hit through the examples."""
    kubectl.ensure_namespace(NS)
    obj, status = fixture_object("definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml", NS)
    kubectl.set_status(kubectl.apply(obj), status)
