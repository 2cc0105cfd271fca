"""``memdb add --file PATH``: remember an image (store.perceive; docs/perceptual.md). The
options only a file takes, and the options of ``memdb add`` a file does not take."""

from __future__ import annotations

from typing import Any

import click

from ._app import emit_json, store

__all__ = ["FILE_OPTIONS", "FILE_ONLY", "TEXT_ONLY_ALLOWED", "remember_file"]

# (flags, click settings) for memdb add's options that only go with --file
FILE_OPTIONS: tuple[tuple[list[str], dict[str, Any]], ...] = (
    (["--file", "file"], {"type": click.Path(dir_okay=False, allow_dash=False),
                          "help": "Remember the image at this path instead of CONTENT: the "
                                  "text OCR finds in it (Chinese and English) and a caption "
                                  "(when a vision model is configured) become a perceptual "
                                  "memory; its EXIF time becomes the memory's time. The "
                                  "format is found from the content; a file that is no image, "
                                  "is damaged, or is over the size or pixel limits is refused "
                                  "(exit 1) and nothing is written."}),
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
    """store.perceive on the file at ``path``, printed as ``memdb add`` prints."""
    got = store().perceive(path, subject=subject, name=name, ocr=ocr,
                           caption=not no_caption, keep_bytes=keep_bytes,
                           tags=tags or None, reason=reason)
    if as_json:
        emit_json(got.to_dict())
        return
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
