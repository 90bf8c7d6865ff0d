# The README's two commands (`make run`, `make test`) do all the set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8765

.PHONY: install run test lint bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/toolhall serve --http --host $(HOST) --port $(PORT)

test: install
	$(BIN)/pytest -q

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: install
	@for script in bench/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

docs: install
	$(BIN)/python docs/gen_cli.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
