"""memdb.evaluation._vector_cache: the evaluations' on-disk passage-vector cache, with the real
local model (counted by a subclass) and the real embedded server on the tiny LoCoMo file of
tests/test_eval_locomo.py."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from test_eval_locomo import _tiny

from memdb.core.embeddings import LocalEmbedder
from memdb.evaluation import run_locomo
from memdb.evaluation._vector_cache import PassageVectorCache, embed_passages_cached


class CountingEmbedder(LocalEmbedder):
    """The real local model, counting the passages it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.passages = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return super().embed_passages(texts)


class OtherNameEmbedder(CountingEmbedder):
    model = "multilingual-e5-small-renamed"


@pytest.fixture
def tiny_path(tmp_path) -> str:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(_tiny(), ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "eval-vectors"
    monkeypatch.setenv("MEMDB_EVAL_CACHE", str(path))
    return path


TEXTS = ["Bob adopted a puppy named Biscuit.", "李娜下个月要去杭州出差。", "Alice ran a marathon.",
         "text 405"]  # sha256 of "text 405" ends in a zero byte


def test_second_run_embeds_no_turn_and_gives_the_same_figures(tiny_path: str, server_dsn: str,
                                                             cache_dir) -> None:
    # the vector route alone: without the default's neighbour expansion (whose lent scores can
    # tie, and ties are ordered by random ids) and temporal boost
    configs = {"hybrid": {}, "vector": {"routes": ["vector"], "neighbors": 0, "temporal": 0}}
    first_model = CountingEmbedder()
    first = run_locomo(tiny_path, dsn=server_dsn, progress=False, embedder=first_model,
                       configs=configs, vector_cache=True)
    turns = first["meta"]["turns"]
    assert first_model.passages == turns
    assert first["meta"]["vector_cache"] == {"used": True, "hits": 0, "misses": turns,
                                             "path": first["meta"]["vector_cache"]["path"]}
    assert first["meta"]["vector_cache"]["path"].startswith(str(cache_dir))
    second_model = CountingEmbedder()  # a fresh process's embedder: only the file is shared
    second = run_locomo(tiny_path, dsn=server_dsn, progress=False, embedder=second_model,
                        configs=configs, vector_cache=True)
    assert second_model.passages == 0
    assert (second["meta"]["vector_cache"]["hits"], second["meta"]["vector_cache"]["misses"]) \
        == (turns, 0)
    # The vector route ranks by distance alone, so the same vectors give the same figures.
    # (The hybrid's equal fused scores are ordered by the memories' random ids, which differ
    # between two stores of the same turns: its figures can move by a tie.)
    assert _recall(second["routes"]["vector"]) == _recall(first["routes"]["vector"])
    assert _recall(first["routes"])["hybrid"]["overall"]["recall@10"] > 0.5


def _recall(tree: object) -> object:
    """The recall and MRR figures of a result's routes (not its latencies)."""
    if isinstance(tree, dict):
        return {k: _recall(v) for k, v in tree.items()
                if isinstance(v, dict) or k.startswith(("recall@", "mrr", "count"))}
    return tree


def test_a_different_model_name_misses(cache_dir) -> None:
    model = CountingEmbedder()
    embed_passages_cached(model, TEXTS, PassageVectorCache(model))
    other = OtherNameEmbedder()
    cache = PassageVectorCache(other)
    assert cache.path != PassageVectorCache(model).path
    assert cache.key == {**PassageVectorCache(model).key, "model": other.model}
    vectors, stats = embed_passages_cached(other, TEXTS, cache)
    assert (stats["hits"], stats["misses"], other.passages) == (0, 4, 4)
    again, stats = embed_passages_cached(model, TEXTS, PassageVectorCache(model))
    assert (stats["hits"], stats["misses"]) == (4, 0)
    assert np.array_equal(np.stack(again), np.stack(vectors))  # same weights, same vectors
    # a changed text is a different key
    _, stats = embed_passages_cached(model, [*TEXTS[:3], TEXTS[3] + " "], PassageVectorCache(model))
    assert (stats["hits"], stats["misses"]) == (3, 1)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_dims"])
def test_a_corrupt_cache_file_is_ignored_and_rebuilt(cache_dir, damage: str) -> None:
    model = CountingEmbedder()
    want, _ = embed_passages_cached(model, TEXTS, PassageVectorCache(model))
    path = PassageVectorCache(model).path
    if damage == "garbage":
        path.write_bytes(b"not a cache file")
    elif damage == "truncated":  # what a non-atomic write killed halfway would leave
        path.write_bytes(path.read_bytes()[:200])
    else:
        np.savez(path, meta=np.array(json.dumps({"format": 2, "provider": "local",
                                                 "model": model.model, "dims": 384})),
                 hashes=np.zeros((4, 32), np.uint8), vectors=np.zeros((4, 5), np.float32))
    with pytest.warns(RuntimeWarning, match="ignoring the passage-vector cache"):
        cache = PassageVectorCache(model)
    model.passages = 0
    got, stats = embed_passages_cached(model, TEXTS, cache)
    assert (stats["hits"], stats["misses"], model.passages) == (0, 4, 4)
    assert np.array_equal(np.stack(got), np.stack(want))
    rebuilt = PassageVectorCache(model)  # no warning now: the file was rewritten whole
    assert len(rebuilt.vectors) == 4 and not list(path.parent.glob(".tmp-*"))


def test_cli_no_vector_cache(tiny_path: str, fresh_db: str, tmp_path, cache_dir) -> None:
    from click.testing import CliRunner

    from memdb.cli import cli

    def run(*extra: str) -> dict:
        out = tmp_path / "result.json"
        result = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "locomo", tiny_path,
                                          "--limit", "1", "--json", str(out), "--quiet", *extra])
        assert result.exit_code == 0, result.output
        return json.loads(out.read_text(encoding="utf-8"))

    off = run("--no-vector-cache")
    turns = off["meta"]["turns"]
    assert off["meta"]["vector_cache"] == {"used": False, "hits": 0, "misses": turns}
    assert not cache_dir.exists()
    on = run()
    assert on["meta"]["vector_cache"]["used"] and on["meta"]["vector_cache"]["misses"] == turns
    assert run()["meta"]["vector_cache"]["hits"] == turns
    assert run("--no-vector-cache")["meta"]["vector_cache"]["hits"] == 0
