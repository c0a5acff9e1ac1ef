"""What the live model keeps per pod stays small (issue 24): pods shaped like the benchmark
fill's (kubelet-written status, the JobSet controller's labels) go through the model's own
keepers and handlers, as an informer's list hands them over, and tracemalloc counts what
their records, bodies and owner-graph entries hold."""

from __future__ import annotations

import random

import orjson
import pytest

from app.model.packing import MIN_DICTIONARY, Packer, unpack
from app.model.records import record
from benchmarks.model_memory import build_model, fill_objects


def test_a_kept_pod_costs_under_2_5_kb() -> None:
    got = build_model(40)  # 320 pods of 40 JobSets
    # the projected body alone is ~1.8 KB as JSON; main held 10 KB per pod (orjson's buffers)
    assert got["tracemalloc_per_pod"] < 2500, got
    assert got["breakdown"]["body (projected JSON)"] < 600, got["breakdown"]


def test_packed_bodies_give_back_the_projected_object() -> None:
    _, _, pods = fill_objects(3)
    packer = Packer()
    for p in pods:
        plain = record(p, "", "Pod", True, is_pod=True)
        kept = record(p, "", "Pod", True, is_pod=True, packer=packer)
        assert plain is not None and kept is not None and plain.body is not None and kept.body is not None
        assert kept.object() == plain.object() == orjson.loads(plain.body)
        assert kept.dictionary is packer.dictionary and len(kept.body) < len(plain.body) / 3
    # a different kind of object against the pods' dictionary: still the same object back
    other = orjson.dumps({"kind": "Other", "data": list(range(200))})
    body, dictionary = packer.pack(other)
    assert dictionary is not None and orjson.loads(unpack(body, dictionary)) == orjson.loads(other)


@pytest.mark.parametrize("body", [b'{"a":1}', random.Random(1).randbytes(1024)])
def test_bodies_that_do_not_shrink_are_kept_as_they_are(body: bytes) -> None:
    packer = Packer()
    if len(body) < MIN_DICTIONARY:  # too small to be a dictionary: kept plain, the next may be one
        assert packer.pack(body) == (body, None) and packer.dictionary is None
    else:
        packer.dictionary = b"x" * 300  # nothing in common with the body: deflate cannot win
        assert packer.pack(body) == (body, None)




def test_a_relist_keeps_equal_records() -> None:
    """An informer compares what it relists with what it holds: the same object packed again
    must compare equal, or every relist would re-announce every object."""
    _, _, pods = fill_objects(2)
    packer = Packer()
    first = [record(orjson.loads(orjson.dumps(p)), "", "Pod", True, is_pod=True, packer=packer) for p in pods]
    again = [record(orjson.loads(orjson.dumps(p)), "", "Pod", True, is_pod=True, packer=packer) for p in pods]
    assert first == again
    assert first[0] is not None and first[1] is not None and first[0].owners is first[1].owners  # siblings share
