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
import contextvars
import logging
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from cachetools import LRUCache

from ..karta.expressions import iter_expressions
from ..karta.load import Definition
from .compiled import expression_texts
from .interpret import InterpretationError, interpret
from .options import DEFAULT_OPTIONS, EngineOptions
from .worker import READY, worker_main

log = logging.getLogger("wlmap.evaluator")
_ctx = mp.get_context("spawn")  # no fork: the server has threads and an event loop

# True inside a model's own loops (interpreting changes): work
# done for no caller, which the pool never lets take its last worker from callers.
BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("wlmap_background", default=False)


def _uncounted() -> None:
    pass


@dataclass(frozen=True)
class PoolCounters:
    """What the pool counts, for whoever keeps the metrics (the service: app/service/metrics.py)."""

    restarts: Callable[[], None] = _uncounted  # a worker replaced (it died, overran, or was used up)
    queue_timeouts: Callable[[], None] = _uncounted  # a request found every worker busy too long
    retries: Callable[[], None] = _uncounted  # a request run again after its worker died under it


class EvaluationTimeout(Exception):
    def __init__(self, definition: str, deadline: float, expression: str | None, stage: str, path: str = ""):
        self.definition, self.deadline, self.expression, self.stage = definition, deadline, expression, stage
        self.path = path  # the definition field the expression came from
        where = f" while evaluating {stage} expression '{expression}'" if expression else ""
        super().__init__(f"evaluation with definition {definition} exceeded the {deadline:g} s deadline{where}")


class EvaluationCrashed(Exception):
    pass


class EvaluationOutOfMemory(EvaluationCrashed):
    """The worker reached its address-space limit (--eval-worker-memory) during the evaluation."""


class EvaluationBusy(Exception):
    """No worker became free within the queue timeout: every one is busy (try again shortly)."""

    retry_after = 1  # seconds: a worker is free again within the evaluation deadline

    def __init__(self, waited: float):
        self.waited = waited
        super().__init__(f"every evaluation worker stayed busy for {waited:g} s; try again shortly")


KNOWN_DIGESTS = 4096  # definitions a worker is remembered to hold
STARTUP_TIMEOUT = 60.0  # seconds a request waits while no worker exists yet (the first ones are being spawned)


@dataclass
class _Worker:
    process: Any
    conn: Any
    progress: Any
    # digests the worker was sent (it asks again for one it has evicted): bounded, as every
    # distinct inline definition adds one
    known: LRUCache[str, bool] = field(default_factory=lambda: LRUCache(maxsize=KNOWN_DIGESTS))

    @classmethod
    def start(cls, memory_mib: int = 0, options: EngineOptions = DEFAULT_OPTIONS) -> _Worker:
        parent, child = _ctx.Pipe(duplex=True)
        progress = _ctx.Array("i", [-1, -1], lock=False)
        p = _ctx.Process(
            target=worker_main,
            daemon=True,
            name="wlmap-eval",
            args=(child, progress, memory_mib, options.rules.as_args(), options.jq_results is not None),
        )
        p.start()
        child.close()
        # Serve only once it has imported the engine (a second or more on a busy machine): that
        # time must not count against the first evaluation's deadline.
        w = cls(p, parent, progress)
        try:
            ready = parent.poll(STARTUP_TIMEOUT) and parent.recv_bytes() == READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            w.kill()
            raise RuntimeError("an evaluation worker did not start")
        return w

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            self.process.join(timeout=1)


@dataclass
class _Request:
    """One evaluation, encoded before it takes a worker: a value orjson cannot write never
    costs a worker, and the encoded object and pods are reused if the worker needs the definition."""

    head: bytes  # the message without the definition's document
    full: bytes  # the message with it (for a worker that has not seen this definition)

    @classmethod
    def encode(
        cls, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None, templates: bool = False
    ) -> _Request:
        try:
            body: dict[str, Any] = {
                "obj": orjson.Fragment(orjson.dumps(obj)),
                "pods": orjson.Fragment(orjson.dumps(pods)),
            }
            if templates:
                body["templates"] = True
            spec: dict[str, Any] = {"digest": d.digest, "source": d.source, "origin": d.origin}
            head = orjson.dumps({"op": "interpret", "def": spec, **body})
            full = orjson.dumps({"op": "interpret", "def": {**spec, "raw": d.raw}, **body})
        except orjson.JSONEncodeError as e:
            raise InterpretationError(
                "the input cannot be encoded as JSON", [{"path": "", "message": str(e)}]
            ) from None
        return cls(head, full)


class Pool:
    def __init__(
        self,
        size: int,
        deadline: float,
        queue_timeout: float | None = None,
        memory_mib: int = 0,
        options: EngineOptions = DEFAULT_OPTIONS,
        counters: PoolCounters | None = None,
    ):
        self.size, self.deadline = max(1, size), deadline
        self.options = options  # the workers' engine options (rules, whether jq results are reused)
        self.counters = counters or PoolCounters()
        self.queue_timeout = queue_timeout  # None: wait for a worker as long as it takes (the CLI)
        self.memory_mib = memory_mib  # each worker's address-space limit; 0: none
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        # Background evaluations (the live model's) hold at most all workers but one, so a caller
        # never queues behind a burst of them (a runaway definition costs each its full deadline).
        self._background = asyncio.Semaphore(max(1, self.size - 1))
        self._all: list[_Worker] = []
        self._replacing: set[asyncio.Task[None]] = set()
        self._closed = False

    def _start_worker(self) -> _Worker:
        return _Worker.start(self.memory_mib, self.options)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for started in asyncio.as_completed([loop.run_in_executor(None, self._start_worker) for _ in range(self.size)]):
            try:
                self._add(await started)  # each worker serves as soon as it is up
            except Exception:  # killed while starting, out of processes: start another, the pool must stay whole
                log.exception("an evaluation worker did not start; starting another")
                self._replace_soon(None)

    def _add(self, w: _Worker) -> None:
        if self._closed:  # started while the service stopped
            w.kill()
            return
        self._all.append(w)
        self._idle.put_nowait(w)

    async def close(self) -> None:
        self._closed = True
        # replacements being spawned finish first (about a second), so none outlives the pool
        if self._replacing:
            await asyncio.wait(self._replacing, timeout=10)
        for w in self._all:
            w.kill()
        self._all.clear()

    def _replace_soon(self, dead: _Worker | None) -> None:
        if dead is not None and dead in self._all:
            self._all.remove(dead)
        task = asyncio.get_running_loop().create_task(self._replace(dead))
        self._replacing.add(task)  # keep a reference until it is done (the loop holds tasks weakly)
        task.add_done_callback(self._replacing.discard)

    async def _replace(self, dead: _Worker | None) -> None:
        loop = asyncio.get_running_loop()
        if dead is not None:
            await loop.run_in_executor(None, dead.kill)
        self.counters.restarts()
        while not self._closed:
            try:
                self._add(await loop.run_in_executor(None, self._start_worker))
                return
            except Exception:  # out of processes or memory: keep trying, the pool must not shrink
                log.exception("cannot start an evaluation worker; retrying")
                await asyncio.sleep(1.0)

    async def _acquire(self) -> _Worker:
        """An idle worker, or EvaluationBusy once the queue timeout has passed (never a hang)."""
        timeout = self.queue_timeout
        if timeout is not None and not self._all:  # none is up: the first ones (or replacements) are starting
            timeout = max(timeout, STARTUP_TIMEOUT)
        try:
            # Queue.get is cancel-safe: a timeout never loses a worker that was being handed over.
            async with asyncio.timeout(timeout):
                return await self._idle.get()
        except TimeoutError:
            self.counters.queue_timeouts()
            raise EvaluationBusy(timeout or 0) from None

    async def interpret(
        self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None, templates: bool = False
    ) -> dict[str, Any]:
        """A worker that dies mid-request (killed by the OOM killer or an operator) costs the
        caller nothing: the request runs once more on another worker.  A definition that kills
        workers every time fails after that second try."""
        request = _Request.encode(d, obj, pods, templates)
        if not BACKGROUND.get():
            return await self._interpret_retried(d, request)
        async with self._background:
            return await self._interpret_retried(d, request)

    async def _interpret_retried(self, d: Definition, request: _Request) -> dict[str, Any]:
        try:
            return await self._interpret_once(d, request)
        except EvaluationCrashed:
            self.counters.retries()
            return await self._interpret_once(d, request)

    async def _interpret_once(self, d: Definition, request: _Request) -> dict[str, Any]:
        w = await self._acquire()
        # The worker goes back to the idle queue only after a complete exchange (its reply read,
        # the process alive); every other exit - deadline, crash, cancellation with a reply
        # still unread in the pipe, any exception - replaces it.  Nothing else returns workers.
        reusable = False
        started = time.monotonic()
        try:
            reply = await self._call(w, request.full if d.digest not in w.known else request.head, started)
            if reply.get("need") == "definition":
                reply = await self._call(w, request.full, started)
            w.known[d.digest] = True
            reusable = not reply.get("exhausted")
        except TimeoutError:
            raise self._timeout(w, d) from None
        except (EOFError, OSError, ConnectionError) as e:
            raise await self._crash(w, e) from None
        finally:
            if reusable:
                self._idle.put_nowait(w)
            else:
                self._replace_soon(w)
        if "ok" in reply:
            return reply["ok"]
        err = reply.get("error") or {}
        if reply.get("exhausted"):
            raise self._out_of_memory()
        raise InterpretationError(err.get("title", "evaluation failed"), err.get("errors") or [])

    def _timeout(self, w: _Worker, d: Definition) -> EvaluationTimeout:
        stage, index = w.progress[0], w.progress[1]
        texts = expression_texts(d)
        expr = None
        if stage in (0, 1):
            batch = texts[stage]
            expr = batch[index] if 0 <= index < len(batch) else None
        path = next((x.json_path for x in iter_expressions(d.karta) if x.text == expr), "") if expr else ""
        return EvaluationTimeout(d.name, self.deadline, expr, "pod" if stage == 1 else "workload", path)

    async def _crash(self, w: _Worker, e: BaseException) -> EvaluationCrashed:
        """What the caller is told of a worker that died: libjq aborts when an allocation fails,
        so with a memory limit a SIGABRT is the limit reached."""
        await asyncio.get_running_loop().run_in_executor(None, w.process.join, 1.0)
        code = w.process.exitcode
        if self.memory_mib and code == -signal.SIGABRT:
            return self._out_of_memory()
        how = e.__class__.__name__
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                how = f"signal {signal.Signals(-code).name}"
        return EvaluationCrashed(f"the evaluation worker stopped unexpectedly ({how})")

    def _out_of_memory(self) -> EvaluationOutOfMemory:
        return EvaluationOutOfMemory(
            f"the evaluation ran out of memory: an evaluation worker may use at most "
            f"{self.memory_mib} MiB (--eval-worker-memory)"
        )

    async def _call(self, w: _Worker, message: bytes, started: float) -> dict[str, Any]:
        w.conn.send_bytes(message)
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = w.conn.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            remaining = self.deadline - (time.monotonic() - started)
            await asyncio.wait_for(ready, timeout=max(0.001, remaining))
        finally:
            loop.remove_reader(fd)
            # uvloop leaves a descriptor it watched non-blocking: the next message larger than the
            # pipe's buffer would then fail half-sent (BlockingIOError) whenever the worker is slow
            # to read it.  The exchange is blocking by design (the worker reads at once).
            with contextlib.suppress(OSError):  # closed meanwhile (the worker was replaced)
                os.set_blocking(fd, True)
        return orjson.loads(w.conn.recv_bytes())


class Evaluator:
    """`options`: the engine options of every interpretation, in-process and in the workers;
    `counters`: what the pool counts restarts, retries and refusals with (the service's metrics)."""

    def __init__(
        self,
        isolation: str,
        pool_size: int,
        deadline: float,
        queue_timeout: float | None = None,
        memory_mib: int = 0,
        options: EngineOptions = DEFAULT_OPTIONS,
        counters: PoolCounters | None = None,
    ):
        self.isolation, self.options = isolation, options
        self.pool = (
            Pool(pool_size, deadline, queue_timeout, memory_mib, options, counters) if isolation != "none" else None
        )

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

    async def interpret(
        self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None = None, templates: bool = False
    ) -> dict[str, Any]:
        """`templates`: the interpretation carries `podTemplates` (interpret's)."""
        if self.isolated(d):
            assert self.pool is not None
            self._spawn()
            result = await self.pool.interpret(d, obj, pods, templates)
            # Workers keep definitions by digest; the same content can come from several sources
            # (a ConfigMap copy of a Karta resource), so name the one that was actually resolved.
            result["definition"] = {"name": d.name, "source": d.source, "digest": d.digest}
            return result
        return interpret(obj, d, pods, options=self.options, templates=templates)
