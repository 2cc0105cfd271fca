"""memdb's real LLM client against a real local model (issue 21): llama.cpp's server with
Gemma 3 270M base (tests/local_llm.py, the ``local_llm`` fixture). Nothing is canned here: a
base model answers a chat prompt with realistic junk, which memdb must not store: every LLM
path against it is in tests/test_llm_real.py (remember's peanut case there, English and Chinese).

Skipped with the reason when the server binary is not built (``python -m tests.local_llm
prepare``; .ci/run does it first).
"""

from __future__ import annotations

import openai
import pytest

from memdb.core.llm import ChatLLM, LLMError

pytestmark = pytest.mark.local_llm

def _chat(local_llm, timeout: float = 120.0) -> ChatLLM:
    return ChatLLM(local_llm.base_url, api_key=local_llm.api_key, model=local_llm.model,
                   timeout=timeout)


def test_the_server_checks_the_key_and_serves_the_model(local_llm) -> None:
    client = openai.OpenAI(base_url=local_llm.base_url, api_key=local_llm.api_key)
    assert local_llm.model in [m.id for m in client.models.list()]
    wrong = openai.OpenAI(base_url=local_llm.base_url, api_key="wrong-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


@pytest.mark.parametrize("prompt", ["Name one fruit.", "说一种水果的名字。"])
def test_a_chat_call_returns_text_or_a_typed_error(local_llm, prompt) -> None:
    """A base model may ramble to max_tokens or loop: the client then says so (LLMError with
    its kind), and otherwise returns text."""
    try:
        text = _chat(local_llm).complete([{"role": "user", "content": prompt}], path="answer",
                                         max_tokens=48)
    except LLMError as exc:
        assert exc.kind in {"truncated", "looping"}, exc
    else:
        assert text.strip()


def test_the_server_is_stopped_when_its_block_ends(local_llm) -> None:
    """running_server (the fixture's) leaves no process behind: a second server, started and
    stopped here, is gone and its port closed."""
    from tests.local_llm import _healthy, running_server

    with running_server(build=False) as other:
        assert other.port != local_llm.port and _healthy(other.port)
        proc = other.process
    assert proc.poll() is not None
    assert not _healthy(other.port)
