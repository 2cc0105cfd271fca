"""``memdb perceive PATH``: remember an image (store.perceive; docs/perceptual.md)."""

from __future__ import annotations

import click

from ._app import cli, emit_json, json_option, store


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=False))
@click.option("--subject", help="Whose memory (default: the store's subject, else 'default').")
@click.option("--name", help="The file's name kept with the memory (default: its own).")
@click.option("--ocr", type=click.Choice(["rapidocr", "tesseract", "none"]),
              help="The OCR engine (default: $MEMDB_OCR, else rapidocr).")
@click.option("--no-caption", is_flag=True,
              help="Do not ask the vision model ($MEMDB_VISION_MODEL) for a caption.")
@click.option("--keep-bytes", type=click.IntRange(min=0),
              help="Keep the file's bytes in the database up to this size (default: "
                   "$MEMDB_KEEP_BYTES, else 1 MiB; 0: never).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--reason", help="Why, recorded in the history.")
@json_option
def perceive(path: str, as_json: bool, subject: str | None, name: str | None,
             ocr: str | None, no_caption: bool, keep_bytes: int | None,
             tags: tuple[str, ...], reason: str | None) -> None:
    """Remember the image at PATH: the text OCR finds in it (Chinese and English) and a
    caption (when a vision model is configured) become a perceptual memory, found by
    `memdb search` like any other; its EXIF time becomes the memory's time. The format is
    found from the content, not the extension. A file that is no image, is damaged, or is
    over the size or pixel limits is refused (exit 1) and nothing is written."""
    got = store().perceive(path, subject=subject, name=name, ocr=ocr,
                           caption=not no_caption, keep_bytes=keep_bytes,
                           tags=list(tags) or None, reason=reason)
    if as_json:
        emit_json(got.to_dict())
        return
    click.echo(f"{got.id} {got.outcome} {got.mime} {got.width}x{got.height}")
    for label, value in (("text", got.text), ("caption", got.caption)):
        if value:
            click.echo(f"  {label}: {' / '.join(value.splitlines())[:300]}")
    if got.taken_at is not None:
        click.echo(f"  taken: {got.taken_at.isoformat()}")
    for note in got.notes:
        click.echo(f"  note: {note}")
