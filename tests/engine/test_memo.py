"""The engine's bounded caches (memo.py): a value put is read back, None included; past its
size the cache empties instead of growing."""

from app.engine.memo import Memo


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
