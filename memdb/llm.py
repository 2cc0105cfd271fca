"""A small chat client for OpenAI-compatible endpoints, shared by every LLM step.

memdb's LLM steps (session summaries today) each have an offline fallback, so an LLM is
optional: :func:`llm_from_env` returns ``None`` unless ``MEMDB_LLM_MODEL`` is set, and nothing
goes over the network until a :class:`ChatLLM` is made and called. Configuration:
``MEMDB_LLM_BASE_URL`` (default: the openai client's default), ``MEMDB_LLM_API_KEY``,
``MEMDB_LLM_MODEL``, ``MEMDB_LLM_TIMEOUT`` (seconds, default 30). Failures raise
:class:`LLMError` with a ``kind`` ("timeout", "http", "connection", "bad_response") so callers
can say why they fell back; messages never contain the API key or the prompt.

>>> llm = ChatLLM("http://localhost:8000/v1", model="qwen2.5-7b-instruct", timeout=10)
>>> llm.complete([{"role": "user", "content": "Say hi"}])      # doctest: +SKIP
'Hi!'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from . import _bridge
from .errors import InvalidInput, MemdbError

__all__ = ["ChatLLM", "LLMError", "llm_from_env"]

DEFAULT_TIMEOUT = 30.0


class LLMError(MemdbError):
    """The LLM endpoint failed, timed out or answered with something unusable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"LLM {kind}: {message}")
        self.kind = kind


class ChatLLM:
    """Chat completions from an OpenAI-compatible endpoint through the ``openai`` client.

    ``max_retries`` defaults to 0: a caller with a fallback would rather fall back now than
    wait for retries. ``timeout`` bounds each request (connect and read), in seconds.
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None,
                 model: str, timeout: float = DEFAULT_TIMEOUT, max_retries: int = 0,
                 temperature: float = 0.0) -> None:
        if not model or not isinstance(model, str):
            raise InvalidInput("ChatLLM needs a model name")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise InvalidInput("timeout must be a positive number of seconds")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) \
                or not 0 <= max_retries <= 5:
            raise InvalidInput("max_retries must be an integer from 0 to 5")
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.temperature = temperature
        self._client_options = {"base_url": base_url, "api_key": api_key or "not-needed",
                                "timeout": self.timeout, "max_retries": max_retries}
        self._client = OpenAI(**self._client_options)
        self._async_client: Any = None  # AsyncOpenAI, made on first use by the async driver

    def __repr__(self) -> str:  # never shows the key
        return f"ChatLLM(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"

    def complete(self, messages: Sequence[dict[str, str]], *, json_mode: bool = False,
                 max_tokens: int | None = None) -> str:
        """The assistant's reply text to ``messages`` (LLMError on any failure).

        ``json_mode`` asks for ``response_format={"type": "json_object"}``; the caller still
        has to parse (and distrust) the reply.
        """
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                  "temperature": self.temperature}
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        try:
            response = self._create(kwargs)
        except openai.APITimeoutError as exc:
            raise LLMError("timeout", f"no answer within {self.timeout:g} s") from exc
        except openai.APIStatusError as exc:
            raise LLMError("http", f"status {exc.status_code}") from exc
        except openai.APIConnectionError as exc:
            raise LLMError("connection", type(exc).__name__) from exc
        except openai.OpenAIError as exc:
            raise LLMError("bad_response", type(exc).__name__) from exc
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMError("bad_response", "no choices in the reply") from exc
        if not isinstance(text, str) or not text.strip():
            raise LLMError("bad_response", "empty reply")
        return text


    def _create(self, kwargs: dict[str, Any]) -> Any:
        """One chat completion request: the sync client, or under the async driver
        ``AsyncOpenAI`` awaited on the event loop."""
        if not _bridge.active():
            return self._client.chat.completions.create(**kwargs)
        if self._async_client is None:
            from openai import AsyncOpenAI

            self._async_client = AsyncOpenAI(**self._client_options)
        return _bridge.wait(self._async_client.chat.completions.create(**kwargs))


def llm_from_env() -> ChatLLM | None:
    """The LLM the environment configures, or None (no network) when MEMDB_LLM_MODEL is unset."""
    model = os.environ.get("MEMDB_LLM_MODEL")
    if not model:
        return None
    raw_timeout = os.environ.get("MEMDB_LLM_TIMEOUT")
    try:
        timeout = float(raw_timeout) if raw_timeout else DEFAULT_TIMEOUT
    except ValueError:
        raise InvalidInput(
            f"MEMDB_LLM_TIMEOUT must be a number of seconds, got {raw_timeout!r}") from None
    return ChatLLM(os.environ.get("MEMDB_LLM_BASE_URL") or None,
                   api_key=os.environ.get("MEMDB_LLM_API_KEY"), model=model, timeout=timeout)
