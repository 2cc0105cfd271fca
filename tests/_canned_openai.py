"""A tiny local HTTP server speaking the OpenAI embeddings API with canned responses.

Tests use it to drive the real ``openai`` client (inside :class:`memdb.OpenAIEmbedder`)
through failures: HTTP 500, timeouts, NaN or wrong-sized vectors. It is the only fake in
memdb's tests, and it fakes the embedding endpoint, never the database.

>>> with CannedOpenAI(dims=8) as api:
...     api.mode = "error"            # every request now gets HTTP 500
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

MODES = ("ok", "error", "slow", "nan", "short", "echo_key")


def canned_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector for a text (same text, same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dims)
    return (v / np.linalg.norm(v)).tolist()


class CannedOpenAI:
    """``with CannedOpenAI(dims) as api:`` serves ``api.base_url``; set ``api.mode`` to one of
    ``MODES``; ``api.requests`` counts requests and ``api.auth`` keeps the last Authorization
    header (proof that the real client sent the key)."""

    def __init__(self, dims: int, mode: str = "ok", delay: float = 5.0) -> None:
        self.dims, self.mode, self.delay = dims, mode, delay
        self.requests = 0
        self.auth: str | None = None
        self.inputs: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests += 1
                api.auth = self.headers.get("Authorization")
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                api.inputs.extend(texts)
                mode = api.mode
                if mode == "slow":
                    time.sleep(api.delay)
                if mode in ("error", "echo_key"):
                    # a hostile/careless server that echoes the key and the input back
                    message = (f"internal error for key {api.auth} on input {texts[0]!r}"
                               if mode == "echo_key" else "internal error")
                    self._send(500, {"error": {"message": message, "type": "server_error"}})
                    return
                dims = api.dims - 1 if mode == "short" else api.dims
                data = []
                for i, text in enumerate(texts):
                    vec = canned_vector(text, dims)
                    if mode == "nan":
                        vec[0] = float("nan")
                    data.append({"object": "embedding", "index": i, "embedding": vec})
                self._send(200, {"object": "list", "data": data, "model": body["model"],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _send(self, status: int, payload: dict) -> None:
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> CannedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
