# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
GAMES  ?= 200
SEED   ?= 2026

.PHONY: demo test lint format bench schema clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/backalley simulate --games $(GAMES) --seed $(SEED) --faults 0.1 --out data/demo/games.jsonl
	-$(BIN)/backalley validate data/demo/games.jsonl data/sample
	@echo "(exit status 1 above is expected: the demo injects faults into some games)"

lint: $(STAMP)
	$(BIN)/ruff check pipeline tests benchmarks
	$(BIN)/ruff format --check pipeline tests benchmarks
	$(BIN)/mypy --strict pipeline

test: $(STAMP) lint
	$(BIN)/pytest

format: $(STAMP)
	$(BIN)/ruff format pipeline tests benchmarks
	$(BIN)/ruff check --fix pipeline tests benchmarks

schema: $(STAMP)
	$(BIN)/backalley schema > schemas/game-record.v1.schema.json

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) data/demo reports/*.html reports/players
