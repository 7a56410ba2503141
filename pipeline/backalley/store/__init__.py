"""The DuckDB store: schema and migrations, ingest (workers and one writer), rows and tables, the lake, read-only queries, raw texts and a stored game's outcomes."""
