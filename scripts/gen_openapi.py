"""Write openapi.json (top level) from the app; `--check` fails when the file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from generated import write_or_check  # scripts/generated.py

from app.service.app import create_app
from app.service.settings import Settings

TARGET = Path(__file__).resolve().parent.parent / "openapi.json"


def render() -> str:
    app = create_app(Settings(isolation="none"))
    return json.dumps(app.openapi(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.exit(write_or_check(TARGET, render, "scripts/gen_openapi.py"))
