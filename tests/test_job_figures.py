"""The job queue's figures: store.jobs.throughput (finished per hour), the queue section and
plot of ``memdb report``, and the /ui/jobs page of the memory browser (English and Chinese)."""

from __future__ import annotations

import json

import psycopg
import pytest

from memdb import MemoryStore
from memdb.families.jobs import PermanentFailure, Registry, Worker
from tests.http_server import make_keys, served_door


def _run(dsn: str, store: MemoryStore) -> None:
    """Three jobs done, one dead (its error in Chinese), two left queued; two of the done ones
    finished three hours ago."""
    reg = Registry()
    reg.register("test.ok", lambda ctx: {"ok": True})

    def poison(ctx):
        raise PermanentFailure("格式错误 <bad> payload")

    reg.register("test.poison", poison)
    ok = [store.jobs.enqueue("test.ok", {"n": n}) for n in range(3)]
    store.jobs.enqueue("test.poison")
    worker = Worker(store.db.dsn, handlers=reg)
    try:
        worker.run(until_idle=True)
    finally:
        worker.stop()
    store.jobs.enqueue("test.later", {"text": "稍后 later"})
    store.jobs.enqueue("test.later", {"text": "again"})
    store.jobs.schedule("memories.purge_expired", every=3600)
    with psycopg.connect(dsn, autocommit=True) as conn:  # the admin moves two back in time
        conn.execute("UPDATE memdb.jobs SET finished_at = finished_at - interval '3 hours' "
                      "WHERE id = ANY(%s)", ([j.id for j in ok[:2]],))


def test_throughput_by_hour_and_the_report_section(fresh_db, embedder, tmp_path):
    pytest.importorskip("matplotlib")
    from memdb.report import write_report

    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as store:
        store.add("Alice prefers green tea. 爱丽丝喜欢绿茶。")
        _run(fresh_db, store)
        hourly = store.jobs.throughput(hours=24)
        assert [(r["done"], r["dead"]) for r in hourly] == [(2, 0), (1, 1)]
        assert (hourly[1]["hour"] - hourly[0]["hour"]).total_seconds() == 3 * 3600
        assert store.jobs.throughput(hours=1) == [hourly[1]]
        with pytest.raises(Exception, match="hours"):
            store.jobs.throughput(hours=0)
        result = write_report(store, tmp_path / "r")
    assert "jobs" in result.images and result.images["jobs"].stat().st_size > 8_000
    data = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert (data["jobs"]["queued"], data["jobs"]["done"], data["jobs"]["dead"]) == (2, 3, 1)
    assert [(r["done"], r["dead"]) for r in data["jobs_hourly"]] == [(2, 0), (1, 1)]
    html = result.html.read_text(encoding="utf-8")
    assert "Job queue · 任务队列" in html and 'data:image/png;base64' in html


@pytest.fixture(scope="module")
def door(module_db, embedder):
    keys = make_keys(module_db, embedder)
    with served_door(module_db, embedder, ui=True) as running:
        yield running, keys


def test_ui_jobs_page_shows_the_tenants_queue_only(door, module_db, embedder):
    running, keys = door
    with MemoryStore(module_db, tenant="acme", embedder=embedder, gate=None) as store:
        _run(module_db, store)
    with running.client(follow_redirects=True) as c:
        assert c.post("/ui/login", data={"key": keys["acme"]}).status_code == 200
        page = c.get("/ui/jobs")
        assert page.status_code == 200
        html = page.text
        assert 'href="/ui/jobs"' in html  # in the navigation
        assert "<td>queued</td><td>2</td>" in html and "<td>dead</td><td>1</td>" in html
        assert "memories.purge_expired" in html and "test.poison" in html
        assert "格式错误 &lt;bad&gt; payload" in html and "<bad>" not in html
    with running.client(follow_redirects=True) as c:
        c.post("/ui/login", data={"key": keys["globex"]})
        other = c.get("/ui/jobs").text
        assert "test.poison" not in other and "<td>queued</td><td>0</td>" in other
