"""The readers the service uses through a protocol implement all of it: no member missing, none
abstract, none that refuses with NotImplementedError (the store once did for `body`)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

from app.cluster.reader import WorkloadReader
from app.cluster.workloads import Workloads
from app.model.live import LiveModel
from app.model.protocol import ClusterModel
from app.store.reads import StoreModel


def _members(protocol: type) -> set[str]:
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object,) or cls.__name__ in ("Protocol", "Generic"):
            continue
        names |= {n for n in vars(cls) if not n.startswith("_")}
        names |= set(getattr(cls, "__annotations__", {}))
    return names


def _instance_attributes(cls: type) -> set[str]:
    """Attributes an implementation sets in __init__ (`self.x = ...`, `self.a, self.b = ...`)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))  # type: ignore[misc]
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}


@pytest.mark.parametrize(("cls", "protocol"), [(Workloads, WorkloadReader), (LiveModel, ClusterModel),
                                               (StoreModel, ClusterModel)])
def test_every_member_of_the_protocol_is_implemented(cls: type, protocol: type) -> None:
    wanted = _members(protocol)
    assert {"describe", "summaries", "body", "locate"} <= wanted  # the walk sees the protocol's members
    have = set(dir(cls)) | _instance_attributes(cls)
    missing = sorted(wanted - have)
    assert not missing, f"{cls.__name__} lacks {missing}"
    assert not getattr(cls, "__abstractmethods__", None), f"{cls.__name__} leaves {cls.__abstractmethods__} abstract"
    for name in sorted(wanted):
        member: Any = inspect.getattr_static(cls, name, None)
        fn = member.fget if isinstance(member, property) else member
        if callable(fn):
            assert "NotImplementedError" not in inspect.getsource(fn), f"{cls.__name__}.{name} is not implemented"
