"""Inline definitions are parsed once per distinct document, in a cache bounded by bytes; an
invalid one is remembered only as its findings, never with its document (issue 21: 256 junk
Kartas of 3 MiB used to be kept whole, ~57 MB of Python objects each)."""

from __future__ import annotations

import copy

import pytest
import yaml

from app.karta.load import Definition
from app.service import wiring
from app.service.service import Service
from app.service.problems import ProblemError
from app.service.settings import Settings

from .conftest import EXAMPLES

MiB = 1024 * 1024
VALID = yaml.safe_load((EXAMPLES / "batchtask.karta.yaml").read_text())


def _junk(i: int, size: int) -> dict:
    """A Karta whose spec is junk: invalid, and big."""
    return {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": f"junk-{i}"},
            "spec": {"junk": [{"k": f"{i}-{n}", "v": "x" * 100} for n in range(size // 120)]}}


def _big_valid(i: int, size: int) -> dict:
    """The valid example, made distinct and big by an annotation."""
    d = copy.deepcopy(VALID)
    d["metadata"]["name"] = f"big-{i}"
    d["metadata"]["annotations"] = {"padding": "y" * size}
    return d


def _service() -> Service:
    return wiring.build(Settings())


def test_invalid_definitions_are_kept_only_as_their_findings():
    svc = _service()
    for i in range(20):
        with pytest.raises(ProblemError) as e:
            svc.inline_definition(_junk(i, MiB))
        assert e.value.status == 422 and e.value.slug == "invalid-definition"
        assert e.value.errors and all(err["message"] for err in e.value.errors)
    cache = svc.inline.cache
    assert len(cache) == 20  # a refusal is remembered (the same junk again is not parsed again) ...
    assert not any(isinstance(v, Definition) for v, _ in cache._items.values())  # ... without its document
    assert cache.bytes < 20 * 16 * 1024  # a few KB each, not megabytes
    with pytest.raises(ProblemError) as again:
        svc.inline_definition(_junk(3, MiB))
    assert again.value.status == 422 and again.value.errors and len(cache) == 20  # answered from the record


def test_valid_definitions_stay_under_the_byte_bound():
    svc = _service()
    bound = svc.inline.cache.max_bytes
    assert bound == 64 * MiB
    first = svc.inline_definition(_big_valid(0, 600_000))
    assert svc.inline_definition(_big_valid(0, 600_000)) is first  # parsed once
    for i in range(1, 40):  # 40 x 600 KB: ~240 MB accounted (x10 as Python objects) if all were kept
        d = svc.inline_definition(_big_valid(i, 600_000))
        assert d.valid and d.name == f"big-{i}"
        assert svc.inline.cache.bytes <= bound
    assert 0 < len(svc.inline.cache) < 40


def test_keys_are_digests_not_documents():
    svc = _service()
    svc.inline_definition(_big_valid(1, 100_000))
    assert all(isinstance(k, bytes) and len(k) <= 32 for k in svc.inline.cache._items)


def test_a_definition_that_cannot_be_encoded_is_a_422():
    svc = _service()
    bad = copy.deepcopy(VALID)
    bad["metadata"]["annotations"] = {"n": 2**70}
    with pytest.raises(ProblemError) as e:
        svc.inline_definition(bad)
    assert e.value.status == 422
