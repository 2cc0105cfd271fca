"""``-`` as a command's output path: standard output.

Every command that writes a file takes ``-`` for standard output; the library's writers take
real paths (they refuse to overwrite, fsync, and remove what a failure left), so for ``-`` the
command writes into a new private temporary folder and copies the result to standard output
once it is complete. What the command would print beside the file (counts, where it went) goes
to standard error then, so standard output carries the document alone.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["STDOUT", "to_stdout", "written"]

STDOUT = "-"


def to_stdout(path: str | None) -> bool:
    return path == STDOUT


@contextlib.contextmanager
def written(path: str, name: str, member: str | None = None) -> Iterator[str]:
    """The path to write to: ``path`` itself, or for ``-`` a new path ``name`` in a temporary
    folder whose content goes to standard output when the block ends without an error (for a
    folder written there: its file ``member``)."""
    if not to_stdout(path):
        yield path
        return
    folder = Path(tempfile.mkdtemp(prefix="memdb-out-"))
    try:
        target = folder / name
        yield str(target)
        if member is not None:
            target = target / member
        if target.exists():
            sys.stdout.flush()
            with target.open("rb") as source:
                shutil.copyfileobj(source, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
