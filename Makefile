# Two commands for a new user: `make test` and `make run`. Everything else is for maintainers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test run install compile lint typecheck pytest bench bench-quick eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# bench/tasks/ holds the tasks' own workspaces (many modules of one name, bugs on purpose): not our code.
typecheck: $(STAMP)
	$(BIN)/mypy dashfloat/ tests/ bench/ --exclude '^bench/tasks/'

# Coverage floors `make test` (so CI) holds, as `files=percent`: at what the suite reaches, never below 90
# (docs/decisions/0020-coverage-floors.md). Which files are traced at all: [tool.coverage.run] in pyproject.toml.
COVERAGE_FLOORS := dashfloat/protocol/*=99 dashfloat/llm/toolcalls.py=99 dashfloat/executor/*=90

pytest: $(STAMP)
	rm -f .coverage .coverage.*
	@# Three workers on two cores: most tests wait on a child process, a pty or a socket, so a third worker fills the
	@# cores' idle time (4:37 -> 3:33 here, the same 2,763 tests).
	$(BIN)/pytest -n 3 -q --cov --cov-report= tests
	@# Forked children that saved after pytest-cov combined; what is left then is a file a child was killed while
	@# writing (tests kill children on purpose), which holds no data.
	@$(BIN)/coverage combine -q --append >/dev/null 2>&1 || true
	@rm -f .coverage.*
	@for floor in $(COVERAGE_FLOORS); do \
		files=$${floor%=*}; min=$${floor##*=}; \
		echo "coverage of $$files: $$($(BIN)/coverage report --include="$$files" --format=total --precision=1) % (floor $$min %)"; \
		$(BIN)/coverage report --include="$$files" --fail-under=$$min --format=total --precision=1 >/dev/null || { \
			$(BIN)/coverage report --include="$$files" --show-missing --skip-covered; \
			echo "coverage of $$files is below its floor of $$min %"; exit 1; }; \
	done

test: lint typecheck pytest

# Byte-compile up front, as a wheel install would: start-up then never pays for compiling our own modules
# (matters where PYTHONDONTWRITEBYTECODE is set, as on CI machines).
compile: $(STAMP)
	$(BIN)/python -m compileall -q dashfloat

# The demo runs in a scratch copy of this checkout, so `fix` and `tour` edit the copy, never DashFloat's own files.
# ARGS passes flags through (e.g. make run ARGS=--yes).
run: compile
	@scratch=$$(mktemp -d "$${TMPDIR:-/tmp}/dashfloat-demo.XXXXXX") && trap 'rm -rf "$$scratch"' EXIT && \
	  { git archive --format=tar HEAD 2>/dev/null | tar -x -C "$$scratch" || \
	    cp -R README.md Makefile pyproject.toml dashfloat docs tests "$$scratch"/; } && \
	  echo "DashFloat works in a scratch copy of this checkout: $$scratch (removed at exit)" && \
	  (cd "$$scratch" && "$(CURDIR)/$(BIN)/dashfloat" $(ARGS)); status=$$?; \
	  echo; echo "To use DashFloat on your own project: run 'make install' here (installs dashfloat into ~/.local/bin)"; \
	  echo "or 'pipx install .', then run 'dashfloat' in your project's directory."; exit $$status

# For users: a regular (non-editable) install in its own venv, and `dashfloat` on PATH (~/.local/bin). The
# editable install `make run` uses (for development) puts an import finder in front of every start (issue 19).
# `pipx install .` is the other way.
INSTALL_DIR ?= $(HOME)/.local/share/dashfloat
BIN_DIR ?= $(HOME)/.local/bin
install:
	$(PYTHON) -m venv "$(INSTALL_DIR)/venv"
	"$(INSTALL_DIR)/venv/bin/python" -m pip install --quiet --disable-pip-version-check .
	mkdir -p "$(BIN_DIR)"
	ln -sf "$(INSTALL_DIR)/venv/bin/dashfloat" "$(BIN_DIR)/dashfloat"
	@case ":$$PATH:" in *":$(BIN_DIR):"*) echo "dashfloat is on PATH: run it in your project's directory";; \
	  *) echo "add $(BIN_DIR) to PATH (e.g. in ~/.profile), then run dashfloat in your project";; esac

bench: compile
	$(BIN)/python -m bench.run

bench-quick: compile
	$(BIN)/python -m bench.run --quick

# The task suite (bench/tasks/, ADR 0076): against the scripted oracle by default; ARGS passes options, e.g.
# make eval ARGS='--base-url http://127.0.0.1:8080/v1 --model qwen --jobs 1'. Writes bench/eval-results.md.
eval: compile
	$(BIN)/python -m bench.eval $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
