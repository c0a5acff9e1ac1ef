"""The names and numbers every replica must compute the same way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.store import keys


@given(st.integers(0, 2**41), st.integers(0, 2**22 - 2))
def test_stream_ids_and_sequence_numbers_convert_both_ways_in_order(ms: int, n: int) -> None:
    sid = f"{ms}-{n}"
    assert keys.seq_to_id(keys.id_to_seq(sid)) == sid
    assert keys.id_to_seq(sid) < keys.id_to_seq(f"{ms}-{n + 1}") < keys.id_to_seq(f"{ms + 1}-0")


@pytest.mark.parametrize("bad", ["", "12", "a-1", "1-b", "1-", "-1", "١-1", f"1-{2**22}", "abcd.12"])
def test_malformed_stream_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        keys.id_to_seq(bad)


def test_units_and_buckets() -> None:
    assert keys.units_of("prod", 1) == ["prod"]
    assert keys.units_of("prod", 3) == ["prod#0", "prod#1", "prod#2"]
    assert keys.split_unit("prod#2") == ("prod", 2)
    assert keys.split_unit("a#b") == ("a#b", 0)  # a cluster name may hold '#'
    assert keys.split_unit("a#b#1") == ("a#b", 1)
    # stable across runs and processes (crc32, not Python's salted hash), and spread
    buckets = [keys.bucket_of(f"team-{i}", 4) for i in range(400)]
    assert buckets[:5] == [keys.bucket_of(f"team-{i}", 4) for i in range(5)]
    assert all(60 < buckets.count(b) < 140 for b in range(4))
    assert keys.bucket_of("anything", 1) == 0


def test_row_fields_round_trip() -> None:
    key = ("jobset.x-k8s.io", "JobSet", "team-a", "llm")
    assert keys.parse_row_field(keys.row_field(*key)) == key
    assert keys.parse_row_field(keys.row_field("", "Pod", "", "x")) == ("", "Pod", "", "x")


def test_shards_of_one_store_share_a_claims_group_and_other_stores_do_not() -> None:
    from app.service.sharing import claims_group

    g = claims_group("redis://:secret@valkey.platform:6379/0")
    assert g == claims_group("redis://valkey.platform:6379/0")  # the password is not part of it
    assert g != claims_group("redis://valkey.platform:6379/1") != claims_group("redis://other:6379/0")
    assert g.startswith("wlmap-") and len(g) <= 63
