"""``python -m memdb.shell ...``: the ``memdb`` command, through its daemon."""

from . import main

main()
