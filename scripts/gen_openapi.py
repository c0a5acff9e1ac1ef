"""Write openapi.json (top level) from the app; `--check` fails when the file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.service.app import create_app
from app.service.settings import Settings

TARGET = Path(__file__).resolve().parent.parent / "openapi.json"


def render() -> str:
    app = create_app(Settings(isolation="none"))
    return json.dumps(app.openapi(), indent=2, sort_keys=False) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python scripts/gen_openapi.py", file=sys.stderr)
            return 1
        print(f"{TARGET} is current")
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
