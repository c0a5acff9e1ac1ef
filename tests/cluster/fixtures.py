"""Session fixtures: one real kube-apiserver (+ etcd), framework CRDs, RBAC, and `wlmap serve`
processes connected to it with the kubeconfig of a non-admin service user.

Registered once for the whole suite by tests/conftest.py, so the cluster, shipping and UI tests
share one API server (importing them into another conftest would start a second one)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ..service.conftest import Server
from .apiserver import TOKENS, ApiServer, ensure_binaries
from .kubeobjects import Kubectl, crd, service_rbac

SERVICE_NS = "wlmap-system"


@pytest.fixture(scope="session")
def apiserver() -> Iterator[ApiServer]:
    if not ensure_binaries():
        if os.environ.get("WLMAP_REQUIRE_KUBE") == "1":
            pytest.fail("kube-apiserver/etcd binaries are missing and could not be built "
                        "(scripts/kube-apiserver/build.sh)")
        pytest.skip("kube-apiserver binaries are not built (run scripts/kube-apiserver/build.sh, or `make test`)")
    srv = ApiServer().start()
    k = Kubectl(srv)
    for doc in (crd("run.ai", "Karta", "kartas", ["v1alpha1"], scope="Cluster"),
                crd("jobset.x-k8s.io", "JobSet", "jobsets", ["v1alpha2"]),
                crd("kubeflow.org", "PyTorchJob", "pytorchjobs", ["v1"]),
                crd("acme.example.com", "BatchTask", "batchtasks", ["v1"]),
                crd("serving.kserve.io", "InferenceService", "inferenceservices", ["v1beta1"]),
                crd("ray.io", "RayCluster", "rayclusters", ["v1"])):
        k.apply(doc)
    k.wait_crds(["kartas.run.ai", "jobsets.jobset.x-k8s.io", "pytorchjobs.kubeflow.org",
                 "batchtasks.acme.example.com", "inferenceservices.serving.kserve.io", "rayclusters.ray.io"])
    k.ensure_namespace(SERVICE_NS)
    for doc in service_rbac("wlmap-service", SERVICE_NS):
        k.apply(doc)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def kubectl(apiserver: ApiServer) -> Kubectl:
    return Kubectl(apiserver)


@pytest.fixture(scope="session")
def service(apiserver: ApiServer) -> Iterator[Server]:
    """The service as the `wlmap-service` user, no request authorization."""
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "none", "--eval-deadline", "2", "--log-level", "debug")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def direct(apiserver: ApiServer) -> Iterator[Server]:
    """The same service reading the API server on every request (--cache false)."""
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--cache", "false")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def secured(apiserver: ApiServer) -> Iterator[Server]:
    """The service with --auth kubernetes: callers need a token and RBAC rights (and `patch` to
    suspend, resume or apply: --actions true)."""
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "kubernetes", "--karta-resources", "false", "--actions", "true")
    yield s
    s.stop()


def token(user: str) -> str:
    return TOKENS[user][0]
