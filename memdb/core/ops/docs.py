"""``python -m memdb.core.ops.docs``: print docs/operations.md, generated from the declarations."""

from ._docs import render

if __name__ == "__main__":
    print(render(), end="")
