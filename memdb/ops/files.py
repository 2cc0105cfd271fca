"""Perceptual memory's operation (memdb.perceive), declared once like those of
:mod:`memdb.ops.catalog`: the MCP tool ``remember_image``, the docs' reference tables, and
the limits the doors take."""

from __future__ import annotations

from ._operation import Operation
from ._param import REQUIRED, Param

__all__ = ["PERCEIVE", "FILE_OPERATIONS", "MAX_IMAGE_BASE64_CHARS"]

# an image sent inline (base64) to the MCP tool: about 10 MiB of bytes
MAX_IMAGE_BASE64_CHARS = 14_000_000

PERCEIVE = Operation(
    "perceive", "Remember an image: the text found in it (OCR, Chinese and English) and a "
    "caption (when a vision model is configured) become a perceptual memory, found by search "
    "like any other; its EXIF time becomes the memory's time. Files that are no image (by "
    "their content), damaged, or too large are refused and nothing is written.",
    (Param("image_base64", "str", "The image file's bytes, base64-encoded (PNG, JPEG, GIF, "
           "WebP or TIFF; the format is found from the content).", REQUIRED,
           min_length=4, max_length=MAX_IMAGE_BASE64_CHARS),
     Param("name", "str", "The file's name, kept with the memory.", max_length=200),
     Param("subject", "str", "Whose memory (default: 'default').", min_length=1,
           max_length=256),
     Param("caption", "bool", "Ask the configured vision model for a caption.", True),
     Param("tags", "str_list", "Short labels.", max_items=10, item_max_length=64),
     Param("reason", "str", "Why (recorded in the memory's history).", max_length=1000)),
    scope="subject",
    result="id, outcome, text, caption, mime, width, height, sha256, taken_at, notes",
    errors=("InvalidInput", "TooLarge", "Forbidden", "DatabaseUnavailable"),
    doors=(("cli", "add --file"), ("http", "POST /v1/files"), ("mcp", "remember_image")))

FILE_OPERATIONS: tuple[Operation, ...] = (PERCEIVE,)
