"""Search latency of MemoryStore.search on a synthetic corpus, database side (no model runs).

Starts the embedded PostgreSQL in a temporary MEMDB_HOME (or uses --dsn / $MEMDB_DSN), creates
a scratch database, migrates it, and loads N synthetic memories over S subjects through
MemoryStore.add_many: mixed Chinese/English sentences of 8-40 tokens drawn from a Zipf-like
vocabulary (so BM25 sees common and rare terms), each with a random unit vector (384 dims,
fixed seed); the space's HNSW index is maintained by every insert, or built once after the load
with --hnsw-after-load. Then VACUUM ANALYZE, a warm-up, and Q timed calls of
``store.search(text, k=10, embedding=vec, ...)`` per scenario (wall time of the store call;
scenarios interleaved query by query, so load from other processes hits all of them alike):

- hybrid top-10 scoped to one subject (filter subject=...) and across the tenant (no filter);
- each route alone (routes=["vector"], ["bm25"], ["exact"]), scoped and tenant-wide.

Targets (2-core machine): hybrid p95 < 30 ms scoped to a subject, < 60 ms across the tenant.

It also EXPLAINs (ANALYZE, BUFFERS) the SQL each route runs inside its plpgsql function,
reproduced with literal values (the subject-scoped exact vector scan, the tenant-wide HNSW scan
with hnsw.iterative_scan = relaxed_order, the BM25 GIN candidate scan, the exact-match trigram
scan), checks that they use the intended indexes, and - where auto_explain can be loaded -
records the plans the functions really ran. Plans go to stderr; one JSON document goes to
stdout and to benchmarks/results/search_latency.json (or --json OUT). The scratch database is
dropped at the end, also on error (unless --keep).

    python benchmarks/search_latency.py [--n 100000] [--subjects 100] [--queries 200]
                                        [--dsn DSN] [--json OUT]

Diagnosis helpers: ``--keep`` leaves the loaded database on a --dsn server and prints its DSN;
``--reuse DB_DSN`` measures an already loaded database (same --n/--subjects/--seed) without
loading or dropping it, e.g. before and after a CREATE OR REPLACE FUNCTION experiment.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from _server import (  # noqa: I001
    RandomEmbedder,
    emit,
    scratch_database,
    server,
    set_hnsw_min_rows,
    with_db,
)
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryInput, MemoryStore  # noqa: E402
from memdb.core import sql as sql_files  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402

DIMS = 384
K = 10
TENANT = "default"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search_latency.json"
TARGETS_MS = {"hybrid_scoped": 30.0, "hybrid_tenant": 60.0}  # p95

# -- vocabulary --------------------------------------------------------------------------------
# English, in Zipf rank order: function words first (dropped by the 'english' analyzer, as in
# real text), then content words of an assistant's memories, then a synthetic tail of rare
# words (names, codenames) made from syllables.
_EN_STOP = """the to and of a in is i that for it on with my was at be this have as are not
but he she they we you his her their about from by will or an so if can would should has were
been before after do does did very more than just also""".split()

_EN_CONTENT = """user project meeting team work prefers likes wants needs uses asked said told
mentioned plans deadline friday monday morning evening weekend week month year today tomorrow
yesterday coffee tea green black milk sugar breakfast lunch dinner restaurant food spicy sweet
vegetarian allergic peanuts shellfish gluten travel trip flight hotel train airport beijing
shanghai tokyo london paris berlin york office home remote laptop phone email calendar slack
message call review code backend frontend database postgres python rust javascript typescript
react vue kubernetes docker terraform redis kafka service deploy release bug issue ticket
sprint roadmap budget cost invoice contract client customer manager engineer designer
product launch demo presentation slides report document notes summary idea question answer
problem solution test tests testing performance latency memory cpu server cloud aws azure
account password login security privacy data model training inference embedding vector search
index query cache api endpoint schema migration backup restore monitoring alert dashboard
metrics logs error failure outage incident postmortem oncall shift schedule holiday vacation
birthday anniversary gift family wife husband daughter son mother father brother sister
friend colleague neighbor dog cat pet gym running yoga swimming cycling hiking climbing
tennis football basketball music guitar piano jazz rock concert movie book novel podcast
learning course language chinese english japanese spanish french german reading writing
blog article video photo camera garden cooking baking recipe wine beer water juice
apartment house rent move city country weather rain snow sunny cold hot doctor dentist
appointment health sleep diet medicine insurance bank payment salary tax loan savings
investment stock market price shopping store order delivery package address car bike bus
subway parking license passport visa ticket seat window aisle upgrade loyalty points
favorite color blue red white quiet noisy early late fast slow cheap expensive new old
small large important urgent weekly daily monthly quarterly annual goal priority task
todo reminder follow deadline draft feedback approval hiring interview candidate offer
promotion career mentor training workshop conference talk speaker keynote hackathon
startup company organization department legal finance marketing sales support operations
research analysis experiment dataset benchmark baseline result paper patent design
architecture prototype feature requirement specification version upgrade dependency
library framework plugin extension config setting option preference default theme dark
light mode font keyboard mouse monitor desk chair standing headphones microphone""".split()

_EN_SYLLABLES = """ka ri to ven mor lis tan qua zel bro fin dax pel sor vin mal ter nok jas
lun cer gav hol wim zan rud pim sek tov yar bel cor dun fex gil hap""".split()

# Chinese: function words first, then common 2-4 character words.
_ZH_STOP = (
    "的 了 在 是 和 也 就 都 很 要 会 对 把 给 我 他 她 我们 他们 这个 一个 那个 还 又".split()
)

_ZH_CONTENT = """用户 项目 会议 团队 工作 喜欢 希望 需要 使用 提到 计划 截止 周五 周一 早上 晚上
周末 本周 下周 上周 今天 明天 昨天 咖啡 绿茶 红茶 牛奶 早餐 午餐 晚餐 餐厅 火锅 川菜 粤菜
素食 过敏 花生 海鲜 旅行 出差 航班 酒店 高铁 机场 北京 上海 深圳 杭州 广州 成都 东京 伦敦
办公室 在家 远程 电脑 手机 邮件 日历 消息 电话 代码 审查 后端 前端 数据库 服务 部署 发布
缺陷 问题 需求 迭代 路线图 预算 成本 发票 合同 客户 经理 工程师 设计师 产品 上线 演示 汇报
文档 笔记 总结 想法 方案 测试 性能 延迟 内存 服务器 云端 账号 密码 登录 安全 隐私 数据
模型 训练 推理 向量 检索 索引 查询 缓存 接口 迁移 备份 恢复 监控 告警 仪表盘 指标 日志
错误 故障 事故 复盘 值班 排班 假期 休假 生日 纪念日 礼物 家人 妻子 丈夫 女儿 儿子 妈妈 爸爸
哥哥 姐姐 朋友 同事 邻居 小狗 小猫 宠物 健身房 跑步 瑜伽 游泳 骑行 爬山 网球 足球 篮球 音乐
吉他 钢琴 爵士 演唱会 电影 小说 播客 学习 课程 语言 中文 英文 日语 阅读 写作 博客 文章 视频
照片 相机 花园 做饭 烘焙 菜谱 红酒 啤酒 果汁 公寓 房子 租金 搬家 城市 国家 天气 下雨 下雪
晴天 寒冷 炎热 医生 牙医 预约 健康 睡眠 饮食 药物 保险 银行 付款 工资 税务 贷款 储蓄 投资
股票 市场 价格 购物 商店 订单 快递 包裹 地址 汽车 自行车 公交 地铁 停车 驾照 护照 签证 车票
座位 靠窗 过道 升舱 积分 最喜欢 颜色 蓝色 红色 白色 安静 热闹 提前 推迟 便宜 昂贵 重要 紧急
每周 每天 每月 季度 年度 目标 优先级 任务 待办 提醒 跟进 草稿 反馈 审批 招聘 面试 候选人
录用 晋升 职业 导师 培训 工作坊 大会 演讲 主题 黑客松 创业 公司 组织 部门 法务 财务 市场部
销售 支持 运营 研究 分析 实验 数据集 基准 结果 论文 专利 设计 架构 原型 功能 规格 版本
升级 依赖 框架 插件 扩展 配置 设置 选项 偏好 默认 主题 深色 浅色 模式 字体 键盘 鼠标 显示器
书桌 椅子 耳机 麦克风 人工智能 机器学习 深度学习 自然语言 知识图谱 推荐系统 搜索引擎
用户体验 产品经理 技术债务 代码审查 持续集成 自动化测试 微服务 容器化 负载均衡""".split()

_ZH_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡"
    "余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯"
    "龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_ZH_GIVEN = (
    "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红鹏辉建国斌浩宇晨阳雪梅琳"
    "欣怡子轩涵博文凯佳琪思雨晓东海波志宏"
)


@dataclass
class Vocabulary:
    words: list[str]  # all words, Zipf rank order
    probs: np.ndarray  # Zipf weights over words
    n_stop: int  # the first n_stop words are function words
    query_probs: np.ndarray  # weights over content words (words[n_stop:]) for queries


def _zipf(n: int, s: float = 1.0, q: float = 1.7) -> np.ndarray:
    p = 1.0 / (np.arange(1, n + 1) + q) ** s
    return p / p.sum()


def _vocabularies(seed: int) -> tuple[Vocabulary, Vocabulary]:
    rng = np.random.default_rng(seed + 1)
    seen = set(_EN_STOP) | set(_EN_CONTENT)
    tail: list[str] = []
    while len(tail) < 1000:  # rare English names/codenames
        w = "".join(rng.choice(_EN_SYLLABLES, size=int(rng.integers(2, 4))))
        if w not in seen:
            seen.add(w)
            tail.append(w)
    content = list(dict.fromkeys(_EN_CONTENT))
    rng.shuffle(content)  # rank order within the content words is arbitrary
    en_words = _EN_STOP + content + tail
    zh_seen = set(_ZH_STOP) | set(_ZH_CONTENT)
    zh_tail: list[str] = []
    while len(zh_tail) < 800:  # rare Chinese names
        w = str(rng.choice(list(_ZH_SURNAMES))) + "".join(
            rng.choice(list(_ZH_GIVEN), size=int(rng.integers(1, 3)))
        )
        if w not in zh_seen:
            zh_seen.add(w)
            zh_tail.append(w)
    zh_content = list(dict.fromkeys(_ZH_CONTENT))
    rng.shuffle(zh_content)
    zh_words = _ZH_STOP + zh_content + zh_tail

    def vocab(words: list[str], n_stop: int) -> Vocabulary:
        return Vocabulary(
            words, _zipf(len(words), s=1.05), n_stop, _zipf(len(words) - n_stop, s=0.9, q=10)
        )

    return vocab(en_words, len(_EN_STOP)), vocab(zh_words, len(_ZH_STOP))


# -- corpus and queries ------------------------------------------------------------------------
@dataclass
class Doc:
    text: str
    subject: str
    lang: str


@dataclass
class Query:
    text: str
    subject: str
    lang: str
    kind: str  # "words": vocabulary words; "phrase": a run of words from a stored memory
    vector: np.ndarray


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _lengths(rng: np.random.Generator, n: int) -> np.ndarray:
    """Sentence lengths in tokens, 8-40, median about 15."""
    return np.clip(np.rint(rng.lognormal(np.log(15), 0.45, size=n)), 8, 40).astype(int)


def _en_sentence(tokens: list[str]) -> str:
    words = list(tokens)
    if len(words) > 12:
        words[len(words) // 2] += ","
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


def _zh_sentence(tokens: list[str]) -> str:
    out, run = [], 0
    for t in tokens:
        if t.isascii():
            out.append(f" {t} ")
        else:
            out.append(t)
        run += 1
        if run >= 7 and len(out) < len(tokens):
            out.append("，")
            run = 0
    return "".join(out).strip() + "。"


def synthetic_docs(n: int, subjects: list[str], seed: int) -> list[Doc]:
    """N mixed Chinese/English memories: 50% English, 35% Chinese, 15% mixed."""
    en, zh = _vocabularies(seed)
    rng = np.random.default_rng(seed)
    langs = rng.choice(["en", "zh", "en+zh", "zh+en"], size=n, p=[0.5, 0.35, 0.075, 0.075])
    lengths = _lengths(rng, n)
    subj = rng.integers(len(subjects), size=n)
    en_tok = rng.choice(len(en.words), size=int(lengths.sum()), p=en.probs)
    zh_tok = rng.choice(len(zh.words), size=int(lengths.sum()), p=zh.probs)
    docs: list[Doc] = []
    pos = 0
    for i in range(n):
        length, lang = int(lengths[i]), str(langs[i])
        if lang.startswith("en"):
            tokens = [en.words[j] for j in en_tok[pos : pos + length]]
            if lang == "en+zh":  # a Chinese word inside English text
                tokens[int(rng.integers(length))] = zh.words[
                    zh.n_stop + int(rng.choice(len(zh.query_probs), p=zh.query_probs))
                ]
            text = _en_sentence(tokens)
        else:
            tokens = [zh.words[j] for j in zh_tok[pos : pos + length]]
            if lang == "zh+en":  # an English term inside Chinese text
                tokens[int(rng.integers(length))] = en.words[
                    en.n_stop + int(rng.choice(len(en.query_probs), p=en.query_probs))
                ]
            text = _zh_sentence(tokens)
        pos += length
        docs.append(Doc(text, subjects[int(subj[i])], lang))
    return docs


def synthetic_queries(
    count: int, docs: list[Doc], subjects: list[str], seed: int, phrase_share: float = 0.25
) -> list[Query]:
    """Queries of 2-6 words, half English, half Chinese: mostly vocabulary words (content words,
    Zipf-weighted), and a share of phrases cut from stored memories (so exact match hits)."""
    en, zh = _vocabularies(seed)
    rng = np.random.default_rng(seed)
    vectors = _unit_vectors(rng, count)
    out: list[Query] = []
    for i in range(count):
        lang = "en" if i % 2 == 0 else "zh"
        words = int(rng.integers(2, 7))
        if rng.random() < phrase_share:
            doc = docs[int(rng.integers(len(docs)))]
            text = _phrase(doc.text, doc.lang, words, rng)
            out.append(Query(text, doc.subject, doc.lang.split("+")[0], "phrase", vectors[i]))
            continue
        vocab = en if lang == "en" else zh
        idx = rng.choice(len(vocab.query_probs), size=words, replace=False, p=vocab.query_probs)
        picked = [vocab.words[vocab.n_stop + int(j)] for j in idx]
        text = " ".join(picked) if lang == "en" else "".join(picked)
        out.append(
            Query(text, subjects[int(rng.integers(len(subjects)))], lang, "words", vectors[i])
        )
    return out


def _phrase(text: str, lang: str, words: int, rng: np.random.Generator) -> str:
    clean = re.sub(r"[,.，。]", " ", text)
    if lang.startswith("zh"):  # a run of Chinese characters, about 2 per word
        run = max((r for r in clean.split() if not r.isascii()), key=len)
        size = min(len(run), 2 * words)
        start = int(rng.integers(0, len(run) - size + 1))
        return run[start : start + size]
    tokens = clean.split()
    size = min(len(tokens), words)
    start = int(rng.integers(0, len(tokens) - size + 1))
    return " ".join(tokens[start : start + size])


# -- server and scratch database ---------------------------------------------------------------
def _admin(dsn: str, statement: sql.Composable) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)


def log(msg: str) -> None:
    print(f"[search_latency] {msg}", file=sys.stderr, flush=True)


# -- loading -----------------------------------------------------------------------------------
def _hnsw_ddl(space_id: int) -> str:
    """The index memdb.ensure_embedding_space builds for a space (same name and definition)."""
    return (
        f"CREATE INDEX memories_hnsw_space_{space_id} ON memdb.memories USING hnsw "
        f"((embedding::vector({DIMS})) vector_cosine_ops) WHERE space_id = {space_id}"
    )


def load(
    store: MemoryStore,
    docs: list[Doc],
    seed: int,
    chunk: int,
    batch: int,
    hnsw_after: bool = False,
    maintenance_work_mem: str = "1GB",
) -> dict:
    """Load docs through add_many, chunk rows per call. With hnsw_after, no write builds or
    maintains the space's HNSW index (memdb.hnsw_min_rows held above the load, any index of
    the space dropped) and one CREATE INDEX builds it after the load (a bulk-import pattern);
    by default memdb builds it once the database holds 10,000 memories and every insert after
    that maintains it, as in normal use."""
    rng = np.random.default_rng(seed + 2)
    categories = ["preferences", "entities", "events", "patterns", "general"]
    if hnsw_after:
        hold_hnsw(store, True)
    space_id = store.space_id()  # registers the space (its index: see memdb.ensure_vector_index)
    if hnsw_after:
        with psycopg.connect(store.db.dsn, autocommit=True) as conn:
            conn.execute(f"DROP INDEX IF EXISTS memdb.memories_hnsw_space_{space_id}")
    created = 0
    started = time.perf_counter()
    for start in range(0, len(docs), chunk):
        part = docs[start : start + chunk]
        vectors = _unit_vectors(rng, len(part))
        inputs = [
            MemoryInput(
                content=d.text,
                subject=d.subject,
                category=categories[(start + i) % len(categories)],
                importance=float(0.1 + 0.8 * ((start + i) * 7919 % 1000) / 1000),
                embedding=vectors[i],
            )
            for i, d in enumerate(part)
        ]
        created += sum(r.created for r in store.add_many(inputs, batch_size=batch))
        done = start + len(part)
        elapsed = time.perf_counter() - started
        log(f"loaded {done}/{len(docs)} in {elapsed:.1f} s ({done / elapsed:.0f} rows/s)")
    seconds = time.perf_counter() - started
    out = {
        "seconds": round(seconds, 2),
        "rows_per_s": round(len(docs) / seconds, 1),
        "created": created,
        "add_many_calls": -(-len(docs) // chunk),
        "rows_per_call": chunk,
        "batch_size": batch,
        "hnsw": "built after the load" if hnsw_after else "maintained by every insert",
    }
    if hnsw_after:
        t0 = time.perf_counter()
        with psycopg.connect(store.db.dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem))
            )
            conn.execute(_hnsw_ddl(space_id))
        out["hnsw_build_seconds"] = round(time.perf_counter() - t0, 2)
        hold_hnsw(store, False)
        out["hnsw_maintenance_work_mem"] = maintenance_work_mem
        out["seconds_with_index"] = round(seconds + out["hnsw_build_seconds"], 2)
        log(f"HNSW index built in {out['hnsw_build_seconds']} s")
    return out


def hold_hnsw(store: MemoryStore, hold: bool) -> None:
    """Keep memdb from building the space's HNSW index during a load (memdb.hnsw_min_rows above
    any load), or stop keeping it; the store's pool is renewed so its sessions see it."""
    set_hnsw_min_rows(store.db.dsn, 999_999_999_999 if hold else None)
    store.db.reset()


def vacuum_analyze(dsn: str) -> float:
    """VACUUM (ANALYZE): the statistics the planner needs, and the steady state autovacuum
    would reach (GIN pending lists merged, visibility map set) so it does not kick in mid-run."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) memdb.memories")
        conn.execute("ANALYZE memdb.bm25_terms")
        conn.execute("ANALYZE memdb.bm25_stats")
        conn.execute("ANALYZE memdb.memory_usage")
    return round(time.perf_counter() - started, 2)


# -- latency -----------------------------------------------------------------------------------
SCENARIOS: list[tuple[str, list[str] | None, bool]] = [
    ("hybrid_scoped", None, True),
    ("hybrid_tenant", None, False),
    ("vector_scoped", ["vector"], True),
    ("vector_tenant", ["vector"], False),
    ("bm25_scoped", ["bm25"], True),
    ("bm25_tenant", ["bm25"], False),
    ("exact_scoped", ["exact"], True),
    ("exact_tenant", ["exact"], False),
]


def corpus_arguments(parser: argparse.ArgumentParser, n: int, subjects: int) -> None:
    """The options of a benchmark that measures this corpus: ``--reuse`` (a database
    ``--keep`` left), ``--dsn`` (a server to load a scratch one into), ``--n``, ``--subjects``,
    ``--seed`` and ``--queries`` (of :func:`synthetic_queries`)."""
    parser.add_argument("--reuse", metavar="DB_DSN", help="a database search_latency.py kept")
    parser.add_argument("--dsn", help="a server to load a scratch database into")
    parser.add_argument("--n", type=int, default=n, help=f"memories (default {n})")
    parser.add_argument("--subjects", type=int, default=subjects,
                        help=f"subjects (default {subjects})")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--queries", type=int, default=200, help="queries (default 200)")


def corpus(args: argparse.Namespace) -> tuple[list[Doc], list[Query]]:
    """The memories and queries of ``args`` (:func:`corpus_arguments`)."""
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    return docs, synthetic_queries(args.queries, docs, subjects, args.seed + 100)


@contextmanager
def measured_database(args: argparse.Namespace, prefix: str, docs: list[Doc], *,
                      hnsw_after: bool = False,
                      before_load: Callable[[str], None] | None = None
                      ) -> Iterator[tuple[str, dict | None]]:
    """(DSN, load figures) of the database a benchmark measures: ``--reuse``'s (no load), else
    a scratch database ``prefix_...`` on ``--dsn``'s server (or an embedded one) with ``docs``
    loaded (``before_load(dsn)`` first) and VACUUM ANALYZEd, dropped at the end."""
    if args.reuse:
        yield args.reuse, None
        return
    with server(args.dsn) as (admin_dsn, _how), \
            scratch_database(admin_dsn, prefix) as (db, _name):
        if before_load is not None:
            before_load(db)
        with MemoryStore(db, embedder=RandomEmbedder("bench-random"), pool_size=2,
                         gate=None) as store:
            figures = load(store, docs, args.seed, 10_000, 500, hnsw_after=hnsw_after)
        vacuum_analyze(db)
        yield db, figures


def _stats(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {
        "p50": round(float(np.percentile(a, 50)), 2),
        "p95": round(float(np.percentile(a, 95)), 2),
        "p99": round(float(np.percentile(a, 99)), 2),
        "mean": round(float(a.mean()), 2),
        "min": round(float(a.min()), 2),
        "max": round(float(a.max()), 2),
    }


def measure(
    store: MemoryStore, queries: list[Query], warmup: list[Query], only: set[str] | None = None
) -> dict:
    """Time every scenario on every query. Scenarios are interleaved query by query (q1 in
    each scenario, then q2, ...), so load from other processes on a shared machine falls on
    all of them alike instead of on whichever ran while it lasted."""
    scenarios = [sc for sc in SCENARIOS if not only or sc[0] in only]

    def call(q: Query, routes: list[str] | None, scoped: bool):
        return store.search(
            q.text,
            k=K,
            filter={"subject": q.subject} if scoped else None,
            routes=routes,
            embedding=q.vector,
        )

    for q in warmup:
        for _, routes, scoped in scenarios:
            call(q, routes, scoped)
    times: dict[str, list[float]] = {name: [] for name, _, _ in scenarios}
    hits: dict[str, list[int]] = {name: [] for name, _, _ in scenarios}
    loads = [os.getloadavg()[0]]
    for i, q in enumerate(queries):
        for name, routes, scoped in scenarios:
            t0 = time.perf_counter()
            res = call(q, routes, scoped)
            times[name].append((time.perf_counter() - t0) * 1000)
            hits[name].append(len(res))
        if i % 20 == 19:
            loads.append(os.getloadavg()[0])
            log(f"{i + 1}/{len(queries)} queries, load average {loads[-1]:.2f}")
    out: dict[str, dict] = {}
    for name, _, _ in scenarios:
        ms = times[name]
        by_kind: dict[str, list[float]] = {}
        for q, t in zip(queries, ms, strict=True):
            by_kind.setdefault(f"{q.lang}_{q.kind}", []).append(t)
        slowest = int(np.argmax(ms))
        out[name] = {
            **_stats(ms),
            "mean_hits": round(float(np.mean(hits[name])), 2),
            "zero_hit_share": round(sum(h == 0 for h in hits[name]) / len(ms), 3),
            "p95_by_query_kind": {
                k: round(float(np.percentile(v, 95)), 2) for k, v in sorted(by_kind.items())
            },
            "slowest_query": {
                "index": slowest,
                "text": queries[slowest].text,
                "ms": round(ms[slowest], 2),
            },
        }
        log(
            f"{name:14s} p50 {out[name]['p50']:8.2f} ms  p95 {out[name]['p95']:8.2f} ms  "
            f"mean {out[name]['mean']:8.2f} ms  hits {out[name]['mean_hits']}"
        )
    out["loadavg_1min"] = {
        "min": round(min(loads), 2),
        "median": round(float(np.median(loads)), 2),
        "max": round(max(loads), 2),
        "cpus": os.cpu_count(),
    }
    return out


def targets(latency: dict, n: int) -> dict:
    out = {}
    for name, limit in TARGETS_MS.items():
        if name in latency:
            p95 = latency[name]["p95"]
            out[f"{name}_p95_under_{int(limit)}ms"] = {
                "p95_ms": p95,
                "target_ms": limit,
                "met": p95 < limit,
            }
    return out


# -- plans -------------------------------------------------------------------------------------
def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _walk(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", []):
        yield from _walk(child)


def _node(n: dict) -> str:
    name = n["Node Type"]
    if "Index Name" in n:
        name += f" using {n['Index Name']}"
    if "Relation Name" in n:
        name += f" on {n['Relation Name']}"
    elif "Function Name" in n:
        name += f" on {n['Function Name']}"
    return name


def _summary(plan_json: dict) -> dict:
    plan = plan_json["Plan"]
    nodes = list(_walk(plan))
    return {
        "indexes": sorted({n["Index Name"] for n in nodes if "Index Name" in n}),
        "node_types": [_node(n) for n in nodes],
        "execution_ms": round(plan_json.get("Execution Time", 0.0), 3),
        "planning_ms": round(plan_json.get("Planning Time", 0.0), 3),
        "rows": plan.get("Actual Rows"),
        "shared_hit_blocks": plan.get("Shared Hit Blocks"),
        "shared_read_blocks": plan.get("Shared Read Blocks"),
        "jit": bool(plan_json.get("JIT")),
        "max_rows_removed_by_filter": max(
            (n.get("Rows Removed by Filter", 0) for n in nodes), default=0
        ),
        "heap_rows_scanned": max(
            (
                n.get("Actual Rows", 0)
                for n in nodes
                if n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan", "Index Scan")
            ),
            default=0,
        ),
    }


def _short(text: str) -> str:
    """A plan's text with vector literals abbreviated."""
    return re.sub(r"'\[(-?\d+\.\d+),(-?\d+\.\d+),[^\]]{200,}\]'", r"'[\1,\2,...]'", text)


def hot_queries(
    conn: psycopg.Connection, space_id: int, q_vec: Query, texts: dict[str, Query], subject: str
) -> dict[str, tuple[str, list[str]]]:
    """The SQL each route runs inside its function, with literal values:
    name -> (sql, intended index names)."""
    lit = lambda x: sql.Literal(x).as_string(conn)  # noqa: E731
    scoped = lit(json.dumps({"subject": subject})) + "::jsonb"
    tenant = "'{}'::jsonb"
    hnsw = f"memories_hnsw_space_{space_id}"
    subject_idx = ["memories_dedup_key", "memories_scope_idx"]
    vec = lit(_vec(q_vec.vector)) + "::vector"
    depth = max(50, 2 * K)  # search_hybrid's default per-route depth for k=10
    out: dict[str, tuple[str, list[str]]] = {}
    for scope, flt in (("scoped", scoped), ("tenant", tenant)):
        out[f"vector_count_{scope}"] = (
            f"""
SELECT count(*) FROM (
    SELECT 1 FROM memdb.memories m
    WHERE m.tenant = {lit(TENANT)} AND m.space_id = {space_id} AND memdb.matches(m, {flt})
    LIMIT 10001) x""",
            subject_idx if scope == "scoped" else [],
        )
    out["vector_exact_scoped"] = (
        f"""
SELECT m.id, (m.embedding <=> {vec})::double precision AS distance,
       (1 - (m.embedding <=> {vec}))::double precision AS score
FROM memdb.memories m
WHERE m.tenant = {lit(TENANT)} AND m.space_id = {space_id} AND memdb.matches(m, {scoped})
ORDER BY m.embedding <=> {vec}, m.id
LIMIT {depth}""",
        subject_idx,
    )
    out["vector_exact_tenant"] = (out["vector_exact_scoped"][0].replace(scoped, tenant), [])
    out["vector_hnsw_tenant"] = (
        f"""
WITH nearest AS MATERIALIZED (
    SELECT m.id, (m.embedding::vector({DIMS}) <=> {vec})::double precision AS distance
    FROM memdb.memories m
    WHERE m.tenant = {lit(TENANT)} AND m.space_id = {space_id} AND memdb.matches(m, {tenant})
    ORDER BY m.embedding::vector({DIMS}) <=> {vec}
    LIMIT {depth}
)
SELECT n.id, n.distance, 1 - n.distance FROM nearest n ORDER BY n.distance, n.id""",
        [hnsw],
    )
    for lang, q in texts.items():
        row = conn.execute(
            """
            WITH s AS (SELECT doc_count::float8 AS n,
                              total_len::float8 / greatest(doc_count, 1) AS avgdl
                       FROM memdb.bm25_stats WHERE tenant = %(t)s)
            SELECT array_agg(t.term ORDER BY t.term) AS terms,
                   array_agg(ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) ORDER BY t.term) AS idf,
                   array_agg(t.term ORDER BY t.term)
                       FILTER (WHERE s.n < 1000 OR t.df <= 0.3 * s.n) AS cand,
                   max(s.avgdl) AS avgdl
            FROM memdb.bm25_terms t, s
            WHERE t.tenant = %(t)s AND t.term = ANY (memdb.query_terms(%(q)s)) AND t.df > 0""",
            {"t": TENANT, "q": q.text},
        ).fetchone()
        terms, idf, cand, avgdl = row
        if terms:
            tsq = conn.execute("SELECT memdb.terms_tsquery(%s)::text", (cand or terms,)).fetchone()[
                0
            ]
            for scope, flt in (("scoped", scoped), ("tenant", tenant)):
                out[f"bm25_{lang}_{scope}"] = (
                    f"""
WITH w AS (SELECT * FROM unnest({lit(terms)}::text[], {lit(idf)}::double precision[])
                   AS w(term, idf))
SELECT m.id,
       sum(w.idf * x.tf * (1.2 + 1) / (x.tf + 1.2 * (1 - 0.75 + 0.75 * l.dl / {avgdl!r}))) AS score
FROM memdb.memories m
CROSS JOIN LATERAL (SELECT memdb.doc_length(m.tsv)::double precision AS dl) l
CROSS JOIN LATERAL (SELECT u.lexeme,
                           coalesce(array_length(u.positions, 1), 1)::double precision AS tf
                    FROM unnest(m.tsv) u) x
JOIN w ON w.term = x.lexeme
WHERE m.tenant = {lit(TENANT)} AND m.tsv @@ {lit(tsq)}::tsquery AND memdb.matches(m, {flt})
GROUP BY m.id
ORDER BY score DESC, m.id
LIMIT {depth}""",
                    ["memories_tsv_idx"] + (subject_idx if scope == "scoped" else []),
                )
        norm = conn.execute(
            r"SELECT lower(btrim(regexp_replace(%s, '\s+', ' ', 'g')))", (q.text,)
        ).fetchone()[0]
        pattern = "%" + norm.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        for scope, flt in (("scoped", scoped), ("tenant", tenant)):
            out[f"exact_{lang}_{scope}"] = (
                f"""
SELECT m.id, (length({lit(norm)})::double precision / greatest(length(m.content), 1)) AS score
FROM memdb.memories m
WHERE m.tenant = {lit(TENANT)} AND lower(m.content) LIKE {lit(pattern)} AND memdb.matches(m, {flt})
ORDER BY score DESC, m.id
LIMIT {depth}""",
                ["memories_content_trgm_idx"] + (subject_idx if scope == "scoped" else []),
            )
    for scope, flt_json in (("scoped", json.dumps({"subject": subject})), ("tenant", "{}")):
        outer = psycopg.ClientCursor(conn).mogrify(
            sql_files.query("search_hybrid"),
            {
                "tenant": TENANT,
                "query": (texts.get("en") or q_vec).text,
                "embedding": _vec(q_vec.vector),
                "k": K,
                "filter": flt_json,
                "options": "{}",
                "keyword_routes": None,
            },
        )
        out[f"store_hybrid_{scope}"] = (outer, ["memories_pkey"])
    return out


def _has_terms(conn: psycopg.Connection, text: str) -> bool:
    return bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memdb.bm25_terms WHERE tenant = %s AND df > 0 "
            "AND term = ANY (memdb.query_terms(%s)))",
            (TENANT, text),
        ).fetchone()[0]
    )


def explain_plans(dsn: str, space_id: int, queries: list[Query], latency: dict) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of each route's inner SQL (the second, warm run is reported),
    under the settings search_vector runs with. Texts: the first English and Chinese word
    queries that BM25 knows terms of, and the slowest query of the bm25/exact tenant runs."""
    out: dict[str, Any] = {}
    with psycopg.connect(dsn) as conn:
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET hnsw.ef_search = 100")
        texts: dict[str, Query] = {}
        for lang in ("en", "zh"):
            q = next(
                (
                    q
                    for q in queries
                    if q.lang == lang and q.kind == "words" and _has_terms(conn, q.text)
                ),
                None,
            )
            if q is not None:
                texts[lang] = q
        for route in ("bm25", "exact"):
            slow = latency.get(f"{route}_tenant", {}).get("slowest_query")
            if slow:
                texts[f"slowest_{route}"] = queries[slow["index"]]
        q_vec = texts.get("en") or queries[0]
        subject = q_vec.subject
        out["sample"] = {"subject": subject, "texts": {k: q.text for k, q in texts.items()}}
        n_tenant = conn.execute(
            "SELECT count(*) FROM memdb.memories WHERE tenant = %s AND valid_to IS NULL", (TENANT,)
        ).fetchone()[0]
        # search_vector's branch: exact scan when at most exact_limit (10000) rows pass the filter
        out["vector_branch_tenant"] = "exact" if n_tenant <= 10000 else "hnsw"
        for name, (text, intended) in hot_queries(conn, space_id, q_vec, texts, subject).items():
            for _ in range(2):
                js = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {text}").fetchone()[0][
                    0
                ]
            plan_text = "\n".join(r[0] for r in conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {text}"))
            s = _summary(js)
            s["intended"] = intended
            s["uses_intended_index"] = (not intended) or bool(set(intended) & set(s["indexes"]))
            if name == "vector_hnsw_tenant" and out["vector_branch_tenant"] == "exact":
                s["note"] = "not run by search_vector at this size (the tenant fits the exact scan)"
            s["sql"] = _short(text.strip())
            s["plan"] = _short(plan_text)
            out[name] = s
            log(
                f"plan {name}: {s['execution_ms']} ms (planning {s['planning_ms']} ms), "
                f"indexes {s['indexes'] or '-'}"
                f"{'' if s['uses_intended_index'] else '  <-- NOT the intended ' + str(intended)}"
            )
            print(f"\n--- {name} ---\n{s['plan']}", file=sys.stderr)
        conn.rollback()
    out["not_using_intended_index"] = [
        name
        for name, v in out.items()
        if isinstance(v, dict) and v.get("uses_intended_index") is False and "note" not in v
    ]
    return out


def plans_in_functions(dsn: str, queries: list[Query]) -> dict:
    """The plans the functions really ran for one hybrid search, scoped and tenant-wide, from
    auto_explain (log_nested_statements); skipped where auto_explain cannot be loaded."""
    out: dict[str, Any] = {}
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        return {"skipped": str(exc)}
    with conn:
        q = next(
            (
                q
                for q in queries
                if q.lang == "en" and q.kind == "words" and _has_terms(conn, q.text)
            ),
            queries[0],
        )
        out["query"] = {"text": q.text, "subject": q.subject}
        try:
            conn.execute("LOAD 'auto_explain'")
        except psycopg.Error as exc:
            return {"skipped": f"auto_explain unavailable: {exc}".strip()}
        for setting in (
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_nested_statements = on",
            "auto_explain.log_analyze = on",
            "auto_explain.log_buffers = on",
            "auto_explain.log_format = json",
            "client_min_messages = log",
        ):
            conn.execute(f"SET {setting}")
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        for scope, flt in (("scoped", {"subject": q.subject}), ("tenant", {})):
            notices.clear()
            conn.execute(
                "SELECT count(*) FROM memdb.search_hybrid(%s, %s, %s::vector, %s, %s::jsonb)",
                (TENANT, q.text, _vec(q.vector), K, json.dumps(flt)),
            )
            statements = []
            for msg in notices:
                m = re.match(r"duration: ([\d.]+) ms\s+plan:\s*(.*)", msg, re.S)
                if not m:
                    continue
                try:
                    js = json.loads(m.group(2))
                except ValueError:
                    continue
                text = js.get("Query Text", "")
                nodes = list(_walk(js["Plan"]))
                statements.append(
                    {
                        "route": _route_of(text),
                        "ms": float(m.group(1)),
                        "indexes": sorted({n["Index Name"] for n in nodes if "Index Name" in n}),
                        "node_types": sorted({_node(n) for n in nodes}),
                    }
                )
            out[scope] = [s for s in statements if s["route"] != "other" or s["ms"] >= 0.5]
    return out


def _route_of(text: str) -> str:
    if "count(*)" in text and "memdb.matches" in text:
        return "vector_count"
    if "nearest AS MATERIALIZED" in text:
        return "vector_hnsw"
    if "<=>" in text:
        return "vector_exact"
    if "tsv @@" in text:
        return "bm25"
    if "LIKE $4" in text:
        return "exact"
    if "memdb.search_hybrid" in text:
        return "search_hybrid (whole call)"
    if "jsonb_agg(to_jsonb(s)" in text:
        return "search_hybrid fusion"
    return "other"


def sizes(dsn: str) -> dict:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("""
            SELECT c.relname, pg_relation_size(c.oid) AS bytes
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'memdb' AND (c.relname = 'memories' OR c.relname LIKE 'memories_%'
                                           OR c.relname LIKE 'bm25%')
              AND c.relkind IN ('r', 'i')
            ORDER BY 2 DESC""").fetchall()
        terms = conn.execute(
            """
            SELECT count(*), max(df), percentile_disc(0.5) WITHIN GROUP (ORDER BY df)
            FROM memdb.bm25_terms WHERE tenant = %s""",
            (TENANT,),
        ).fetchone()
        stats = conn.execute(
            "SELECT doc_count, total_len FROM memdb.bm25_stats WHERE tenant = %s", (TENANT,)
        ).fetchone()
        try:  # pg_column_toast_chunk_id: PostgreSQL 17+
            toast = conn.execute("""
                SELECT pg_relation_size(c.reltoastrelid),
                       (SELECT count(*) FILTER (
                                   WHERE pg_column_toast_chunk_id(m.embedding) IS NOT NULL)::float8
                               / greatest(count(*), 1) FROM memdb.memories m),
                       (SELECT avg(pg_column_size(m.*)) FROM memdb.memories m)
                FROM pg_class c WHERE c.oid = 'memdb.memories'::regclass""").fetchone()
        except psycopg.Error:
            conn.rollback()
            toast = (0, None, None)
    return {
        "relations_mb": {r[0]: round(r[1] / 2**20, 1) for r in rows},
        "bm25_terms": {"count": terms[0], "max_df": terms[1], "median_df": terms[2]},
        "bm25_docs": stats[0] if stats else 0,
        "toast_mb": round(toast[0] / 2**20, 1),
        # pgvector's vector has STORAGE EXTERNAL: in a row over ~2 kB it is moved out of line
        "embeddings_out_of_line_share": None if toast[1] is None else round(toast[1], 3),
        "mean_row_bytes": round(float(toast[2] or 0), 1),
        "mean_doc_tokens": round(stats[1] / stats[0], 1) if stats and stats[0] else 0,
    }


def server_info(dsn: str) -> dict:
    with psycopg.connect(dsn) as conn:
        info = {
            "postgresql": conn.execute("SHOW server_version").fetchone()[0],
            "pgvector": conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0],
        }
        info["settings"] = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]
            for name in (
                "shared_buffers",
                "work_mem",
                "effective_cache_size",
                "max_parallel_workers_per_gather",
                "jit",
                "random_page_cost",
            )
        }
    return info


# -- main --------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    t0 = time.perf_counter()
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    warmup = synthetic_queries(args.warmup, docs, subjects, args.seed + 200)
    make_seconds = time.perf_counter() - t0
    langs: dict[str, int] = {}
    for d in docs:
        langs[d.lang] = langs.get(d.lang, 0) + 1
    result: dict[str, Any] = {
        "benchmark": "search_latency",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": args.n,
        "subjects": args.subjects,
        "queries": args.queries,
        "warmup": args.warmup,
        "k": K,
        "dims": DIMS,
        "seed": args.seed,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "corpus": {
            "languages": langs,
            "mean_chars": round(float(np.mean([len(d.text) for d in docs])), 1),
            "make_seconds": round(make_seconds, 2),
            "examples": [d.text for d in docs[:4]],
        },
        "query_mix": {
            "examples": [q.text for q in queries[:6]],
            "phrase_share": round(sum(q.kind == "phrase" for q in queries) / len(queries), 3),
        },
    }
    embedder = RandomEmbedder("bench-random")

    def measure_db(db: str) -> None:
        result["server"] = server_info(db)
        with MemoryStore(db, embedder=embedder, pool_size=2, gate=None) as store:
            space_id = store.space_id()
            result["sizes"] = sizes(db)
            log(
                f"measuring {len(queries)} queries per scenario after {len(warmup)} warm-up queries"
            )
            result["latency_ms"] = measure(
                store, queries, warmup, set(args.only.split(",")) if args.only else None
            )
        result["targets"] = targets(result["latency_ms"], args.n)
        for name, t in result["targets"].items():
            log(f"target {name}: p95 {t['p95_ms']} ms -> {'MET' if t['met'] else 'NOT MET'}")
        if not args.no_plans:
            result["plans"] = explain_plans(db, space_id, queries, result["latency_ms"])
            result["plans_in_functions"] = plans_in_functions(db, queries)

    if args.reuse:
        result["server_how"] = "reuse"
        measure_db(args.reuse)
        return result

    with server(args.dsn) as (admin_dsn, how):
        result["server_how"] = how
        name = f"memdb_bench_search_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        db = with_db(admin_dsn, name)
        _admin(admin_dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        keep = args.keep and how == "dsn"
        try:
            upgrade(db)
            with MemoryStore(db, embedder=embedder, pool_size=2, gate=None) as store:
                log(f"loading {args.n} memories over {args.subjects} subjects into {name}")
                result["load"] = load(
                    store,
                    docs,
                    args.seed,
                    args.chunk,
                    args.batch,
                    args.hnsw_after_load,
                    args.maintenance_work_mem,
                )
            result["load"]["vacuum_analyze_seconds"] = vacuum_analyze(db)
            log(
                f"load: {result['load']['seconds']} s ({result['load']['rows_per_s']} rows/s), "
                f"VACUUM ANALYZE {result['load']['vacuum_analyze_seconds']} s"
            )
            measure_db(db)
            if keep:
                result["kept_database"] = db
                log(f"kept database: {db}")
        finally:
            if not keep:
                _admin(
                    admin_dsn,
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
                )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories to load (default 100000)")
    parser.add_argument("--subjects", type=int, default=100, help="subjects (default 100)")
    parser.add_argument(
        "--queries", type=int, default=200, help="timed queries per scenario (default 200)"
    )
    parser.add_argument(
        "--warmup", type=int, default=20, help="untimed queries per scenario first (default 20)"
    )
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument(
        "--chunk", type=int, default=5000, help="memories per add_many call (default 5000)"
    )
    parser.add_argument("--batch", type=int, default=500, help="add_many batch_size (default 500)")
    parser.add_argument(
        "--dsn",
        help="server to use (default $MEMDB_DSN, else embedded); "
        "the user must be allowed to create databases",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=DEFAULT_OUT,
        help="where to write the JSON (default benchmarks/results/search_latency.json)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the loaded scratch database (only with --dsn/$MEMDB_DSN)",
    )
    parser.add_argument(
        "--reuse", metavar="DB_DSN", help="measure this already loaded database (no load, no drop)"
    )
    parser.add_argument(
        "--hnsw-after-load",
        action="store_true",
        help="drop the space's HNSW index before loading and build it once afterwards "
        "(bulk import; default: every insert maintains it)",
    )
    parser.add_argument(
        "--maintenance-work-mem",
        default="1GB",
        help="maintenance_work_mem for the --hnsw-after-load build (default 1GB; 1M memories "
        "of 384 dimensions need about 3GB for the graph to fit)",
    )
    parser.add_argument("--only", help="comma-separated scenarios to time (default all)")
    parser.add_argument("--no-plans", action="store_true", help="skip the EXPLAIN section")
    args = parser.parse_args(argv)
    if min(args.n, args.subjects, args.queries, args.chunk, args.batch) < 1 or args.warmup < 0:
        parser.error("--n, --subjects, --queries, --chunk and --batch must be positive")

    result = run(args)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
