"""SIGTERM stops the service within a bound, even with requests in flight and streams open.

uvicorn runs the app's shutdown (the lifespan's `finally`) only after every open response has
ended, or after its graceful timeout (--shutdown-timeout) has cancelled them.  A `?watch=true`
stream never ends by itself, so the service's stop event is set as soon as the signal arrives:
streams end then (streams.end_on), background loops stop, and what is left in flight (an
evaluation, bounded by its deadline; a wait for a worker, by the queue timeout) drains.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signal(stop: asyncio.Event) -> Callable[[], None]:
    """Set `stop` on SIGTERM/SIGINT, then run the handler that was there (uvicorn's, which
    starts its graceful shutdown).  Returns what puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals reach the main thread only (an app run by a test client)
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop.set)
        prev = previous[signum]
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_DFL:  # nobody else listens: do what the signal does by default
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    for sig in SIGNALS:
        previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, prev in previous.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)

    return restore
