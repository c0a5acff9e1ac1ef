"""The connection to the store: one client per process (redis-py's asyncio pool), short timeouts.

A store that does not answer must turn into a prompt 503 for readers and a retry for shards, never
a request hanging on a socket: every command has a timeout, and connects are bounded too.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

COMMAND_TIMEOUT = 5.0


def connect(url: str, password: str | None = None, *, timeout: float = COMMAND_TIMEOUT) -> aioredis.Redis:
    kwargs: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": min(timeout, 3.0),
        "health_check_interval": 15,
        "decode_responses": False,
        "max_connections": 64,
    }
    if password:
        kwargs["password"] = password  # used when the URL names none (redis-py: the URL's wins)
    return aioredis.from_url(url, **kwargs)


ERRORS = (RedisError, OSError, TimeoutError)
