"""Reading a JSON reply from a chat model, distrustfully."""

from __future__ import annotations

import json
import re
from typing import Any

from ...core.llm import LLMError

__all__ = ["json_object"]

_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL | re.IGNORECASE)


def json_object(reply: str, what: str) -> dict[str, Any]:
    """The reply as a JSON object (a surrounding ```json fence is allowed, nothing else);
    :class:`~memdb.core.llm.LLMError` ``bad_response`` otherwise. The message never quotes the
    reply (it may echo memory text)."""
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise LLMError("bad_response", f"{what}: the reply is not JSON") from None
    if not isinstance(value, dict):
        raise LLMError("bad_response", f"{what}: the reply is not a JSON object")
    return value
