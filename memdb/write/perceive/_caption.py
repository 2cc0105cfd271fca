"""A caption for an image from an OpenAI-compatible vision model, when one is configured.

``MEMDB_VISION_MODEL`` names the model (no caption without it); ``MEMDB_VISION_BASE_URL`` and
``MEMDB_VISION_API_KEY`` default to ``MEMDB_LLM_BASE_URL`` and ``MEMDB_LLM_API_KEY``. The call
goes through :class:`memdb.core.llm.ChatLLM` (path ``caption``: its timeout and token bound). The
reply is untrusted output: it becomes plain text of at most :data:`MAX_CAPTION_CHARS`
characters (control characters and markup fences removed), and a failure or an unusable
reply leaves the image without a caption (the reason is kept), never without its memory.
"""

from __future__ import annotations

import base64
import io
import os
import re
from typing import Any

from ...core.llm import ChatLLM, LLMError

__all__ = ["vision_from_env", "caption", "MAX_CAPTION_CHARS"]

MAX_CAPTION_CHARS = 600
_SENT_PX = 1024  # the image sent is scaled down to this longer side
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
_PROMPT = ("Describe this image in one or two plain sentences for a search index: what it "
           "shows, and any visible text. Answer in the language of the text in the image, "
           "else in English. No markup.")


def vision_from_env() -> ChatLLM | None:
    """The vision model the environment configures, or None when MEMDB_VISION_MODEL is unset."""
    model = os.environ.get("MEMDB_VISION_MODEL")
    if not model:
        return None
    return ChatLLM(os.environ.get("MEMDB_VISION_BASE_URL") or os.environ.get("MEMDB_LLM_BASE_URL")
                   or None,
                   api_key=os.environ.get("MEMDB_VISION_API_KEY")
                   or os.environ.get("MEMDB_LLM_API_KEY"), model=model)


def clean(reply: str) -> str:
    """An untrusted reply as one paragraph of plain text, cut to MAX_CAPTION_CHARS."""
    text = _CONTROL.sub(" ", reply).replace("```", " ")
    text = " ".join(text.split())
    return text[:MAX_CAPTION_CHARS].strip()


def caption(llm: ChatLLM, image: Any) -> tuple[str | None, str | None]:
    """(caption, None), or (None, why not) when the model failed or said nothing usable."""
    small = image.copy()
    small.thumbnail((_SENT_PX, _SENT_PX))
    buf = io.BytesIO()
    small.convert("RGB").save(buf, "JPEG", quality=85)
    url = "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    messages: list[Any] = [{"role": "user", "content": [
        {"type": "text", "text": _PROMPT},
        {"type": "image_url", "image_url": {"url": url}}]}]
    try:
        reply = llm.complete(messages, path="caption")
    except LLMError as exc:
        return None, f"no caption: {exc}"
    text = clean(reply)
    if len(text) < 2:
        return None, "no caption: the model's reply was empty"
    return text, None
