"""The service's log lines: JSON lines for machines, text for a person at a terminal
(--log-format auto|text|json), and the line that says where the service listens."""

from __future__ import annotations

import logging
import sys
import time
from typing import IO, Any

import orjson


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, then the record's fields (else msg)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        else:
            entry["msg"] = record.getMessage()
        return orjson.dumps(entry).decode()


class TextFormatter(logging.Formatter):
    """`12:00:01 INFO  wlmap.access  request route=/interpret status=200 ...`: the message, then
    the fields as key=value (a record whose fields carry `msg` shows that alone)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", None) or {})
        text = fields.pop("msg", None)
        if text is None:
            text = " ".join([record.getMessage(), *(f"{k}={_value(v)}" for k, v in fields.items())])
        line = (
            f"{time.strftime('%H:%M:%S', time.localtime(record.created))} {record.levelname:<7} {record.name}  {text}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _value(v: Any) -> str:
    s = v if isinstance(v, str) else orjson.dumps(v).decode()
    return orjson.dumps(s).decode() if not s or any(c in s for c in ' "=') else s


def log_format(choice: str, stream: IO[str]) -> str:
    """auto: text when the stream is a terminal (a person reads it), else json."""
    if choice != "auto":
        return choice
    return "text" if stream.isatty() else "json"


def setup_logging(level: str = "INFO", fmt: str = "json", stream: IO[str] | None = None) -> None:
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter() if log_format(fmt, stream) == "text" else JsonFormatter())
    root = logging.getLogger("wlmap")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def urls(base: str) -> dict[str, str]:
    """Where a person starts: the web UI, the API's docs and its OpenAPI document."""
    return {"url": base, "ui": f"{base}/ui/", "docs": f"{base}/docs", "openapi": f"{base}/openapi.json"}


def announce(scheme: str, host: str, port: int) -> None:
    """Say where the service listens (once it does), in one line."""
    base = f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
    u = urls(base)
    msg = f"serving on {base}: the UI at {u['ui']}, API docs at {u['docs']}, OpenAPI at {u['openapi']}"
    logging.getLogger("wlmap").info(msg, extra={"fields": {"msg": msg, **u}})
