"""The core: errors, models, validation, SQL loading, connections and the embedded server,
migrations, embeddings, filters, the LLM client and the declared operations (``ops``).
It imports nothing from the layers above it (write, retrieval, families, the doors)."""
