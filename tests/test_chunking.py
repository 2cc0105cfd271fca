"""The chunker alone (no database): headings, code blocks, tables, Chinese sentence
punctuation, overlap, parents, and the token budget — checked with the real tokenizer and
with property-based inputs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdb import InvalidInput
from memdb.write.ingest import ChunkOptions, chunk_text, default_counter, estimate_tokens

COUNT = default_counter()


def _check(text: str, chunks, budget: int) -> None:
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert c.text.strip() == c.text and c.text
        assert COUNT(c.text) <= c.tokens <= budget
        assert c.parent_start <= c.start and c.end <= c.parent_end


def test_uses_the_model_tokenizer_offline():
    assert COUNT is not estimate_tokens
    assert COUNT("李四是前端工程师") == 8 or 4 <= COUNT("李四是前端工程师") <= 10
    assert 0 < estimate_tokens("hello world 你好") <= 6


def test_headings_make_sections_with_paths():
    text = ("# Guide\n\nIntro.\n\n## Install\n\npip install memdb\n\n### From source\n\n"
            "git clone ...\n\n## Use\n\nCall ingest.\n")
    chunks = chunk_text(text)
    assert [c.heading_path for c in chunks] == [
        ("Guide",), ("Guide", "Install"), ("Guide", "Install", "From source"), ("Guide", "Use")]
    assert chunks[1].text == "## Install\n\npip install memdb"
    _check(text, chunks, 256)


def test_heading_without_body_joins_the_next_section():
    chunks = chunk_text("# A\n\n## B\n\nbody of b\n")
    assert len(chunks) == 1
    assert chunks[0].text == "# A\n\n## B\n\nbody of b" and chunks[0].heading_path == ("A", "B")


def test_code_block_is_never_split_when_it_fits_and_hides_headings():
    code = "```python\n" + "\n".join(f"# comment {i}\nx{i} = {i}" for i in range(8)) + "\n```"
    text = "# Title\n\n" + "word " * 100 + "\n\n" + code + "\n\nAfter the code.\n"
    chunks = chunk_text(text, options=ChunkOptions(chunk_tokens=120, overlap=0))
    assert all(c.heading_path == ("Title",) for c in chunks)  # '# comment' is code
    holding = [c for c in chunks if "x0 = 0" in c.text]
    assert len(holding) == 1 and code in holding[0].text
    _check(text, chunks, 120)


def test_big_code_block_splits_between_lines():
    code = "```\n" + "\n".join(f"line_{i} = compute({i})" for i in range(200)) + "\n```"
    chunks = chunk_text(code, options=ChunkOptions(chunk_tokens=64, overlap=0))
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.startswith(("line_", "```")) and c.text.endswith((")", "```"))
    _check(code, chunks, 64)


def test_table_rows_stay_whole():
    rows = "\n".join(f"| key{i} | owner {i} | rotation every {i} days |" for i in range(60))
    text = "## Keys\n\n| key | owner | rotation |\n|---|---|---|\n" + rows + "\n"
    chunks = chunk_text(text, options=ChunkOptions(chunk_tokens=64, overlap=0))
    assert len(chunks) > 2
    for c in chunks:
        for line in c.text.split("\n"):
            assert line.startswith(("|", "## Keys")) or not line
            assert not line.startswith("|") or line.endswith("|")
    _check(text, chunks, 64)


def test_chinese_splits_at_sentence_punctuation():
    sentences = ["人工智能是计算机科学的一个分支。", "它企图了解智能的实质！",
                 "机器能思考吗？", "研究包括机器人、语言识别和自然语言处理；",
                 "这些都很重要。"] * 12
    text = "".join(sentences)
    chunks = chunk_text(text, markdown=False, options=ChunkOptions(chunk_tokens=48, overlap=0))
    assert len(chunks) > 3
    for c in chunks:
        assert c.text[-1] in "。！？；", c.text
    _check(text, chunks, 48)
    doc = "# 标题\n\n前言。\n\n" + text  # the paragraph starts mid-document
    chunks = chunk_text(doc, options=ChunkOptions(chunk_tokens=48, overlap=0))
    assert all(c.text[-1] in "。！？；" for c in chunks)
    _check(doc, chunks, 48)


def test_overlap_repeats_the_previous_chunks_tail():
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(80))
    chunks = chunk_text(text, markdown=False, options=ChunkOptions(chunk_tokens=64, overlap=20))
    assert len(chunks) > 3
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end  # the next chunk starts inside the previous one
        assert b.end > a.end
        assert COUNT(text[b.start:a.end]) <= 20 + 2
    plain = chunk_text(text, markdown=False, options=ChunkOptions(chunk_tokens=64, overlap=0))
    assert all(b.start >= a.end for a, b in zip(plain, plain[1:], strict=False))
    _check(text, chunks, 64)


def test_parents_are_sections_capped_by_parent_tokens():
    text = "# Big\n\n" + "\n\n".join(f"Paragraph {i} " + "filler words " * 20
                                     for i in range(30))
    opts = ChunkOptions(chunk_tokens=64, overlap=0, parent_tokens=256)
    chunks = chunk_text(text, options=opts)
    parents = {(c.parent_start, c.parent_end) for c in chunks}
    assert len(parents) > 2
    for s, e in parents:
        assert COUNT(text[s:e]) <= 256 + 8
    small = chunk_text("# S\n\none\n\ntwo\n", options=opts)
    assert {(c.parent_start, c.parent_end) for c in small} == {(0, len("# S\n\none\n\ntwo"))}


def test_huge_word_and_unpunctuated_chinese_are_cut_to_budget():
    text = "x" * 3000 + " " + "中" * 2000
    chunks = chunk_text(text, markdown=False, options=ChunkOptions(chunk_tokens=32, overlap=4))
    _check(text, chunks, 32)
    assert "".join(c.text for c in chunk_text(
        text, markdown=False, options=ChunkOptions(chunk_tokens=32, overlap=0))).replace(
        " ", "") == text.replace(" ", "")


def test_options_are_validated():
    for bad in ({"chunk_tokens": 8}, {"overlap": 200}, {"parent_tokens": 10},
                {"chunk_tokens": True}, {"overlap": -1}):
        with pytest.raises(InvalidInput):
            ChunkOptions(**bad)


_WORDS = st.sampled_from(["alpha", "beta", "数据库", "向量", "检索。", "search!", "end.",
                          "```", "# head", "## sub", "| a | b |", "\n", "\n\n", "。", "？",
                          "x" * 40, "Vue.js"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_WORDS, min_size=1, max_size=300), st.integers(16, 80), st.integers(0, 7),
       st.booleans())
def test_budget_is_never_exceeded_and_offsets_are_exact(words, budget, overlap, markdown):
    text = " ".join(words)
    opts = ChunkOptions(chunk_tokens=budget, overlap=min(overlap, budget // 2),
                        parent_tokens=budget * 4)
    chunks = chunk_text(text, markdown=markdown, options=opts)
    _check(text, chunks, budget)
    covered = "".join(text[c.start:c.end] for c in chunk_text(
        text, markdown=markdown, options=ChunkOptions(chunk_tokens=budget, overlap=0,
                                                      parent_tokens=budget * 4)))
    # without overlap, chunks cover every non-space character exactly once
    assert "".join(covered.split()) == "".join(text.split())
