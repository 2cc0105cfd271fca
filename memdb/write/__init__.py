"""The write path: inputs, the write gate, classification, extraction, remember and
document ingestion (``ingest``). It imports only from ``memdb.core``."""
