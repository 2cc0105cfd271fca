"""A small chat client for OpenAI-compatible endpoints, shared by every LLM step.

memdb's LLM steps each have an offline fallback, so an LLM is optional: :func:`llm_from_env`
returns ``None`` unless ``MEMDB_LLM_MODEL`` is set, and nothing goes over the network until a
:class:`ChatLLM` is made and called. Configuration: ``MEMDB_LLM_BASE_URL`` (default: the openai
client's default), ``MEMDB_LLM_API_KEY``, ``MEMDB_LLM_MODEL``, ``MEMDB_LLM_TIMEOUT`` (seconds,
default 120: the ceiling of every request).

The model's reply is untrusted input. Each call names its **path** (one of :data:`PATHS`:
remember, planner, decompose, summary, answer, mqe, hyde, rerank, graph, task_end, caption),
which sizes it: ``max_tokens`` (a stop on token loops) and a timeout (a hard bound on the whole
call, retries included), from :data:`DEFAULT_LIMITS`, overridden per path by
``MEMDB_LLM_TIMEOUT_<PATH>`` and ``MEMDB_LLM_MAX_TOKENS_<PATH>`` (e.g.
``MEMDB_LLM_TIMEOUT_REMEMBER=90``) or the ``limits=`` argument. A JSON path sends its JSON
schema as ``response_format={"type": "json_schema", ...}``
(schema-constrained decoding on servers that support it: OpenAI, llama.cpp's server, vLLM);
a server that rejects it (HTTP 400/422) is asked again with ``{"type": "json_object"}``, then
without a response format, and the client remembers what the server took. A reply cut off at
``max_tokens`` (finish_reason ``length``) or repeating itself is refused (``kind``
"truncated" / "looping"). Failures raise :class:`LLMError` with a ``kind`` ("timeout", "http",
"connection", "bad_response", "truncated", "looping") so callers can say why they fell back;
messages never contain the API key or the prompt. What a reply *means* is checked by each
path (:mod:`memdb.write.grounding`), never here.

>>> llm = ChatLLM("http://localhost:8000/v1", model="qwen2.5-7b-instruct")
>>> llm.complete([{"role": "user", "content": "Say hi"}], path="answer")   # doctest: +SKIP
'Hi!'
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import bridge
from .errors import InvalidInput, MemdbError

__all__ = ["ChatLLM", "LLMError", "llm_from_env", "PathLimits", "PATHS", "DEFAULT_LIMITS",
           "limits_from_env", "looping"]

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class PathLimits:
    """How long one call of a path may take (seconds, retries included) and how many tokens
    its reply may have."""

    timeout: float
    max_tokens: int


# Sized for a small local model on a CPU (tens of tokens per second): a bound that an API
# model never reaches, that still stops a looping local one.
DEFAULT_LIMITS: dict[str, PathLimits] = {
    "remember": PathLimits(60.0, 600),
    "planner": PathLimits(15.0, 200),
    "decompose": PathLimits(15.0, 300),
    "summary": PathLimits(60.0, 400),
    "answer": PathLimits(60.0, 500),
    "mqe": PathLimits(20.0, 200),
    "hyde": PathLimits(20.0, 200),
    "rerank": PathLimits(20.0, 120),
    "graph": PathLimits(30.0, 400),
    "task_end": PathLimits(30.0, 200),
    "caption": PathLimits(60.0, 200),
}
PATHS = tuple(DEFAULT_LIMITS)
# legacy names still honoured for their path (after MEMDB_LLM_TIMEOUT_<PATH>)
_LEGACY_TIMEOUT = {"remember": "MEMDB_REMEMBER_TIMEOUT", "planner": "MEMDB_PLANNER_TIMEOUT"}


def _positive(raw: str, name: str, kind: type) -> Any:
    try:
        value = kind(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a positive number, got {raw!r}") from None
    if not value > 0:
        raise InvalidInput(f"{name} must be a positive number, got {raw!r}")
    return value


def limits_from_env(env: Mapping[str, str] | None = None) -> dict[str, PathLimits]:
    """:data:`DEFAULT_LIMITS` overridden by ``MEMDB_LLM_TIMEOUT_<PATH>`` (or the legacy
    ``MEMDB_REMEMBER_TIMEOUT`` / ``MEMDB_PLANNER_TIMEOUT``) and ``MEMDB_LLM_MAX_TOKENS_<PATH>``
    (InvalidInput for a value that is not a positive number)."""
    env = os.environ if env is None else env
    out = {}
    for path, base in DEFAULT_LIMITS.items():
        timeout, tokens = base.timeout, base.max_tokens
        for name in (f"MEMDB_LLM_TIMEOUT_{path.upper()}", _LEGACY_TIMEOUT.get(path)):
            if name and env.get(name):
                timeout = float(_positive(env[name], name, float))
                break
        name = f"MEMDB_LLM_MAX_TOKENS_{path.upper()}"
        if env.get(name):
            tokens = int(_positive(env[name], name, int))
        out[path] = PathLimits(timeout, tokens)
    return out


# five or more copies in a row of the same 3-80 character chunk, spanning 60+ characters
_LOOP = re.compile(r"(.{3,80}?)(?:\s*\1){4,}", re.DOTALL)


def looping(text: str) -> bool:
    """Whether ``text`` repeats itself the way a model in a token loop does: one chunk of 3 to
    80 characters five or more times in a row, over 60 characters or more.

    >>> looping("I like tea. I like tea. I like tea. I like tea. I like tea. I like tea.")
    True
    >>> looping("Alice likes tea; Bob likes coffee; Carol likes juice.")
    False
    """
    return any(len(m.group(0)) >= 60 for m in _LOOP.finditer(text[:8000]))


class LLMError(MemdbError):
    """The LLM endpoint failed, timed out or answered with something unusable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"LLM {kind}: {message}")
        self.kind = kind


class ChatLLM:
    """Chat completions from an OpenAI-compatible endpoint through the ``openai`` client.

    ``max_retries`` defaults to 0: a caller with a fallback would rather fall back now than
    wait for retries. ``timeout`` is the ceiling of every request, in seconds; each path's own
    bound (``limits``, default :func:`limits_from_env`) is usually lower.
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None,
                 model: str, timeout: float = DEFAULT_TIMEOUT, max_retries: int = 0,
                 temperature: float = 0.0,
                 limits: Mapping[str, PathLimits] | None = None) -> None:
        if not model or not isinstance(model, str):
            raise InvalidInput("ChatLLM needs a model name")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise InvalidInput("timeout must be a positive number of seconds")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) \
                or not 0 <= max_retries <= 5:
            raise InvalidInput("max_retries must be an integer from 0 to 5")
        merged = limits_from_env()
        for path, value in (limits or {}).items():
            if path not in DEFAULT_LIMITS or not isinstance(value, PathLimits):
                raise InvalidInput(f"limits: unknown path {path!r} or not a PathLimits "
                                   f"(paths: {', '.join(PATHS)})")
            merged[path] = value
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.temperature = temperature
        self.limits = merged
        # what response_format the server accepts: "json_schema", then "json_object", "none"
        self.response_format = "json_schema"
        self._client_options = {"base_url": base_url, "api_key": api_key or "not-needed",
                                "timeout": self.timeout, "max_retries": max_retries}
        self._client = OpenAI(**self._client_options)
        self._async_client: Any = None  # AsyncOpenAI, made on first use by the async driver

    def __repr__(self) -> str:  # never shows the key
        return f"ChatLLM(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"

    def limit(self, path: str) -> PathLimits:
        """The limits of ``path``, its timeout capped by the client's own."""
        base = self.limits[path]
        return PathLimits(min(base.timeout, self.timeout), base.max_tokens)

    def complete(self, messages: Sequence[dict[str, str]], *, path: str = "answer",
                 json_mode: bool = False, schema: dict[str, Any] | None = None,
                 max_tokens: int | None = None, timeout: float | None = None) -> str:
        """The assistant's reply text to ``messages`` (LLMError on any failure).

        ``path`` sizes the call (module docstring); ``max_tokens`` / ``timeout`` lower it
        further. ``schema`` (a JSON schema) asks for schema-constrained JSON, ``json_mode`` for
        any JSON object; the caller still has to parse (and distrust) the reply.
        """
        if path not in self.limits:
            raise InvalidInput(f"unknown LLM path {path!r} (paths: {', '.join(PATHS)})")
        bound = self.limit(path)
        tokens = bound.max_tokens if max_tokens is None else min(max_tokens, bound.max_tokens)
        wait = bound.timeout if timeout is None else min(float(timeout), bound.timeout)
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                  "temperature": self.temperature, "max_tokens": tokens}
        deadline = time.monotonic() + wait
        choice = bridge.bounded(
            lambda: self._negotiate(kwargs, path, schema, json_mode, deadline), wait,
            lambda: LLMError("timeout", f"no answer within {wait:g} s ({path})"))
        try:
            text = choice.message.content
            finish = choice.finish_reason
        except AttributeError as exc:
            raise LLMError("bad_response", "no message in the reply") from exc
        if not isinstance(text, str) or not text.strip():
            raise LLMError("bad_response", "empty reply")
        if finish == "length":
            raise LLMError("truncated", f"the reply hit max_tokens ({tokens}) and was cut off")
        if looping(text):
            raise LLMError("looping", "the reply repeats itself (a token loop)")
        return text

    def _negotiate(self, kwargs: dict[str, Any], path: str, schema: dict[str, Any] | None,
                   json_mode: bool, deadline: float) -> Any:
        """One request, asked again with a plainer response_format when the server rejects
        the one sent (remembered for the next call)."""
        import openai

        while True:
            fmt = None
            if schema is not None and self.response_format == "json_schema":
                fmt = {"type": "json_schema",
                       "json_schema": {"name": path, "schema": schema, "strict": True}}
            elif (schema is not None or json_mode) and self.response_format != "none":
                fmt = {"type": "json_object"}
            args = {**kwargs, "timeout": max(0.05, deadline - time.monotonic())}
            if fmt is not None:
                args["response_format"] = fmt
            try:
                response = self._create(args)
            except openai.APITimeoutError as exc:
                raise LLMError("timeout", f"no answer within the {path} timeout") from exc
            except openai.APIStatusError as exc:
                if fmt is not None and exc.status_code in (400, 415, 422):
                    self.response_format = "json_object" if fmt["type"] == "json_schema" \
                        else "none"
                    continue
                raise LLMError("http", f"status {exc.status_code}") from exc
            except openai.APIConnectionError as exc:
                raise LLMError("connection", type(exc).__name__) from exc
            except openai.OpenAIError as exc:
                raise LLMError("bad_response", type(exc).__name__) from exc
            try:
                return response.choices[0]
            except (AttributeError, IndexError, TypeError) as exc:
                raise LLMError("bad_response", "no choices in the reply") from exc

    def _create(self, kwargs: dict[str, Any]) -> Any:
        """One chat completion request: the sync client, or under the async driver
        ``AsyncOpenAI`` awaited on the event loop."""
        if not bridge.active():
            return self._client.chat.completions.create(**kwargs)
        if self._async_client is None:
            from openai import AsyncOpenAI

            self._async_client = AsyncOpenAI(**self._client_options)
        return bridge.wait(self._async_client.chat.completions.create(**kwargs))


def llm_from_env() -> ChatLLM | None:
    """The LLM the environment configures, or None (no network) when MEMDB_LLM_MODEL is unset."""
    model = os.environ.get("MEMDB_LLM_MODEL")
    if not model:
        return None
    raw_timeout = os.environ.get("MEMDB_LLM_TIMEOUT")
    timeout = float(_positive(raw_timeout, "MEMDB_LLM_TIMEOUT", float)) if raw_timeout \
        else DEFAULT_TIMEOUT
    return ChatLLM(os.environ.get("MEMDB_LLM_BASE_URL") or None,
                   api_key=os.environ.get("MEMDB_LLM_API_KEY"), model=model, timeout=timeout)
