# The two commands a newcomer runs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
MAILBRIDGE := $(BIN)/mailbridge

NODE_TESTS := tests/node
NODE_STAMP := $(NODE_TESTS)/node_modules/.installed-stamp

.PHONY: run test install node lint types unit integration acceptance bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# Resend's Node SDK at the version the lockfile pins, for the acceptance tests that run it.
$(NODE_STAMP): $(NODE_TESTS)/package-lock.json
	npm ci --prefix $(NODE_TESTS) --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

node: $(NODE_STAMP)

run: install
	$(MAILBRIDGE) db upgrade
	$(MAILBRIDGE) bootstrap
	$(MAILBRIDGE) serve

# Two workers, each taking whole test files (a file's module-scoped servers start once);
# tests that share something machine-wide (Redis databases, ports) key it by worker.
test: install node lint types
	$(BIN)/pytest -n 2 --dist loadfile

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

types: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest tests/unit

integration: install
	$(BIN)/pytest tests/integration

acceptance: install node
	$(BIN)/pytest tests/acceptance

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache $(NODE_TESTS)/node_modules
