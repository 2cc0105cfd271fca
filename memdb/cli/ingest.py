"""``memdb documents ingest|list|remove|search|citations`` (``store.documents``)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.models import Category, Scope
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..write.ingest import FileResult, IngestReport, TextSource
from ._app import emit_json, json_option, options, store
from ._format import short, table
from ._generate import declared
from ._groups import documents
from ._shared import values


def _categories(specs: tuple[str, ...]) -> str | dict[str, str]:
    """``--category NAME`` or repeated ``--category GLOB=NAME``."""
    if not specs:
        return "general"
    if len(specs) == 1 and "=" not in specs[0]:
        return specs[0]
    out: dict[str, str] = {}
    for spec in specs:
        glob, sep, name = spec.rpartition("=")
        if not sep or not glob:
            raise InvalidInput(f"--category takes NAME or GLOB=NAME, got {spec!r}")
        out[glob] = name
    return out


class _Progress:
    """A progress bar on stderr: files done of the files found, chunks written and their rate,
    errors (tqdm when installed, else a counter line every 50 files)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.n, self.chunks, self.errors = enabled, 0, 0, 0
        self.total: int | None = None
        self._started = time.monotonic()
        self._bar: Any = None

    def start(self, files: int) -> None:
        """Called by ``ingest`` once the sources are found, before the first result."""
        self.total, self._started = files, time.monotonic()

    def _rate(self) -> float:
        elapsed = time.monotonic() - self._started
        return self.chunks / elapsed if elapsed > 0 else 0.0

    def __call__(self, result: FileResult) -> None:
        if not self.enabled:
            return
        if self.n == 0:  # made on the first file, so a refused run prints no bar
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, unit="file", file=sys.stderr,
                                 dynamic_ncols=True, desc="ingest")
            except ImportError:
                self._bar = None
        self.n += 1
        self.chunks += result.chunks if result.status in ("created", "updated") else 0
        self.errors += result.status == "error"
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.chunks} chunks, {self._rate():.1f} chunks/s, "
                                      f"{self.errors} errors", refresh=False)
            self._bar.update(1)
        elif self.n % 50 == 0 or self.n == self.total:
            of = f"/{self.total}" if self.total is not None else ""
            click.echo(f"\r{self.n}{of} files, {self.chunks} chunks ({self._rate():.1f}/s), "
                       f"{self.errors} errors", err=True, nl=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.n and (self.n >= 50 or self.n == self.total):  # a counter line was printed
            click.echo("", err=True)


def _print_report(report: IngestReport) -> None:
    rows = [[f.status, str(f.chunks), f.error_kind or "", short(f.error or f.uri, 100)]
            for f in report.files if f.status != "unchanged"]
    rows += [["pruned", str(f.chunks), "", f.uri] for f in report.pruned]
    if rows:
        table(["status", "chunks", "problem", "document"], rows)
    data = report.to_dict()
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts.items()))
    secs = data["seconds"]
    rate = len(report.files) / secs["total"] if secs["total"] else 0.0
    click.echo(f"{counts or 'nothing to do'}; {data['chunks']} chunks, {data['embedded']} "
               f"embedded; {secs['total']} s ({rate:.1f} files/s; embedding {secs['embed']} s, "
               f"database {secs['db']} s)" + (" [dry run]" if report.dry_run else ""))


# The command reads files and folders: a document's id is its path, its text and format the
# file's, and --category may name one category per file glob; the rest is declared.
FROM_FILES = ("document_id", "text", "title", "format", "category")


@documents.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@declared(ops.ADD_DOCUMENT, skip=FROM_FILES)
@options(
    (["--scope"], {"default": "user", "show_default": True, "help": f"One of: {values(Scope)}."}),
    (["--project-id"], {"help": "Project id (needed with --scope project)."}),
    (["--session-id"], {"help": "Session id (needed with --scope session)."}),
    (["--category", "categories"], {"multiple": True, "metavar": "NAME|GLOB=NAME",
                                    "help": f"Category of the chunks ({values(Category)}), or "
                                            "GLOB=NAME per file (repeatable; first match wins, "
                                            "else general)."}),
    (["--chunk-tokens"], {"type": int, "default": 256, "show_default": True,
                          "help": "Most tokens (of the embedding model) in one chunk."}),
    (["--overlap"], {"type": int, "default": 32, "show_default": True,
                     "help": "Tokens repeated between neighbouring chunks."}),
    (["--parent-tokens"], {"type": int, "default": 1024, "show_default": True,
                           "help": "Most tokens in a parent section "
                                   "(documents search --parents)."}),
    (["--include"], {"multiple": True, "metavar": "GLOB",
                     "help": "In folders, only files matching (repeatable; default: every "
                             "supported suffix, .md .txt .html .pdf .docx .pptx .xlsx .csv "
                             ".epub .json .xml ..., and files whose content is PDF, Word, "
                             "PowerPoint, Excel or EPUB)."}),
    (["--exclude"], {"multiple": True, "metavar": "GLOB",
                     "help": "In folders, skip files and folders matching (repeatable)."}),
    (["--root"], {"help": "Refuse files that resolve outside this folder (default: each "
                          "folder given is its own root; a file's, its folder)."}),
    (["--follow-outside-links"], {"is_flag": True,
                                  "help": "Follow symlinks whose target is outside the folder "
                                          "given (default: skipped, reported outside_root)."}),
    (["--id", "text_id"], {"help": "With PATH '-': ingest stdin as a text with this document id."}),
    (["--prune"], {"is_flag": True,
                   "help": "Remove documents under the given folders whose files are gone."}),
    (["--dry-run"], {"is_flag": True, "help": "Read and chunk, but embed and write nothing."}),
    (["--force"], {"is_flag": True, "help": "Re-chunk and rewrite even unchanged documents."}),
    (["--max-bytes"], {"type": int, "default": 32 * 1024 * 1024, "show_default": True,
                       "help": "Refuse files larger than this."}),
    (["--quiet", "-q"], {"is_flag": True, "help": "No progress bar."}),
)
@json_option
def ingest(paths: tuple[str, ...], as_json: bool, categories: tuple[str, ...],
           tags: list[str] | None, text_id: str | None, quiet: bool, **opts: Any) -> None:
    """Ingest files and folders (Markdown, text, HTML, PDF, Word, PowerPoint, Excel, CSV,
    EPUB, JSON, XML) as documents whose chunks are searchable memories.

    Unchanged files are skipped; changed ones have their chunks replaced atomically. A
    problem with one file is reported and the rest go on; the exit status is 1 if any
    file failed.
    """
    sources: list[Any] = []
    for path in paths:
        if path == "-":
            if not text_id:
                raise InvalidInput("reading stdin ('-') needs --id DOCUMENT_ID")
            sources.append(TextSource(text_id, sys.stdin.read().removeprefix("\ufeff")))
        else:
            sources.append(path)
    progress = _Progress(enabled=not as_json and not quiet)
    try:
        report = store().documents.ingest(sources, category=_categories(categories),
                                          tags=tags or [], progress=progress, **opts)
    finally:
        progress.close()
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
    if report.errors:
        sys.exit(1)


@documents.command("list")
@declared(fam.DOCUMENTS_LIST)
@json_option
def documents_list(as_json: bool, **opts: Any) -> None:
    """List the ingested documents (URI, title, format, version, chunks)."""
    docs = store().documents.list(**opts)
    if as_json:
        emit_json([d.to_dict() for d in docs])
        return
    if not docs:
        click.echo("no documents", err=True)
        return
    table(["chunks", "version", "format", "title", "uri"],
          [[str(d.chunk_count), str(d.version), d.format, short(d.title or "", 40), d.uri]
           for d in docs])


@documents.command("remove")
@declared(fam.DOCUMENTS_REMOVE)
@json_option
def remove_document(uris: list[str], reason: str | None, as_json: bool) -> None:
    """Remove documents by URI, with their chunk memories."""
    removed = store().documents.remove(uris, reason=reason)
    if as_json:
        emit_json({"removed": removed})
    else:
        click.echo(f"{removed} document(s) removed")


@documents.command("search")
@declared(fam.DOCUMENTS_SEARCH)
@json_option
def search_documents(query: str, k: int, parents: bool, subject: str | None,
                     as_json: bool) -> None:
    """Search document chunks; every hit cites its document, heading path and offsets."""
    conditions = {"subject": subject} if subject else {}
    hits = store().documents.search(query, k=k, parents=parents, **conditions)
    if as_json:
        emit_json({"query": query, "hits": [h.to_dict() for h in hits]})
        return
    if not hits:
        click.echo("no document chunks match", err=True)
        return
    for h in hits:
        c = h.citation
        where = f"{c.uri} [{c.char_start}:{c.char_end}] {' › '.join(c.heading_path)}" if c else ""
        click.echo(f"{h.hit.rank}. {h.hit.score:.4f}  {where}")
        text = h.parent_text if parents and h.parent_text else h.hit.memory.content
        click.echo(f"   {short(text)}")


@documents.command("citations")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--parents", is_flag=True, help="Also print each chunk's parent section.")
@json_option
def citations(memory_ids: tuple[str, ...], parents: bool, as_json: bool) -> None:
    """Where memories (document chunks) are cited from: document URI, heading path and
    character offsets, the owner first."""
    found = store().documents.citations(memory_ids, parents=parents)
    if as_json:
        emit_json({mid: [{**c.to_dict(), "parent_text": text} for c, text in rows]
                   for mid, rows in found.items()})
        return
    if not found:
        click.echo("no document text among these memories", err=True)
    for mid, rows in found.items():
        click.echo(mid)
        for c, text in rows:
            click.echo(f"  {c.uri} [{c.char_start}:{c.char_end}] {' › '.join(c.heading_path)}")
            if parents and text:
                click.echo(f"    {short(text)}")
