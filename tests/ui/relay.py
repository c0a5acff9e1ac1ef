"""A TCP relay in front of a service, for the browser tests: the page is opened through it, so a
test can drop the network under a live page (`down`: open connections are cut, new ones are
refused), bring it back (`up`), or put another service process behind the same address
(`target`, e.g. a restarted one)."""

from __future__ import annotations

import socket
import struct
import threading


class Relay:
    def __init__(self, target_port: int):
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._up = True
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="relay", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:  # timeout, or the listener closed
                continue
            if not self._up:
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with self._lock:
                    self._open.discard(s)
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def down(self) -> None:
        """The network drops: every open connection is reset, new ones are refused."""
        self._up = False
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for s in conns:
            _reset(s)

    def up(self) -> None:
        self._up = True

    def target(self, port: int) -> None:
        """Relay new connections to another port from now on."""
        self.target_port = port

    def close(self) -> None:
        self._closed = True
        self.down()
        self._listener.close()
        self._thread.join(2)


def _reset(s: socket.socket) -> None:
    try:  # no lingering: what a dropped link looks like to the browser
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.shutdown(socket.SHUT_RDWR)  # (wakes the thread blocked reading it)
    except OSError:
        pass
    s.close()
