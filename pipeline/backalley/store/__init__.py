"""The DuckDB store: schema and migrations, ingest (workers and one writer), rows and tables, the lake, read-only queries, raw texts and a stored game's outcomes."""

import os

#: An ingest's workers build the Arrow tables too (``BACKALLEY_WORKER_TABLES=1``; an experiment, see
#: "Where the time goes" in docs/performance.md), else the writer builds them.
WORKER_TABLES = os.environ.get("BACKALLEY_WORKER_TABLES") == "1"
#: What an ingest's worker processes import before they start (their forkserver's preload): the row
#: builder, and the tables when they build those.
ROW_WORKER_PRELOAD = ("backalley.store.tables",) if WORKER_TABLES else ("backalley.store.rows",)
