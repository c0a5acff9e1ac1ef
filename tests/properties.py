"""Property tests that assert only under a condition (an answer, not an error; both engines
answering) say how often it held: `seen` counts the examples run and each condition met, and
`at_least` fails the test when a condition held in too few of them to have tested anything."""

from __future__ import annotations

import os
from collections import Counter


def at_least(seen: Counter[str], **shares: float) -> None:
    """seen["examples"] examples ran; each condition must have held in at least its share of
    them (a share above 1: that many times per example), and at least once."""
    n = seen["examples"]
    if os.environ.get("WLMAP_SHOW_SHARES") == "1":
        print({k: round(v / n, 3) for k, v in seen.items()} if n else seen)
    assert n > 0, "no example ran"
    for what, share in shares.items():
        assert seen[what] >= max(1, share * n), f"{what} held in {seen[what]} of {n} examples (at least {share:.0%})"
