"""Small helpers shared by the cluster tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def eventually(check: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05,
               what: str = "condition") -> tuple[T, float]:
    """Poll until `check` returns something truthy; returns it and the seconds it took."""
    start = time.monotonic()
    last: Any = None
    while True:
        try:
            last = check()
        except AssertionError as e:
            last = e
        if last and not isinstance(last, AssertionError):
            return last, time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what} not reached within {timeout} s (last: {last!r})")
        time.sleep(interval)


def load(rel: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / rel).read_text())


def fixture_object(rel: str, namespace: str, name: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A catalog fixture as a fresh object to create: (object without server fields, its status)."""
    obj = load(rel)
    status = obj.pop("status", None) or {}
    meta = obj["metadata"]
    for f in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        meta.pop(f, None)
    meta["namespace"] = namespace
    if name:
        meta["name"] = name
    return obj, status


BATCHTASK_DEF = "examples/definitions/acme.example.com/BatchTask/v1/definition.yaml"
PYTORCHJOB_DEF = "definitions/kubeflow.org/PyTorchJob/v1/definition.yaml"


def definition_text(rel: str) -> str:
    return (ROOT / rel).read_text()
