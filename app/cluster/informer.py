"""List + watch one resource and keep a local copy of its objects current (the informer pattern).

One loop per (resource, namespace): list, remember the list's resourceVersion, watch from it.
A watch the server ends (its timeout) or a broken connection resumes from the last version
seen, bookmarks included, so quiet periods cost no relist; 410 Gone means that version is
compacted away: list again, and hand the *differences* to the consumer (what was added,
changed or removed while we were away), never a second ADDED for an object it already has.
404 means the kind is not served (a CRD not installed yet or deleted, or an API server still
starting): the copy empties and the loop waits to be poked, or retries after 1 s, doubling to
`not_served_retry`.

What is kept of each object is the consumer's business: `keep(obj)` turns the wire object
into whatever record it wants (or None to ignore it); records must carry `.rv`.  Metadata-only
informers ask the API server for `PartialObjectMetadata` (just `metadata`), a fraction of the
bytes for kinds we only walk owner chains through.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .kube import Forbidden, Gone, Kube, KubeError, NotFound, Resource

log = logging.getLogger("wlmap.informer")

PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
PARTIAL_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

Key = tuple[str, str]  # (namespace or "", name)
YIELD_EVERY = 100  # objects of a list page kept between two turns of the event loop


class Record(Protocol):
    rv: str


# (type, key, old record or None, new record or None); type is ADDED | MODIFIED | DELETED
OnEvent = Callable[[str, Key, Any, Any], None]


class Backoff:
    """Exponential with full jitter: `base` doubling to `cap`."""

    def __init__(self, base: float = 0.25, cap: float = 8.0):
        self.base, self.cap, self.attempt = base, cap, 0

    def reset(self) -> None:
        self.attempt = 0

    def next(self) -> float:
        delay = min(self.cap, self.base * 2**self.attempt)
        self.attempt += 1
        return random.uniform(delay / 2, delay)


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    # the namespace interned: one string for all its objects' keys, not one per key
    return sys.intern(str(meta.get("namespace") or "")), str(meta.get("name") or "")


class Informer:
    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        keep: Callable[[dict[str, Any]], Any],
        on_event: OnEvent,
        *,
        namespace: str | None = None,
        metadata_only: bool = False,
        watch_timeout: int = 300,
        page_size: int = 500,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_list: Callable[[], Awaitable[None]] | None = None,
        name: str | None = None,
        not_served_retry: float = 30.0,
        scope: str | None = None,
    ):
        self.kube, self.resource, self.keep, self.on_event = kube, resource, keep, on_event
        self.namespace = namespace if resource.namespaced else None
        self.metadata_only = metadata_only
        self.watch_timeout, self.page_size = watch_timeout, page_size
        self.label_selector, self.field_selector = label_selector, field_selector
        self.on_list = on_list  # after every list (and on learning the kind is not served): the copy is whole
        self._name = name
        self.scope = scope  # which cluster, in log lines (several clusters: one service)
        self.not_served_retry = not_served_retry
        self.objects: dict[Key, Any] = {}
        self.resource_version: str | None = None
        self.state = "starting"  # starting | synced | unavailable | forbidden | not-served
        self.error: str | None = None
        self.relists = self.reconnects = self.events = 0
        self.synced_once = asyncio.Event()  # the first list is in (or the kind is known not to be served)
        self.connected = False  # a watch is open: the copy is current
        self.last_contact = 0.0  # wall time the API server last told us something (event, bookmark, list)
        self._poke = asyncio.Event()

    @property
    def terminal(self) -> bool:
        """Listed at least once (or known not to be served, or refused as a direct read would
        be): the copy can answer.  A watch that dropped since keeps answering from what it holds
        while it reconnects; readers see that in `connected` (the answers' freshness)."""
        return self.synced_once.is_set()

    def forget(self, key: Key) -> None:
        """Drop one object from the copy without telling the consumer: for a consumer that bounds
        what it keeps (the model's Warning Events).  If the object changes later it comes back as
        ADDED; a relist does not resurrect it unless `keep` takes it again."""
        self.objects.pop(key, None)

    def poke(self) -> None:
        """Something changed (a CRD appeared): stop waiting and try now."""
        self._poke.set()

    # -- the loop -------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        backoff, forbidden = Backoff(), Backoff(base=1.0, cap=30.0)
        # Not served: a CRD not installed yet, or an API server that is starting and has not put
        # its CRDs' handlers up yet (its CRD list is already whole, so nothing pokes us then).
        # Retry soon, then rarely.
        not_served = Backoff(base=1.0, cap=self.not_served_retry)
        need_list = True
        while not stop.is_set():
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    not_served.reset()  # served (again)
                await self._watch(stop)  # returns when the server ends the watch: resume from our version
                backoff.reset()
                forbidden.reset()
            except Gone:
                log.info("%s: resourceVersion %s is too old; listing again", self.name, self.resource_version)
                need_list = True
            except NotFound:
                need_list = True
                self._not_served()
                if self.on_list is not None:
                    await self.on_list()
                await self._wait(stop, not_served.next())  # until poked (a CRD appeared) or the retry
            except Forbidden as e:
                self._set_state("forbidden", str(e))
                self.synced_once.set()  # a direct read is refused just the same: readers need not wait
                await self._wait(stop, forbidden.next())
            except KubeError as e:
                # Restarting server or dropped connection: resume from the last version seen (the
                # server answers 410 if it cannot, and we list again then).
                self.reconnects += 1
                self._set_state("unavailable", str(e))
                await self._wait(stop, backoff.next())  # a poke (the server answers again) retries at once
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a bug must not end the loop: list again after a pause
                log.exception("%s: unexpected error in the watch loop", self.name)
                need_list = True
                self._set_state("unavailable", f"{type(e).__name__}: {e}")
                await sleep_or_stop(stop, backoff.next())
            finally:
                self.connected = False

    @property
    def name(self) -> str:
        r = self.resource
        name = self._name or f"{r.plural}.{r.group or 'core'}" + (f"@{self.namespace}" if self.namespace else "")
        return f"{self.scope}/{name}" if self.scope else name

    async def _list(self) -> None:
        headers = {"Accept": PARTIAL_LIST} if self.metadata_only else None
        fresh: dict[Key, Any] = {}
        rv = ""
        # page by page: what is kept of each object is small, the objects are not
        async for page, rv in self.kube.pages(  # noqa: B007 - the last page's version is read after the loop
            self.resource,
            self.namespace,
            limit=self.page_size,
            headers=headers,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        ):
            for i, obj in enumerate(page):
                rec = self.keep(obj)
                if rec is not None:
                    fresh[key_of(obj)] = rec
                if i % YIELD_EVERY == YIELD_EVERY - 1:
                    # a page of pods is ~0.2 s of projection: the loop serves requests and renews
                    # Leases meanwhile (nothing outside sees `fresh` until the list is whole)
                    await asyncio.sleep(0)
            page.clear()
        self.relists += 1
        old, self.objects = self.objects, fresh
        # The differences only: a relist after a 410 or an outage must neither repeat what the
        # consumer has nor miss what changed meanwhile.
        for k, rec in fresh.items():
            prev = old.get(k)
            if prev is None:
                self.on_event("ADDED", k, None, rec)
            elif prev != rec:  # a new version, or a record kept differently (the projection changed)
                self.on_event("MODIFIED", k, prev, rec)
        for k, prev in old.items():
            if k not in fresh:
                self.on_event("DELETED", k, prev, None)
        self.resource_version = rv
        self.last_contact = time.time()
        self._set_state("synced", None)
        if self.on_list is not None:
            await self.on_list()
        self.synced_once.set()

    async def _watch(self, stop: asyncio.Event) -> None:
        # Jitter the server-side timeout so many replicas do not re-watch in step.
        timeout = self.watch_timeout + random.randint(0, self.watch_timeout // 4)
        headers = {"Accept": PARTIAL_WATCH} if self.metadata_only else None

        def connected() -> None:
            self.connected = True
            self.last_contact = time.time()
            self._set_state("synced", None)

        events = self.kube.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            headers=headers,
            on_connected=connected,
        )
        async with contextlib.aclosing(events):  # the HTTP stream is released however we leave
            async for ev in events:
                self.last_contact = time.time()
                obj = ev.get("object") or {}
                meta = obj.get("metadata") or {}
                self.resource_version = meta.get("resourceVersion") or self.resource_version
                kind = ev.get("type")
                if kind in ("ADDED", "MODIFIED"):
                    self.events += 1
                    if self.metadata_only or "kind" not in obj:
                        obj.setdefault("apiVersion", self.resource.api_version)
                        obj["kind"] = self.resource.kind  # PartialObjectMetadata names itself
                    k = key_of(obj)
                    rec = self.keep(obj)
                    prev = self.objects.get(k)
                    if rec is None:
                        if prev is not None:
                            del self.objects[k]
                            self.on_event("DELETED", k, prev, None)
                        continue
                    self.objects[k] = rec
                    self.on_event("ADDED" if prev is None else "MODIFIED", k, prev, rec)
                elif kind == "DELETED":
                    self.events += 1
                    k = key_of(obj)
                    prev = self.objects.pop(k, None)
                    if prev is not None:
                        self.on_event("DELETED", k, prev, None)
                if stop.is_set():
                    return

    def _not_served(self) -> None:
        old, self.objects = self.objects, {}
        for k, prev in old.items():
            self.on_event("DELETED", k, prev, None)
        self.resource_version = None
        self._set_state("not-served", f"{self.resource.plural}.{self.resource.group or 'core'} is not served")
        self.synced_once.set()

    def _set_state(self, state: str, error: str | None) -> None:
        if state != self.state or error != self.error:
            if error:
                log.warning("%s: %s", self.name, error)
            self.state, self.error = state, error

    async def _wait(self, stop: asyncio.Event, seconds: float) -> None:
        self._poke.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._poke.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    def status(self) -> dict[str, Any]:
        r = self.resource
        return {
            "group": r.group,
            "version": r.version,
            "kind": r.kind,
            "resource": r.plural,
            "namespace": self.namespace,
            "mode": "metadata" if self.metadata_only else "full",
            "state": self.state,
            "error": self.error,
            "objects": len(self.objects),
            "resourceVersion": self.resource_version,
            "relists": self.relists,
            "reconnects": self.reconnects,
            "events": self.events,
        }


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass


async def cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel background tasks and wait until each has ended (whatever it raised on the way out)."""
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t
