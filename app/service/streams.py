"""Push: `?watch=true` on /workloads and /workloads/{ns}/{name}, from the live model.

Framing: Server-Sent Events for `Accept: text/event-stream` (sse-starlette: `id:` is the resume
token, `data:` one JSON object), otherwise newline-delimited JSON in the Kubernetes watch style
(`application/json;stream=watch`, one object per line, with the token as `id`).  Each event is
`{"type": "ADDED" | "MODIFIED" | "DELETED", "object": ...}`; `BOOKMARK` events (no object) come
after the initial state (`initialEventsEnd: true`) and every 15 s, so a quiet stream's token
stays fresh; an `ERROR` event carries a problem and ends the stream.

Resume: `Last-Event-ID` (or `?resumeFrom=`) continues after that token with no repeats and no
gaps; a token this process cannot resume from (too old, another replica, a restart) is a 410
problem before any event is sent.  A client that cannot keep up is told (ERROR) and
disconnected; its buffer is bounded, as is the time one write may block.  When the service stops
(SIGTERM), every stream ends at once; its client resumes elsewhere from its last id.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from sse_starlette.sse import EventSourceResponse, SendTimeoutError, ServerSentEvent
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from ..cluster.kube import EVENTS, PODS, Resource
from ..cluster.listing import ListQuery
from ..cluster.reader import Allow, Known, LookupFailed, matches_token
from ..fleet.fleet import CLUSTER_KEY, Fleet
from ..fleet.member import Member
from ..model.events import ChangeLog, Event, TokenError
from ..model.live import row_key
from ..model.protocol import ClusterModel
from ..problem import problem_body
from .errors import lookup_problem, problem_of
from .problems import ProblemError

WATCH = "application/json;stream=watch"
HEARTBEAT = 15.0  # seconds between bookmarks


class Limits:
    """Per-client bounds (--stream-buffer, --stream-write-timeout), how many streams may be open
    (--max-streams-per-caller, --max-streams), who is streaming now, and the stop that ends
    them: one per service (wiring.build), passed to every stream it serves."""

    def __init__(self, buffer: int = 1000, write_timeout: float = 10.0, per_caller: int = 10, total: int = 1000):
        self.buffer = buffer  # events buffered per client
        self.write_timeout = write_timeout  # a write blocked this long means the client is gone or stuck
        self.per_caller = per_caller  # streams one caller may hold open at once
        self.total = total  # streams this process serves at once
        self.open = {"list": 0, "workload": 0}
        self.callers: dict[str, int] = {}  # open streams by caller
        self.streams = 0  # open streams in all
        # Streams end when the service's stop event is set (shutdown.py): each waiting stream
        # registers the event it sleeps on, and `end_on` wakes them all.
        self.stop: asyncio.Event | None = None
        self.wakes: set[asyncio.Event] = set()

    def ending(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    async def end_on(self, stop: asyncio.Event) -> None:
        self.stop = stop
        await stop.wait()
        for wake in list(self.wakes):
            wake.set()


RETRY_AFTER = "10"  # seconds: a slot frees only when some stream ends


class Slot:
    """One open stream, counted against its caller and the process until it ends.  Given back
    exactly once, whichever way the stream ends (done, client gone, write timeout, error): by
    the response when it finishes, or when dropped if the response never ran."""

    def __init__(self, limits: Limits, caller: str):
        self.limits, self.caller, self.held = limits, caller, True
        limits.callers[caller] = limits.callers.get(caller, 0) + 1
        limits.streams += 1

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        limits = self.limits
        limits.streams -= 1
        left = limits.callers.get(self.caller, 1) - 1
        if left > 0:
            limits.callers[self.caller] = left
        else:
            limits.callers.pop(self.caller, None)

    def __del__(self) -> None:
        self.release()


def caller_of(request: Request) -> str:
    """Whom a stream counts against: the authenticated user (--auth kubernetes), else the
    client's address (behind a proxy, that is the proxy's)."""
    caller = request.scope.get("state", {}).get("caller")
    if caller is not None:
        return "user:" + caller.user
    return "address:" + (request.client.host if request.client is not None else "?")


def take_slot(limits: Limits, request: Request) -> Slot:
    """A slot for a new stream, or a 429 problem when the caller or the process has no more."""
    caller = caller_of(request)
    if limits.streams >= limits.total:
        raise ProblemError(
            429,
            "too-many-streams",
            "Too many streams",
            f"this service already serves {limits.total} streams (--max-streams); try again later",
            headers={"Retry-After": RETRY_AFTER},
        )
    if limits.callers.get(caller, 0) >= limits.per_caller:
        raise ProblemError(
            429,
            "too-many-streams",
            "Too many streams",
            f"you already hold {limits.per_caller} open streams (--max-streams-per-caller); "
            "close one, or try again later",
            headers={"Retry-After": RETRY_AFTER},
        )
    return Slot(limits, caller)


class _Closing:
    """However a stream ends (done, client gone, a write that timed out), its generator is closed
    at once, so its subscription and counters go with it, not whenever it is collected."""

    body_iterator: Any
    slot: Slot | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)  # type: ignore[misc]
        except (TimeoutError, SendTimeoutError, OSError):
            pass  # the client stopped reading or went away: the server closes the connection
        finally:
            with contextlib.suppress(Exception):
                await self.body_iterator.aclose()
            if self.slot is not None:
                self.slot.release()


class _NdjsonResponse(_Closing, StreamingResponse):
    """Newline-delimited JSON whose every write must finish within the write timeout."""

    write_timeout = 10.0

    async def stream_response(self, send: Send) -> None:
        async def bounded(msg: Any) -> None:
            await asyncio.wait_for(send(msg), self.write_timeout)

        await super().stream_response(bounded)


class _SseResponse(_Closing, EventSourceResponse):
    pass


def wants_sse(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")


def resume_token(request: Request) -> str | None:
    return request.headers.get("last-event-id") or request.query_params.get("resumeFrom") or None


BURST = 256  # list-stream events written at once at most (NDJSON)


def _frame(sse: bool, payload: dict[str, Any], token: str) -> Any:
    if sse:
        return ServerSentEvent(data=orjson.dumps(payload).decode(), id=token)
    return orjson.dumps(dict(payload, id=token)) + b"\n"


def respond(request: Request, frames: AsyncIterator[Any], slot: Slot) -> Any:
    response: _SseResponse | _NdjsonResponse
    timeout = slot.limits.write_timeout
    if wants_sse(request):
        response = _SseResponse(frames, send_timeout=timeout, headers={"Cache-Control": "no-store"})
    else:
        response = _NdjsonResponse(frames, media_type=WATCH, headers={"Cache-Control": "no-store"})
        response.write_timeout = timeout
    response.slot = slot
    return response


def _slow(sse: bool, token: str, buffer: int) -> Any:
    problem = problem_body(
        429,
        "slow-client",
        "Stream client too slow",
        f"more than {buffer} changes waited for this client; resume from the last id received (or list again)",
        None,
    )
    return _frame(sse, {"type": "ERROR", "object": problem}, token)


def need_model(model: ClusterModel | None) -> ClusterModel:
    if model is None:
        raise ProblemError(
            400,
            "streams-need-the-model",
            "Streams need the live model",
            "this service reads the API server directly (--cache false); streams need the live model",
        )
    return model


async def _wait_synced(model: ClusterModel, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not model.synced:
        if asyncio.get_running_loop().time() > deadline:
            raise ProblemError(
                503,
                "model-not-synced",
                "Not synced yet",
                "the live model has not finished its first sync; try again shortly",
                headers={"Retry-After": "2"},
            )
        await asyncio.sleep(0.1)


# -- the list -------------------------------------------------------------------------------


async def _shown(allow: Allow, res: Resource, namespace: str | None, ev: Event) -> dict[str, Any] | None:
    """The row as this caller may see it (None: not at all): what a list would show them,
    namespace by namespace; the answers are cached briefly by the access checks."""
    ns = ev.key[2]
    asked = namespace if res.namespaced else None
    if not (
        await allow("list", res, asked, None)
        or (asked is None and res.namespaced and ns and await allow("list", res, ns, None))
    ):
        return None
    row = ev.object
    if ev.type == "DELETED":
        return row

    async def may_list(res: Resource) -> bool:
        return await allow("list", res, namespace, None) or bool(
            namespace is None and ns and await allow("list", res, ns, None)
        )

    if not await may_list(PODS):  # as a list shows it: ready counts and reasons need pods (and Events)
        row = dict(row, pods=dict(row["pods"], ready=None), reason=None)
    elif row.get("reason") and not await may_list(EVENTS):
        row = dict(row, reason=None)
    return row


Visible = Callable[[Event], Awaitable["dict[str, Any] | None"]]


def _filtered(
    visible: Visible, query: ListQuery | None, resumed: bool
) -> Callable[[Event, str], Awaitable[tuple[str, dict[str, Any]] | None]]:
    """The event to send for a log event, under the list filters (phase, labelSelector,
    minGpus): a row that comes to match is ADDED, one that stops matching is DELETED for this
    client, one that never matched is not sent.  Which rows a client holds is known from what
    this stream sent; after a resume it is not, so a row that does not match is sent as DELETED
    (a no-op for a client that did not hold it)."""
    shown: set[tuple[Any, ...]] = set()

    async def present(ev: Event, type_: str) -> tuple[str, dict[str, Any]] | None:
        row = await visible(ev)
        if row is None or query is None:
            return None if row is None else (type_, row)
        key = (ev.cluster, *ev.key)
        if type_ != "DELETED" and query.keep(row):
            sent = "ADDED" if key not in shown else type_
            shown.add(key)
            return sent, row
        if key in shown or (resumed and type_ != "ADDED"):
            shown.discard(key)
            return "DELETED", row
        return None

    return present


async def _log_stream(
    limits: Limits,
    request: Request,
    log: ChangeLog,
    accept: Callable[[Event], bool],
    snapshot: Callable[[], list[Event]],
    visible: Visible,
    query: ListQuery | None = None,
) -> Any:
    """A stream of a log's events: the current state (or, resuming, what came after the token),
    a BOOKMARK marking its end, then every accepted event as it is published."""
    sse = wants_sse(request)
    token = resume_token(request)
    present = _filtered(visible, query, bool(token))
    backlog: list[Event] = []
    initial: list[Event] = []
    slot = take_slot(limits, request)
    # No await between reading the state and subscribing: nothing can slip in between.  A resume
    # subscribes first, then reads what came after its token (from the store, maybe): events seen
    # twice are sent once.
    at = log.seq
    sub = log.subscribe(accept, limits.buffer)
    try:
        if token:
            backlog = [e for e in await log.after(token) if accept(e)]
        else:
            initial = [e for e in snapshot() if accept(e)]
    except TokenError as e:
        sub.close()
        slot.release()
        raise problem_of(e) from None
    except BaseException:
        sub.close()
        slot.release()
        raise

    async def frames() -> AsyncIterator[Any]:
        limits.open["list"] += 1
        limits.wakes.add(sub.wake)
        ev: Event | None  # the initial and backlog events, then what sub.next gives (None: a heartbeat)
        try:
            for ev in initial:
                if (sent := await present(ev, "ADDED")) is not None:
                    yield _frame(sse, {"type": sent[0], "object": sent[1]}, log.token(at))
            for ev in backlog:
                if (sent := await present(ev, ev.type)) is not None:
                    yield _frame(sse, {"type": sent[0], "object": sent[1]}, log.token(ev.seq))
            last = backlog[-1].seq if backlog else (log.parse(token) if token else at)
            yield _frame(sse, {"type": "BOOKMARK", "initialEventsEnd": True}, log.token(last))
            while not limits.ending():
                ev = await sub.next(HEARTBEAT)
                if limits.ending():
                    return
                if sub.overflowed:
                    yield _slow(sse, log.token(last), limits.buffer)
                    return
                if ev is None:
                    yield _frame(sse, {"type": "BOOKMARK"}, log.token(max(last, log.seq)))
                    continue
                batch: list[Any] = []
                while ev is not None:
                    # (a local event carries the current token: never a repeat; others may have
                    # been sent from the backlog already)
                    if ev.seq > last or ev.local:
                        last = max(last, ev.seq)
                        if (sent := await present(ev, ev.type)) is not None:
                            batch.append(_frame(sse, {"type": sent[0], "object": sent[1]}, log.token(ev.seq)))
                    # A burst goes out as one write (NDJSON frames are bytes): a write per event
                    # through the ASGI stack costs more than the event, and a client fell behind.
                    more = not sse and len(batch) < BURST and not sub.overflowed and not sub.queue.empty()
                    ev = sub.queue.get_nowait() if more else None
                if batch:
                    yield b"".join(batch) if not sse else batch[0]
        finally:
            limits.open["list"] -= 1
            limits.wakes.discard(sub.wake)
            sub.close()

    return respond(request, frames(), slot)


def _rows(model: ClusterModel, cluster: str | None = None) -> list[Event]:
    return [Event(0, "ADDED", row_key(row), row, cluster=cluster) for row, _ in model.rows()]


async def list_stream(
    limits: Limits,
    request: Request,
    model: ClusterModel,
    namespace: str | None,
    kind: str | None,
    allow: Allow,
    query: ListQuery | None = None,
) -> Any:
    await _wait_synced(model)
    kinds = {
        (kw.resource.group, kw.resource.kind): kw.resource
        for kw in model.kinds.values()
        if kw.definition is not None and (not kind or matches_token(kind, Known(kw.definition, kw.resource)))
    }

    def accept(ev: Event) -> bool:
        g, k, ns, _ = ev.key
        return (g, k) in kinds and (namespace is None or ns in (namespace, ""))

    async def visible(ev: Event) -> dict[str, Any] | None:
        return await _shown(allow, kinds[ev.key[:2]], namespace, ev)

    return await _log_stream(limits, request, model.events, accept, lambda: _rows(model), visible, query)


# -- one workload ---------------------------------------------------------------------------


async def workload_stream(
    limits: Limits,
    request: Request,
    model: ClusterModel,
    namespace: str,
    name: str,
    kind: str | None,
    api_version: str | None,
    with_pods: bool,
    allow: Allow,
) -> Any:
    await _wait_synced(model)
    sse = wants_sse(request)
    try:
        found = await model.locate(namespace, name, kind, api_version, allow=allow, with_pods=with_pods)
        res = found.resource
        body = await model.describe(
            namespace, name, res.kind, res.api_version, with_pods=with_pods, allow=allow, freshness=False
        )
    except LookupFailed as e:
        raise lookup_problem(e) from None
    key = (res.group, res.kind, found.namespace, found.name)
    token = resume_token(request)
    known_digest: bytes | None = None
    if token:
        try:
            known_digest = model.resumed(token, key)
        except TokenError as e:
            raise problem_of(e) from None
    slot = take_slot(limits, request)
    wake = asyncio.Event()
    model.watchers.setdefault(key, set()).add(wake)

    def record(digest: bytes) -> str:
        return model.sent_token(key, digest)

    async def current() -> bytes | None:
        """The workload's interpretation now (None: it is gone, or no longer visible to the caller)."""
        try:
            return await model.describe(
                namespace, name, res.kind, res.api_version, with_pods=with_pods, allow=allow, freshness=False
            )
        except LookupFailed:
            return None

    async def frames() -> AsyncIterator[Any]:
        nonlocal body
        limits.open["workload"] += 1
        limits.wakes.add(wake)
        try:
            last = _digest(body)
            # a bookmark repeats the token of the last state sent: resuming from it sends what changed since
            sent = token or ""
            if known_digest is None or known_digest != last:
                sent = record(last)
                yield _frame(
                    sse,
                    {"type": "ADDED" if known_digest is None else "MODIFIED", "object": orjson.Fragment(body)},
                    sent,
                )
            yield _frame(sse, {"type": "BOOKMARK", "initialEventsEnd": True}, sent)
            gone = False
            while not limits.ending():
                try:
                    await asyncio.wait_for(wake.wait(), HEARTBEAT)
                except TimeoutError:
                    yield _frame(sse, {"type": "BOOKMARK"}, sent)
                    continue
                wake.clear()
                if limits.ending():
                    return
                await asyncio.sleep(0.02)  # a burst of pod updates of one workload: one event
                now = await current()
                if now is None:
                    if not gone:
                        gone, sent = True, record(b"")
                        yield _frame(sse, {"type": "DELETED", "object": orjson.Fragment(body)}, sent)
                    continue
                digest = _digest(now)
                if digest == last and not gone:
                    continue
                kind_ = "ADDED" if gone else "MODIFIED"
                gone, last, body = False, digest, now
                sent = record(digest)
                yield _frame(sse, {"type": kind_, "object": orjson.Fragment(now)}, sent)
        finally:
            limits.open["workload"] -= 1
            limits.wakes.discard(wake)
            s = model.watchers.get(key)
            if s is not None:
                s.discard(wake)
                if not s:
                    del model.watchers[key]

    return respond(request, frames(), slot)


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=16).digest()


# -- the fleet ------------------------------------------------------------------------------


async def _wait_fleet(fleet: Fleet, timeout: float = 30.0) -> None:
    """Until every cluster that answers has synced (a cluster that is down is not waited for:
    its rows come as last seen, and as ADDED events once it is back and synced)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while any(m.available and m.model is not None and not m.model.synced for m in fleet.members.values()):
        if asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.1)


async def fleet_list_stream(
    limits: Limits,
    request: Request,
    fleet: Fleet,
    clusters: list[str] | None,
    namespace: str | None,
    kind: str | None,
    allow_for: Callable[[Member], Allow],
    authorized: bool,
    query: ListQuery | None = None,
) -> Any:
    """The list stream over several clusters: every row carries its cluster; one resume token
    covers them all (the members share one event log)."""
    if any(m.model is None for m in fleet.members.values()):
        need_model(None)
    await _wait_fleet(fleet)
    wanted = set(clusters) if clusters is not None else None

    def resource_of(ev: Event) -> Resource | None:
        m = fleet.get(ev.cluster or "")
        kw = m.model.kinds.get(ev.key[:2]) if m is not None and m.model is not None else None
        if kw is None or kw.definition is None:
            return None
        if kind and not matches_token(kind, Known(kw.definition, kw.resource)):
            return None
        return kw.resource

    def accept(ev: Event) -> bool:
        if ev.cluster is None or ev.key[:2] == CLUSTER_KEY[:2] or (wanted is not None and ev.cluster not in wanted):
            return False
        if namespace is not None and ev.key[2] not in (namespace, ""):
            return False
        # a row of a cluster just removed is DELETED for everyone who may have seen it
        return resource_of(ev) is not None or (ev.type == "DELETED" and fleet.get(ev.cluster) is None)

    async def visible(ev: Event) -> dict[str, Any] | None:
        m = fleet.get(ev.cluster or "")
        res = resource_of(ev)
        if m is None or res is None:  # its cluster is gone: told only where nothing is authorized
            return None if authorized else ev.object
        try:
            row = await _shown(allow_for(m), res, namespace, ev)
        except ProblemError:
            return None  # that cluster cannot check the caller's rights now: nothing of it is shown
        # a cluster that does not answer: its rows as last seen, marked (restated when that changes)
        return dict(row, unavailable=True) if row is not None and not m.available and ev.type != "DELETED" else row

    def snapshot() -> list[Event]:
        return [
            ev
            for m in fleet.members.values()
            if m.model is not None and (wanted is None or m.name in wanted)
            for ev in _rows(m.model, m.name)
        ]

    return await _log_stream(limits, request, fleet.events, accept, snapshot, visible, query)


async def cluster_stream(limits: Limits, request: Request, fleet: Fleet) -> Any:
    """GET /clusters?watch=true: each cluster's /clusters item as it changes."""

    def accept(ev: Event) -> bool:
        return ev.key[:3] == CLUSTER_KEY

    async def visible(ev: Event) -> dict[str, Any]:
        return ev.object

    return await _log_stream(
        limits,
        request,
        fleet.events,
        accept,
        lambda: [Event(0, "ADDED", (*CLUSTER_KEY, i["name"]), i) for i in fleet.items()],
        visible,
    )
