"""The command line: typer commands (``app``), the fast entry point (``batch``), the terminal views.

``batch`` is the console entry point: it runs ``validate --json`` in its plain form
without importing typer, and hands every other command line to ``app``.
"""

#: Show a progress bar when stderr is a terminal and the input is at least this large (every command).
PROGRESS_MIN_BYTES = 1 << 20
