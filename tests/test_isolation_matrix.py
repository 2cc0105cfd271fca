"""The isolation matrix: what an application login may do to each table of schema memdb.

For EVERY table of schema memdb (found in pg_catalog, so a table a later revision adds is
probed as well, and fails until it is seeded and given its expected row below), a real,
separate LOGIN role granted memdb_app (tests/app_login.py; never the superuser with SET ROLE)
probes read, insert, update and delete with (a) memdb.tenant set, (b) memdb.tenant and
memdb.subject set, (c) neither. Data is seeded as the admin (MemoryStore and SQL functions) in
two tenants with two subjects each. Every probe runs in a transaction that is rolled back.

Each cell is one code per setting, "a / b / c":
  T    exactly the caller's tenant's rows: a read returns all of them and no other; an insert
       of such a row passes privileges and policies while one of another tenant is refused; an
       update or delete reaches every one of them and no other row, and an update cannot move
       a row to another tenant;
  S    the same for the caller's tenant and subject (another subject of the same tenant is as
       foreign as another tenant; an update cannot move a row to another subject). T in
       setting b: the subject did not narrow it (a table without a subject column);
  0    nothing: no row visible or reached, every inserted row refused by the policy;
  all  every row, whatever is set (the global registry of embedding models);
  ✗    permission denied, whatever is set (the role has no privilege for the operation).
An insert copies one of the caller's rows with fresh keys; it passes when it is written, or
stopped only by a duplicate key (PostgreSQL checks privileges and policies first: so for
memory_usage and entity_mentions, whose keys are only references and the scope).
EXPECTED is the threat model's table; docs/isolation.md ("Isolation and threat model") shows
the same table, rendered by render_matrix() (checked below). With MEMDB_ISOLATION_MATRIX=<path> the
observed matrix is also written there as Markdown (and printed; pytest -s shows it).
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from memdb import MemoryStore
from memdb.core import sql as sql_files
from memdb.write.ingest import TextSource
from tests.app_login import app_login
from tests.image_factory import text_image

ROOT = Path(__file__).resolve().parent.parent
TENANTS = ("acme", "globex")
SUBJECTS = ("alice", "bob")
ME = ("acme", "alice")  # the probing login's tenant (and subject, in setting b)
SETTINGS = ("tenant", "subject", "neither")
OPS = ("read", "insert", "update", "delete")

OWN = {"read": "T / S / 0", "insert": "T / S / 0", "update": "T / S / 0", "delete": "T / S / 0"}
DENIED = "✗ / ✗ / ✗"
# table -> op -> "a / b / c" (see the module docstring); docs/isolation.md mirrors this table
EXPECTED: dict[str, dict[str, str]] = {
    "memories": OWN,
    "memory_history": {"read": "T / S / 0", "insert": "T / S / 0",
                       "update": DENIED, "delete": DENIED},
    "memory_usage": OWN,
    "bm25_terms": dict.fromkeys(OPS, DENIED),
    "bm25_stats": dict.fromkeys(OPS, DENIED),
    "embedding_spaces": {"read": "all / all / all", "insert": DENIED,
                         "update": DENIED, "delete": DENIED},
    "review_queue": OWN,
    "sediment_runs": OWN,
    "documents": OWN,
    "document_chunks": OWN,
    "sessions": OWN,
    "session_messages": OWN,
    "retrieval_traces": {"read": "T / S / 0", "insert": "T / S / 0",
                         "update": DENIED, "delete": "T / S / 0"},
    "entities": OWN,
    "entity_mentions": OWN,
    "entity_relations": OWN,
    "item_vectors": OWN,
    "percepts": OWN,
    # revision 0021: the job queue, per tenant; 0024: per subject, the one its payload names
    # (a generated column); jobs are never deleted by the application role (they finish or are
    # cancelled)
    "jobs": {"read": "T / S / 0", "insert": "T / S / 0", "update": "T / S / 0",
             "delete": DENIED},
    # revision 0023: schedules of recurring jobs, per tenant; a tenant removes its own
    "job_schedules": {"read": "T / T / 0", "insert": "T / T / 0", "update": "T / T / 0",
                      "delete": "T / T / 0"},
    "api_keys": dict.fromkeys(OPS, DENIED),  # revision 0012: only the admin keeps keys
}
# grouped as in docs/isolation.md: tables whose rows are all OWN share one line
_GROUPS = [
    ("memories", "memory_usage", "review_queue", "sediment_runs", "documents",
     "document_chunks", "sessions", "session_messages", "entities", "entity_mentions",
     "entity_relations", "item_vectors", "percepts"),
    ("memory_history",), ("retrieval_traces",), ("jobs",), ("job_schedules",),
    ("bm25_terms", "bm25_stats", "api_keys"),
    ("embedding_spaces",),
]


def render_matrix(matrix: dict[str, dict[str, str]], grouped: bool = True) -> str:
    """The matrix as a Markdown table (grouped: tables with identical rows share a line)."""
    groups = _GROUPS if grouped else [(t,) for t in sorted(matrix)]
    lines = ["| table | read | insert | update | delete |", "| --- | --- | --- | --- | --- |"]
    for group in groups:
        row = matrix[group[0]]
        assert all(matrix[t] == row for t in group), group
        names = ", ".join(f"`{t}`" for t in group)
        lines.append(f"| {names} | " + " | ".join(row[op] for op in OPS) + " |")
    return "\n".join(lines) + "\n"


# -- seeding (as the admin) -------------------------------------------------------------------
def _seed(dsn: str, embedder) -> None:
    texts = {"alice": ["Alice works with Bob on the billing service.", "张三和李四是同事。"],
             "bob": ["Bob works with Carol on the search team.", "王五和赵六是同事。"]}
    for tenant in TENANTS:
        for subject in SUBJECTS:
            with MemoryStore(dsn, tenant=tenant, subject=subject, embedder=embedder,
                             gate=None) as store:
                ids = [r.id for r in store.add_many(texts[subject])]        # memories, history
                store.mark_used(ids)                                        # memory_usage
                store.sessions.append("s1", "user", f"{subject} says hello 你好", llm=None)
                store.recall(texts[subject][0], k=2)                        # retrieval_traces
                store.documents.ingest([TextSource(id=f"kb:{subject}", text=f"# {subject}\n\nNotes "
                                                   f"about {subject}'s project 项目笔记.")])
                store.graph.link(ids, llm=None)                          # the entity graph
                from memdb.integrations.langgraph import MemdbStore

                MemdbStore(store=store).put(("kb",), "k", {"t": f"{subject} 笔记"},
                                            index=["t"])                 # item_vectors
                store.jobs.enqueue("test.seed", {"subject": subject})        # jobs
                store.jobs.schedule("test.seed", every=3600)                 # job_schedules
                store.perceive(text_image(f"{subject} 笔记", lang="zh", size=24),  # percepts
                               ocr="none", caption=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for tenant in TENANTS:
            for subject in SUBJECTS:
                conn.execute(sql_files.query("review_propose"), {
                    "tenant": tenant, "subject": subject, "kind": "procedural",
                    "category": "system", "content": f"{subject} always reviews deploys",
                    "reason": "rule", "source_ids": []})
                conn.execute(sql_files.query("sediment_run_insert"), {
                    "tenant": tenant, "subject": subject, "source_hash": subject.encode(),
                    "written": Jsonb({})})
    from memdb.families.keys import create_key

    for tenant in TENANTS:                                                  # api_keys
        create_key(dsn, tenant=tenant, subject=SUBJECTS[0], name=f"{tenant} key")


# -- the catalog ------------------------------------------------------------------------------
def _tables(conn: psycopg.Connection) -> dict[str, dict]:
    """Every table of schema memdb: its columns, what an insert may copy from a row, and which
    copied columns get a fresh value so that the copy is no duplicate."""
    out: dict[str, dict] = {}
    for name, column, type_, identity, generated, default, unique, fk in conn.execute("""
            SELECT c.relname, a.attname, format_type(a.atttypid, NULL), a.attidentity,
                   a.attgenerated, pg_get_expr(d.adbin, d.adrelid),
                   EXISTS (SELECT 1 FROM pg_index i
                           WHERE i.indrelid = c.oid AND i.indisunique
                             AND a.attnum = ANY (i.indkey)),
                   EXISTS (SELECT 1 FROM pg_constraint f
                           WHERE f.conrelid = c.oid AND f.contype = 'f'
                             AND a.attnum = ANY (f.conkey))
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
            WHERE n.nspname = 'memdb' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
            ORDER BY c.relname, a.attnum""").fetchall():
        info = out.setdefault(name, {"columns": [], "copy": [], "fresh": {}})
        info["columns"].append(column)
        # an insert copies a row but lets identities, generated columns and new ids (random or
        # time-ordered) be new
        if identity or generated or any(f in (default or "") for f in ("_uuid()", "uuidv7()")):
            continue
        info["copy"].append(column)
        # keys other than the scope columns and references get fresh values (and content, from
        # which memories' dedup key is computed)
        if (unique and not fk and column not in ("tenant", "subject")) or column == "content":
            info["fresh"][column] = type_
    return out


def _fresh(info: dict, row: dict, keep: str | None = None) -> dict:
    """``row`` with new values in its key columns (see _tables), but ``keep``."""
    out = dict(row)
    for column, type_ in info["fresh"].items():
        if column == keep:
            continue
        value = out.get(column)
        if value is None:
            continue
        if type_ == "text":
            out[column] = f"{value}_probe"
        elif type_ == "bytea":
            out[column] = f"{value}ff"
        elif type_ in ("integer", "bigint", "smallint"):
            out[column] = value + 100_000
        elif type_ == "date":
            out[column] = "1999-12-31"
    return out


def _has(info: dict, column: str) -> bool:
    return column in info["columns"]


def _scope_sql(info: dict, tenant: str | None, subject: str | None) -> tuple[sql.Composable, list]:
    conds, params = [], []
    if tenant is not None and _has(info, "tenant"):
        conds.append(sql.SQL("tenant = %s"))
        params.append(tenant)
    if subject is not None and _has(info, "subject"):
        conds.append(sql.SQL("subject = %s"))
        params.append(subject)
    return (sql.SQL(" AND ").join(conds) if conds else sql.SQL("true")), params


def _keys(info: dict, rows) -> set:
    """Rows as comparable keys (their ctid is stable within the rolled-back probe)."""
    return {tuple(r) for r in rows}


# -- probes (as the login) --------------------------------------------------------------------
def _set(conn: psycopg.Connection, setting: str) -> None:
    conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                 " set_config('memdb.subject', %s, false)",
                 {"tenant": (ME[0], ""), "subject": ME, "neither": ("", "")}[setting])


def _try(conn: psycopg.Connection, query, params=()) -> tuple[str, list]:
    """('ok', rows) | ('denied', []) | ('refused', []) | ('constraint', []), rolled back."""
    try:
        with conn.transaction(force_rollback=True):
            cur = conn.execute(query, params)
            return "ok", (cur.fetchall() if cur.description else [])
    except psycopg.errors.InsufficientPrivilege as exc:
        primary = exc.diag.message_primary or ""
        return ("refused" if "row-level security" in primary else "denied"), []
    except psycopg.errors.IntegrityError:
        # privileges and row-level security are checked before constraints and uniqueness:
        # this row passed both, only the copy's duplicate key (or similar) stopped it
        return "constraint", []


def _code(setting: str, info: dict) -> str:
    """The code of a probe that reached exactly the rows of the setting's scope: with a
    subject set, a table without a subject column is reached tenant-wide (T, not S)."""
    if setting == "subject" and _has(info, "subject"):
        return "S"
    return "T" if setting in ("tenant", "subject") else "0"


def _probe(conn, admin, table: str, info: dict, setting: str) -> dict[str, str]:
    t = sql.Identifier("memdb", table)
    tenant = ME[0] if setting != "neither" else None
    subject = ME[1] if setting == "subject" else None
    key_cols = [c for c in ("tenant", "subject") if _has(info, c)] or ["ctid"]
    keys = sql.SQL(", ").join(map(sql.Identifier, key_cols)) if key_cols != ["ctid"] \
        else sql.SQL("ctid::text")
    everything = _keys(info, admin.execute(sql.SQL("SELECT {} FROM {}").format(keys, t)))
    where, params = _scope_sql(info, tenant, subject)
    mine = _keys(info, admin.execute(sql.SQL("SELECT {} FROM {} WHERE {}").format(keys, t, where),
                                     params)) if setting != "neither" else set()
    n_mine = 0 if setting == "neither" else admin.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE {}").format(t, where), params).fetchone()[0]
    global_table = not _has(info, "tenant")
    out: dict[str, str] = {}

    # read
    status, rows = _try(conn, sql.SQL("SELECT {} FROM {}").format(keys, t))
    got = _keys(info, rows)
    if status == "denied":
        out["read"] = "✗"
    elif global_table:
        out["read"] = "all" if got == everything and len(rows) else ("0" if not rows else "some")
    elif not rows:
        out["read"] = "0"
    else:
        n_rows = len(rows)
        out["read"] = _code(setting, info) if got == mine and n_rows == n_mine else f"LEAK {got}"

    # insert: a copy of one of the caller's rows, and copies moved to another tenant / subject
    own_row = admin.execute(sql.SQL("SELECT to_jsonb(x) FROM {} x WHERE {} LIMIT 1").format(
        t, _scope_sql(info, ME[0], ME[1])[0]), _scope_sql(info, ME[0], ME[1])[1]).fetchone()
    assert own_row, f"memdb.{table} has no row of {ME} to copy"
    cols = sql.SQL(", ").join(map(sql.Identifier, info["copy"]))
    insert = sql.SQL("INSERT INTO {t} ({c}) SELECT {c} FROM jsonb_populate_record(NULL::{t}, %s)"
                     ).format(t=t, c=cols)
    # the copy with fresh keys; if a fresh value breaks a CHECK, the copies that keep one key
    own_status = "constraint"
    for keep in (None, *info["fresh"]):
        status = _try(conn, insert, (Jsonb(_fresh(info, own_row[0], keep)),))[0]
        if status != "constraint":
            own_status = status
            break
    foreign = []
    if _has(info, "tenant"):
        foreign.append({**own_row[0], "tenant": TENANTS[1]})
    if setting == "subject" and _has(info, "subject"):
        if "subject" in info["copy"]:
            foreign.append({**own_row[0], "subject": SUBJECTS[1]})
        else:  # generated from the payload (jobs): another subject's payload
            payload = {**own_row[0]["payload"], "subject": SUBJECTS[1]}
            foreign.append({**own_row[0], "payload": payload})
    foreign_status = {_try(conn, insert, (Jsonb(row),))[0] for row in foreign}
    if own_status == "denied":
        out["insert"] = "✗"
    elif global_table:
        out["insert"] = "all"
    elif own_status in ("ok", "constraint") and foreign_status == {"refused"}:
        out["insert"] = _code(setting, info)
    elif own_status == "refused" and foreign_status <= {"refused"}:
        out["insert"] = "0"
    else:
        out["insert"] = f"LEAK own={own_status} foreign={foreign_status}"

    # update (a no-op on every row it can reach) and delete: which rows they reach
    first = sql.Identifier(key_cols[0] if key_cols != ["ctid"] else info["columns"][0])
    for op, query in (
            ("update", sql.SQL("UPDATE {t} SET {c} = {c} RETURNING {k}").format(
                t=t, c=first, k=keys)),
            ("delete", sql.SQL("DELETE FROM {t} RETURNING {k}").format(t=t, k=keys))):
        status, rows = _try(conn, query)
        got = _keys(info, rows)
        if status == "denied":
            out[op] = "✗"
        elif status != "ok":
            out[op] = f"ERROR {status}"
        elif global_table:
            out[op] = "all" if got == everything else ("0" if not rows else "some")
        elif not rows:
            out[op] = "0"
        elif got == mine and len(rows) == n_mine:
            out[op] = _code(setting, info)
        else:
            out[op] = f"LEAK {got}"
    # and an update cannot move the caller's rows out of its scope
    if out["update"] in ("T", "S"):
        column = "tenant" if setting == "tenant" else "subject"
        if _has(info, column) and column not in info["copy"]:  # generated from the payload
            moved = _try(conn, sql.SQL("UPDATE {} SET payload = payload || %s").format(t),
                         (Jsonb({column: SUBJECTS[1]}),))[0]
        elif _has(info, column):
            moved = _try(conn, sql.SQL("UPDATE {} SET {} = %s").format(t, sql.Identifier(column)),
                         (TENANTS[1] if column == "tenant" else SUBJECTS[1],))[0]
            if moved != "refused":
                out["update"] = f"LEAK moved out of scope: {moved}"
    return out


def _observe(admin_dsn: str, login_dsn: str, set_role: bool) -> dict[str, dict[str, str]]:
    """{table: {op: "a / b / c"}} as the login sees it."""
    cells: dict[str, dict[str, list[str]]] = {}
    with psycopg.connect(admin_dsn, autocommit=True) as admin, \
            psycopg.connect(login_dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '5s'")
        if set_role:
            conn.execute("SET ROLE memdb_app")
        tables = _tables(admin)
        for setting in (*SETTINGS, "subject only"):
            if setting == "subject only":  # a subject without a tenant is no scope at all
                conn.execute("SELECT set_config('memdb.tenant', '', false),"
                             " set_config('memdb.subject', %s, false)", (ME[1],))
            else:
                _set(conn, setting)
            for table, info in tables.items():
                probe = _probe(conn, admin, table, info,
                               "neither" if setting == "subject only" else setting)
                for op in OPS:
                    cells.setdefault(table, {}).setdefault(op, []).append(probe[op])
    for table, ops in cells.items():
        for op, codes in ops.items():
            assert codes[3] == codes[2], (table, op, "subject only must equal neither", codes)
    return {table: {op: " / ".join(codes[:3]) for op, codes in ops.items()}
            for table, ops in cells.items()}


# -- the tests --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def seeded(module_db, embedder):
    _seed(module_db, embedder)
    return module_db


def test_every_table_is_seeded_in_both_tenants_and_subjects(seeded):
    """The matrix means something only where there are rows to leak: each table has rows in
    both tenants (and of both subjects where it has a subject column)."""
    with psycopg.connect(seeded) as conn:
        for table, info in _tables(conn).items():
            t = sql.Identifier("memdb", table)
            if not _has(info, "tenant"):
                assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(t)).fetchone()[0]
                continue
            for tenant in TENANTS:
                for subject in SUBJECTS if _has(info, "subject") else (None,):
                    where, params = _scope_sql(info, tenant, subject)
                    n = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(t, where),
                                     params).fetchone()[0]
                    assert n, f"seed memdb.{table} for {tenant}/{subject} in _seed()"


def test_every_table_has_an_expected_row(seeded):
    with psycopg.connect(seeded) as conn:
        assert set(_tables(conn)) == set(EXPECTED), (
            "a table was added or removed: give it its row in EXPECTED (and the threat model "
            "table of docs/isolation.md)")


@pytest.mark.parametrize("set_role", [False, True], ids=["login", "set_role_memdb_app"])
def test_the_isolation_matrix(seeded, set_role):
    with app_login(seeded) as login:
        observed = _observe(seeded, login, set_role)
    table = render_matrix(observed, grouped=False)
    print(f"\nisolation matrix ({'SET ROLE memdb_app' if set_role else 'the login itself'}):\n"
          + table)
    if os.environ.get("MEMDB_ISOLATION_MATRIX") and not set_role:
        Path(os.environ["MEMDB_ISOLATION_MATRIX"]).write_text(table, encoding="utf-8")
    assert observed == {t: EXPECTED.get(t) for t in observed}


def test_the_docs_mirror_the_expected_matrix():
    page = (ROOT / "docs" / "isolation.md").read_text(encoding="utf-8")
    section = page.split("# Isolation and threat model", 1)[1].split("\n## ", 1)[0]
    assert render_matrix(EXPECTED) in section, render_matrix(EXPECTED)
