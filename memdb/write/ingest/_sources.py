"""Finding what to ingest: files named directly, folders walked recursively (include/exclude
globs, hidden entries skipped, symlinked folders followed once, loops reported), raw texts
given with a document id, and the root every file must resolve inside. Only regular files are
read: a FIFO, socket or device (or a symlink to one) is reported, never opened (a FIFO would
block the run forever).

The root: ``root`` when given; else each folder given is the root of what is found in it,
and a file named directly has its own folder as root. A symlink (to a file or a folder, at
any depth, through any chain of links) whose target resolves outside the root is skipped and
reported as ``outside_root``, so a link to ``~/.ssh`` or ``/etc`` inside a notes folder is
never read. ``follow_outside_links`` drops the default root (``root``, when given, still
holds).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import validate as v
from ...core.errors import InvalidInput
from ._readers import FORMATS, FileProblem, format_for, not_regular
from ._sniff import BINARY_FORMATS, sniff_file

__all__ = ["TextSource", "FileBytes", "Source", "discover", "file_uri", "TEXT_FORMATS"]

TEXT_FORMATS = ("markdown", "text", "csv", "json", "xml")
"""What a :class:`TextSource` may be: CSV, JSON and XML are converted as files of that
format are."""

_NO_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class TextSource:
    """Raw text to ingest as a document with the caller's id (its URI, unique per tenant)."""

    id: str
    text: str
    title: str | None = None
    format: str = "markdown"  # markdown | text | csv | json | xml (converted to Markdown)
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip() or len(self.id) > 4096:
            raise InvalidInput("a text source needs a document id (1 to 4096 characters)")
        v.optional_text(self.id, "text source id", 4096)  # a NUL or lone surrogate, named
        if not isinstance(self.text, str):
            raise InvalidInput("a text source's text must be a string")
        v.optional_text(self.text, "text source text", _NO_LIMIT)  # (max_bytes is checked later)
        v.optional_text(self.title, "text source title", _NO_LIMIT)
        if self.metadata is not None:
            v.metadata(self.metadata, "text source metadata")
        if self.format not in TEXT_FORMATS:
            raise InvalidInput("a text source's format must be one of "
                               + ", ".join(repr(f) for f in TEXT_FORMATS))


@dataclass(frozen=True, slots=True)
class FileBytes:
    """A file's bytes to ingest as a document with the caller's id (an upload): its format is
    found from the content (``name``'s suffix only for text), as a file's is."""

    id: str
    data: bytes
    name: str = "upload"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip() or len(self.id) > 4096:
            raise InvalidInput("a file source needs a document id (1 to 4096 characters)")
        v.optional_text(self.id, "file source id", 4096)
        if not isinstance(self.data, bytes):
            raise InvalidInput("a file source's data must be bytes")


@dataclass(slots=True)
class Source:
    """One thing to ingest: a file (``path``) or a text (``text``), named by ``uri``."""

    uri: str
    path: Path | None = None
    text: TextSource | None = None
    upload: FileBytes | None = None
    relative: str = ""  # path relative to the folder it was found in (for globs)
    problem: FileProblem | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def file_uri(path: str | os.PathLike[str]) -> str:
    """``file://`` + the absolute, normalised path (symlinks not resolved)."""
    return "file://" + os.path.abspath(os.fspath(path))


def _matches(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _outside(full: str, real: str, root_real: str) -> FileProblem:
    what = f"{full} (a symlink to {real})" if os.path.islink(full) else full
    return FileProblem("outside_root", f"{what} is outside the allowed root {root_real}")


def _walk(folder: str, include: Sequence[str], exclude: Sequence[str],
          root_real: str | None) -> Iterable[Source]:
    seen: set[str] = {os.path.realpath(folder)}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        real_dir = os.path.realpath(dirpath)
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if d.startswith(".") or _matches(rel + "/", d, exclude) or _matches(rel, d, exclude):
                continue
            real = os.path.realpath(full)
            if os.path.islink(full) and (real_dir == real or _inside(real_dir, real)):
                yield Source(file_uri(full), Path(full), relative=rel, problem=FileProblem(
                    "symlink_loop", f"symlink loop: {full} points back to {real}"))
                continue
            if root_real is not None and not _inside(real, root_real):
                yield Source(file_uri(full), Path(full), relative=rel,
                             problem=_outside(full, real, root_real))
                continue  # never walked: nothing under it is read
            if real in seen:
                continue  # a folder reached twice through symlinks is read once
            seen.add(real)
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if name.startswith(".") or _matches(rel, name, exclude):
                continue
            if include:
                if not _matches(rel, name, include):
                    continue
            elif format_for(name) is None:  # an unknown suffix: taken when the content is
                source = _file_source(full, rel, root_real)  # a format memdb reads
                if source.problem is None and sniff_file(full) in BINARY_FORMATS:
                    yield source
                continue
            yield _file_source(full, rel, root_real)


def _file_source(full: str, rel: str, root_real: str | None) -> Source:
    source = Source(file_uri(full), Path(full), relative=rel)
    try:
        real = os.path.realpath(full, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            source.problem = FileProblem("symlink_loop", f"symlink loop: {full}")
        elif os.path.islink(full):
            source.problem = FileProblem("not_found", f"broken symlink: {full}")
        else:
            source.problem = FileProblem("not_found", f"no such file: {full}")
        return source
    if root_real is not None and not _inside(real, root_real):
        source.problem = _outside(full, real, root_real)
        return source
    try:
        mode = os.stat(full).st_mode  # follows symlinks: a link to a FIFO is a FIFO
    except OSError as exc:
        source.problem = FileProblem("unreadable", f"cannot stat {full}: {exc.strerror}")
        return source
    if not stat.S_ISREG(mode):
        source.problem = not_regular(full, mode)
    return source


def discover(items: Iterable[Any], *, include: Sequence[str] = (),
             exclude: Sequence[str] = (), root: str | os.PathLike[str] | None = None,
             follow_outside_links: bool = False) -> tuple[list[Source], list[str]]:
    """(sources in order, URI prefixes of the folders walked). Files named directly are taken
    whatever their suffix; in folders, files matching ``include`` (default: every supported
    suffix, and files of any other suffix whose content is a PDF, Word, PowerPoint, Excel or
    EPUB file) and not ``exclude``. With ``root``, relative paths are taken relative to it and
    every file must resolve (symlinks followed) inside it; without it, every file must
    resolve inside the folder it was found in (a file named directly: its own folder) unless
    ``follow_outside_links``."""
    root_real = os.path.realpath(root) if root is not None else None

    def confine(folder: str) -> str | None:
        if root_real is not None or follow_outside_links:
            return root_real
        return os.path.realpath(folder)

    sources: list[Source] = []
    prefixes: list[str] = []
    for item in items:
        if isinstance(item, TextSource):
            sources.append(Source(item.id, text=item))
            continue
        if isinstance(item, FileBytes):
            sources.append(Source(item.id, upload=item))
            continue
        if isinstance(item, dict):
            try:
                text = TextSource(**item)
            except TypeError as exc:
                raise InvalidInput(f"bad text source fields: {exc}") from None
            sources.append(Source(text.id, text=text))
            continue
        if not isinstance(item, (str, os.PathLike)):
            raise InvalidInput(f"ingest takes paths or TextSource items, got {type(item).__name__}")
        path = os.path.expanduser(os.fspath(item))
        if root_real is not None and not os.path.isabs(path):
            path = os.path.join(root_real, path)
        path = os.path.abspath(path)
        if os.path.isdir(path):
            real = os.path.realpath(path)
            if root_real is not None and not _inside(real, root_real):
                sources.append(Source(file_uri(path), Path(path), problem=FileProblem(
                    "outside_root", f"{path} is outside the allowed root {root_real}")))
                continue
            prefixes.append(file_uri(path).rstrip("/") + "/")
            sources.extend(_walk(path, include, exclude, confine(path)))
        else:
            sources.append(_file_source(path, os.path.basename(path),
                                        confine(os.path.dirname(path))))
    unique: dict[str, Source] = {}
    for source in sources:
        unique.setdefault(source.uri, source)
    return list(unique.values()), prefixes


SUPPORTED_SUFFIXES = tuple(sorted(FORMATS))
