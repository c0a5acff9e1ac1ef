"""Suspend and resume: a definition's `suspendDefinition` actions applied to the root object.

As the reference does it (docs/karta-semantics.md, "Suspend and resume"): each action, in order,
is `(path) = decode_json(value)` against the root object, so a later action may overwrite an
earlier one.  `path` is resolved to concrete locations by the write-path resolver
(app/jqlang/writepaths.py: the same subset jq's `path(...)` takes, bounded), and every location
gets the decoded value, missing parent objects created as jq's setpath does.  Nothing is
evaluated beyond that: a definition cannot make this process run anything.

The object passed in is never modified; the caller diffs the result (update.make_patch) and
sends it as one patch guarded by the resourceVersion it was read at.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ..jqlang.writepaths import PathNotWritable, resolve_paths
from ..karta.load import Definition
from ..karta.model import SuspendDefinition
from .update import ROOT_FIXED, UpdateError, pointer, set_at

ACTIONS = {"suspend": "suspendActions", "resume": "resumeActions"}


class NoSuspendDefinition(Exception):
    """The definition's root component has no suspendDefinition (the reference's wording)."""


class ActionError(Exception):
    """One action cannot be applied; `field` names it (`suspendActions[1]`)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def suspend_definition(d: Definition) -> SuspendDefinition | None:
    root = d.karta.root
    sd = root.suspend_definition if root is not None else None
    return sd if sd is not None and (sd.suspend_actions or sd.resume_actions) else None


def apply_actions(d: Definition, obj: dict[str, Any], which: str) -> dict[str, Any]:
    """`obj` with the definition's suspend (`which` = "suspend") or resume actions applied."""
    sd = suspend_definition(d)
    if sd is None:
        root = d.karta.root
        raise NoSuspendDefinition(
            f"the definition of {obj.get('kind') or d.name} has no suspendDefinition "
            f"(component {root.name if root is not None else '?'} does not have "
            "suspendDefinition)"
        )
    key = ACTIONS[which]
    actions = (sd.suspend_actions if which == "suspend" else sd.resume_actions) or []
    if not actions:
        raise ActionError(key, f"the definition of {obj.get('kind') or d.name} gives no {key}")
    out = copy.deepcopy(obj)
    for i, a in enumerate(actions):
        field = f"{key}[{i}]"
        try:
            value = json.loads(a.value or "")
        except ValueError as e:
            raise ActionError(field, f"failed to decode value: {e}") from None
        try:
            locations = resolve_paths(a.path or "", out)
        except PathNotWritable as e:
            raise ActionError(field, str(e)) from None
        for loc in locations:
            if not loc or any(loc[: len(fixed)] == fixed for fixed in ROOT_FIXED):
                raise ActionError(
                    field,
                    f"an action may not write {pointer(loc) or 'the whole object'} "
                    "(apiVersion, kind, status, metadata.name and metadata.uid are fixed)",
                )
            try:
                set_at(out, loc, copy.deepcopy(value))
            except UpdateError as e:
                raise ActionError(field, e.message) from None
            except (AttributeError, TypeError, IndexError, KeyError):
                raise ActionError(field, f"cannot write {pointer(loc)}") from None
    return out
