"""Retrieval: search options, planning, decomposition, recall, the profile and answering
(``ask``). It imports only from ``memdb.core`` and ``memdb.write``."""
