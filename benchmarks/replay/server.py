"""The replay server: a recording served over the Kubernetes list/watch protocol (plain HTTP),
`--copies` times over, its events emitted at a rate the driver sets.

    python -m benchmarks.replay.server --recording rec.jsonl.gz [--copies K] [--cycle] [--port P]

Protocol, as a kube-apiserver answers the live model: the recorded discovery documents;
`GET <collection>` (all namespaces or one) with `limit`/`continue` (pages consistent with the
list's version), label and field selectors of the `k=v`, `k!=v`, `k`, `!k` forms, and the
metadata-only form when the client asks `Accept: ...;as=PartialObjectMetadataList`;
`GET <collection>/<name>` from the current state; `?watch=1` from a resourceVersion (the events
after it, then the live ones, one JSON line each in a chunked response; BOOKMARK events every
`--bookmark-every` s when `allowWatchBookmarks`; the watch ends at `timeoutSeconds`), or an ERROR
event with a 410 Status when that version is older than the `--window` events kept.  No version:
an ADDED for each current object first.  Writes: Leases only (create, replace, delete, with
resourceVersion conflicts), which the store's shards claim namespaces with; any other write is
405, anything else not served 404.  ResourceVersions are the server's own, increasing by one per event.

Control (JSON):
    POST /_replay/start?rate=R&count=N   emit N events (default: the rest of a forward replay)
                                          at R/s, open loop: event i due at t0 + i/R
    POST /_replay/stop                    stop emitting
    GET  /_replay/stats                   emitted, rate achieved, lag behind schedule, watchers...
    GET  /_replay/log?since=I             [[i, written (time.monotonic), namespace, workload, ready], ...]
                                          for the events from I (older entries are dropped)
    POST /_replay/compact?drop=1          forget every event so far (a watch from before: 410);
                                          drop=1 also ends every watch (clients come back)
    POST /_replay/drop                    end every watch (clients resume from their version)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.replay.recording import (  # noqa: E402
    Recording,
    Res,
    Step,
    Template,
    copied_uids,
    copy_namespace,
    key_of,
    steps,
)

Key = tuple[str, str]
BATCH = 256  # events emitted (and written) between two looks at the other connections
PARTIAL = b"PartialObjectMetadata"
REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           409: "Conflict", 410: "Gone"}
WRITABLE = {"leases"}  # the store's shards claim namespaces with Leases (--store); all else is read-only


def status_doc(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": message, "reason": reason, "code": code})


def partial_of(data: bytes) -> bytes:
    return orjson.dumps({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": orjson.loads(data)["metadata"]})


# -- selectors -------------------------------------------------------------------------------

Selector = Callable[[dict[str, Any]], bool]


def _path_get(obj: dict[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def selector(text: str, labels: bool) -> Selector | None:
    """`k=v`, `k==v`, `k!=v` (and, for labels, `k`, `!k`) joined by commas; None: matches all."""
    terms: list[Callable[[dict[str, Any]], bool]] = []
    for raw in filter(None, (t.strip() for t in text.split(","))):
        if "!=" in raw:
            k, v = raw.split("!=", 1)
            neg = True
        elif "=" in raw:
            k, v = raw.replace("==", "=").split("=", 1)
            neg = False
        elif labels:
            k, v, neg = raw.lstrip("!"), None, raw.startswith("!")
        else:
            raise ValueError(f"unsupported field selector {raw!r}")
        k = k.strip()

        def get(o: dict[str, Any], k: str = k) -> Any:
            return ((o.get("metadata") or {}).get("labels") or {}).get(k) if labels else _path_get(o, k)

        if v is None:
            terms.append(lambda o, get=get, neg=neg: (get(o) is None) == neg)
        else:
            want = v.strip()
            terms.append(lambda o, get=get, want=want, neg=neg: (str(get(o) or "") == want) != neg)
    if not terms:
        return None
    return lambda o: all(t(o) for t in terms)


# -- state -----------------------------------------------------------------------------------

class Watch:
    __slots__ = ("bookmarks", "deadline", "ended", "namespace", "partial", "pending", "select", "served", "writer")

    def __init__(self, served: Served, namespace: str | None, select: Selector | None, partial: bool,
                 bookmarks: bool, writer: asyncio.StreamWriter, deadline: float):
        self.served, self.namespace, self.select, self.partial = served, namespace, select, partial
        self.bookmarks, self.writer, self.deadline = bookmarks, writer, deadline
        self.pending: list[bytes] = []
        self.ended = asyncio.Event()

    def line(self, typ: bytes, ns: str, data: bytes) -> bytes | None:
        if self.namespace is not None and ns != self.namespace:
            return None
        if self.select is not None and not self.select(orjson.loads(data)):
            return None
        return b'{"type":"' + typ + b'","object":' + (partial_of(data) if self.partial else data) + b"}\n"


class Served:
    """One resource: its objects now (rendered JSON) and its open watches."""

    def __init__(self, res: Res):
        self.res = res
        self.objects: dict[Key, bytes] = {}
        self.partial: dict[Key, bytes] = {}
        self.watches: set[Watch] = set()


class Replay:
    def __init__(self, rec: Recording, copies: int = 1, cycle: bool = False, window: int = 200_000,
                 bookmark_every: float = 5.0, max_buffer: int = 64 << 20):
        self.discovery = {p: orjson.dumps(d) for p, d in rec.discovery.items()}
        self.served = {k: Served(r) for k, r in rec.resources.items()}
        for prefix, doc in rec.discovery.items():  # kinds not recorded: served, empty
            for r in doc.get("resources") or [] if prefix.count("/") >= 2 else []:
                res = Res(*(prefix.split("/")[2:] if prefix.startswith("/apis/") else ["", prefix.split("/")[2]]),
                          r["kind"], r["name"], bool(r.get("namespaced")))
                if "/" not in r["name"] and "list" in (r.get("verbs") or []):
                    self.served.setdefault(key_of(res), Served(res))
        self.copies, self.cycle = copies, cycle
        self.bookmark_every, self.max_buffer = bookmark_every, max_buffer
        uids = copied_uids(rec)
        self.rv = 0
        for key, items in rec.lists.items():
            sv = self.served[key]
            for o in items:
                t = Template(o, uids)
                for k in range(copies if t.ns else 1):
                    self.rv += 1
                    sv.objects[(copy_namespace(t.ns, k), t.name)] = t.render(k, self.rv)
        self.steps: list[Step] = steps(rec, cycle)
        self.templates = [Template(s.obj, uids) for s in self.steps]
        self.types = [s.type.encode() for s in self.steps]
        self.total = None if cycle else len(self.steps) * copies  # events a forward replay has
        self.floor = self.rv  # events after this version are kept (up to `window`): a watch from before it is 410
        # (version, resource, type, namespace, step, copy): rendered again for a watch that resumes
        # (90,000 pods' events would not fit as bytes)
        self.window: collections.deque[tuple[int, Served, bytes, str, int, Any]] = collections.deque(maxlen=window)
        self.next_i = 0  # the next event to emit
        self.log: collections.deque[tuple[int, float, str, str, int]] = collections.deque()
        self.log_base = 0
        self.dirty: set[Watch] = set()
        self.run: dict[str, Any] = {}
        self._task: asyncio.Task[None] | None = None
        self.bookmarks_sent = 0
        self.watches_opened = 0
        self.gone = 0
        self.slow_dropped = 0
        self.requests: collections.Counter[str] = collections.Counter()
        self.continues: dict[str, tuple[list[bytes], int, int]] = {}
        self._tokens = itertools.count(1)

    # -- emitting -------------------------------------------------------------------------
    def emit(self, i: int) -> tuple[int, str, str, int]:
        n = len(self.steps)
        j, k = divmod(i, self.copies)
        j %= n
        st, tpl, typ = self.steps[j], self.templates[j], self.types[j]
        self.rv += 1
        data = tpl.render(k, self.rv)
        ns = copy_namespace(tpl.ns, k)
        sv = self.served[st.res]
        key = (ns, tpl.name)
        if typ == b"DELETED":
            sv.objects.pop(key, None)
        else:
            sv.objects[key] = data
        sv.partial.pop(key, None)
        self.window.append((self.rv, sv, typ, ns, j, k))
        for w in sv.watches:
            line = w.line(typ, ns, data)
            if line is not None:
                w.pending.append(line)
                self.dirty.add(w)
        wl = st.workload
        return i, copy_namespace(wl[0], k) if wl else "", wl[1] if wl else "", st.ready

    def flush(self) -> None:
        for w in self.dirty:
            if w.pending:
                tr = w.writer.transport
                if tr.is_closing():
                    w.pending.clear()
                    w.ended.set()
                    continue
                size = sum(map(len, w.pending))
                tr.writelines([b"%x\r\n" % size, *w.pending, b"\r\n"])  # one chunk: one copy
                w.pending.clear()
                # as the API server drops a watcher that cannot keep up
                if tr.get_write_buffer_size() > self.max_buffer:
                    self.slow_dropped += 1
                    w.ended.set()
        self.dirty.clear()

    async def _emit_loop(self, rate: float, count: int) -> None:
        run = self.run
        t0 = time.monotonic()
        first, end = self.next_i, self.next_i + count
        run.update(t0=t0, first=first, end=end, rate=rate, max_lag=0.0, batches=0, running=True)
        try:
            while self.next_i < end:
                now = time.monotonic()
                # at most BATCH at a time: a server that fell behind still answers in between
                due = min(end, first + int((now - t0) * rate) + 1, self.next_i + BATCH)
                if due > self.next_i:
                    run["max_lag"] = max(run["max_lag"], now - (t0 + (self.next_i - first) / rate))
                    batch = [self.emit(i) for i in range(self.next_i, due)]
                    self.next_i = due
                    self.flush()
                    written = time.monotonic()  # when it went to the sockets, not when it was due
                    self.log.extend((i, written, ns, name, ready) for i, ns, name, ready in batch)
                    run["batches"] += 1
                    run["t_last"] = written
                    await asyncio.sleep(0)
                else:
                    await asyncio.sleep(max(0.0, t0 + (self.next_i - first) / rate - now))
        finally:
            run["running"] = False
            run["emitted"] = self.next_i - first

    def start(self, rate: float, count: int | None) -> dict[str, Any]:
        if self._task is not None and not self._task.done():
            raise ValueError("already emitting")
        left = None if self.total is None else self.total - self.next_i
        if count is None:
            if left is None:
                raise ValueError("count is needed when the replay cycles")
            count = left
        if left is not None:
            count = min(count, left)
        self.run = {}
        self._task = asyncio.create_task(self._emit_loop(rate, count))
        return {"first": self.next_i, "count": count, "rate": rate}

    def stats(self) -> dict[str, Any]:
        run = dict(self.run)
        if run.get("t0") is not None:
            emitted = self.next_i - run["first"]
            span = (run.get("t_last") or run["t0"]) - run["t0"]
            run["emitted"] = emitted
            run["achieved_per_s"] = (emitted - 1) / span if span > 0 and emitted > 1 else 0.0
        return {"resourceVersion": self.rv, "next": self.next_i, "total": self.total, "run": run,
                "watches": sum(len(s.watches) for s in self.served.values()), "watchesOpened": self.watches_opened,
                "bookmarks": self.bookmarks_sent, "gone": self.gone, "slowDropped": self.slow_dropped,
                "objects": {k: len(s.objects) for k, s in self.served.items() if s.objects},
                "requests": dict(self.requests)}

    def compact(self, drop: bool) -> None:
        """Every version so far is compacted away: the server moves one version on (a write of
        nothing the replay serves), and a watch from any earlier version is 410."""
        self.rv += 1
        self.floor = self.rv
        self.window.clear()
        if drop:
            self.drop()

    def drop(self) -> None:
        for sv in self.served.values():
            for w in sv.watches:
                w.ended.set()

    async def bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(min(self.bookmark_every, 0.5))
            now = time.monotonic()
            tick = now - self.run.get("_last_bookmark", 0.0) >= self.bookmark_every
            if tick:
                self.run["_last_bookmark"] = now
            for sv in self.served.values():
                for w in list(sv.watches):
                    if now >= w.deadline:
                        w.ended.set()
                    elif tick and w.bookmarks:
                        doc = {"type": "BOOKMARK", "object": {"kind": sv.res.kind, "apiVersion": sv.res.api_version,
                                                              "metadata": {"resourceVersion": str(self.rv)}}}
                        w.pending.append(orjson.dumps(doc) + b"\n")
                        self.dirty.add(w)
                        self.bookmarks_sent += 1
            self.flush()

    # -- serving --------------------------------------------------------------------------
    def route(self, path: str) -> tuple[Served, str | None, str | None] | None:
        """(resource, namespace, name) of an API path, or None."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[0] == "api" and len(parts) >= 3:
            prefix, rest = f"/api/{parts[1]}", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            prefix, rest = f"/apis/{parts[1]}/{parts[2]}", parts[3:]
        else:
            return None
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if len(rest) > 2:
            return None
        sv = self.served.get(f"{prefix}/{rest[0]}")
        if sv is None:
            return None
        return sv, ns, rest[1] if len(rest) == 2 else None

    def list_body(self, sv: Served, ns: str | None, q: dict[str, str], partial: bool) -> tuple[int, bytes]:
        limit = int(q.get("limit") or 0)
        cont = q.get("continue")
        if cont:
            found = self.continues.pop(cont, None)
            if found is None:
                return 410, status_doc(410, "Expired", "the continue token has expired")
            items, offset, rv = found
        else:
            fsel, lsel = selector(q.get("fieldSelector") or "", False), selector(q.get("labelSelector") or "", True)
            keys = sorted(k for k in sv.objects if ns is None or k[0] == ns)
            if fsel or lsel:
                keys = [k for k in keys if (o := orjson.loads(sv.objects[k]))
                        and (fsel is None or fsel(o)) and (lsel is None or lsel(o))]
            if partial:
                items = [sv.partial.get(k) or sv.partial.setdefault(k, partial_of(sv.objects[k])) for k in keys]
            else:
                items = [sv.objects[k] for k in keys]
            offset, rv = 0, self.rv
        page = items[offset:offset + limit] if limit else items[offset:]
        meta = b'{"resourceVersion":"%d"' % rv
        if limit and offset + limit < len(items):
            token = f"c{next(self._tokens)}"
            self.continues[token] = (items, offset + limit, rv)
            meta += b',"continue":"%s"' % token.encode()
        kind = b"PartialObjectMetadataList" if partial else sv.res.kind.encode() + b"List"
        api = b"meta.k8s.io/v1" if partial else sv.res.api_version.encode()
        return 200, b'{"kind":"%s","apiVersion":"%s","metadata":%s},"items":[%s]}' % (kind, api, meta, b",".join(page))

    async def watch(self, sv: Served, ns: str | None, q: dict[str, str], partial: bool,
                    reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.watches_opened += 1
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                b"Connection: close\r\n\r\n")
        try:
            fsel, lsel = selector(q.get("fieldSelector") or "", False), selector(q.get("labelSelector") or "", True)
        except ValueError as e:
            writer.write(response(400, status_doc(400, "BadRequest", str(e))))
            return
        select = None if fsel is None and lsel is None else (
            lambda o: (fsel is None or fsel(o)) and (lsel is None or lsel(o)))
        timeout = float(q.get("timeoutSeconds") or 1800)
        w = Watch(sv, ns, select, partial, q.get("allowWatchBookmarks") in ("true", "1"), writer,
                  time.monotonic() + timeout)
        writer.write(head)
        since = q.get("resourceVersion") or "0"
        if since == "0":
            for (ons, _), data in sorted(sv.objects.items()):
                if (line := w.line(b"ADDED", ons, data)) is not None:
                    w.pending.append(line)
        else:
            rv = int(since)
            floor = max(self.floor, self.window[0][0] - 1 if len(self.window) == self.window.maxlen else 0)
            if rv < floor:
                self.gone += 1
                doc = status_doc(410, "Expired", f"too old resource version: {rv} ({floor})")
                line = b'{"type":"ERROR","object":' + doc + b"}\n"
                writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
                return
            for erv, esv, typ, ens, j, k in self.window:  # (a write keeps its bytes in place of the copy)
                data = self.templates[j].render(k, erv) if j >= 0 else k
                if erv > rv and esv is sv and (line := w.line(typ, ens, data)) is not None:
                    w.pending.append(line)
        sv.watches.add(w)
        self.dirty.add(w)
        self.flush()
        gone = asyncio.ensure_future(reader.read(1))  # the client hung up
        ended = asyncio.ensure_future(w.ended.wait())
        try:
            await asyncio.wait([gone, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sv.watches.discard(w)
            self.dirty.discard(w)
            gone.cancel()
            ended.cancel()
        if not writer.transport.is_closing():
            writer.write(b"0\r\n\r\n")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                payload = await reader.readexactly(n) if (n := int(headers.get("content-length") or 0)) else b""
                url = urlsplit(target)
                q = {k: v[-1] for k, v in parse_qs(url.query).items()}
                partial = "as=PartialObjectMetadata" in headers.get("accept", "")
                if method == "GET" and url.path not in self.discovery and q.get("watch") in ("true", "1"):
                    r = self.route(url.path)
                    if r is not None and r[2] is None:
                        self.requests[f"WATCH {key_of(r[0].res)}"] += 1
                        await self.watch(r[0], r[1], q, partial, reader, writer)
                        await writer.drain()
                        return
                code, body = await self.answer(method, url.path, q, partial, payload)
                writer.write(response(code, body))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def answer(self, method: str, path: str, q: dict[str, str], partial: bool, payload: bytes = b""
                     ) -> tuple[int, bytes]:
        if path.startswith("/_replay/"):
            return self.control(method, path.removeprefix("/_replay/"), q)
        if method in ("POST", "PUT", "DELETE") and (r := self.route(path)) is not None and r[0].res.plural in WRITABLE:
            self.requests[f"{method} {key_of(r[0].res)}"] += 1
            return self.write(method, r[0], r[1] or "", r[2], payload)
        if method != "GET":
            self.requests[f"{method} (refused)"] += 1
            return 405, status_doc(405, "MethodNotAllowed", "the replay server is read-only")
        if path in self.discovery:
            self.requests["discovery"] += 1
            return 200, self.discovery[path]
        r = self.route(path)
        if r is None:
            self.requests[f"not found {path}"] += 1
            return 404, status_doc(404, "NotFound", f"{path} is not served by the replay")
        sv, ns, name = r
        if name is not None:
            self.requests[f"GET one {key_of(sv.res)}"] += 1
            data = sv.objects.get((ns or "", name))
            if data is None:
                return 404, status_doc(404, "NotFound", f'{sv.res.plural} "{name}" not found')
            return 200, partial_of(data) if partial else data
        self.requests[f"LIST {key_of(sv.res)}"] += 1
        try:
            return self.list_body(sv, ns, q, partial)
        except ValueError as e:
            return 400, status_doc(400, "BadRequest", str(e))

    def write(self, method: str, sv: Served, ns: str, name: str | None, payload: bytes) -> tuple[int, bytes]:
        """Create, replace or delete one object (Leases only: what shards claim namespaces with),
        with the API server's optimistic concurrency: a stale resourceVersion is 409."""
        obj = orjson.loads(payload) if payload else {}
        meta = obj.setdefault("metadata", {})
        name = name or meta.get("name")
        key = (ns, str(name))
        old = orjson.loads(sv.objects[key]) if key in sv.objects else None
        want_rv = (obj.get("preconditions") or {}).get("resourceVersion") if method == "DELETE" else meta.get(
            "resourceVersion")
        if method == "POST" and old is not None:
            return 409, status_doc(409, "AlreadyExists", f'{sv.res.plural} "{name}" already exists')
        if method != "POST" and old is None:
            return 404, status_doc(404, "NotFound", f'{sv.res.plural} "{name}" not found')
        if old is not None and want_rv and want_rv != old["metadata"]["resourceVersion"]:
            return 409, status_doc(409, "Conflict", f'the object has been modified: {sv.res.plural} "{name}"')
        self.rv += 1
        if method == "DELETE":
            obj, typ = old, b"DELETED"
            del sv.objects[key]
        else:
            obj.update(apiVersion=sv.res.api_version, kind=sv.res.kind)
            meta.update(name=name, namespace=ns or None, uid=old["metadata"]["uid"] if old else str(uuid.uuid4()),
                        creationTimestamp=(old or obj)["metadata"].get("creationTimestamp")
                        or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            typ = b"MODIFIED" if old else b"ADDED"
        assert obj is not None
        obj["metadata"]["resourceVersion"] = str(self.rv)
        data = orjson.dumps(obj)
        if typ != b"DELETED":
            sv.objects[key] = data
        self.window.append((self.rv, sv, typ, ns, -1, data))
        for w in sv.watches:
            if (line := w.line(typ, ns, data)) is not None:
                w.pending.append(line)
                self.dirty.add(w)
        self.flush()
        return 201 if typ == b"ADDED" else 200, data

    def control(self, method: str, what: str, q: dict[str, str]) -> tuple[int, bytes]:
        try:
            if what == "stats" and method == "GET":
                return 200, orjson.dumps(self.stats())
            if what == "log" and method == "GET":
                since = max(int(q.get("since") or 0), self.log_base)
                while self.log and self.log[0][0] < since:
                    self.log.popleft()
                self.log_base = since
                return 200, orjson.dumps({"events": list(self.log), "next": self.next_i})
            if method != "POST":
                return 405, b'{"error":"POST"}'
            if what == "start":
                count = int(q["count"]) if "count" in q else None
                return 200, orjson.dumps(self.start(float(q.get("rate") or 1000), count))
            if what == "stop":
                if self._task is not None:
                    self._task.cancel()
                return 200, b"{}"
            if what == "compact":
                self.compact(q.get("drop") in ("1", "true"))
                return 200, orjson.dumps({"resourceVersion": self.rv})
            if what == "drop":
                self.drop()
                return 200, b"{}"
        except (ValueError, KeyError) as e:
            return 400, orjson.dumps({"error": str(e)})
        return 404, b'{"error":"no such control"}'


def write_kubeconfig(path: Path, url: str) -> Path:
    """A kubeconfig for `wlmap serve` on the replay at `url` (plain HTTP; any token will do)."""
    path.write_bytes(orjson.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "replay",
        "clusters": [{"name": "replay", "cluster": {"server": url}}],
        "users": [{"name": "replay", "user": {"token": "replay"}}],
        "contexts": [{"name": "replay", "context": {"cluster": "replay", "user": "replay"}}]}))
    return path


def response(code: int, body: bytes) -> bytes:
    return (b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (code, REASONS.get(code, "Error").encode(), len(body))) + body


async def serve(replay: Replay, host: str, port: int, ready: Callable[[int], None] | None = None) -> None:
    server = await asyncio.start_server(replay.handle, host, port, limit=1 << 20, backlog=512)
    bookmarks = asyncio.create_task(replay.bookmark_loop())
    bound = server.sockets[0].getsockname()[1]
    if ready is not None:
        ready(bound)
    try:
        async with server:
            await server.serve_forever()
    finally:
        bookmarks.cancel()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recording", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=1, help="distinct copies of every namespaced object")
    ap.add_argument("--cycle", action="store_true", help="repeat the events (forward, then undone) for ever")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (printed as `port N`)")
    ap.add_argument("--window", type=int, default=200_000, help="events kept for watches that resume")
    ap.add_argument("--bookmark-every", type=float, default=5.0)
    args = ap.parse_args()
    t = time.perf_counter()
    replay = Replay(Recording.load(args.recording), args.copies, args.cycle, args.window, args.bookmark_every)
    objects = sum(len(s.objects) for s in replay.served.values())
    print(f"loaded {objects} objects, {len(replay.steps)} steps in {time.perf_counter() - t:.1f} s "
          f"(pid {os.getpid()})", flush=True)
    try:
        asyncio.run(serve(replay, args.host, args.port, lambda p: print(f"port {p}", flush=True)))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
