"""The store and its families: sessions, documents, graph, review, traces, maintenance,
subjects, meta, the memory tool, the async store and the admin. The doors (``memdb.cli``,
``memdb.http``, ``memdb.mcp``, ``memdb.ui``, ``memdb.integrations``, ``memdb.report``,
``memdb.evaluation``) sit on top of it."""
