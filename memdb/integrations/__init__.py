"""memdb inside other agent frameworks. Each integration is its own module and imports its
framework lazily, so ``import memdb`` never needs them:

* :mod:`memdb.integrations.langgraph`: ``MemdbStore`` / ``AsyncMemdbStore``, LangGraph's
  ``BaseStore`` on memdb's tables (``pip install 'memdb[langgraph]'``).
"""
