"""The one deprecated name left: ``store.traces(...)``, the listing that ``store.traces.list``
replaced. It warns ``DeprecationWarning("MemoryStore.traces() is deprecated; use
store.traces.list")`` and lists. The store's other old names are gone.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["call_alias"]


def call_alias(family: str, new: str) -> Callable[..., Any]:
    """A family's ``__call__`` that keeps the old ``store.<family>(...)`` listing working."""

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"MemoryStore.{family}() is deprecated; use store.{family}.{new}",
                      DeprecationWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    return __call__
