"""The shipping tests use the suite-wide API server fixtures (tests/conftest.py)."""
