"""A finding is one problem found in a definition: where, what, and how bad."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    path: str  # JSON path in the definition (camelCase), "" for the whole definition
    message: str  # errors: the reference validator's exact text
    level: Level = "error"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message, "level": self.level}


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.level == "error"]
