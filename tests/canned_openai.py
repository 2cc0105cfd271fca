"""A canned OpenAI-compatible server for tests: the only fake in memdb's tests.

It fakes the embedding and chat endpoints, never the database. The real ``openai`` client (inside
:class:`memdb.OpenAIEmbedder` or :class:`memdb.core.llm.ChatLLM`) talks to it over HTTP on
127.0.0.1,
so memdb's code runs unchanged. One server serves both endpoints:

* ``POST /v1/embeddings`` by ``mode`` (one of :data:`MODES`, changeable while it runs):
  deterministic unit vectors (:func:`canned_vector`), HTTP 500, a delay, NaN or wrong-sized
  vectors, or an error that echoes the API key and the input back (a careless server).
* ``POST /v1/chat/completions`` from a script of steps, in order (the last one repeats): a
  :class:`Reply` text, an HTTP error :class:`Status`, a :class:`Delay` before a reply (to
  make the client time out), or :class:`ToolCalls` (an assistant message with ``tool_calls``,
  finish_reason ``tool_calls``, for function-calling agents).
* ``POST /v1/audio/transcriptions`` (multipart, as the real client uploads a file) from
  ``transcripts``, in order (the last one repeats): a :class:`Transcription` (the
  ``verbose_json`` reply: text, language, duration and timed segments) or a :class:`Status`.
  The recorded body has the form's fields and ``file`` (name, size, type, sha256).

Every request is recorded in ``requests`` (path, JSON body, Authorization header) for
assertions. ::

    with CannedOpenAI(dims=8) as api:
        api.mode = "error"            # every embedding request now gets HTTP 500
    with CannedOpenAI([Reply('{"summary": "..."}'), Status(500), Delay(2.0, "late")]) as srv:
        llm = ChatLLM(srv.base_url, model="canned", timeout=0.5)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

MODES = ("ok", "error", "slow", "nan", "short", "echo_key")
EMBEDDINGS = "/v1/embeddings"
CHAT = "/v1/chat/completions"
TRANSCRIPTIONS = "/v1/audio/transcriptions"


@dataclass
class Reply:
    """A 200 chat completion whose message content is ``text``; ``finish_reason`` "length"
    plays a reply cut off at max_tokens."""

    text: str
    finish_reason: str = "stop"


@dataclass
class Status:
    """An HTTP error with this status code and an OpenAI-style error body."""

    code: int


@dataclass
class Delay:
    """Wait ``seconds``, then reply ``text`` (the client may have given up by then)."""

    seconds: float
    text: str = "too late"


@dataclass
class ToolCalls:
    """A 200 chat completion whose message asks for tool calls: ``calls`` is a list of
    ``(function name, arguments)``; arguments given as a dict are JSON-encoded, a str is sent
    as is (so a test can send malformed JSON). Call ids are ``call_0``, ``call_1``..."""

    calls: list[tuple[str, Any]]
    text: str | None = None


Step = Reply | Status | Delay | ToolCalls


@dataclass
class Transcription:
    """A 200 ``verbose_json`` transcription: ``segments`` are ``(start, end, text)`` in
    seconds; the text is the segments' texts joined."""

    segments: list[tuple[float, float, str]]
    language: str = "english"

    def body(self) -> dict[str, Any]:
        return {"task": "transcribe", "language": self.language,
                "duration": max((end for _s, end, _t in self.segments), default=0.0),
                "text": " ".join(t for *_, t in self.segments),
                "segments": [{"id": i, "seek": 0, "start": start, "end": end, "text": text,
                              "tokens": [], "temperature": 0.0, "avg_logprob": -0.1,
                              "compression_ratio": 1.0, "no_speech_prob": 0.0}
                             for i, (start, end, text) in enumerate(self.segments)]}


def canned_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector for a text (same text, same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dims)
    return (v / np.linalg.norm(v)).tolist()


def _form(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart form's fields; a file as its name, size, type and sha256."""
    message = BytesParser(policy=policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    out: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            out[name] = {"name": part.get_filename(), "size": len(data),
                         "type": part.get_content_type(),
                         "sha256": hashlib.sha256(data).hexdigest()}
        else:
            out.setdefault(name, []).append(data.decode())
    return {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in out.items()}


def _error(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class CannedOpenAI:
    """The server; a context manager that starts it on a free port and stops it.

    ``script`` drives the chat endpoint (a chat request without one gets HTTP 500); ``dims``,
    ``mode`` and ``delay`` (seconds, for mode ``"slow"``) drive the embedding endpoint.
    """

    def __init__(self, script: Sequence[Step] = (), *, dims: int = 8, mode: str = "ok",
                 delay: float = 5.0,
                 transcripts: Sequence[Transcription | Status] = ()) -> None:
        self.script = list(script)
        self.transcripts = list(transcripts)
        self.dims, self.delay = dims, delay
        self.mode = mode
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self._mode = mode

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def auth(self) -> str | None:
        """The last request's Authorization header (proof that the real client sent the key)."""
        with self._lock:
            return self.requests[-1]["authorization"] if self.requests else None

    @property
    def inputs(self) -> list[str]:
        """Every text the embedding endpoint was asked for, in order."""
        with self._lock:
            bodies = [r["body"] for r in self.requests if r["path"] == EMBEDDINGS]
        return [t for b in bodies
                for t in (b["input"] if isinstance(b["input"], list) else [b["input"]])]

    def _record(self, path: str, body: dict[str, Any], authorization: str | None) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": body, "authorization": authorization})

    def _next_step(self) -> Step | None:
        with self._lock:
            if not self.script:
                return None
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    # -- the endpoints: each returns (HTTP status, JSON body) ------------------------------------
    def _embeddings(self, body: dict[str, Any], auth: str | None) -> tuple[int, dict[str, Any]]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        mode = self.mode
        if mode == "slow":
            time.sleep(self.delay)
        if mode == "error":
            return 500, _error("internal error")
        if mode == "echo_key":  # a hostile/careless server that echoes the key and the input
            return 500, _error(f"internal error for key {auth} on input {texts[0]!r}")
        dims = self.dims - 1 if mode == "short" else self.dims
        data = []
        for i, text in enumerate(texts):
            vec = canned_vector(text, dims)
            if mode == "nan":
                vec[0] = float("nan")
            data.append({"object": "embedding", "index": i, "embedding": vec})
        return 200, {"object": "list", "data": data, "model": body.get("model", "canned"),
                     "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        step = self._next_step()
        if step is None:
            return 500, _error("the canned server was given no chat script")
        if isinstance(step, Status):
            return step.code, _error("canned failure")
        if isinstance(step, Delay):
            time.sleep(step.seconds)
        if isinstance(step, ToolCalls):
            message: dict[str, Any] = {"role": "assistant", "content": step.text, "tool_calls": [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name,
                              "arguments": args if isinstance(args, str) else json.dumps(args)}}
                for i, (name, args) in enumerate(step.calls)]}
            return 200, self._completion(body, message, "tool_calls")
        return 200, self._completion(
            body, {"role": "assistant", "content": step.text},
            step.finish_reason if isinstance(step, Reply) else "stop")

    @staticmethod
    def _completion(body: dict[str, Any], message: dict[str, Any],
                    finish_reason: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-canned", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "canned"),
            "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _transcription(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            step = (self.transcripts.pop(0) if len(self.transcripts) > 1
                    else self.transcripts[0] if self.transcripts else None)
        if step is None:
            return 500, _error("the canned server was given no transcripts")
        if isinstance(step, Status):
            return step.code, _error("canned failure")
        return 200, step.body()

    def _handle(self, path: str, body: dict[str, Any],
                auth: str | None) -> tuple[int, dict[str, Any]]:
        self._record(path, body, auth)
        if path == EMBEDDINGS:
            return self._embeddings(body, auth)
        if path == CHAT:
            return self._chat(body)
        if path == TRANSCRIPTIONS:
            return self._transcription()
        return 404, _error("not found", "invalid_request")

    def __enter__(self) -> CannedOpenAI:
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw_body = self.rfile.read(length)
                kind = self.headers.get("Content-Type") or ""
                body = (_form(kind, raw_body) if kind.startswith("multipart/form-data")
                        else json.loads(raw_body or b"{}"))
                code, payload = canned._handle(self.path.rstrip("/"), body,
                                               self.headers.get("Authorization"))
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
