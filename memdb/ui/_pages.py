"""The pages of the memory browser, under /ui of the HTTP door (see :mod:`memdb.ui`)."""

from __future__ import annotations

import base64
import contextlib
import json
import math
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from psycopg.types.json import Jsonb

from ..core import bridge, sql
from ..core.errors import Forbidden, InvalidInput, MemdbError, NotFound, status_of
from ..core.filters import Filter
from ..core.jsonable import jsonable
from ..retrieval.profile import profile_items
from ._auth import (
    COOKIE,
    TENANT_COOKIE,
    LoginNeeded,
    TooMany,
    binding_of,
    check_csrf,
    check_key,
    csrf_token,
    form_of,
    same_origin,
)
from ._html import Markup, document, esc, tag, text

__all__ = ["router", "install"]

PAGE = 50
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")

router = APIRouter(prefix="/ui", include_in_schema=False)


def _nav(binding: Any, key: str, tenant: str | None) -> Markup:
    who = f"{tenant}" + (f" / {binding.subject}" if binding.subject else "")
    switch = tag("a", "switch tenant", href="/ui/tenant") if binding.is_admin else ""
    return Markup("".join([
        tag("a", "Subjects", href="/ui/"), tag("a", "Memories", href="/ui/memories"),
        tag("a", "Search", href="/ui/search"), tag("a", "Review", href="/ui/review"),
        tag("a", "Maintenance", href="/ui/maintenance"), tag("a", "Graph", href="/ui/graph"),
        tag("a", "Jobs", href="/ui/jobs"),
        tag("span", "admin · " if binding.is_admin else "", "tenant ", text(who),
            class_="muted"), " ", switch, " ",
        tag("form", _csrf_field(key), tag("button", "Log out", type="submit"),
            method="post", action="/ui/logout", class_="inline"),
    ]))


def _csrf_field(key: str) -> Markup:
    return tag("input", type="hidden", name="csrf", value=csrf_token(key))


def html_page(title: str, body: Any, *, status: int = 200, nav: Any = None,
              headers: dict[str, str] | None = None) -> HTMLResponse:
    out = HTMLResponse(document(title, body, nav=nav), status_code=status, headers=headers)
    out.headers["Content-Security-Policy"] = _CSP
    out.headers["X-Content-Type-Options"] = "nosniff"
    out.headers["Referrer-Policy"] = "no-referrer"
    out.headers["Cache-Control"] = "no-store"
    return out


def _login_form(message: str = "", status: int = 200) -> HTMLResponse:
    body = [tag("p", message, class_="error") if message else None,
            tag("form",
                tag("label", "API key ", tag("input", type="password", name="key",
                                             autocomplete="off", size="70", required=True)),
                " ", tag("button", "Log in", type="submit"),
                method="post", action="/ui/login"),
            tag("p", "A key from `memdb keys create`; kept in an HttpOnly cookie of this "
                     "site until you log out.", class_="muted")]
    return html_page("Log in", body, status=status)


class _Ctx:
    def __init__(self, binding: Any, key: str, store: Any) -> None:
        self.binding, self.key, self.store = binding, key, store

    tenant: str | None = None

    def page(self, title: str, body: Any, status: int = 200) -> HTMLResponse:
        return html_page(title, body, status=status,
                         nav=_nav(self.binding, self.key, self.tenant))


class ChooseTenant(Exception):
    """An admin key without a chosen tenant: the page answers with the tenant selector."""


@contextlib.asynccontextmanager
async def _context(request: Request) -> AsyncIterator[_Ctx]:
    binding, key = await binding_of(request)
    tenant, subject = binding.tenant, binding.subject
    if binding.is_admin:  # an admin key browses the tenant it chose (a cookie like the key's)
        tenant = request.cookies.get(TENANT_COOKIE) or None
        if tenant is None:
            raise ChooseTenant()
    if tenant is None:
        raise Forbidden("this key selects no tenant")
    async with request.app.state.door.store(tenant, subject) as store:
        ctx = _Ctx(binding, key, store)
        ctx.tenant = tenant
        yield ctx


async def _rows(store: Any, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """A named query of sql/queries/ui.sql on the store's connection (RLS as its login)."""
    core = store._sync.core  # the sync store under the async face: run in the bridge below

    def run() -> list[dict[str, Any]]:
        with core.transaction() as conn:
            return conn.execute(sql.query(name), {"tenant": core.tenant, **params}).fetchall()

    return await bridge.run(run)


def _table(headers: list[Any], rows: list[list[Any]]) -> Markup:
    return tag("table", tag("tr", [tag("th", h) for h in headers]),
               [tag("tr", [tag("td", c) for c in row]) for row in rows])


# what the pages of the package's other modules use (memdb.ui._jobs)
page_context, table = _context, _table


def _counts(counts: dict[str, int]) -> Markup:
    return Markup(", ".join(f"{esc(k)} {int(n)}" for k, n in sorted(counts.items())))


def _mem_link(mid: Any, label: Any = None) -> Markup:
    return tag("a", label if label is not None else str(mid), href=f"/ui/memories/{mid}")


def _pre(value: Any) -> Markup:
    return tag("pre", json.dumps(jsonable(value), ensure_ascii=False, indent=2, default=str))


# -- login ------------------------------------------------------------------------------------
@router.get("/login")
async def login_page(request: Request) -> Response:
    return _login_form()


@router.post("/login")
async def login(request: Request) -> Response:
    if not same_origin(request):  # login CSRF: another site logging the browser in as itself
        return html_page("Forbidden", tag("p", "A login from another site is refused."),
                         status=403)
    key = (await form_of(request)).get("key", "").strip()
    binding = await check_key(request, key)
    if binding is None:
        return _login_form("That key is not valid (unknown, revoked or mistyped).", 401)
    out = RedirectResponse("/ui/", status_code=303)
    out.set_cookie(COOKIE, key, httponly=True, samesite="strict", path="/ui",
                   secure=request.url.scheme == "https")
    return out


@router.post("/logout")
async def logout(request: Request) -> Response:
    key = request.cookies.get(COOKIE) or ""
    if key and not check_csrf(key, (await form_of(request)).get("csrf")):
        return html_page("Forbidden", tag("p", "The form's token does not match."), status=403)
    out = RedirectResponse("/ui/login", status_code=303)
    out.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    out.delete_cookie(TENANT_COOKIE, path="/ui", httponly=True, samesite="strict")
    return out


# -- the admin's tenant selector ----------------------------------------------------------------
@router.get("/tenant")
async def tenant_page(request: Request) -> Response:
    return await _tenant_selector(request)


async def _tenant_selector(request: Request, message: str = "", status: int = 200
                           ) -> Response:
    binding, key = await binding_of(request)
    if not binding.is_admin:
        raise Forbidden("only an admin key may switch tenant")
    import asyncio

    from ..families.keys import list_keys

    admin = await request.app.state.door.admin()
    known = sorted({k.tenant for k in await asyncio.to_thread(list_keys, admin,
                                                             include_revoked=False)
                    if k.tenant})
    body = [tag("p", message, class_="error") if message else None,
            tag("p", "An admin key may browse any tenant: choose one (tenants with keys are "
                     "listed; any name may be typed)."),
            tag("form", _csrf_field(key),
                tag("input", name="tenant", list="tenants", size="30", required=True,
                    value=request.cookies.get(TENANT_COOKIE) or ""),
                tag("datalist", [tag("option", value=t) for t in known], id="tenants"), " ",
                tag("button", "Browse", type="submit"), method="post", action="/ui/tenant"),
            tag("ul", [tag("li", text(t)) for t in known])]
    return html_page("Choose a tenant", body, status=status,
                     nav=_nav(binding, key, request.cookies.get(TENANT_COOKIE)))


@router.post("/tenant")
async def choose_tenant(request: Request) -> Response:
    binding, key = await binding_of(request)
    form = await form_of(request)
    if not check_csrf(key, form.get("csrf")):
        return html_page("Forbidden", tag("p", "The form's token does not match."), status=403)
    if not binding.is_admin:
        raise Forbidden("only an admin key may switch tenant")
    from ..core import validate

    tenant = validate.name(form.get("tenant", "").strip(), "tenant")
    out = RedirectResponse("/ui/", status_code=303)
    out.set_cookie(TENANT_COOKIE, tenant, httponly=True, samesite="strict", path="/ui",
                   secure=request.url.scheme == "https")
    return out


# -- 1. subjects --------------------------------------------------------------------------------
@router.get("/")
async def subjects_page(request: Request) -> Response:
    async with _context(request) as ctx:
        rows = await _rows(ctx.store, "ui_subject_counts", {"filter": Jsonb(Filter().to_json())})
        by: dict[str, dict[str, Any]] = {}
        for r in rows:
            entry = by.setdefault(r["subject"], {"total": 0, "kind": {}, "category": {}})
            n = int(r["n"])
            entry["total"] += n
            entry["kind"][r["kind"]] = entry["kind"].get(r["kind"], 0) + n
            entry["category"][r["category"]] = entry["category"].get(r["category"], 0) + n
        table = _table(["Subject", "Memories", "By kind", "By category"], [
            [tag("a", text(s), href="/ui/subjects/" + _q(s)), e["total"], _counts(e["kind"]),
             _counts(e["category"])] for s, e in sorted(by.items())])
        return ctx.page("Subjects", table if by else tag("p", "No memories yet."))


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


@router.get("/subjects/{subject}")
async def subject_page(request: Request, subject: str) -> Response:
    async with _context(request) as ctx:
        summary = await ctx.store.subjects.summary(subject=subject, k=10)
        document_ = await ctx.store.profile(subject)
        items = profile_items(document_)
        body = [
            tag("p", f"{summary['total']} current memories. By kind: ",
                _counts(summary["by_kind"]), ". By category: ",
                _counts(summary["by_category"]), "."),
            tag("p", tag("a", "All of this subject's memories",
                         href="/ui/memories?" + urlencode({"subject": subject}))),
            tag("h2", "Profile"),
            _table(["Section", "Item", "Source"],
                   [[label, text(content), _mem_link(mid, "memory") if mid else ""]
                    for label, content, mid in items]) if items
            else tag("p", "The profile is empty.", class_="muted"),
            tag("h2", "Most important"),
            _table(["Kind", "Category", "Importance", "Content"],
                   [[t["kind"], t["category"], t["importance"],
                     _mem_link(t["id"], text(t["content"]))] for t in summary["top"]]),
        ]
        return ctx.page(f"Subject {subject}", body)


# -- 2. memory list -----------------------------------------------------------------------------
_LIST_FIELDS = ("subject", "kind", "category", "uri_prefix", "tags", "status", "after", "before")


@router.get("/memories")
async def memories_page(request: Request) -> Response:
    args = {f: (request.query_params.get(f) or "").strip() for f in _LIST_FIELDS}
    try:
        page = max(int(request.query_params.get("page") or 1), 1)
    except ValueError:
        raise InvalidInput("page must be a whole number") from None
    async with _context(request) as ctx:
        conditions: dict[str, Any] = {
            "subject": args["subject"] or None, "kind": args["kind"] or None,
            "category": args["category"] or None, "uri_prefix": args["uri_prefix"] or None,
            "status": args["status"] or None,
            "tags": [t.strip() for t in args["tags"].split(",") if t.strip()] or None,
            "created_after": args["after"] or None, "created_before": args["before"] or None}
        found = await ctx.store.list({k: v for k, v in conditions.items() if v is not None},
                                     limit=PAGE + 1, offset=(page - 1) * PAGE)
        more = len(found) > PAGE
        found = found[:PAGE]
        form = tag("form", [tag("label", f.replace("_", " ") + " ",
                                tag("input", name=f, value=args[f], size="12",
                                    type="date" if f in ("after", "before") else "text"),
                                " ") for f in _LIST_FIELDS],
                   tag("button", "Filter", type="submit"), method="get", action="/ui/memories")
        table = _table(["Created", "Subject", "Kind", "Category", "Status", "Tags", "Content"],
                       [[m.created_at.strftime("%Y-%m-%d %H:%M"), text(m.subject),
                         m.kind.value, m.category.value, m.status, ", ".join(m.tags),
                         _mem_link(m.id, text(m.content))] for m in found])
        keep = {k: v for k, v in args.items() if v}
        pager = [tag("a", "← newer", href="/ui/memories?" + urlencode({**keep, "page": page - 1}))
                 if page > 1 else None, " ", tag("span", f"page {page}"), " ",
                 tag("a", "older →", href="/ui/memories?" + urlencode({**keep, "page": page + 1}))
                 if more else None]
        return ctx.page("Memories", [form, table if found else tag("p", "No memories match."),
                                     tag("p", pager)])


# -- 3. search -----------------------------------------------------------------------------------
@router.get("/search")
async def search_page(request: Request) -> Response:
    query = (request.query_params.get("q") or "").strip()
    async with _context(request) as ctx:
        form = tag("form", tag("input", name="q", value=query, size="60", autofocus=True), " ",
                   tag("button", "Search", type="submit"), method="get", action="/ui/search")
        if not query:
            return ctx.page("Search", form)
        results = await ctx.store.search(query, 10, explain=True)
        rows = [[hit.rank, _num(hit.score), _details_table(hit.details or {}),
                 _mem_link(hit.memory.id, text(hit.memory.content))] for hit in results]
        body = [form, _table(["Rank", "Score", "Details (fused score × multiplier)", "Memory"],
                             rows) if rows else tag("p", "Nothing found."),
                tag("h2", "Plan"),
                _raw("the plan as JSON (SQL, parameters, options, timings)",
                     results.explain or {})]
        return ctx.page(f"Search: {query}", body)


_ROUTES = (("vector", "vector"), ("bm25", "BM25"), ("exact", "exact"), ("graph", "graph"),
           ("hybrid", "hybrid"))
_LABELS = {"fused": "fused", "multiplier": "multiplier", "mmr_score": "MMR score",
           "graph_hops": "graph hops", "graph_entities": "graph entities"}


def _num(value: Any) -> str:
    """A number for people: floats to 4 significant digits (1.333, 0.03279), ints as they
    are."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def _details_table(details: dict[str, Any]) -> Markup:
    """A hit's details as a two-column table (each route's rank and score, the fused score,
    the multiplier, ...), numbers rounded; the raw JSON below it, collapsed."""
    rows: list[list[Any]] = []
    seen = set()
    for key, label in _ROUTES:
        for part in ("rank", "score"):
            name = f"{key}_{part}"
            if details.get(name) is not None:
                rows.append([f"{label} {part}", _num(details[name])])
            seen.add(name)
    for key, value in details.items():
        if key in seen or value is None:
            continue
        label = _LABELS.get(key, key.replace("_", " "))
        shown = _num(value) if isinstance(value, (int, float)) else (
            value if isinstance(value, str) else
            json.dumps(jsonable(_rounded(value)), ensure_ascii=False, default=str))
        rows.append([label, shown])
    return Markup(tag("table", [tag("tr", tag("th", label), tag("td", value))
                                for label, value in rows], class_="details")
                  + _raw("raw", details))


def _raw(summary: str, value: Any) -> Markup:
    """``value`` as JSON in a collapsed ``<details>`` block."""
    return tag("details", tag("summary", summary), _pre(value))


# -- 4. one memory ------------------------------------------------------------------------------
@router.get("/memories/{ref:path}")
async def memory_page(request: Request, ref: str) -> Response:
    if ref.startswith("mem:/") and not ref.startswith("mem://"):
        ref = "mem://" + ref[len("mem:/"):]
    async with _context(request) as ctx:
        memory = await ctx.store.get(ref)
        history = await ctx.store.history(memory.id)
        entities = await _rows(ctx.store, "ui_memory_entities", {"id": memory.id})
        chain = await _versions(ctx.store, memory)
        m = memory
        fields = [["URI", m.uri], ["Subject", text(m.subject)], ["Kind", m.kind.value],
                  ["Category", m.category.value], ["Status", m.status],
                  ["Version", m.version], ["Importance", m.importance],
                  ["Confidence", m.confidence], ["Tags", ", ".join(m.tags)],
                  ["Source", f"{m.source_type.value} {m.source_id or ''}"],
                  ["Created by", _created_by(m, history)],
                  ["Created", m.created_at.isoformat()],
                  ["Valid", f"{m.valid_from.isoformat()} → "
                            f"{m.valid_to.isoformat() if m.valid_to else 'now'}"],
                  ["Expires", m.expires_at.isoformat() if m.expires_at else "never"],
                  ["Uses", m.access_count]]
        timeline = tag("ol", [tag("li", tag("b", h.at.strftime("%Y-%m-%d %H:%M:%S")), " ",
                                      h.op, f" by {h.actor}" if h.actor else "",
                                      f" ({h.reason})" if h.reason else "", ": ",
                                      text((h.after or h.before or {}).get("content", "")),
                                      f" (version {(h.after or h.before or {}).get('version')})")
                               for h in history], class_="timeline")
        body = [tag("p", text(m.content, "span"), style="font-size:1.2em"),
                await _percept(ctx.store, m),
                _table(["Field", "Value"], fields),
                tag("h2", "Versions (the supersede chain)"),
                tag("ol", [tag("li", tag("b", c.valid_from.strftime("%Y-%m-%d %H:%M:%S")),
                               " → ", c.valid_to.strftime("%Y-%m-%d %H:%M:%S")
                               if c.valid_to else "now", ": ",
                               tag("b", text(c.content)) if c.id == m.id
                               else _mem_link(c.id, text(c.content)))
                        for c in chain], class_="timeline"),
                tag("h2", "History"), timeline,
                tag("h2", "Entities"),
                tag("ul", [tag("li", tag("a", text(e["name"]),
                                         href="/ui/graph?" + urlencode({"entity": e["name"]})),
                               f" ({e['type']})") for e in entities])
                if entities else tag("p", "No entity links.", class_="muted"),
                tag("h2", "Metadata"), _pre(m.metadata)]
        return ctx.page("Memory", body)


async def _percept(store: Any, memory: Any) -> Markup:
    """A perceptual memory's image: its thumbnail (inline, a data: URI the page's CSP
    allows), the text found in it, its caption and what the file was; nothing for others."""
    if memory.modality is None:
        return Markup("")
    try:
        row = await store.percepts.get(memory.id)
        thumb = await store.percepts.thumbnail(memory.id)
    except NotFound:
        return tag("p", "The image's file row is gone.", class_="muted")
    src = "data:image/jpeg;base64," + base64.b64encode(thumb).decode("ascii")
    place = (f"{row['latitude']:.5f}, {row['longitude']:.5f}"
             if row["latitude"] is not None else "")
    facts = [["File", f"{row['mime']}, {row['width']}×{row['height']} px, "
                      f"{row['size_bytes']} bytes"],
             ["Text found in it (OCR)", text(row["ocr_text"] or "(none)", "pre")],
             ["Caption", text(row["caption"] or "(none)")],
             ["Taken", row["taken_at"].isoformat() if row["taken_at"] else ""],
             ["Place", place], ["sha256", row["sha256"]], ["Reference", row["ref"] or ""]]
    return tag("div", tag("h2", f"Image ({row['modality']})"),
               tag("img", src=src, alt="thumbnail of the image", class_="thumb"),
               _table(["", ""], facts))


def _created_by(memory: Any, history: list[Any]) -> str:
    """The memory's ``created_by``; when empty (written before writes defaulted it to the
    actor), the actor of its first history entry, saying so; else "unknown"."""
    if memory.created_by:
        return str(memory.created_by)
    first = next((h for h in sorted(history, key=lambda h: (h.at, h.id)) if h.actor), None)
    return f"{first.actor} (from history)" if first is not None else "unknown"


async def _versions(store: Any, memory: Any, most: int = 20) -> list[Any]:
    """The memory's supersede chain, oldest first: the ones it replaced, it, its successors."""
    before: list[Any] = []
    current = memory
    while len(before) < most:
        rows = await _rows(store, "ui_superseded_by", {"id": current.id})
        if not rows:
            break
        try:
            current = await store.get(rows[0]["id"])
        except MemdbError:
            break
        before.append(current)
    after: list[Any] = []
    nxt = memory.superseded_by
    while nxt is not None and len(after) < most:
        try:
            later = await store.get(nxt)
        except MemdbError:
            break
        after.append(later)
        nxt = later.superseded_by
    return [*reversed(before), memory, *after]


# -- 5. review queue and maintenance ----------------------------------------------------------
@router.get("/review")
async def review_page(request: Request) -> Response:
    status = request.query_params.get("status") or "pending"
    if status not in ("pending", "approved", "rejected", "all"):
        raise InvalidInput("status is one of pending, approved, rejected, all")
    async with _context(request) as ctx:
        items = await ctx.store.review.list(None if status == "all" else status, limit=200)
        rows = []
        for item in items:
            d = jsonable(item)
            actions = ""
            if d.get("status") == "pending":
                actions = Markup("".join(
                    tag("form", _csrf_field(ctx.key), tag("button", verb.capitalize(),
                                                          type="submit"),
                        method="post", action=f"/ui/review/{d['id']}/{verb}", class_="inline")
                    for verb in ("approve", "reject")))
            rows.append([text(d.get("subject", "")), text(d.get("content", "")),
                         d.get("status", ""), d.get("created_at", ""), actions])
        links = tag("p", [tag("a", s, href=f"/ui/review?status={s}") for s in
                          ("pending", "approved", "rejected", "all")], " ")
        return ctx.page("Review queue", [links, _table(
            ["Subject", "Proposed", "Status", "Proposed at", ""], rows)
            if rows else tag("p", f"No {status} entries.")])


@router.post("/review/{review_id}/{verb}")
async def review_decide(request: Request, review_id: str, verb: str) -> Response:
    if verb not in ("approve", "reject"):
        return html_page("Not found", tag("p", "No such action."), status=404)
    form = await form_of(request)
    async with _context(request) as ctx:
        if not check_csrf(ctx.key, form.get("csrf")):
            return ctx.page("Forbidden", tag("p", "The form's token does not match: reload "
                                                  "the page and try again."), status=403)
        decided_by = f"ui:{ctx.binding.name or ctx.binding.key_id}"
        if verb == "approve":
            await ctx.store.review.approve(review_id, decided_by=decided_by)
        else:
            await ctx.store.review.reject(review_id, decided_by=decided_by)
        return RedirectResponse("/ui/review", status_code=303)


@router.get("/maintenance")
async def maintenance_page(request: Request) -> Response:
    async with _context(request) as ctx:
        m = ctx.store.maintenance
        result = await m.run(dry_run=True)
        why: list[tuple[str, Any]] = [
            ("importance below 0.1", await m.forget_by_importance(dry_run=True, limit=50)),
            ("older than 180 days and never used", await m.forget_by_age(dry_run=True,
                                                                          limit=50)),
            ("over 100 working memories in its session", await m.forget_by_capacity(
                dry_run=True, limit=50))]
        hypotheses = await m.decay_hypotheses(dry_run=True, limit=50)
        why.append(("an unconfirmed hypothesis whose confidence decays below 0.2",
                    [h.id for h in hypotheses if h.action == "forget"]))
        rows = []
        for reason, ids in why:
            for mid in ids:
                try:
                    content = (await ctx.store.get(mid)).content
                except MemdbError:
                    continue
                rows.append([_mem_link(mid, text(content)), reason])
        expiring = await _rows(ctx.store, "ui_expiring", {
            "filter": Jsonb(Filter().to_json()), "days": 30, "limit": 100})
        body = [tag("p", "A dry run of one maintenance pass: what it would purge, forget or "
                         "decay, and why (nothing is changed). Each forgetting step below "
                         "with its default settings.", class_="muted"),
                tag("h2", "Would be forgotten"),
                _table(["Memory", "Why"], rows) if rows
                else tag("p", "Nothing would be forgotten.", class_="muted"),
                tag("h2", "Expiring in the next 30 days"),
                _table(["Expires", "Subject", "Memory"],
                       [[r["expires_at"].strftime("%Y-%m-%d %H:%M"), text(r["subject"]),
                         _mem_link(r["id"], text(r["content"]))] for r in expiring])
                if expiring else tag("p", "Nothing expires in the next 30 days.",
                                     class_="muted"),
                tag("h2", "The pass's counts"), _pre(result)]
        return ctx.page("Maintenance (dry run)", body)


# -- 6. entity graph ------------------------------------------------------------------------------
@router.get("/graph")
async def graph_page(request: Request) -> Response:
    entity = (request.query_params.get("entity") or "").strip()
    try:
        hops = min(max(int(request.query_params.get("hops") or 1), 1), 4)
    except ValueError:
        raise InvalidInput("hops must be a whole number from 1 to 4") from None
    async with _context(request) as ctx:
        form = tag("form", tag("input", name="entity", value=entity, size="40"), " hops ",
                   tag("input", name="hops", value=str(hops), size="2"), " ",
                   tag("button", "Show", type="submit"), method="get", action="/ui/graph")
        if not entity:
            return ctx.page("Entity graph", [form, await _graph_hint(ctx.store)])
        try:
            view = await ctx.store.graph.neighbors(entity, hops=hops, limit=100)
        except NotFound:
            return ctx.page(f"Entity graph: {entity}",
                            [form, await _graph_hint(ctx.store, entity)])
        rels = list(view.relations)
        if not rels:
            return ctx.page(f"Entity graph: {entity}",
                            [form, await _unrelated(ctx.store, entity, view)])
        body = [form, _svg(entity, rels),
                _table(["Depth", "From", "Relation", "To", "Evidence"],
                       [[r.depth, text(r.source), r.type, text(r.target),
                         _mem_link(r.memory_id, "memory")] for r in rels])]
        return ctx.page(f"Entity graph: {entity}", body)


_HOW_TO_LINK = ("extract entities and relations from the memories with `memdb graph link` "
                "(add --heuristic to use no LLM), `store.graph.link()` in Python, or "
                "POST /v1/graph/link over HTTP; then come back here.")


async def _graph_hint(store: Any, entity: str | None = None, most: int = 12) -> Markup:
    """What to do on the Graph page: with no graph, how to link one; else (and after an
    unknown name) a few of the tenant's entities, the most mentioned first."""
    sample = await _rows(store, "ui_entity_sample", {"limit": most})
    missing = (tag("p", "No entity named ", text(entity, "b"), ".", class_="error")
               if entity else None)
    if not sample:
        return Markup(esc(missing or "") + tag(
            "p", "No entity graph has been linked in this tenant yet: " + _HOW_TO_LINK))
    total = int(sample[0]["total"])
    names = [tag("a", text(r["name"]), href="/ui/graph?" + urlencode({"entity": r["name"]}))
             for r in sample]
    return Markup(esc(missing or "") + tag(
        "p", f"{total} entities in this tenant" +
        (f"; the {len(sample)} most mentioned" if total > len(sample) else "") + ": ",
        Markup(", ".join(names)), "."))


async def _unrelated(store: Any, entity: str, view: Any) -> Markup:
    """An entity the graph knows but no relation links: where it is named."""
    ids = [e["id"] for e in view.entities]
    named = await _rows(store, "ui_entity_memories", {"ids": ids, "limit": 50})
    return Markup(
        tag("p", text(entity, "b"), " is in the entity graph (",
            ", ".join(f"{e['type']}, {e['mentions']} mentions" for e in view.entities),
            ") but no relation links it yet: relations come from memories that say how two "
            "entities are related (such as “Alice works with Priya”), when they are "
            "linked.")
        + (tag("h2", "Memories that name it")
           + tag("ul", [tag("li", _mem_link(r["id"], text(r["content"]))) for r in named])
           if named else ""))


def _svg(center: str, relations: list[Any]) -> Markup:
    """Rings by distance: the entity asked about in the middle, its neighbours around it, the
    ones two hops away on the next ring (a breadth-first walk of the relations)."""
    low = center.lower()
    names = list(dict.fromkeys(n for r in relations for n in (r.source, r.target)))
    middle = [n for n in names if n.lower() == low] or names[:1]
    depth = {n: 0 for n in middle}
    frontier = list(middle)
    while frontier:
        nxt = []
        for r in relations:
            for a, b in ((r.source, r.target), (r.target, r.source)):
                if a in frontier and b not in depth:
                    depth[b] = depth[a] + 1
                    nxt.append(b)
        frontier = nxt
    for n in names:
        depth.setdefault(n, max(depth.values()) + 1)
    w, h = 760, 560
    pos: dict[str, tuple[float, float]] = {}
    for d in sorted(set(depth.values())):
        ring = [n for n in names if depth[n] == d]
        for i, n in enumerate(ring):
            if d == 0:
                pos[n] = (w / 2 + 40 * i, h / 2)
                continue
            a = -math.pi / 2 + 0.7 * d + 2 * math.pi * i / len(ring)
            pos[n] = (w / 2 + 120 * d * math.cos(a) * 1.3, h / 2 + 120 * d * math.sin(a))
    parts = []
    for r in relations:
        (x1, y1), (x2, y2) = pos[r.source], pos[r.target]
        parts.append(tag("line", x1=f"{x1:.0f}", y1=f"{y1:.0f}", x2=f"{x2:.0f}",
                         y2=f"{y2:.0f}", stroke="#829ab1", stroke_width="2"))
        parts.append(tag("text", r.type, x=f"{(x1 + x2) / 2:.0f}", y=f"{(y1 + y2) / 2 - 4:.0f}",
                         font_size="11", fill="#486581", text_anchor="middle"))
    for n, (x, y) in pos.items():
        parts.append(tag("circle", cx=f"{x:.0f}", cy=f"{y:.0f}", r="8",
                         fill="#d64545" if n in middle else "#243b53"))
        parts.append(tag("text", n, x=f"{x:.0f}", y=f"{y - 12:.0f}", font_size="13",
                         text_anchor="middle"))
    return tag("svg", parts, xmlns="http://www.w3.org/2000/svg", width=str(w), height=str(h),
               viewBox=f"0 0 {w} {h}", role="img", aria_label=f"graph around {center}")


# -- errors ------------------------------------------------------------------------------------
async def _login_needed(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginNeeded)
    if request.method == "GET" and not exc.message:
        return RedirectResponse("/ui/login", status_code=303)
    return _login_form(exc.message or "Log in first.", 401)


async def _choose_tenant(request: Request, exc: Exception) -> Response:
    return await _tenant_selector(request)


async def _too_many(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TooMany)
    return html_page("Too many requests", tag("p", "Too many requests: wait and retry."),
                     status=429, headers={"Retry-After": exc.retry_after})


def install(app: Any) -> None:
    """Mount the pages on the door's FastAPI app (memdb errors of /ui paths become HTML)."""
    app.include_router(router)
    app.add_exception_handler(LoginNeeded, _login_needed)
    app.add_exception_handler(TooMany, _too_many)
    app.add_exception_handler(ChooseTenant, _choose_tenant)
    previous = app.exception_handlers.get(MemdbError)

    async def memdb_error(request: Request, exc: Exception) -> Response:
        if not request.url.path.startswith("/ui") and previous is not None:
            return await previous(request, exc)
        assert isinstance(exc, MemdbError)
        status = status_of(exc)
        title = {404: "Not found", 403: "Forbidden", 400: "Bad request"}.get(status, "Error")
        from ..core.masking import redact

        return html_page(title, [tag("p", redact(str(exc)) if status < 500
                                     else type(exc).__name__, class_="error"),
                                 tag("p", tag("a", "Back to the memory browser", href="/ui/"))],
                         status=status)

    app.add_exception_handler(MemdbError, memdb_error)
