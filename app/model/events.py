"""Change events of the model, for streams: a sequence, a bounded history, bounded subscribers.

Every event gets the next sequence number of this process; its resume token is
`<epoch>.<seq>`, the epoch being random per process, so a token from another replica or from
before a restart is recognised as unknown (the client lists again) instead of silently
resuming in the wrong place.  The history keeps the last `history` events for resumes; a token
older than that is "too old" (HTTP 410, as the API server answers a compacted version).

Subscribers get events through a queue of bounded size.  One that falls behind is not allowed
to grow memory: it is marked overflowed, its queue dropped, and its stream ends with an error
event telling it to resume or list again.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(slots=True)
class Event:
    seq: int
    type: str  # ADDED | MODIFIED | DELETED
    key: tuple[str, str, str, str]  # (group, kind, namespace, name)
    object: Any  # the summary row (dict)
    resource: tuple[str, str] = ("", "")  # (group, plural) for authorization
    cluster: str | None = None  # which cluster's model published it (one log serves a fleet)
    local: bool = False  # behind a store: an event of this process only, carrying the current token


class TokenError(Exception):
    """A resume token this process cannot resume from: `status` 410 (too old or unknown) or 400."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class ChangeLog(Protocol):
    """What streams read of a log of change events: this process's (EventLog), or behind a store
    the store's stream (store/mirror.py: StoreLog)."""

    seq: int  # the last event's sequence number
    subscribers: set[Subscription]

    def token(self, seq: int | None = None) -> str: ...
    def parse(self, token: str) -> int: ...
    def publish(
        self,
        type_: str,
        key: tuple[str, str, str, str],
        obj: Any,
        resource: tuple[str, str],
        cluster: str | None = None,
    ) -> Event: ...
    def subscribe(self, accept: Callable[[Event], bool], size: int = 1000) -> Subscription: ...
    def since(self, seq: int) -> list[Event]: ...
    async def after(self, token: str) -> list[Event]: ...


class Subscription:
    def __init__(self, log: ChangeLog, accept: Callable[[Event], bool], size: int):
        self.log, self.accept = log, accept
        self.queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=size)
        self.overflowed = False
        self.wake = asyncio.Event()

    def offer(self, ev: Event) -> None:
        if self.overflowed or not self.accept(ev):
            return
        try:
            self.queue.put_nowait(ev)
        except asyncio.QueueFull:
            self.overflowed = True
            while not self.queue.empty():  # drop what it could not take: memory stays bounded
                self.queue.get_nowait()
        self.wake.set()

    async def next(self, timeout: float) -> Event | None:
        """The next event, or None after `timeout` (time for a heartbeat) or on overflow."""
        if self.overflowed:
            return None
        if self.queue.empty():
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except TimeoutError:
                return None
        if self.overflowed or self.queue.empty():
            return None
        return self.queue.get_nowait()

    def close(self) -> None:
        self.log.subscribers.discard(self)


@dataclass
class EventLog:
    history: int = 20000
    epoch: str = field(default_factory=lambda: secrets.token_hex(4))
    seq: int = 0
    ring: deque[Event] = field(init=False)
    subscribers: set[Subscription] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.ring = deque(maxlen=self.history)

    def token(self, seq: int | None = None) -> str:
        return f"{self.epoch}.{self.seq if seq is None else seq}"

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def publish(
        self,
        type_: str,
        key: tuple[str, str, str, str],
        obj: Any,
        resource: tuple[str, str],
        cluster: str | None = None,
    ) -> Event:
        ev = Event(self.next_seq(), type_, key, obj, resource, cluster)
        self.ring.append(ev)
        for sub in list(self.subscribers):
            sub.offer(ev)
        return ev

    def subscribe(self, accept: Callable[[Event], bool], size: int = 1000) -> Subscription:
        sub = Subscription(self, accept, size)
        self.subscribers.add(sub)
        return sub

    def parse(self, token: str) -> int:
        epoch, _, seq = token.partition(".")
        if not (seq.isascii() and seq.isdigit()):  # int() takes other scripts' digits too
            raise TokenError(400, f"malformed resume token {token!r}")
        if epoch != self.epoch:
            raise TokenError(
                410,
                "the resume token was issued by another service process (a restart, or another replica); list again",
            )
        n = int(seq)
        if n > self.seq:
            raise TokenError(410, "the resume token is from the future of this process; list again")
        return n

    async def after(self, token: str) -> list[Event]:
        """The events after a resume token (TokenError when they cannot be told)."""
        return self.since(self.parse(token))

    def since(self, seq: int) -> list[Event]:
        """Events after `seq`; TokenError(410) when the history no longer reaches back that far."""
        if seq == self.seq:
            return []
        oldest = self.ring[0].seq if self.ring else self.seq + 1
        if seq < oldest - 1:
            raise TokenError(
                410, f"the resume token is too old (this service keeps the last {self.history} changes); list again"
            )
        return [e for e in self.ring if e.seq > seq]
