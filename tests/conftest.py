"""Suite-wide fixtures: the real kube-apiserver and the services connected to it (one per run)."""

from tests.cluster.fixtures import apiserver, direct, kubectl, secured, service  # noqa: F401

pytest_plugins = ["tests.ui.browser"]  # the one browser of the UI tests (tests/ui, tests/fleet)
