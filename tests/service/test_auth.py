"""The authorization module's guarantees that hold without a cluster: with auth on, a request
state that carries no caller is a refusal (never the service's own rights), and every decision
is recorded for the audit line.  (The matrix of every route against a real API server is
tests/cluster/test_authz_matrix.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.cluster.access import AccessUnavailable, Caller
from app.cluster.kube import PODS
from app.cluster.reader import allow_all
from app.model.events import EventLog, TokenError
from app.service.auth import Authorizer, audit_fields
from app.service.problems import ProblemError


class _Access:
    """Stands in for the API server's reviews: allows what `rules` lists."""

    def __init__(self, rules: set[tuple[str, str | None]], fail: bool = False):
        self.rules, self.fail, self.asked = rules, fail, 0

    async def allowed(self, caller: Caller, verb: str, res: Any, namespace: str | None, name: str | None) -> bool:
        self.asked += 1
        if self.fail:
            raise AccessUnavailable("cannot check permissions with the API server: down")
        return (verb, namespace) in self.rules

    async def allowed_path(self, caller: Caller, verb: str, path: str) -> bool:
        return (verb, path) in self.rules


class _Member:
    def __init__(self, access: Any, name: str = "east"):
        self.access, self.name = access, name


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_no_caller_with_auth_on_is_a_refusal() -> None:
    """The batch hole: a handler that passes a state without the caller must not read with the
    service's rights."""
    auth = Authorizer(True, lambda: None)
    for state in ({}, {"caller": None}, {"caller": "alice"}):
        with pytest.raises(ProblemError) as e:
            auth.rights(state, _Member(_Access({("get", "a")})))  # type: ignore[arg-type]
        assert e.value.status == 401
        with pytest.raises(ProblemError) as e:
            _run(auth.require_path(state, "/model"))
        assert e.value.status == 401


def test_auth_off_is_unrestricted() -> None:
    auth = Authorizer(False, lambda: None)
    assert auth.rights({}, _Member(None)) is allow_all  # type: ignore[arg-type]
    assert _run(auth.require_path({}, "/model")) is None


def test_rights_ask_the_cluster_that_holds_the_object_and_are_audited() -> None:
    access = _Access({("get", "team-a"), ("list", "team-a")})
    auth = Authorizer(True, lambda: None)
    state: dict[str, Any] = {"caller": Caller("alice", groups=("devs",)), "audit": {}}
    allow = auth.rights(state, _Member(access))  # type: ignore[arg-type]
    assert _run(allow("get", PODS, "team-a", "p"))
    assert not _run(allow("get", PODS, "team-b", "p"))
    assert access.asked == 2
    line = audit_fields(state, 200)
    assert line is not None
    assert line["user"] == "alice" and line["groups"] == ["devs"] and line["clusters"] == ["east"]
    assert line["namespaces"] == ["team-a", "team-b"] and line["decision"] == "partial"
    assert audit_fields(state, 403)["decision"] == "deny"  # type: ignore[index]
    assert audit_fields({"caller": Caller("bob"), "audit": {}}, 200) is None  # read nothing: no line


def test_a_cluster_that_cannot_check_is_a_503_never_an_allow() -> None:
    auth = Authorizer(True, lambda: None)
    state = {"caller": Caller("alice"), "audit": {}}
    for member in (_Member(_Access(set(), fail=True)), _Member(None)):
        allow = auth.rights(state, member)  # type: ignore[arg-type]
        with pytest.raises(ProblemError) as e:
            _run(allow("get", PODS, "team-a", "p"))
        assert e.value.status == 503
    with pytest.raises(ProblemError) as e:  # the home cluster not connected yet
        _run(auth.require_path(state, "/clusters"))
    assert e.value.status == 503


def test_audit_record_is_bounded() -> None:
    """A stream re-checks rights per event: its audit record must not grow with them."""
    auth = Authorizer(True, lambda: None)
    state: dict[str, Any] = {"caller": Caller("alice"), "audit": {}}
    allow = auth.rights(state, _Member(_Access({("list", None)})))  # type: ignore[arg-type]
    for i in range(1000):
        _run(allow("list", PODS, f"ns-{i}", None))
    assert len(state["audit"]) == 64


def test_substate_carries_the_caller_only() -> None:
    auth = Authorizer(True, lambda: None)
    state = {"caller": Caller("alice"), "audit": {}, "freshness": {"x": 1}, "definition": "d"}
    sub = auth.substate(state)
    assert sub == {"caller": state["caller"], "audit": state["audit"]} and sub["audit"] is state["audit"]


@pytest.mark.parametrize("token", ["abc.²", "abc.١٢", "abc.𝟙"])
def test_resume_token_with_other_scripts_digits_is_malformed(token: str) -> None:
    """`str.isdigit` accepts superscripts and other scripts' digits, which `int` then rejects
    (a 500): a token is ASCII digits only."""
    log = EventLog(history=10)
    with pytest.raises(TokenError) as e:
        log.parse(token.replace("abc", log.epoch))
    assert e.value.status == 400
