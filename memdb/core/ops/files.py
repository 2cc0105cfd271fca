"""The file door's operation (``store.add_file``; memdb.families.files), declared once like those of
:mod:`memdb.core.ops.catalog`: the MCP tool ``remember_file``, the docs' reference tables, and the
limits the doors take."""

from __future__ import annotations

from ._operation import Operation
from ._param import REQUIRED, Param

__all__ = ["ADD_FILE", "FILE_OPERATIONS", "MAX_FILE_BASE64_CHARS"]

# a file sent inline (base64) to the MCP tool: about 10 MiB of bytes
MAX_FILE_BASE64_CHARS = 14_000_000

ADD_FILE = Operation(
    "add_file", "Remember a file, whatever memdb reads, found by its content: an image (PNG, "
    "JPEG, GIF, WebP, TIFF) becomes a perceptual memory of the text OCR finds in it (Chinese "
    "and English) and a caption (when a vision model is configured), its EXIF time the "
    "memory's time; a recording (WAV, MP3, Ogg, M4A) a perceptual memory of its transcript "
    "(when a transcription endpoint is configured, else kept not transcribed); a document "
    "(PDF, Word, PowerPoint, Excel, EPUB, CSV, JSON, XML, Markdown, HTML, text) is ingested "
    "as a document whose chunks cite it. Any other file, a damaged one, or one too large is "
    "refused and nothing is written.",
    (Param("file_base64", "str", "The file's bytes, base64-encoded (the format is found "
           "from the content).", REQUIRED, min_length=4, max_length=MAX_FILE_BASE64_CHARS),
     Param("name", "str", "The file's name, kept with the memory or document (its suffix "
           "tells text formats apart: .md, .html, .csv...).", max_length=200),
     Param("subject", "str", "Whose memory (default: 'default').", min_length=1,
           max_length=256),
     Param("caption", "bool", "For an image: ask the configured vision model for a caption.",
           True),
     Param("tags", "str_list", "Short labels.", max_items=10, item_max_length=64),
     Param("reason", "str", "Why (recorded in the memory's history).", max_length=1000)),
    scope="subject",
    result="kind (image, audio or document); for an image or recording: id, outcome, text, "
           "caption, mime, width, height, duration_s, state, sha256, taken_at, notes; for a "
           "document: counts, chunks and files (uri, format, document_id, chunks)",
    errors=("InvalidInput", "UnsupportedFormat", "TooLarge", "Forbidden",
            "DatabaseUnavailable"),
    doors=(("cli", "add --file"), ("http", "POST /v1/files"), ("mcp", "remember_file")))

FILE_OPERATIONS: tuple[Operation, ...] = (ADD_FILE,)
