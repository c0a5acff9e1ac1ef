"""The engine's bounded caches (memo.py): a value put is read back, None included; past its
size the cache empties instead of growing."""

from app.engine.memo import ByteLRU, Memo, held_bytes


def test_put_returns_the_value_and_keeps_it():
    m: Memo[str, str | None] = Memo(maxsize=3)
    assert m.put("a", None) is None and "a" in m and m["a"] is None
    assert m.put("b", "x") == "x" and m.get("b") == "x"


def test_past_its_size_it_is_dropped_whole():
    m: Memo[int, int] = Memo(maxsize=3)
    for i in range(3):
        m.put(i, i)
    assert len(m) == 3
    m.put(3, 3)
    assert len(m) == 0
    m.put(4, 4)
    assert dict(m) == {4: 4}


def test_a_byte_bound_drops_it_whole_too():
    """Keys a caller chooses (a pod template's text) can be megabytes: 4096 of them are not kept."""
    m: Memo[int, int] = Memo(maxsize=1000, max_bytes=640)
    for i in range(64):
        m.put(i, i, 10)
    assert len(m) == 64 and m.bytes == 640
    m.put(64, 64, 10)
    assert len(m) == 0 and m.bytes == 0
    m.put(99, 99, 11)  # over 1/64 of the bound: a giant, not kept
    m.put(9, 9, 10)
    assert dict(m) == {9: 9} and m.bytes == 10


def test_byte_lru_keeps_the_recently_used_within_its_bytes():
    c: ByteLRU[str, int] = ByteLRU(max_bytes=100)
    for k in "abcd":
        c.put(k, ord(k), 20)
    assert c.get("a") == ord("a")  # now the most recently used
    c.put("e", 5, 25)  # 105 bytes: the least recently used ("b") goes
    assert c.get("b") is None and c.get("a") == ord("a") and c.bytes == 85 and len(c) == 4
    c.put("a", 1, 10)  # replaced: accounted once
    assert c.bytes == 75 and c.get("a") == 1


def test_byte_lru_does_not_keep_a_giant():
    """One entry over a quarter of the bound would flush everyone else's for nothing."""
    c: ByteLRU[str, str] = ByteLRU(max_bytes=100)
    c.put("small", "x", 10)
    assert c.put("giant", "y", 26) == "y"
    assert c.get("giant") is None and c.get("small") == "x" and c.bytes == 10


def test_held_bytes_counts_what_a_value_holds():
    assert held_bytes({"a": "x" * 1000}) >= 1000
    assert held_bytes([2**70]) > 0  # not JSON-encodable by orjson: estimated, never an error
