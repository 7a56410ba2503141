"""``validate --json`` started without typer (``backalley.cli.batch``): the same arguments, output and exit as the full command.

:func:`parse_batch` is a second reading of the command line, so it is kept equal
to typer's: on any mix of arguments it either leaves them to typer (``None``) or
reads exactly what typer hands to ``validate``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.cli.batch import Batch, parse_batch

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
runner = CliRunner()
VALIDATE = typer.main.get_command(app).commands["validate"]  # type: ignore[attr-defined]

TOKENS = st.sampled_from(
    [
        "--json", "--quiet", "-q", "--workers", "-w", "--max-record-bytes", "--json=1", "--workers=2", "-w2",
        "-qw", "--", "-", "--help", "-h", "--bogus", "-x", "1", "2", "0", "07", "+2", "-1", "99999999", "4MB",
        "1kb", "0B", "lots", "a.jsonl", "dir/b.json", "-c.jsonl", "é.jsonl", "",
    ]
)  # fmt: skip


def typer_reads(args: list[str]) -> dict[str, object] | None:
    """What typer passes to ``validate`` for ``args`` (after ``validate``), or ``None`` for a usage error."""
    try:
        with VALIDATE.make_context("validate", list(args), resilient_parsing=False) as ctx:
            params = dict(ctx.params)
    except Exception:  # a usage error (typer's own click), or its exit for --help
        return None
    params["paths"] = list(params["paths"])  # (typer hands the command a list)
    return params


VALUES = st.sampled_from(
    ["1", "2", "0", "07", "+2", "-1", " 3", "\u0663", "999999", "9999999", "4MB", "0B", "lots", ""]
)
PATHS = st.sampled_from(["a.jsonl", "dir/b.json", "-", "\u00e9.jsonl", "-c.jsonl", "--", "", " "])


@st.composite
def near_plain(draw: st.DrawFn) -> list[str]:
    """Argument lists close to the plain form: its options with odd values, paths, in any order, some noise."""
    parts: list[list[str]] = [[flag] for flag in ("--json", "--quiet", "-q") if draw(st.booleans())]
    parts += [[opt, draw(VALUES)] for opt in ("--workers", "-w", "--max-record-bytes") if draw(st.booleans())]
    parts += [[p] for p in draw(st.lists(PATHS, max_size=3))]
    parts += [[t] for t in draw(st.lists(TOKENS, max_size=1))]
    return [arg for part in draw(st.permutations(parts)) for arg in part]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(TOKENS, max_size=7), near_plain()))
def test_the_fast_reading_is_none_or_exactly_typers(args: list[str]) -> None:
    fast = parse_batch(["validate", *args])
    if fast is None:
        return
    assert typer_reads(args) == {
        "paths": fast.paths,
        "json_out": True,
        "workers": fast.workers,
        "quiet": fast.quiet,
        "max_record_bytes": fast.max_record_bytes,
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["validate", "--json", "a.jsonl"], Batch(["a.jsonl"])),
        (["validate", "a", "--json", "-w", "2", "-", "b"], Batch(["a", "-", "b"], workers=2)),
        (["validate", "--max-record-bytes", "4MB", "-q", "--json", "x"], Batch(["x"], 1, True, "4MB")),
    ],
)
def test_the_plain_form_is_read(args: list[str], expected: Batch) -> None:
    assert parse_batch(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "a.jsonl"],  # human output: rich, the full command
        ["validate", "--json"],  # no path: typer's usage error
        ["validate", "--json", "--workers=2", "a"],
        ["validate", "--json", "-w", "0", "a"],
        ["validate", "--json", "--json", "a"],
        ["validate", "--json", "--", "-a"],
        ["validate", "--json", "--help"],
        ["ingest", "--json", "a"],
        ["--version"],
        [],
    ],
)
def test_anything_else_goes_to_the_full_command(args: list[str]) -> None:
    assert parse_batch(args) is None


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m backalley ARGS``: the entry point users run."""
    return subprocess.run([sys.executable, "-m", "backalley", *args], input=stdin, capture_output=True, cwd=ROOT)


def full(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--json", str(SAMPLE)],
        ["validate", "--json", "-w", "2", str(SAMPLE / "faulty-games.jsonl"), str(SAMPLE / "valid-games.jsonl")],
        ["validate", "--json", "--max-record-bytes", "2kB", "-q", str(SAMPLE / "bad-inputs.jsonl")],
        ["validate", "--json", str(SAMPLE / "worked-example.json")],
    ],
)
def test_the_fast_start_writes_what_the_full_command_writes(args: list[str]) -> None:
    done = run(*args)
    code, stdout = full(*args)
    assert done.stdout.decode() == stdout and stdout
    assert done.returncode == code
    assert done.stderr == b""


def test_the_fast_start_does_not_import_typer() -> None:
    probe = (
        "import sys\nfrom backalley.cli.batch import main\n"
        f"sys.argv = ['backalley', 'validate', '--json', {str(SAMPLE / 'valid-games.jsonl')!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "sys.stderr.write(f'EXIT {code} TYPER {\"typer\" in sys.modules}')"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.stderr.endswith("EXIT 0 TYPER False"), done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "--json", "no-such-file.jsonl"], "no-such-file.jsonl"),
        (["validate", "--json", "--max-record-bytes", "lots", "x.jsonl"], "--max-record-bytes"),
        (["validate", "--json", "--max-record-bytes", "0B", "x.jsonl"], "at least one byte"),
    ],
)
def test_what_the_fast_start_cannot_answer_gets_the_full_commands_error(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr
    assert done.stdout == b""


def test_no_records_is_the_full_commands_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    done = run("validate", "--json", str(empty))
    assert done.returncode == 2 and b"no records" in done.stderr


def test_standard_input_is_read_by_the_fast_start() -> None:
    line = (SAMPLE / "valid-games.jsonl").read_bytes().splitlines()[0] + b"\n"
    done = run("validate", "--json", "-", stdin=line)
    assert done.returncode == 0 and done.stdout.count(b"\n") == 1 and b'"valid":true' in done.stdout


def test_a_reader_that_stops_early_ends_it_quietly_as_the_full_command_does(tmp_path: Path) -> None:
    many = tmp_path / "many.jsonl"
    many.write_bytes(b"{}\n" * 20_000)  # about 6 MB of reports: more than a pipe holds
    for cmd in (
        [sys.executable, "-m", "backalley", "validate", "--json", str(many)],
        [
            sys.executable,
            "-c",
            "from backalley.cli.app import app; app(prog_name='backalley')",
            "validate",
            "--json",
            str(many),
        ],
    ):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(100)
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 1, cmd
        assert err == b"", err
