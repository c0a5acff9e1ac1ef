"""The service's log lines: JSON lines."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, then the record's fields (else msg)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname.lower(),
                                 "logger": record.name}
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        else:
            entry["msg"] = record.getMessage()
        return orjson.dumps(entry).decode()


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("wlmap")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
