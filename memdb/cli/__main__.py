"""``python -m memdb.cli ...``: the ``memdb`` command without the console script (e.g. in an
MCP client's configuration: ``"command": "python", "args": ["-m", "memdb.cli", "mcp"]``)."""

from . import main

main()
