"""The cluster tests' fixtures live in fixtures.py and are registered once, suite-wide, by
tests/conftest.py; these names stay importable from here for the test modules."""

from .fixtures import SERVICE_NS, token  # noqa: F401
