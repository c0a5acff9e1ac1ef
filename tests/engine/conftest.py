import sys
from pathlib import Path

# The shared builders live next to the tests (tests/engine/karta_kit.py).
sys.path.insert(0, str(Path(__file__).resolve().parent))
