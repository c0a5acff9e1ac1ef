"""Where an interpretation runs: in-process for trusted definitions, or in a supervised pool.

Built-in catalog definitions are part of this code base (reviewed, tested) and run in-process
(no IPC; ~0.5 ms).  Every other definition - from folders, ConfigMaps, the cluster, or inline
in a request - runs in a worker process with a deadline.  On overrun the worker is killed and
replaced, the caller gets an error naming the expression that was running, and everyone else
keeps being served.  `isolation` = "untrusted" (default) | "all" | "none".
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..engine.compiled import expression_texts
from ..engine.interpret import InterpretationError, interpret
from ..karta.expressions import iter_expressions
from ..karta.load import Definition
from .metrics import WORKER_RESTARTS, WORKER_RETRIES
from .worker import worker_main

_ctx = mp.get_context("spawn")  # no fork: the server has threads and an event loop


class EvaluationTimeout(Exception):
    def __init__(self, definition: str, deadline: float, expression: str | None, stage: str, path: str = ""):
        self.definition, self.deadline, self.expression, self.stage = definition, deadline, expression, stage
        self.path = path  # the definition field the expression came from
        where = f" while evaluating {stage} expression '{expression}'" if expression else ""
        super().__init__(f"evaluation with definition {definition} exceeded the {deadline:g} s deadline{where}")


class EvaluationCrashed(Exception):
    pass


@dataclass
class _Worker:
    process: Any
    conn: Any
    progress: Any
    known: set[str] = field(default_factory=set)

    @classmethod
    def start(cls) -> _Worker:
        parent, child = _ctx.Pipe(duplex=True)
        progress = _ctx.Array("i", [-1, -1], lock=False)
        p = _ctx.Process(target=worker_main, args=(child, progress), daemon=True, name="wlmap-eval")
        p.start()
        child.close()
        return cls(p, parent, progress)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            self.process.join(timeout=1)


class Pool:
    def __init__(self, size: int, deadline: float):
        self.size, self.deadline = max(1, size), deadline
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: list[_Worker] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for started in asyncio.as_completed([loop.run_in_executor(None, _Worker.start) for _ in range(self.size)]):
            w = await started  # each worker serves as soon as it is up
            self._all.append(w)
            self._idle.put_nowait(w)

    async def close(self) -> None:
        for w in self._all:
            w.kill()
        self._all.clear()

    async def _replace(self, dead: _Worker) -> None:
        dead.kill()
        if dead in self._all:
            self._all.remove(dead)
        WORKER_RESTARTS.inc()
        w = await asyncio.get_running_loop().run_in_executor(None, _Worker.start)
        self._all.append(w)
        self._idle.put_nowait(w)

    async def interpret(self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        """A worker that dies mid-request (killed by the OOM killer or an operator) costs the
        caller nothing: the request runs once more on another worker.  A definition that kills
        workers every time fails after that second try."""
        try:
            return await self._interpret_once(d, obj, pods)
        except EvaluationCrashed:
            WORKER_RETRIES.inc()
            return await self._interpret_once(d, obj, pods)

    async def _interpret_once(self, d: Definition, obj: dict[str, Any],
                              pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        w = await self._idle.get()
        started = time.monotonic()
        try:
            reply = await self._call(w, d, obj, pods, include_raw=d.digest not in w.known, started=started)
            if reply.get("need") == "definition":
                reply = await self._call(w, d, obj, pods, include_raw=True, started=started)
            w.known.add(d.digest)
        except asyncio.TimeoutError:
            stage, index = w.progress[0], w.progress[1]
            asyncio.get_running_loop().create_task(self._replace(w))
            texts = expression_texts(d)
            expr = None
            if stage in (0, 1):
                batch = texts[stage]
                expr = batch[index] if 0 <= index < len(batch) else None
            path = next((x.json_path for x in iter_expressions(d.karta) if x.text == expr), "") if expr else ""
            raise EvaluationTimeout(d.name, self.deadline, expr, "pod" if stage == 1 else "workload", path) from None
        except (EOFError, OSError, ConnectionError) as e:
            asyncio.get_running_loop().create_task(self._replace(w))
            raise EvaluationCrashed(f"the evaluation worker stopped unexpectedly ({e.__class__.__name__})") from None
        self._idle.put_nowait(w)
        if "ok" in reply:
            return reply["ok"]
        err = reply.get("error") or {}
        raise InterpretationError(err.get("title", "evaluation failed"), err.get("errors") or [])

    async def _call(self, w: _Worker, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None,
                    include_raw: bool, started: float) -> dict[str, Any]:
        spec: dict[str, Any] = {"digest": d.digest, "source": d.source, "origin": d.origin}
        if include_raw:
            spec["raw"] = d.raw
        w.conn.send_bytes(orjson.dumps({"op": "interpret", "def": spec, "obj": obj, "pods": pods}))
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = w.conn.fileno()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            remaining = self.deadline - (time.monotonic() - started)
            await asyncio.wait_for(ready, timeout=max(0.001, remaining))
        finally:
            loop.remove_reader(fd)
        return orjson.loads(w.conn.recv_bytes())


class Evaluator:
    def __init__(self, isolation: str, pool_size: int, deadline: float):
        self.isolation = isolation
        self.pool = Pool(pool_size, deadline) if isolation != "none" else None

    async def start(self, eager: bool = True) -> None:
        """Start the workers in the background: built-in definitions are served at once, and
        a request that needs a worker waits for the first one to be up.  `eager=False` waits for
        that first request (a service that serves only the built-in catalog never pays for them)."""
        self._starting: asyncio.Task[None] | None = None
        if self.pool is not None and eager:
            self._spawn()

    def _spawn(self) -> None:
        if self._starting is None and self.pool is not None:
            self._starting = asyncio.get_running_loop().create_task(self.pool.start())

    async def close(self) -> None:
        if self.pool is not None:
            if self._starting is not None:
                with contextlib.suppress(Exception):
                    await self._starting
            await self.pool.close()

    def isolated(self, d: Definition) -> bool:
        if self.pool is None:
            return False
        return self.isolation == "all" or d.source != "builtin"

    async def interpret(self, d: Definition, obj: dict[str, Any],
                        pods: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        if self.isolated(d):
            assert self.pool is not None
            self._spawn()
            result = await self.pool.interpret(d, obj, pods)
            # Workers keep definitions by digest; the same content can come from several sources
            # (a ConfigMap copy of a Karta resource), so name the one that was actually resolved.
            result["definition"] = {"name": d.name, "source": d.source, "digest": d.digest}
            return result
        return interpret(obj, d, pods)
