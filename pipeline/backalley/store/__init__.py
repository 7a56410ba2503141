"""The DuckDB store: schema and migrations, ingest (workers and one writer), rows and tables, the lake, read-only queries, raw texts and a stored game's outcomes."""

#: What an ingest's worker processes import before they start (their forkserver's preload): the row builder and the screen (:mod:`backalley.store.screen`).
ROW_WORKER_PRELOAD = ("backalley.store.screen",)
