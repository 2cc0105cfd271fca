"""The entity graph (memdb.families.graph, revision 0009) against the real embedded server:
extraction
(heuristic, and the LLM path through tests/canned_openai.py behind the real openai client),
linking, the graph route and its fusion with hybrid search, isolation, erasure and the CLI."""

from __future__ import annotations

import pytest

from memdb import MemoryStore
from memdb.core.errors import InvalidInput, NotFound
from memdb.core.llm import ChatLLM
from memdb.families._graph_extract import heuristic_graph, parse_graph_reply
from tests.canned_openai import CannedOpenAI, Reply, Status
from tests.cli_helpers import ok_json, run


def _edges(text: str) -> set[tuple[str, str, str]]:
    return {(r["from"], r["type"], r["to"]) for r in heuristic_graph(text).relations}


@pytest.mark.parametrize("text, edge", [
    ("张三和李四是同事。", ("张三", "works_with", "李四")),
    ("昨天张三跟李四一起工作了一整天", ("张三", "works_with", "李四")),
    ("王五是李四的经理", ("王五", "manages", "李四")),
    ("李四的领导是王五", ("王五", "manages", "李四")),
    ("这个项目使用 PostgreSQL 和 pgvector", ("项目", "uses", "pgvector")),
    ("我们这个项目用React开发", ("项目", "uses", "React")),
    ("赵六在阿里巴巴工作", ("赵六", "works_at", "阿里巴巴")),
    ("Alice works with Bob on the payments team.", ("Alice", "works_with", "Bob")),
    ("Alice and Bob are colleagues.", ("Alice", "works_with", "Bob")),
    ("Carol is Bob's manager.", ("Carol", "manages", "Bob")),
    ("Dave reports to Carol.", ("Carol", "manages", "Dave")),
    ("The project uses PostgreSQL and pgvector for storage.", ("project", "uses", "PostgreSQL")),
    ("Bob works at Acme Corp.", ("Bob", "works_at", "Acme Corp")),
])
def test_heuristic_relations(text, edge):
    assert edge in _edges(text)


def test_heuristic_names_and_non_names():
    names = {e["name"]: e["type"] for e in heuristic_graph(
        "王五负责支付系统的迁移。Project Apollo ships in May. 李四说他喜欢《三体》").entities}
    assert names.get("王五") == "person" and names.get("李四") == "person"
    assert "Project Apollo" in names and "三体" in names
    assert "May" not in names
    assert heuristic_graph("我很高兴的去了。The weather is nice.").entities == []
    assert heuristic_graph("我们用飞书沟通").relations == []  # nobody to name


def test_parse_graph_reply_is_strict():
    ok = parse_graph_reply('```json\n{"entities": [{"name": "李四", "type": "person"}, '
                           '{"name": "x", "type": "person"}, {"name": "Redis", "type": "db"}], '
                           '"relations": [{"from": "李四", "to": "Redis", "type": "Maintains", '
                           '"strength": 7}, {"from": "李四", "type": "uses"}]}\n```')
    assert ok.error is None and ok.path == "llm"
    assert [(e["name"], e["type"]) for e in ok.entities] == [("李四", "person"), ("Redis", "other")]
    assert ok.relations == [{"from": "李四", "to": "Redis", "type": "maintains", "strength": 0.5}]
    for bad in ("not json", '["a list"]', '{"facts": []}', '{"entities": [], "relations": 3}',
                'Sure! {"entities": []}'):
        assert parse_graph_reply(bad).error is not None, bad


# -- the database side -------------------------------------------------------------------------
def _add(store: MemoryStore, texts: list[str], subject: str = "u1") -> list[str]:
    return [str(r.id) for r in store.add_many([{"content": t, "subject": subject} for t in texts])]


def test_link_and_who_works_with_zh(store):
    ids = _add(store, ["张三和李四是同事。", "张三喜欢喝乌龙茶。", "今天天气很好。"])
    result = store.graph.link(llm=None)
    assert result.linked == 3 and result.paths == {"heuristic": 3} and result.relations == 1
    hits = store.graph.search("谁和李四一起工作？", routes=["graph"], subject="u1")
    assert hits[0].memory.id.hex == ids[0].replace("-", "")
    assert hits[0].details["graph_entities"] == ["李四", "张三"]
    assert hits[0].details["graph_hops"] == 0
    # one hop further: 张三's other memory is connected through the works_with edge
    assert ids[1] in {str(h.memory.id) for h in hits}
    assert ids[2] not in {str(h.memory.id) for h in hits}
    view = store.graph.neighbors("李四")
    assert [(r.source, r.type, r.target) for r in view.relations] == [
        ("张三", "works_with", "李四")]


def test_who_works_with_en_and_manager(store):
    ids = _add(store, ["Alice works with Bob on the payments team.", "Carol is Bob's manager.",
                       "Bob likes climbing on weekends."])
    store.graph.link(llm=None)
    hits = store.graph.search("who works with Bob?", routes=["graph"])
    assert {str(h.memory.id) for h in hits[:3]} == set(ids)
    assert hits[0].details["graph_hops"] == 0
    view = store.graph.neighbors("bob")  # normalized name
    assert {(r.source, r.type, r.target) for r in view.relations} == {
        ("Alice", "works_with", "Bob"), ("Carol", "manages", "Bob")}
    with pytest.raises(NotFound):
        store.graph.neighbors("Nobody")


def test_what_does_the_project_use(store):
    zh = _add(store, ["这个项目使用 PostgreSQL 和 pgvector。", "PostgreSQL 的版本是 18。"])
    en = _add(store, ["The project uses Redis for caching."], subject="u2")
    store.graph.link(llm=None)
    view = store.graph.neighbors("项目")
    assert {(r.type, r.target) for r in view.relations} == {("uses", "PostgreSQL"),
                                                           ("uses", "pgvector")}
    hits = store.graph.search("项目用什么数据库？", routes=["graph"], subject="u1")
    assert [str(h.memory.id) for h in hits] == zh  # the version fact is one hop away
    hits = store.graph.search("what does the project use?", routes=["graph"], subject="u2")
    assert [str(h.memory.id) for h in hits] == en
    assert store.graph.neighbors("Redis").relations[0].source == "project"


def test_graph_finds_what_vector_and_bm25_miss(store):
    """Graph expansion: the one memory saying what 李四's colleague is responsible for shares
    no words with the question and is not similar to it; 12 memories about other people's
    colleagues fill the vector and BM25 top 10."""
    target_and_link = _add(store, ["李四和王五是同事。", "王五负责支付系统的数据库迁移。"])
    distractors = [f"{p}的同事负责{t}。" for p, t in [
        ("赵六", "前端页面"), ("孙七", "测试用例"), ("周八", "运维监控"), ("吴九", "产品设计"),
        ("郑十", "数据分析"), ("钱一", "安全审计"), ("冯二", "移动端开发"), ("陈三", "客服系统"),
        ("褚四", "招聘流程"), ("卫五", "财务报表"), ("蒋六", "市场推广"), ("沈七", "法务合同")]]
    _add(store, distractors)
    store.graph.link(llm=None)
    target = target_and_link[1]
    query = "李四的同事负责什么？"
    for route in ("vector", "bm25"):
        top = [str(h.memory.id) for h in store.search(query, k=10, routes=[route])]
        assert target not in top, route
    assert target not in [str(h.memory.id) for h in store.search(query, k=10)]
    hits = store.graph.search(query, k=10, explain=True)
    found = {str(h.memory.id): h for h in hits}
    assert target in found
    assert found[target].details["graph_hops"] == 1
    assert found[target].details["graph_entities"] == ["王五"]
    assert hits.explain["graph_hits"] >= 2 and "search_hybrid_graph" in hits.explain["sql"]
    # without the graph route the fused search is the hybrid ranking and misses it
    plain = store.graph.search(query, k=10, routes=["vector", "bm25", "exact"])
    assert target not in {str(h.memory.id) for h in plain}
    assert all(h.details["graph_rank"] is None or h.score > 0 for h in plain)


def test_dedup_aliases_and_relink(store, raw):
    ids = _add(store, ["Alice works with Bob.", "alice works with BOB!", "Bob uses Postgres."])
    store.graph.link(llm=None)
    rows = raw.execute("SELECT norm_name, type FROM memdb.entities ORDER BY norm_name").fetchall()
    assert rows == [("alice", "person"), ("bob", "person"), ("postgres", "tool")]
    first = raw.execute("SELECT memdb.upsert_entity('default', 'u1', 'PostgreSQL', 'tool', "
                        "'{Postgres, PG}')").fetchone()[0]
    again = raw.execute("SELECT memdb.upsert_entity('default', 'u1', ' pg ', 'other')"
                        ).fetchone()[0]
    assert first == again
    # re-linking a memory replaces its graph instead of adding to it
    before = raw.execute("SELECT count(*) FROM memdb.entity_relations").fetchone()[0]
    assert store.graph.link([ids[0]], llm=None).linked == 1
    assert raw.execute("SELECT count(*) FROM memdb.entity_relations").fetchone()[0] == before
    # a deleted memory takes its mentions and the relations it evidenced with it
    store.delete(ids[2])
    assert raw.execute("SELECT count(*) FROM memdb.entity_relations WHERE type = 'uses'"
                       ).fetchone()[0] == 0
    assert store.graph.link([ids[2], "00000000-0000-0000-0000-000000000001"],
                            llm=None).skipped == 2


def test_match_mentions_links_known_names(store, raw):
    ids = _add(store, ["王五负责支付系统的迁移。", "李四和王五是同事。", "Bobby is not Bob."])
    store.graph.link(llm=None)
    mentioned = {r[0] for r in raw.execute(
        "SELECT e.name FROM memdb.entity_mentions m JOIN memdb.entities e ON e.id = m.entity_id "
        "WHERE m.memory_id = %s", (ids[0],))}
    assert "王五" in mentioned
    cands = raw.execute("SELECT memdb.entity_candidates('Bobby uses node.js; 李四使用Neovim')"
                        ).fetchone()[0]
    assert {"bobby", "node.js", "李四", "neovim", "李四使用"} <= set(cands)
    assert "bob" not in cands and "李" not in cands


def test_validity_and_superseded_evidence(store, raw):
    ids = _add(store, ["张三和李四是同事。", "张三喜欢喝乌龙茶。"])
    store.graph.link(llm=None)
    q = "SELECT id::text FROM memdb.search_graph('default', '李四', NULL, 2, 10)"
    assert {r[0] for r in raw.execute(q)} == set(ids)
    raw.execute("UPDATE memdb.entity_relations SET valid_from = now() - interval '2 days', "
                "valid_to = now() - interval '1 day'")
    assert {r[0] for r in raw.execute(q)} == {ids[0]}  # the edge ended: no hop to 张三
    as_of = raw.execute("SELECT id::text FROM memdb.search_graph('default', '李四', NULL, 2, 10, "
                        "jsonb_build_object('as_of', now() - interval '36 hours'))").fetchall()
    assert as_of == []  # the memories did not exist yet
    with pytest.raises(InvalidInput):
        store.graph.search("李四", hops=5)
    with pytest.raises(InvalidInput):
        store.graph.search("李四", routes=["graph", "magic"])


def test_subject_isolation_and_erasure(fresh_db, embedder, store, raw):
    _add(store, ["张三和李四是同事。"], subject="u1")
    _add(store, ["Alice works with Bob."], subject="u2")
    store.graph.link(llm=None)
    with MemoryStore(fresh_db, embedder=embedder, gate=None, subject="u2") as u2:
        assert u2.graph.search("谁和李四一起工作", routes=["graph"]) == []
        with pytest.raises(NotFound):
            u2.graph.neighbors("李四")
        assert len(u2.graph.search("who works with Bob", routes=["graph"])) == 1
    tables = {r[0] for r in raw.execute("SELECT table_name FROM memdb.subject_tables()")}
    assert {"entities", "entity_mentions", "entity_relations"} <= tables
    counts = store.subjects.forget("u1")
    assert counts.counts["entities"] == 2
    left = raw.execute("SELECT DISTINCT subject FROM memdb.entities").fetchall()
    assert left == [("u2",)]
    assert raw.execute("SELECT count(*) FROM memdb.entity_relations WHERE subject = 'u1'"
                       ).fetchone()[0] == 0


def test_llm_extraction_and_fallbacks(store):
    ids = _add(store, ["老周带着小林做 Kafka 迁移。", "张三和李四是同事。",
                       "Alice works with Bob."])
    reply = ('{"entities": [{"name": "老周", "type": "person"}, {"name": "小林", "type": "person"},'
             ' {"name": "Kafka", "type": "tool"}], "relations": [{"from": "老周", "to": "小林",'
             ' "type": "mentors", "strength": 0.9},'
             ' {"from": "小林", "to": "Kafka", "type": "uses"}]}')
    with CannedOpenAI([Reply(reply), Reply("I think the entities are..."), Status(500)]) as api:
        llm = ChatLLM(api.base_url, model="canned", timeout=5)
        result = store.graph.link(ids, llm=llm)
        assert len([r for r in api.requests if r["path"].endswith("/chat/completions")]) == 3
    assert result.paths == {"llm": 1, "heuristic": 2}
    assert result.fallbacks == {"the reply is not JSON": 1, "llm http": 1}
    view = store.graph.neighbors("小林")
    assert {(r.source, r.type, r.target) for r in view.relations} == {
        ("老周", "mentors", "小林"), ("小林", "uses", "Kafka")}
    assert store.graph.neighbors("李四").relations[0].type == "works_with"  # heuristic fallback


def test_cli_link_and_graph(fresh_db, store):
    _add(store, ["张三和李四是同事。", "李四使用 Neovim 写代码。"], subject="default")
    out = ok_json(fresh_db, "graph", "link", "--heuristic")
    assert out["linked"] == 2 and out["relations"] == 2
    view = ok_json(fresh_db, "graph", "neighbors", "李四", "--hops", "2")
    assert {(r["from"], r["type"], r["to"]) for r in view["relations"]} == {
        ("张三", "works_with", "李四"), ("李四", "uses", "Neovim")}
    text = run(fresh_db, "graph", "neighbors", "李四")
    assert text.exit_code == 0 and "-[works_with" in text.output
    missing = run(fresh_db, "graph", "neighbors", "nobody")
    assert missing.exit_code == 1 and "no entity named" in missing.output
    assert run(fresh_db, "graph", "neighbors", "李四", "--hops", "9").exit_code == 1
