"""Suite-wide fixtures: the real kube-apiserver and the services connected to it (one per run)."""

from tests.cluster.fixtures import apiserver, kubectl, secured, service  # noqa: F401
