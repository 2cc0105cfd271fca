"""``memdb maintenance purge|reembed|pending`` (``store.maintenance``): expired rows and the
re-embedding queue.

Memories written while the embedding provider failed (with ``on_embedding_error="defer"``,
``$MEMDB_ON_EMBEDDING_ERROR=defer``) are stored without vectors; ``memdb maintenance reembed``
embeds them.
"""

from __future__ import annotations

import time

import click

from ._app import emit_json, json_option, store
from ._groups import maintenance


@maintenance.command("reembed")
@click.option("--batch-size", type=int, default=64, show_default=True,
              help="Memories embedded and written per transaction.")
@click.option("--limit", type=int, help="Re-embed at most this many (default: the whole queue).")
@json_option
def reembed(batch_size: int, limit: int | None, as_json: bool) -> None:
    """Embed the memories that wait for an embedding (stored while the provider failed).

    Progress goes to stderr when the queue takes more than one batch. A row changed while it
    was being embedded is skipped (its new text stays queued).
    """
    s = store()
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if total > batch_size:
            click.echo(f"re-embedded {done}/{total}", err=True)

    written = s.maintenance.reembed(batch_size=batch_size, limit=limit, progress=progress)
    pending = s.maintenance.pending_embeddings()
    seconds = round(time.perf_counter() - started, 3)
    if as_json:
        emit_json({"reembedded": written, "pending": pending, "seconds": seconds})
    else:
        click.echo(f"re-embedded {written} memories in {seconds} s; {pending} still pending")


@maintenance.command("pending")
@json_option
def pending_embeddings(as_json: bool) -> None:
    """Count the memories waiting for an embedding (see `memdb maintenance reembed`)."""
    n = store().maintenance.pending_embeddings()
    if as_json:
        emit_json({"pending": n})
    else:
        click.echo(str(n))


@maintenance.command("purge")
@json_option
def purge(as_json: bool) -> None:
    """Delete this tenant's expired memories.

    Expired memories are already invisible to every read; this frees their rows.
    """
    n = store().maintenance.purge_expired()
    if as_json:
        emit_json({"purged": n})
    else:
        click.echo(f"purged {n} expired memories")
