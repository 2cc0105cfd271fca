"""``memdb add --file PATH``: remember any file memdb reads (store.add_file; docs/files.md). The
options only a file takes, and the options of ``memdb add`` a file does not take."""

from __future__ import annotations

from typing import Any

import click

from ._app import emit_json, store

__all__ = ["FILE_OPTIONS", "FILE_ONLY", "TEXT_ONLY_ALLOWED", "remember_file"]

# (flags, click settings) for memdb add's options that only go with --file
FILE_OPTIONS: tuple[tuple[list[str], dict[str, Any]], ...] = (
    (["--file", "file"], {"type": click.Path(dir_okay=False, allow_dash=False),
                          "help": "Remember the file at this path instead of CONTENT, by its "
                                  "content: an image (its OCR text, Chinese and English, and "
                                  "a caption) or a recording (its transcript) becomes a "
                                  "perceptual memory; a document (PDF, Word, PowerPoint, "
                                  "Excel, EPUB, CSV, JSON, XML, Markdown, HTML, text) is "
                                  "ingested. A file of another format, damaged, or over the "
                                  "size or pixel limits is refused (exit 1) and nothing is "
                                  "written."}),
    (["--name"], {"help": "With --file: the file's name kept with the memory (default: its "
                          "own)."}),
    (["--ocr"], {"type": click.Choice(["rapidocr", "tesseract", "none"]),
                 "help": "With --file: the OCR engine (default: $MEMDB_OCR, else rapidocr)."}),
    (["--no-caption"], {"is_flag": True,
                        "help": "With --file: do not ask the vision model "
                                "($MEMDB_VISION_MODEL) for a caption."}),
    (["--keep-bytes"], {"type": click.IntRange(min=0),
                        "help": "With --file: keep the file's bytes in the database up to this "
                                "size (default: $MEMDB_KEEP_BYTES, else 1 MiB; 0: never)."}),
)
# the parameters (click names) that only go with --file
FILE_ONLY = ("name", "ocr", "no_caption", "keep_bytes")
# memdb add's parameters that also go with --file (every other one is refused with it)
TEXT_ONLY_ALLOWED = ("subject", "tags", "reason", "as_json", "file", *FILE_ONLY)


def given(ctx: click.Context, names: Any) -> list[str]:
    """The options among ``names`` given on the command line, as their flags."""
    out = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) \
                is click.core.ParameterSource.COMMANDLINE:
            out.append(param.opts[0] if param.opts else (param.name or ""))
    return out


def remember_file(path: str, *, as_json: bool, subject: str | None, name: str | None,
                  ocr: str | None, no_caption: bool, keep_bytes: int | None,
                  tags: list[str] | None, reason: str | None) -> None:
    """store.add_file on the file at ``path``, printed as ``memdb add`` prints."""
    added = store().add_file(path, subject=subject, name=name, ocr=ocr,
                             caption=not no_caption, keep_bytes=keep_bytes,
                             tags=tags or None, reason=reason)
    if as_json:
        emit_json(added.to_dict())
        return
    if added.report is not None:  # a document: its id and chunks
        for f in added.report.files:
            click.echo(f"{f.document_id} {f.status} {f.format} {f.chunks} chunks {f.uri}")
        return
    got = added.perceived
    assert got is not None
    if got.modality == "audio":  # a recording: its length and whether it was transcribed
        length = "" if got.duration_s is None else f" {got.duration_s:g}s"
        click.echo(f"{got.id} {got.outcome} {got.mime}{length} {got.state}")
    else:
        click.echo(f"{got.id} {got.outcome} {got.mime} {got.width}x{got.height}")
    for label, value in (("text", got.text), ("caption", got.caption)):
        if value:
            click.echo(f"  {label}: {' / '.join(value.splitlines())[:300]}")
    if got.taken_at is not None:
        click.echo(f"  taken: {got.taken_at.isoformat()}")
    for note in got.notes:
        click.echo(f"  note: {note}")
