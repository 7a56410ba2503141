"""What the CLI prints: data never read as markup, control characters escaped, NO_COLOR, progress, workers, empty work."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import MofNCompleteColumn, TimeRemainingColumn
from typer.testing import CliRunner

from backalley.cli.app import app, progress_bar
from backalley.cli.progress import RateColumn, rich_bar
from tests.report_sample import build_hand_made

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ["[/]", "[bold]x[/bold]", "\x1b[31mred"]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "store.duckdb"
    build_hand_made(path)
    return path


def hostile_inputs(folder: Path) -> Path:
    """A folder named with markup holding records whose game id, player name and JSON key are hostile."""
    where = folder / "[bold]in[/]"
    where.mkdir(parents=True)
    lines = [
        json.dumps({"game_id": HOSTILE[0], HOSTILE[1]: 1}),
        json.dumps({"game_id": HOSTILE[1], "players": {"N": HOSTILE[2]}}),
        json.dumps({"game_id": HOSTILE[2], HOSTILE[0]: 2}),
    ]
    (where / "x.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def test_validate_prints_data_literally(tmp_path: Path) -> None:
    where = hostile_inputs(tmp_path)
    result = runner.invoke(app, ["validate", str(where)])
    assert result.exit_code == 1
    text = result.stdout
    assert "Traceback" not in result.output and "\x1b" not in text
    assert f"{where}/x.jsonl:1  [/]" in text
    assert f"{where}/x.jsonl:2  [bold]x[/bold]" in text
    assert f"{where}/x.jsonl:3  \\x1b[31mred" in text
    assert "/[bold]x[~1bold]: Extra inputs" in text  # a JSON key (as a JSON pointer)


def test_ingest_and_errors_print_paths_literally(tmp_path: Path) -> None:
    where = hostile_inputs(tmp_path)
    db = tmp_path / "[/]db.duckdb"
    result = runner.invoke(app, ["ingest", str(where), "--db", str(db), "-w", "1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert str(db) in result.stdout
    missing = runner.invoke(app, ["validate", str(tmp_path / "[/]\x1b[31mnope")])
    assert missing.exit_code == 2 and "[/]\\x1b[31mnope" in missing.stderr and "\x1b" not in missing.stderr


@pytest.mark.parametrize("name", HOSTILE)
def test_report_player_names_print_literally(sample_db: Path, tmp_path: Path, name: str) -> None:
    result = runner.invoke(app, ["report", "--db", str(sample_db), "--out", str(tmp_path), "--player", name])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"no player {name!r}" in result.stderr and "\x1b" not in result.stderr


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"PYTHONPATH": str(ROOT / "pipeline"), **env}
    return subprocess.run(
        [sys.executable, "-m", "backalley", *args], capture_output=True, text=True, env=full, check=False
    )


def test_no_color_is_honoured(tmp_path: Path) -> None:
    where = hostile_inputs(tmp_path)
    colour = run_cli("validate", str(where), env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert "\x1b[31m" in colour.stdout  # the red "invalid" mark: colours are on without NO_COLOR
    plain = run_cli("validate", str(where), env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert plain.returncode == 1
    assert "\x1b[31m" not in plain.stdout and "\x1b[32m" not in plain.stdout and "\x1b[33m" not in plain.stdout
    err = run_cli("validate", str(tmp_path / "nope"), env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[31m" not in err.stderr and "error:" in err.stderr


def test_every_progress_bar_has_count_rate_and_time_left() -> None:
    for of_total in (True, False):
        bar = rich_bar("x", of_total=of_total, console=Console(file=io.StringIO()))
        kinds = {type(c) for c in bar.columns}
        assert RateColumn in kinds and TimeRemainingColumn in kinds
        assert (MofNCompleteColumn in kinds) == of_total


def test_the_analysis_bar_shows_games_deals_solved_and_time_left() -> None:
    """``analyze``'s bar: games done of all, the deals solved so far (the ``detail``), rate, time left."""
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False)
    bar = rich_bar("analysing", of_total=True, console=console, detail="{task.fields[deals]:,} deals solved")
    task = bar.add_task("games", total=40, deals=0)
    bar.update(task, completed=12, deals=1234)
    console.print(bar.get_renderable())
    line = out.getvalue()
    assert "analysing games" in line and "12/40" in line and "1,234 deals solved" in line
    assert TimeRemainingColumn in {type(c) for c in bar.columns}


def test_a_hidden_progress_bar_takes_every_call_and_shows_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    for of_total in (True, False):
        with progress_bar("x", show=False, of_total=of_total) as bar:
            task = bar.add_task("games", total=3, records=0)
            bar.update(task, advance=1, records=1, completed=1, total=None, description="d")
    assert capsys.readouterr() == ("", "")


def test_simulate_workers_give_the_same_bytes(tmp_path: Path) -> None:
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.jsonl"
        args = ["simulate", "-n", "60", "--seed", "9", "--players", "30", "--faults", "0.3", "-o", str(out)]
        result = runner.invoke(app, [*args, "--workers", workers])
        assert result.exit_code == 0, result.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") == 60


def test_report_workers_give_the_same_pages(sample_db: Path, tmp_path: Path) -> None:
    trees = []
    for workers in ("1", "2"):
        out = tmp_path / f"r{workers}"
        result = runner.invoke(app, ["report", "--db", str(sample_db), "--out", str(out), "--workers", workers])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str((out / "index.html").resolve())  # ends with the path, no `open`
        trees.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
        pages = len([p for p in trees[-1] if p.parts[0] == "players"])
        assert pages > 2 and f"report: {pages} player pages" in result.stderr
    assert trees[0] == trees[1]


def test_report_on_nothing_says_so(sample_db: Path, tmp_path: Path) -> None:
    none = runner.invoke(app, ["report", "--db", str(sample_db), "--out", str(tmp_path), "--event", "No such event"])
    assert none.exit_code == 2 and "no games of event 'No such event'" in none.stderr
    assert len(none.stderr.strip().splitlines()) == 1
    empty = tmp_path / "empty.duckdb"
    blank = tmp_path / "blank.jsonl"
    blank.write_text("{broken\n", encoding="utf-8")
    runner.invoke(app, ["ingest", str(blank), "--db", str(empty)])  # a store with one reject and no game
    result = runner.invoke(app, ["report", "--db", str(empty), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "no games in" in result.stderr and str(empty) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_make_demo_ends_with_the_report_path() -> None:
    demo = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "open " not in demo and demo.strip().splitlines()[-1].strip().lstrip("@").startswith(
        "$(BIN)/backalley report"
    )
