"""Handlers on memdb.families.jobs.handlers for `memdb worker --import tests.jobs_handlers`
(tests/test_jobs_doors.py): ``test.cli`` returns the length of its payload's text."""

from __future__ import annotations

from memdb.families.jobs import PermanentFailure, handlers


def _length(ctx):
    text = ctx.job.payload.get("text")
    if text is None:
        raise PermanentFailure("no text in the payload / 没有文本")
    return {"chars": len(text)}


handlers.register("test.cli", _length, replace=True)
