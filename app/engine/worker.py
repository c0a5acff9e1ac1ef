"""The evaluation worker process: interprets objects with definitions it is handed.

libjq holds the GIL and cannot be interrupted, so an untrusted definition (`def f: f; f`, a
catastrophic regex) is evaluated here, in a child process the supervisor can kill.  The worker
keeps definitions and their compiled programs by digest, so a definition is sent and compiled
once per worker, not per request.  Before each expression it writes (stage, index) into a shared
array, which tells the supervisor which expression overran.
"""

from __future__ import annotations

import os
import resource
import signal
from multiprocessing.connection import Connection
from typing import Any

import orjson

from ..karta.load import Definition, NotAKarta, definition_from_document
from .accelerators import DEFAULT_RULES, ResourceRules
from .interpret import InterpretationError, interpret
from .memo import DEFINITION_FACTOR, ByteLRU, held_bytes
from .options import EngineOptions, jq_results

READY = b'{"ok":"ready"}'  # sent once, when the worker can take requests


def worker_main(
    conn: Connection,
    progress: Any,
    memory_mib: int = 0,
    rules: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
    jq_cache: bool = True,
) -> None:
    """`rules` (ResourceRules.as_args()) and `jq_cache`: the parent's engine options, as a
    spawned process cannot share its objects (this process keeps a jq result cache of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    options = EngineOptions(
        ResourceRules(*rules) if rules is not None else DEFAULT_RULES, jq_results() if jq_cache else None
    )
    os.environ.clear()  # nothing secret to leak even if a shadowed builtin slipped through
    if memory_mib > 0:
        # A definition that allocates without bound (`"x" * 1e9`, a huge array) meets this limit:
        # Python raises MemoryError (answered, then the worker is replaced), libjq aborts (the
        # supervisor sees SIGABRT); either way the service's own memory is untouched.
        limit = memory_mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    definitions: ByteLRU[str, Definition] = ByteLRU(DEFINITION_BYTES)
    conn.send_bytes(READY)

    def report(stage: int, index: int) -> None:
        progress[0], progress[1] = stage, index

    while True:
        try:
            msg = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            reply = _handle(definitions, msg, report, options)
        except MemoryError:  # the limit above: say so; the supervisor replaces this worker
            reply = {"error": {"title": "evaluation ran out of memory", "errors": []}, "exhausted": True}
        progress[0], progress[1] = -1, -1
        conn.send_bytes(orjson.dumps(reply))


def _handle(definitions: ByteLRU[str, Definition], msg: bytes, report: Any, options: EngineOptions) -> dict[str, Any]:
    req = orjson.loads(msg)
    if req.get("op") == "ping":
        return {"ok": "pong"}
    try:
        d = _definition(definitions, req["def"])
        return {"ok": interpret(req["obj"], d, req.get("pods"), report, options, bool(req.get("templates")))}
    except InterpretationError as e:
        return {"error": {"title": e.title, "errors": e.errors}}
    except _NeedDefinition:
        return {"need": "definition"}
    except MemoryError:
        raise
    except Exception as e:
        return {"error": {"title": "evaluation failed", "errors": [{"path": "", "message": str(e)}]}}


class _NeedDefinition(Exception):
    pass


# The definitions a worker keeps, by the bytes they hold (a definition's raw document, Karta
# model and findings: ~10x its JSON text).  One evicted is sent again when next needed.
DEFINITION_BYTES = 64 * 1024 * 1024


def _definition(cache: ByteLRU[str, Definition], spec: dict[str, Any]) -> Definition:
    digest = spec["digest"]
    d = cache.get(digest)
    if d is not None:
        return d
    raw = spec.get("raw")
    if raw is None:
        raise _NeedDefinition
    try:
        d = definition_from_document(raw, spec.get("source", "inline"), spec.get("origin", "inline"))
    except NotAKarta as e:
        raise InterpretationError("invalid definition", [{"path": "", "message": str(e)}]) from None
    return cache.put(digest, d, len(digest) + held_bytes(raw, DEFINITION_FACTOR))
