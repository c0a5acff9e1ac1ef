"""A part a test needs (a shell, the browser, the distribution's Python) that is not there: a
skip on a developer's machine, a failure where the run requires it.  `make test` (CI) sets
WLMAP_REQUIRE_KUBE=1, under which everything `make tools` installs must be present."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

CI = "WLMAP_REQUIRE_KUBE"


def missing(reason: str, *switches: str) -> NoReturn:
    """Fail when any of `switches` (by default the CI switch) is "1", skip otherwise."""
    if any(os.environ.get(s) == "1" for s in switches or (CI,)):
        pytest.fail(reason)
    pytest.skip(reason)
