"""Definitions sent inside requests, parsed once per distinct document.

A caller chooses these, so the cache is bounded by the bytes it holds, not by its count, and
is keyed by a digest of the document (not its megabytes of text).  An invalid definition is
remembered only as the problem it answers (its findings), never with its document: a 3 MiB
junk Karta parses to ~57 MB of Python objects, and none of it is needed to refuse it again."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..engine.memo import DEFINITION_FACTOR, ByteLRU, held_bytes
from ..karta.load import Definition, NotAKarta, definition_from_document
from ..karta.validate import reference_text
from .problems import ProblemError

INLINE_CACHE_BYTES = 64 * 1024 * 1024

_Refusal = tuple[str, list[dict[str, Any]]]  # the 422's detail and errors


class InlineDefinitions:
    def __init__(self, max_bytes: int = INLINE_CACHE_BYTES):
        self.cache: ByteLRU[bytes, Definition | _Refusal] = ByteLRU(max_bytes)

    def definition(self, doc: Any) -> Definition:
        """The valid definition `doc` is; else a 422 problem naming its findings."""
        try:
            text = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError as e:  # an integer beyond 64 bits, NaN: nothing can evaluate it
            raise ProblemError(
                422, "invalid-definition", "Invalid definition", f"the definition cannot be read: {e}"
            ) from None
        key = hashlib.blake2b(text, digest_size=20).digest()
        hit = self.cache.get(key)
        if hit is None:
            try:
                d = definition_from_document(doc, "inline", "inline")
            except NotAKarta as e:  # found at once, from apiVersion and kind: nothing to keep
                raise ProblemError(422, "invalid-definition", "Invalid definition", str(e)) from None
            if d.valid:
                hit = self.cache.put(key, d, len(key) + len(text) * DEFINITION_FACTOR)
            else:
                refusal = (
                    reference_text(d.findings) or "the definition is invalid",
                    [f.as_dict() for f in d.findings if f.level == "error"],
                )
                hit = self.cache.put(key, refusal, len(key) + held_bytes(refusal))
        if isinstance(hit, Definition):
            return hit
        detail, errors = hit
        raise ProblemError(422, "invalid-definition", "Invalid definition", detail, errors)
