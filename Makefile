# Two commands for a new user: `make test` and `make run`. Everything else is for maintainers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test run compile lint typecheck pytest bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy dashfloat/

pytest: $(STAMP)
	$(BIN)/pytest -n 2 -q tests

test: lint typecheck pytest

# Byte-compile up front, as a wheel install would: start-up then never pays for compiling our own modules
# (matters where PYTHONDONTWRITEBYTECODE is set, as on CI machines).
compile: $(STAMP)
	$(BIN)/python -m compileall -q dashfloat

run: compile
	$(BIN)/dashfloat

bench: compile
	$(BIN)/python -m bench.run

bench-quick: compile
	$(BIN)/python -m bench.run --quick

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
