"""The MCP server: memdb's tools and resources on the SDK's low-level ``Server``.

Every call runs on an :class:`~memdb.AsyncMemoryStore` chosen by the caller's
:class:`Scope`, never by a tool argument: over stdio the server's configured scope; over
streamable HTTP the scope the HTTP layer put on the request (``memdb.mcp._http``: the
caller's API key). A store confined to a subject (``Scope.subject``) is a subject-confined
store, so row-level security keeps every tool to that subject's rows.

A bad call (an unknown tool, arguments the tool's schema refuses, an unknown id, the write
gate refusing a memory, a database error) is a tool result with ``isError`` and
``{"error": {"type", "message"}}``: the model can read it and retry, and the server goes on.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .._doors import StoreCache
from ..core import validate as v
from ..core.errors import Forbidden, InvalidInput, MemdbError, TooLarge
from ..core.masking import redact
from ..core.uris import is_uri
from ..families.jobs import builtin as builtin_jobs
from ..families.tool import TOOL_NAME, hit_result
from ..write.ingest import TextSource
from ._tools import TOOLS, ToolSpec, check_arguments, input_schema

__all__ = ["Scope", "MemdbMcp", "PROFILE_SCHEME", "SCOPE_KEY"]

log = logging.getLogger("memdb.mcp")

PROFILE_SCHEME = "memdb://profile/"
SCOPE_KEY = "memdb.scope"  # where the HTTP layer puts the caller's Scope in the ASGI scope
SERVER_NAME = "memdb"
MAX_INGEST_CHUNKS = 64  # chunks one add_document call may write (the HTTP door's default too)
INSTRUCTIONS = (
    "memdb is long-term memory. Before answering about the user, call recall (or search) "
    "with the question; when the user states a durable fact, preference or rule, call "
    "remember. Never store secrets. Memories have ids and mem:// URIs: get, update and "
    "forget take them.")


@dataclass(frozen=True)
class Scope:
    """Whose memories a caller reaches: a tenant, and optionally one subject (the store is
    then confined to it) and the agent recorded on what it writes."""

    tenant: str
    subject: str | None = None
    agent: str | None = None

    def __post_init__(self) -> None:
        v.name(self.tenant, "tenant")
        v.optional_name(self.subject, "subject")
        v.optional_name(self.agent, "agent")


class ToolFailure(MemdbError):
    """A memory-tool action answered ``ok: false`` (its error type is kept)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")))
        self.error = error


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ToolFailure):
        error = dict(exc.error)
        error["message"] = redact(str(error.get("message", "")))[:500]
        return error
    if isinstance(exc, MemdbError):
        error = {"type": type(exc).__name__, "message": redact(str(exc))[:500]}
        if getattr(exc, "reasons", None):
            error["reasons"] = list(exc.reasons)  # type: ignore[attr-defined]
        return error
    return {"type": "InternalError", "message": type(exc).__name__}


class MemdbMcp:
    """memdb's MCP server (``.server``: the SDK's low-level ``Server``).

    ``scope``: the configured scope (stdio; HTTP without keys). ``require_request_scope``:
    every request must carry the scope the HTTP layer authenticated (API keys); the
    configured one is then never used. ``max_ingest_chunks``: the most chunks one
    ``add_document`` call may write (more: a ``TooLarge`` tool error before any embedding;
    None: no limit).
    """

    def __init__(self, stores: StoreCache, scope: Scope | None = None, *,
                 require_request_scope: bool = False,
                 max_ingest_chunks: int | None = MAX_INGEST_CHUNKS) -> None:
        if scope is None and not require_request_scope:
            raise InvalidInput("the MCP server needs a scope (a tenant) or API keys")
        self.stores, self.scope = stores, scope
        self.require_request_scope = require_request_scope
        self.max_ingest_chunks = max_ingest_chunks
        self.server: Server[Any] = Server(
            SERVER_NAME, version=_version(), instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource)

    # -- scope --------------------------------------------------------------------------
    def scope_of(self, ctx: Any) -> Scope:
        request = getattr(ctx, "request", None)
        found = None if request is None else getattr(request, "scope", {}).get(SCOPE_KEY)
        if isinstance(found, Scope):
            return found
        if self.require_request_scope or self.scope is None:
            raise Forbidden("this request carries no authenticated scope")
        return self.scope

    # -- tools --------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        confined = self.scope_of(ctx).subject is not None
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description,
                       input_schema=input_schema(t, confined=confined)) for t in TOOLS])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams
                         ) -> types.CallToolResult:
        started = time.perf_counter()
        try:
            scope = self.scope_of(ctx)
            spec, args = check_arguments(params.name, params.arguments,
                                         confined=scope.subject is not None)
            async with self.stores.store(scope.tenant, scope.subject) as store:
                result = await _run(spec, dict(args), store, scope, f"mcp:{ctx.request_id}",
                                    max_chunks=self.max_ingest_chunks)
            return types.CallToolResult(content=[types.TextContent(type="text",
                                                                   text=_json(result))],
                                        structured_content=json.loads(_json(result)))
        except Exception as exc:  # noqa: BLE001 (a bad call is a tool error; the server goes on)
            if not isinstance(exc, MemdbError):
                log.exception("MCP tool %s failed", params.name)
            error = {"error": _error(exc)}
            return types.CallToolResult(content=[types.TextContent(type="text",
                                                                   text=_json(error))],
                                        structured_content=error, is_error=True)
        finally:
            log.debug("tool %s: %.1f ms", params.name, (time.perf_counter() - started) * 1000)

    # -- resources ----------------------------------------------------------------------
    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        subject = self.scope_of(ctx).subject
        resources = [] if subject is None else [types.Resource(
            name=f"profile of {subject}", uri=PROFILE_SCHEME + quote(subject, safe=""),
            description="What memdb knows about the subject, by section (JSON).",
            mime_type="application/json")]
        return types.ListResourcesResult(resources=resources)

    async def _list_templates(self, ctx: Any, params: Any
                              ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(
                name="profile", uri_template=PROFILE_SCHEME + "{subject}",
                description="A subject's profile: preferences, facts, expertise, habits, "
                            "communication style and lessons, each with its memory ids (JSON).",
                mime_type="application/json"),
            types.ResourceTemplate(
                name="memory", uri_template="mem://{subject}/{category}/{id}",
                description="One memory by its mem:// URI, with all its fields (JSON).",
                mime_type="application/json"),
        ])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            scope = self.scope_of(ctx)
            async with self.stores.store(scope.tenant, scope.subject) as store:
                if uri.startswith(PROFILE_SCHEME):
                    subject = v.name(unquote(uri[len(PROFILE_SCHEME):]), "subject")
                    if scope.subject is not None and subject != scope.subject:
                        raise Forbidden(f"this server is confined to subject {scope.subject!r}")
                    body: Any = await store.profile(subject)
                elif is_uri(uri):
                    body = (await store.get(uri)).to_dict()
                else:
                    raise InvalidInput(f"unknown resource {uri[:200]!r}: use {PROFILE_SCHEME}"
                                       "<subject> or mem://<subject>/<category>/<id>")
        except MemdbError as exc:
            error = _error(exc)
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"{error['type']}: {error['message']}") from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=_json(body))])


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("memdb")
    except Exception:  # noqa: BLE001
        return ""


# -- the tools' bodies ------------------------------------------------------------------
async def _subject_of(spec: ToolSpec, scope: Scope, args: dict[str, Any],
                      store: Any) -> str | None:
    """Whose memories the call reads or writes, by its operation's declared scope: the
    server's subject when it is confined to one; else the subject argument; else the whole
    tenant (None) for a read ("tenant"), "default" for a write ("subject"), and the memory's
    own subject for update and forget ("memory")."""
    requested = args.pop("subject", None)
    if scope.subject is not None:
        return scope.subject
    if requested is not None:
        return requested
    kind = spec.operation.scope
    if kind == "subject":
        return "default"
    if kind == "memory" and spec.action is not None and args.get("id"):
        return (await store.get(args["id"])).subject
    return None


async def _action(store: Any, scope: Scope, subject: str, action: str, args: dict[str, Any],
                  call_id: str) -> dict[str, Any]:
    """Run one action of the function-calling memory tool (the same validation and
    provenance as an OpenAI tool call)."""
    tool = store.tool(subject=subject, agent=scope.agent)
    result = await tool.run({"id": call_id, "name": TOOL_NAME,
                             "arguments": {"action": action, **args}})
    if not result.get("ok"):
        raise ToolFailure(result.get("error") or {"type": "InternalError", "message": ""})
    result.pop("ok", None)
    result.pop("action", None)
    return result


async def _run(spec: ToolSpec, args: dict[str, Any], store: Any, scope: Scope,
               call_id: str, *, max_chunks: int | None = None) -> dict[str, Any]:
    subject = await _subject_of(spec, scope, args, store)
    name = spec.name
    if name == "forget":
        return await _forget(store, scope, subject, args, call_id)
    if name == "search":
        flt = {"subject": subject} if subject is not None else {}
        if "category" in args:
            flt["category"] = args["category"]
        hits = await store.search(args["query"], args["k"], **flt)
        return {"results": [hit_result(h) for h in hits]}
    if spec.action is not None:
        return await _action(store, scope, subject or "default", spec.action, args, call_id)
    if name == "get":
        return {"memory": (await store.get(args["memory"])).to_dict()}
    if name == "recall":
        flt = {} if subject is None else {"subject": subject}
        for arg, field in (("categories", "category"), ("kinds", "kind"),
                           ("tags_all", "tags"), ("uri_prefix", "uri_prefix")):
            if args.get(arg):
                flt[field] = args[arg]
        found = await store.recall(args["query"], args["k"], flt)
        return {"status": found.status.value, "results": [
            {**hit_result(h), "uri": h.memory.uri} for h in found]}
    if name == "context":
        built = await store.context(args["query"], args.get("session"),
                                    args["budget_tokens"], subject=subject, k=args["k"])
        return built.to_dict()
    if name == "add_document":
        doc = {"id": args["document_id"], "text": args["text"], "title": args.get("title"),
               "format": args["format"]}
        if builtin_jobs.queue_ingest(None, [doc]):  # a big text: a job, answered at once
            payload = builtin_jobs.ingest_job([doc], store.subject, subject=subject,
                                              category=args.get("category", "general"),
                                              tags=args.get("tags"))
            job = await store.jobs.enqueue("documents.ingest", payload)
            return {"job_id": str(job.id), "state": job.state, "kind": job.kind,
                    "note": "ingesting in the background: see the job tool"}
        source = TextSource(args["document_id"], args["text"], title=args.get("title"),
                            format=args["format"])
        try:
            report = await store.documents.ingest(source, subject=subject,
                                                  category=args.get("category", "general"),
                                                  tags=args.get("tags"), max_chunks=max_chunks)
        except TooLarge as exc:
            raise TooLarge(f"{exc}. Send a smaller text (split it into several documents), "
                           "or ingest it with the CLI (memdb documents ingest)") from None
        return report.to_dict()
    if name == "ask":
        where = {} if subject is None else {"subject": subject}
        answer = await store.documents.ask(args["question"], args["k"],
                                           include_memories=args["include_memories"], **where)
        return answer.to_dict()
    if name == "remember_turn":
        result = await store.remember(args["text"], session_id=args.get("session_id"),
                                      turn_id=args.get("turn_id"), subject=subject,
                                      dry_run=args["dry_run"], wait=args["wait"])
        return result.to_dict()
    if name == "job":
        return {"job": (await store.jobs.get(args["id"])).to_json()}
    if name == "remember_file":
        try:
            data = base64.b64decode(args["file_base64"], validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("file_base64 is not valid base64") from None
        got = await store.add_file(data, subject=subject or "default", name=args.get("name"),
                                   caption=args["caption"], tags=args.get("tags"),
                                   reason=args.get("reason"))
        return got.to_dict()
    raise InvalidInput(f"unknown tool {name!r}")  # pragma: no cover (check_arguments)


async def _forget(store: Any, scope: Scope, subject: str | None, args: dict[str, Any],
                  call_id: str) -> dict[str, Any]:
    erase = args.pop("erase_subject", False)
    confirm = args.pop("confirm", None)
    if not erase:
        if confirm is not None:
            raise InvalidInput("confirm is only for erase_subject")
        if "id" not in args:
            raise InvalidInput("forget needs id (one memory) or erase_subject with confirm")
        return await _action(store, scope, subject or "default", "remove", args, call_id)
    if "id" in args or "reason" in args:
        raise InvalidInput("erase_subject takes no id or reason: it erases the whole subject")
    if subject is None:
        raise InvalidInput("erase_subject needs the subject argument: whose memories to erase")
    if confirm != subject:
        raise InvalidInput(f"erase_subject needs confirm set to the subject's name "
                           f"({subject!r}) exactly")
    erased = await store.subjects.forget(subject)
    return {"erased_subject": subject, "counts": dict(erased.counts)}
