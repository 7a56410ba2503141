# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
GAMES  ?= 200
SEED   ?= 2026
# Games of each other ruleset in the demo (pereulok, bab-online, standard with two options).
RULESET_GAMES ?= 40

.PHONY: install demo test lint format bench bench-growth schema clean

# Reinstalling also recompiles the mypyc modules (setup.py) when their sources change.
# compileall writes the byte-code now, as pip does for a wheel: an editable install leaves it to
# the first import, which never writes it under PYTHONDONTWRITEBYTECODE (then every command
# compiles about 30 ms of sources before it starts).
$(STAMP): pyproject.toml setup.py pipeline/backalley/__init__.py pipeline/backalley/cards.py $(wildcard pipeline/backalley/rules/*.py) pipeline/backalley/replay.py pipeline/backalley/analysis/solver.py pipeline/backalley/store/rows.py pipeline/backalley/analysis/_ddcore.c pipeline/backalley/_fastplay.c
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q pipeline/backalley
	touch $(STAMP)

install: $(STAMP)

DB     ?= data/backalley.duckdb

demo: $(STAMP)
	$(BIN)/backalley simulate --games $(GAMES) --seed $(SEED) --faults 0.1 --out data/demo/games.jsonl
	@echo; echo "== and a smaller mix of the other rulesets"
	$(BIN)/backalley simulate --games $(RULESET_GAMES) --seed $(SEED) --faults 0.1 --ruleset pereulok --out data/demo/pereulok.jsonl
	$(BIN)/backalley simulate --games $(RULESET_GAMES) --seed $(SEED) --faults 0.1 --ruleset bab-online --out data/demo/bab-online.jsonl
	$(BIN)/backalley simulate --games $(RULESET_GAMES) --seed $(SEED) --faults 0.1 --ruleset standard --options short_deck,no_partnerships --out data/demo/standard+short_deck+no_partnerships.jsonl
	@echo; echo "== and games kept on paper: score sheets (bids and tricks, no cards), as CSV"
	$(BIN)/backalley simulate --games $(RULESET_GAMES) --seed $(SEED) --faults 0.1 --sheet --out data/demo/sheets.csv
	@echo; echo "== validate (only the invalid records are listed)"
	@$(BIN)/backalley validate --quiet data/demo || echo "(exit status $$?: some records are invalid, as expected: the demo injects faults)"
	@echo; echo "== ingest into $(DB) (with the committed samples, bad inputs included)"
	@$(BIN)/backalley ingest --db $(DB) data/demo data/sample || echo "(exit status $$?: invalid and rejected inputs were stored and counted, as expected)"
	@echo; echo "== a few answers from SQL"
	$(BIN)/backalley query --db $(DB) "SELECT ruleset, options, status, count(*) AS games FROM games GROUP BY ALL ORDER BY ruleset, options, games DESC"
	$(BIN)/backalley query --db $(DB) "SELECT player, games, round(exact_rate, 3) AS exact_bids, round(mean_signed_error, 2) AS bias, boards_claimed, round(board_success_rate, 2) AS boards_made, round(points_per_deal, 2) AS pts_per_deal FROM player_summary WHERE ruleset = 'standard' AND options = '' ORDER BY pts_per_deal DESC LIMIT 5"
	$(BIN)/backalley query --db $(DB) "SELECT player, games, declarations, declarations_made, auctions_won FROM player_summary WHERE ruleset = 'pereulok' ORDER BY auctions_won DESC, player LIMIT 5"
	$(BIN)/backalley query --db $(DB) "SELECT code, count(*) AS n FROM violations GROUP BY code ORDER BY n DESC LIMIT 5"
	$(BIN)/backalley query --db $(DB) "SELECT sheet, status, count(*) AS games FROM games GROUP BY ALL ORDER BY ALL"
	@echo; echo "== a score sheet, as backalley show prints it"
	$(BIN)/backalley show --db $(DB) table-2026-000
	@echo; echo "== double-dummy analysis of the deals of up to 9 cards a hand (larger ones take up to seconds each: run analyze without --max-cards for them)"
	@$(BIN)/backalley analyze --db $(DB) --max-cards 9 || echo "(exit status $$?: deals that break a rule of play are not analysed, as expected)"
	$(BIN)/backalley query --db $(DB) "SELECT hand_size AS cards, count(*) AS deals, round(avg(dd_ns), 2) AS ns_makeable, round(avg(cost_ns + cost_ew), 2) AS tricks_lost_per_deal FROM dd_deals WHERE analysed GROUP BY hand_size ORDER BY hand_size"
	@echo; echo "== the service (not started by the demo): upload over HTTP, browse games and deals"
	@echo "  $(BIN)/backalley token create club --db $(DB)   # prints an API token, once"
	@echo "  $(BIN)/backalley serve --db $(DB)               # then browse http://127.0.0.1:8000/"
	@echo; echo "== reports"
	@$(BIN)/backalley report --db $(DB) --out reports

lint: $(STAMP)
	$(BIN)/ruff check pipeline tests benchmarks
	$(BIN)/ruff format --check pipeline tests benchmarks
	$(BIN)/mypy --strict pipeline/backalley

test: $(STAMP) lint
	$(BIN)/pytest

format: $(STAMP)
	$(BIN)/ruff format pipeline tests benchmarks
	$(BIN)/ruff check --fix pipeline tests benchmarks

schema: $(STAMP)
	$(BIN)/backalley schema > schemas/game-record.v1.schema.json
	$(BIN)/backalley schema --format-version 2 > schemas/game-record.v2.schema.json

bench: $(STAMP)
	$(PY) benchmarks/run.py

# A quick look at ingest growth (the growth stage of `make bench`, smaller).
bench-growth: $(STAMP)
	$(PY) benchmarks/ingest_growth.py --blocks 3 --block-games 2000

clean:
	rm -rf $(VENV) build dist pipeline/backalley/_build.py
	find pipeline/backalley -name '*.so' -delete
	rm -rf *.so data/demo $(DB) $(DB).wal reports/*.html reports/*.md reports/players
