"""Every example in README.md and docs/*.md runs (as sqlite-utils and pgvector-python keep
their docs honest): an example that breaks fails here, named ``page:line``.

* ```python blocks of one page run in order in one namespace (a page is a tutorial), in a
  working folder of their own, against a fresh migrated database of the test server:
  ``MEMDB_DSN`` is its application login (``memdb_user``, confined by row-level security, as
  on the embedded default) and ``MEMDB_ADMIN_DSN`` its admin.
* ```bash / ```sh / ```console blocks run in bash (``set -e -o pipefail``) with the same
  environment. ``memdb`` on their PATH is a small shim that hands the command line, the
  environment and stdin to this test process, where the real CLI (``memdb.cli.cli``) runs
  in-process (no interpreter start-up or model load per command). Lines starting with ``$ ``
  are commands and the lines after them (up to the next ``$ ``) are expected output: each
  must appear in the command's output (``...`` matches anything).
* ```sql blocks run statement by statement on the page's database as its admin login (the
  functions take the tenant as their first argument; the admin is not confined).
* Examples use the current names: a deprecated ``MemoryStore`` alias or CLI command fails.
* A block that cannot run here says why on the line before its fence:
  ``<!-- docs-test: skip (needs Docker) -->``; ``test_skipped_examples_give_a_reason`` lists
  them.
* A block marked ``<!-- docs-test: embedded -->`` runs on an embedded server of its own (no
  ``MEMDB_DSN``; ``MEMDB_HOME`` a new folder), stopped afterwards.
* A block marked ``<!-- docs-test: llm REPLY || REPLY ... -->`` runs with ``MEMDB_LLM_*`` (and
  ``OPENAI_*``) pointing at the canned OpenAI-compatible server (tests/canned_openai.py), which
  answers the chat requests with these replies in order (the last one repeats); a reply
  ``tool_calls: [["memory", {...}], ...]`` is an assistant message asking for those calls.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from conftest import template_copy
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memdb.core import sql
from memdb.core.embedded import APP_LOGIN

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
LANGS = {"python", "sql", *SHELL}
MARK = re.compile(r"<!--\s*docs-test:\s*(skip|llm|embedded)\b\s*(.*?)\s*-->")
ENV_PREFIXES = ("MEMDB_", "OPENAI_")
BLOCK_TIMEOUT = 180  # seconds for one shell block
DEPRECATED = "deprecated: use `memdb"  # what an old, hidden CLI command prints on stderr


@dataclass
class Block:
    page: str  # relative path, e.g. docs/python.md
    line: int  # the first line of the code, 1-based
    lang: str
    code: str
    skip: str | None = None  # the reason, when marked skip
    llm: list[str] = field(default_factory=list)  # canned chat replies, when marked llm
    embedded: bool = False  # marked embedded: no MEMDB_DSN, a MEMDB_HOME of its own

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def collect(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown page in the languages run here."""
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^(`{3,})\s*([\w-]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        if lang in LANGS:
            prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            mark = MARK.search(prev)
            block = Block(rel, i + 2, lang, "\n".join(lines[i + 1:j]))
            if mark and mark.group(1) == "skip":
                block.skip = mark.group(2).strip("() ") or ""
            elif mark and mark.group(1) == "llm":
                block.llm = [r.strip() for r in mark.group(2).split("||") if r.strip()]
            elif mark and mark.group(1) == "embedded":
                block.embedded = True
            blocks.append(block)
        i = j + 1
    return blocks


BLOCKS = [b for page in PAGES for b in collect(page)]


def _params() -> list[Any]:
    out = []
    for b in BLOCKS:
        marks = [pytest.mark.skip(reason=b.skip)] if b.skip is not None else []
        out.append(pytest.param(b, id=b.id, marks=marks))
    return out


# --- one fresh database, folder and namespace per page ----------------------------------


@dataclass
class Page:
    env: dict[str, str]
    cwd: Path
    namespace: dict[str, Any]


@pytest.fixture(scope="module")
def pages(server_dsn: str, template_dsn: str, embedder) -> Any:
    """page -> Page, created on first use; databases dropped and stores closed at the end."""
    made: dict[str, Page] = {}
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(
            prefix="memdb-docs-") as tmp:
        def get(page: str) -> Page:
            if page not in made:
                admin = stack.enter_context(template_copy(server_dsn, "memdb_docs"))
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(sql.query("ensure_app_login"))
                    conn.execute(sql.query("ensure_space"),
                                 {"model": embedder.model, "dims": embedder.dims})
                params = conninfo_to_dict(admin)
                params["user"] = APP_LOGIN
                params.pop("password", None)
                app = make_conninfo(**params)
                try:  # the embedded test server lets memdb_user in; a MEMDB_TEST_DSN server may not
                    psycopg.connect(app).close()
                except psycopg.OperationalError:
                    app = admin
                cwd = Path(tmp) / page.replace("/", "_")
                cwd.mkdir()
                env = {"MEMDB_DSN": app, "MEMDB_ADMIN_DSN": admin,
                       "MEMDB_HOME": str(Path(tmp) / "home"), "MEMDB_EMBEDDER": "local"}
                made[page] = Page(env, cwd, {"__name__": "__docs__"})
            return made[page]
        try:
            yield get
        finally:
            for p in made.values():
                _close_all(p.namespace)


def _close_all(namespace: dict[str, Any]) -> None:
    from memdb import MemoryStore
    for value in list(namespace.values()):
        if isinstance(value, MemoryStore):
            with contextlib.suppress(Exception):
                value.close()


@contextlib.contextmanager
def environment(env: dict[str, str], cwd: Path):
    """os.environ with memdb's variables replaced by ``env``, and ``cwd`` as the working
    folder, for the duration."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    old_cwd = os.getcwd()
    for k in saved:
        del os.environ[k]
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        for k in [k for k in os.environ if k.startswith(ENV_PREFIXES)]:
            del os.environ[k]
        os.environ.update(saved)


@contextlib.contextmanager
def canned_llm(replies: list[str], env: dict[str, str]):
    """``env`` plus MEMDB_LLM_* pointing at a canned server answering ``replies``."""
    if not replies:
        yield env
        return
    from canned_openai import CannedOpenAI, Reply, ToolCalls

    def step(reply: str) -> Reply | ToolCalls:
        if reply.startswith("tool_calls:"):  # tool_calls: [["memory", {...}], ...]
            return ToolCalls([tuple(c) for c in json.loads(reply[len("tool_calls:"):])])
        return Reply(reply)

    with CannedOpenAI([step(r) for r in replies]) as srv:
        yield {**env, "MEMDB_LLM_BASE_URL": srv.base_url, "MEMDB_LLM_MODEL": "canned",
               "MEMDB_LLM_API_KEY": "none", "OPENAI_BASE_URL": srv.base_url,
               "OPENAI_API_KEY": "none"}


# --- memdb in-process, behind a shim on the shell's PATH ---------------------------------

SHIM = """#!{python} -S
import base64, json, os, socket, sys
data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
env = {{k: v for k, v in os.environ.items() if k.startswith(("MEMDB_", "OPENAI_"))}}
req = json.dumps({{"args": sys.argv[1:], "env": env, "cwd": os.getcwd(),
                  "stdin": base64.b64encode(data).decode()}}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect({sock!r})
s.sendall(req)
s.shutdown(socket.SHUT_WR)
buf = b""
while chunk := s.recv(65536):
    buf += chunk
res = json.loads(buf)
sys.stdout.buffer.write(base64.b64decode(res["stdout"]))
sys.stderr.buffer.write(base64.b64decode(res["stderr"]))
sys.exit(res["code"])
"""


def _invoke(req: dict[str, Any]) -> dict[str, Any]:
    from memdb.cli import cli

    env = {k: None for k in os.environ if k.startswith(ENV_PREFIXES)}
    env.update(req["env"])
    old = os.getcwd()
    os.chdir(req["cwd"])
    try:
        result = CliRunner().invoke(cli, req["args"], input=base64.b64decode(req["stdin"]),
                                    env=env, catch_exceptions=True)
        err = result.stderr_bytes or b""
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            err += "".join(traceback.format_exception(result.exception)).encode()
        return {"stdout": base64.b64encode(result.stdout_bytes).decode(),
                "stderr": base64.b64encode(err).decode(), "code": result.exit_code}
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def shim() -> Any:
    """A folder holding the ``memdb`` shim, served by a thread of this process."""
    with tempfile.TemporaryDirectory(prefix="memdb-shim-") as tmp:
        sock_path = os.path.join(tmp, "s")
        server = socket.socket(socket.AF_UNIX)
        server.bind(sock_path)
        server.listen()
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    buf = b""
                    while chunk := conn.recv(65536):
                        buf += chunk
                    if not buf:
                        continue
                    try:
                        res = _invoke(json.loads(buf))
                    except Exception:  # the shim reports it as a failed command
                        msg = traceback.format_exc().encode()
                        res = {"stdout": "", "stderr": base64.b64encode(msg).decode(), "code": 99}
                    conn.sendall(json.dumps(res).encode())

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        (bin_dir / "memdb").write_text(SHIM.format(python=sys.executable, sock=sock_path))
        (bin_dir / "memdb").chmod(0o755)
        try:
            yield bin_dir
        finally:
            stop.set()
            server.close()
            thread.join(5)


# --- running blocks ------------------------------------------------------------------------


def _commands(block: Block) -> list[tuple[int, str, list[str]]]:
    """(markdown line, command, expected output lines) of a shell block: ``$ `` lines with
    the lines after them, or (no prompt anywhere) the whole block as one script."""
    lines = block.code.split("\n")
    if not any(line.startswith("$ ") for line in lines):
        return [(block.line, block.code, [])]
    out: list[tuple[int, str, list[str]]] = []
    for n, line in enumerate(lines):
        if line.startswith("$ "):
            out.append((block.line + n, line[2:], []))
        elif out and line.strip():
            out[-1][2].append(line.strip())
    return out


def _matches(expected: str, output: str) -> bool:
    pattern = ".*".join(re.escape(part.strip()) for part in expected.split("..."))
    return any(re.search(pattern, line.strip()) for line in output.split("\n"))


def run_shell(block: Block, page: Page, bin_dir: Path) -> None:
    marker, failed = "@@docs-test-command@@", "@@docs-test-failed@@"
    script = ["set -eo pipefail", f"trap 'echo {failed}$LINENO >&2' ERR"]
    md_line: dict[int, int] = {}  # bash's line number -> the Markdown line
    for n, (line, command, _expected) in enumerate(_commands(block)):
        script.append(f"echo {marker}{n}")
        for k, text in enumerate(command.split("\n")):
            script.append(text)
            md_line[len(script)] = line + k
    if block.embedded:
        script.append("memdb server stop --force >/dev/null")
    with canned_llm(block.llm, page.env) as env:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
        full_env.update(env)
        if block.embedded:
            del full_env["MEMDB_DSN"], full_env["MEMDB_ADMIN_DSN"]
            full_env["MEMDB_HOME"] = tempfile.mkdtemp(prefix="home-", dir=page.cwd)
            os.chmod(full_env["MEMDB_HOME"], 0o755)
        # the shim first, then this interpreter's scripts (memdb-mcp, python, ...): the blocks
        # run as in an activated environment even when pytest was started without one
        full_env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                            full_env.get("PATH", "")])
        try:
            proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=page.cwd,
                                  env=full_env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=BLOCK_TIMEOUT)
        finally:
            if block.embedded:
                _stop_embedded(full_env["MEMDB_HOME"])
    parts = re.split(rf"^{marker}(\d+)\n?", proc.stdout, flags=re.M)
    outputs = {int(parts[k]): parts[k + 1] for k in range(1, len(parts) - 1, 2)}
    report = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    if proc.returncode != 0:
        where = re.findall(rf"^{failed}(\d+)$", proc.stderr, flags=re.M)
        line = md_line.get(int(where[0]), block.line) if where else block.line
        pytest.fail(f"{block.page}:{line}: exit status {proc.returncode}\n{report}")
    for n, (line, command, expected) in enumerate(_commands(block)):
        assert DEPRECATED not in proc.stderr, (
            f"{block.page}: a deprecated command (use the new name)\n{report}")
        for want in expected:
            assert _matches(want, outputs.get(n, "")), (
                f"{block.page}:{line}: `{command}` did not print {want!r}\n{report}")


def _stop_embedded(home: str) -> None:
    """Stop the embedded server a block started, even when the block failed."""
    from memdb.cli import cli

    CliRunner().invoke(cli, ["server", "stop", "--force"], env={"MEMDB_HOME": home,
                       "MEMDB_DSN": None, "MEMDB_ADMIN_DSN": None})


def run_python(block: Block, page: Page) -> None:
    code = compile("\n" * (block.line - 1) + block.code, str(ROOT / block.page), "exec")
    with canned_llm(block.llm, page.env) as env, environment(env, page.cwd), \
            warnings.catch_warnings():
        # the docs use the current names, never a deprecated alias
        warnings.filterwarnings("error", message=r"MemoryStore\.\w+ is deprecated",
                                category=DeprecationWarning)
        exec(code, page.namespace)


def _statements(block: Block) -> list[tuple[int, str]]:
    """(markdown line, statement) of an SQL block: a statement ends with a line ending in
    ``;`` (before an optional ``--`` comment)."""
    out: list[tuple[int, str]] = []
    start, current = block.line, []
    for n, line in enumerate(block.code.split("\n")):
        if not current and not line.strip():
            continue
        if not current:
            start = block.line + n
        current.append(line)
        if re.sub(r"\s*--.*$", "", line).rstrip().endswith(";"):
            out.append((start, "\n".join(current)))
            current = []
    if current:
        out.append((start, "\n".join(current)))
    return out


def run_sql(block: Block, page: Page) -> None:
    with psycopg.connect(page.env["MEMDB_ADMIN_DSN"], autocommit=True) as conn:
        for line, statement in _statements(block):
            try:
                conn.execute(statement)
            except psycopg.Error as exc:
                pytest.fail(f"{block.page}:{line}: {type(exc).__name__}: {exc}\n{statement}")


@pytest.mark.parametrize("block", _params())
def test_example(block: Block, pages, shim) -> None:
    page = pages(block.page)
    if block.lang == "python":
        run_python(block, page)
    elif block.lang == "sql":
        run_sql(block, page)
    else:
        run_shell(block, page, shim)


def test_skipped_examples_give_a_reason() -> None:
    skipped = [b for b in BLOCKS if b.skip is not None]
    print("\nexamples not run:\n" + "\n".join(f"  {b.id}: {b.skip}" for b in skipped))
    assert all(b.skip for b in skipped), [b.id for b in skipped if not b.skip]
    assert len(skipped) <= len(BLOCKS) // 5, "keep skips rare"


def test_examples_are_collected() -> None:
    """Each page's examples are found (a broken fence would hide them)."""
    by_page = {b.page for b in BLOCKS}
    assert "README.md" in by_page and "docs/python.md" in by_page and "docs/cli.md" in by_page
    assert sum(b.lang == "python" for b in BLOCKS) >= 10
