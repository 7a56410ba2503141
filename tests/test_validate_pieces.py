"""Validation in pieces: several workers give what one gives, byte for byte.

With several workers, each reads and checks spans of the input (whole files,
newline-aligned byte ranges of large ``.jsonl`` files, blocks of standard
input) and sends back one piece of results per task; these tests cut the
input at every kind of place and compare with the one-worker run.
"""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.records.sources import (
    BOM,
    InputFile,
    Item,
    count_lines,
    expand,
    line_ranges,
    read_file,
    read_span,
    spans,
)
from backalley.validate import Piece, Summary, pool_context, validate_files
from tests.helpers import FailingDisk, failing_at, random_record

runner = CliRunner()
#: The record limit of the library tests: the junk line is above it, every game below it.
LIMIT = 40_000


def game(seed: int, deals: int = 25, **change: object) -> bytes:
    rec = random_record(seed, deals)
    rec.update(change)
    return json.dumps(rec).encode()


def bad_game(seed: int) -> bytes:
    rec = random_record(seed, 3)
    rec["deals"][0]["result"]["points"]["NS"] += 1  # RESULT_MISMATCH
    return json.dumps(rec).encode()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of awkward inputs: a BOM, CRLF, blank lines, bad JSON and records, over-size lines, a .json file."""
    root = tmp_path_factory.mktemp("pieces")
    lines = [
        BOM + game(1),
        b"",
        b"   \r",
        game(2, deals=4) + b"\r",
        b"{not json",
        bad_game(3),
        b"\xff\xfe not UTF-8",
        b"[1, 2]",
        b"x" * (LIMIT + 10),  # too large
        game(4, game_id="dup"),
        game(5, game_id="dup"),
        b"",
        bad_game(6) + b"\r",
    ]
    (root / "a.jsonl").write_bytes(b"\n".join(lines))  # no newline at the end
    (root / "b.json").write_bytes(BOM + game(7, deals=2))
    (root / "c.jsonl").write_bytes(bad_game(8) + b"\n")  # smaller than any span but the smallest
    (root / "d.jsonl").write_bytes(b"\n\n  \n")  # only blank lines
    (root / "e.jsonl").write_bytes(b"\r\n".join([game(9), b"", bad_game(10), b"{}"]) + b"\r\n")
    return root


def files_of(root: Path) -> list[InputFile]:
    return expand([str(root / "a.jsonl"), str(root), str(root / "c.jsonl")])


def joined(pieces: Iterator[Piece]) -> tuple[bytes, list[tuple[Item, object]], Summary]:
    summary = Summary()
    output = b""
    shown = []
    for p in pieces:
        summary.add_piece(p)
        output += p.output
        shown += p.shown
    return output, shown, summary


@pytest.mark.parametrize("size", [1, 10, 100, 1000, 4096, 30_000, 10**6])
def test_spans_give_the_records_of_a_whole_read(inputs: Path, size: int) -> None:
    files = files_of(inputs)
    whole = [it for f in files for it in read_file(f)]
    got = [it for s in spans(files, size) for it in read_span(s)]
    assert got == whole
    assert sum(s.size for s in spans(files, size)) == sum(f.size for f in files)


@pytest.mark.parametrize("size", [1, 50, 1000, 10**6])
def test_standard_input_in_blocks_gives_the_records_of_a_whole_read(
    inputs: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (inputs / "a.jsonl").read_bytes()
    stdin = expand(["-"])
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=io.BytesIO(data)))
    whole = list(read_file(stdin[0]))
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=io.BytesIO(data)))
    got = [it for s in spans(stdin, size) for it in read_span(s)]
    assert got == whole and len(got) == 10
    assert all(s.data is not None for s in spans(expand(["-"]), size))


def test_one_worker_reports_each_record_of_standard_input_as_it_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    class Lines(io.BytesIO):
        """Standard input that fails if read beyond the record the caller has not been given yet."""

        given = 0

        def __iter__(self) -> Iterator[bytes]:
            for line in self.getvalue().splitlines(keepends=True):
                assert Lines.given >= 0, "read ahead"
                Lines.given -= 1
                yield line

    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=Lines(b"{}\n[1]\n" + game(16) + b"\n")))
    pieces = validate_files(expand(["-"]), 1, True, True, LIMIT)
    for _ in range(3):
        Lines.given = 1
        assert next(pieces).records == 1
    assert next(pieces, None) is None


@pytest.mark.parametrize("name", ["pipe.jsonl", "pipe.json"])
def test_a_pipe_is_read_here_as_a_whole_read_reads_it(tmp_path: Path, name: str) -> None:
    data = b"\n".join([BOM + b"{}", b"", b"[1]", b"{bad"])
    path = tmp_path / name

    def records(read: object) -> list[Item]:
        os.mkfifo(path)
        writer = threading.Thread(target=path.write_bytes, args=(data,))
        writer.start()
        try:
            got = list(read(expand([str(path)])))  # type: ignore[operator]
        finally:
            writer.join()
            path.unlink()
        return got

    whole = records(lambda files: read_file(files[0]))
    got = records(lambda files: (it for s in spans(files, 3) for it in read_span(s)))
    first = b"{}" if name.endswith(".jsonl") else data.removeprefix(BOM)
    assert got == whole and got[0].raw == first


@pytest.mark.parametrize("size", [1, 100, 1000, 10**6])
@pytest.mark.parametrize("where", ["at the start", "inside a line", "after a newline", "past the end"])
def test_a_read_error_inside_a_file_keeps_the_lines_before_it_as_a_whole_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, where: str
) -> None:
    lines = [b'{"n": %d}' % i for i in range(60)]
    path = tmp_path / "disk.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cut = sum(len(x) + 1 for x in lines[:37])  # the start of line 38
    bad = {"at the start": 0, "inside a line": cut + 3, "after a newline": cut, "past the end": 10**9}[where]
    failing_at(monkeypatch, path, bad)
    files = expand([str(path)])
    whole = list(read_file(files[0]))
    got = [it for s in spans(files, size) for it in read_span(s)]
    assert got == whole
    records = {"at the start": 0, "inside a line": 37, "after a newline": 37, "past the end": 60}[where]
    assert [it.raw for it in whole if it.read_error is None] == lines[:records]
    errors = [it.read_error for it in whole if it.read_error is not None]
    assert errors == ([] if where == "past the end" else ["cannot read: Input/output error"])


def test_a_read_error_on_standard_input_keeps_the_lines_before_it_as_a_whole_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [b'{"n": %d}' % i for i in range(60)]
    data = b"\n".join(lines) + b"\n"
    bad = sum(len(x) + 1 for x in lines[:37]) + 3
    stdin = expand(["-"])
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=io.BufferedReader(FailingDisk(data, bad), 64)))
    whole = list(read_file(stdin[0]))
    for size in (1, 100, 10**6):
        monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=io.BufferedReader(FailingDisk(data, bad), 64)))
        got = [it for s in spans(stdin, size) for it in read_span(s)]
        assert got == whole
    assert [it.raw for it in whole[:-1]] == lines[:37]
    assert whole[-1].read_error == "cannot read: Input/output error"


def test_a_file_gone_after_listing_is_a_read_error_as_in_a_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "gone.jsonl"
    path.write_bytes(b"{}\n" * 100)
    files = expand([str(path)])
    path.unlink()
    got = [it for s in spans(files, 10) for it in read_span(s)]
    assert got == list(read_file(files[0]))
    assert got == [Item(str(path), None, b"", "cannot read: No such file or directory")]


@pytest.mark.parametrize(("size", "workers"), [(1, 2), (700, 2), (10**6, 2), (3000, 3)])
def test_workers_give_the_one_worker_reports_byte_for_byte(inputs: Path, size: int, workers: int) -> None:
    files = files_of(inputs)
    one = joined(validate_files(files, 1, True, True, LIMIT))
    many = joined(validate_files(files, workers, True, True, LIMIT, span_bytes=size))
    assert many == one
    assert one[2].records == 15 and one[2].by_status["invalid"] == 9
    assert one[2].by_code["JSON"] == 3 and not one[1]


def test_workers_started_beside_another_thread_give_the_same_reports(inputs: Path) -> None:
    files = files_of(inputs)
    one = joined(validate_files(files, 1, True, True, LIMIT))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()  # forking now could copy a held lock: the workers come from a fork server
    try:
        assert pool_context().get_start_method() != "fork"
        many = joined(validate_files(files, 2, True, True, LIMIT, span_bytes=2000))
    finally:
        stop.set()
        other.join()
    assert many == one


@pytest.mark.parametrize("show_valid", [True, False])
def test_workers_show_the_one_worker_records(inputs: Path, show_valid: bool) -> None:
    files = files_of(inputs)
    one = joined(validate_files(files, 1, False, show_valid, LIMIT))
    many = joined(validate_files(files, 2, False, show_valid, LIMIT, span_bytes=500))
    assert many == one and one[0] == b""
    assert len(one[1]) == (15 if show_valid else 9)
    assert all(item.raw == b"" for item, _ in one[1])


@pytest.fixture(scope="module")
def big(inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``inputs`` and a .jsonl file larger than a span, cut by the default span size between and in lines."""
    root = tmp_path_factory.mktemp("big")
    for p in inputs.iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    junk = b'{"game_id": "' + b"y" * 1_100_000 + b'"}'  # above --max-record-bytes (1 MB)
    lines = [game(11), junk, b"", bad_game(12) + b"\r", junk, b"{oops", game(13, deals=2)]
    (root / "z-big.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return root


@pytest.mark.parametrize("mode", [["--json"], [], ["--quiet"]])
def test_cli_output_and_exit_code_do_not_depend_on_workers(big: Path, mode: list[str]) -> None:
    args = ["validate", *mode, str(big), str(big / "c.jsonl")]
    one = runner.invoke(app, [*args, "--workers", "1"])
    assert one.exit_code == 1 and one.stdout
    for workers in ("2", "3"):
        many = runner.invoke(app, [*args, "--workers", workers])
        assert (many.exit_code, many.stdout, many.stderr) == (one.exit_code, one.stdout, one.stderr)
    if mode == ["--json"]:
        lines = one.stdout_bytes.splitlines()
        assert len(lines) == 21 and b"record too large: 1,100," in lines[-3]


def test_cli_all_valid_exits_0_with_workers(tmp_path: Path) -> None:
    (tmp_path / "ok.jsonl").write_bytes(game(14) + b"\n" + game(15) + b"\n")
    one = runner.invoke(app, ["validate", "--json", str(tmp_path)])
    two = runner.invoke(app, ["validate", "--json", "--workers", "2", str(tmp_path)])
    assert (one.exit_code, one.stdout) == (two.exit_code, two.stdout) and one.exit_code == 0


@given(
    lines=st.lists(st.integers(min_value=0, max_value=3000), max_size=300),
    tail=st.binary(max_size=50),
    cut=st.floats(min_value=0, max_value=1),
)
@settings(max_examples=200, deadline=None)
def test_count_lines_counts_every_newline_as_bytes_count_does(lines: list[int], tail: bytes, cut: float) -> None:
    """The fast count (``find`` for long lines, ``count`` once they are short) equals ``bytes.count``, up to
    any end, whatever the mix of line lengths."""
    data = b"".join(b"x" * n + b"\n" for n in lines) + tail
    end = int(len(data) * cut)
    assert count_lines(data, end) == data.count(b"\n", 0, end)
    assert count_lines(bytearray(data), len(data)) == data.count(b"\n")


def test_cut_points_and_line_numbers_of_long_and_short_lines(tmp_path: Path) -> None:
    """A file whose lines are long, then short, then long again (the count's two ways): every range
    starts on a line's first byte and knows its line's number, for block sizes below and above a line."""
    lines = [b"L" * 5000] * 30 + [b"s" * 20] * 500 + [b"M" * 3000] * 20
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(data)
    for block in (100, 1024, 4096, 70_000, 1 << 20):
        ranges = list(line_ranges(path, len(data), block))
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data), block
        for (start, end, first), nxt in zip(ranges, [*ranges[1:], (len(data), None, None)], strict=True):
            assert end == nxt[0] and (start == 0 or data[start - 1 : start] == b"\n")
            assert first == data.count(b"\n", 0, start) + 1
