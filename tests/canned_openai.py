"""A canned OpenAI-compatible server for tests: the only way tests fake an LLM.

It serves ``POST /v1/chat/completions`` from a script of responses, in order (the last one
repeats): a reply text, an HTTP error status, or a delay before a reply (to make the real
``openai`` client time out). Requests are recorded for assertions. The real client talks to it
over HTTP on 127.0.0.1, so memdb's LLM code runs unchanged.

    with CannedOpenAI([Reply('{"summary": "..."}'), Status(500), Delay(2.0, "late")]) as srv:
        llm = ChatLLM(srv.base_url, model="canned", timeout=0.5)
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """A 200 chat completion whose message content is ``text``."""

    text: str


@dataclass
class Status:
    """An HTTP error with this status code and an OpenAI-style error body."""

    code: int


@dataclass
class Delay:
    """Wait ``seconds``, then reply ``text`` (the client may have given up by then)."""

    seconds: float
    text: str = "too late"


class CannedOpenAI:
    """The server; a context manager that starts and stops it on a free port."""

    def __init__(self, script: list[Reply | Status | Delay]) -> None:
        if not script:
            raise ValueError("the script needs at least one response")
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self) -> Reply | Status | Delay:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def __enter__(self) -> CannedOpenAI:
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with canned._lock:
                    canned.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization")})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request"}})
                    return
                step = canned._next()
                if isinstance(step, Status):
                    self._send(step.code, {"error": {"message": "canned failure",
                                                     "type": "server_error"}})
                    return
                if isinstance(step, Delay):
                    time.sleep(step.seconds)
                text = step.text
                self._send(200, {
                    "id": "chatcmpl-canned", "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "canned"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
