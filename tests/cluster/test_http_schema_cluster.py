"""Schema-driven fuzzing of the cluster endpoints against a service backed by the real API server
(tests/fuzz fuzzes every operation against a service without a cluster, where they answer 501)."""

from __future__ import annotations

from typing import Any

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
cluster_ops = schema.include(path_regex=r"^/workloads")


@cluster_ops.parametrize()
def test_cluster_operations_keep_the_contract(case: schemathesis.Case, service: Server, kubectl: Kubectl,
                                              seeded: Any) -> None:
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
