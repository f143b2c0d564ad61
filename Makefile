# Attest: `make run` serves the API, `make test` runs the suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
WORKERS ?= 3
PYTEST_ARGS ?=
# A payment header may be 16 KiB (billing.core.payment_header); gunicorn's own limits
# (4094-byte request line, 8190-byte header field) would answer it with a bare 400 first.
GUNICORN_LIMITS := --limit-request-line 8190 --limit-request-field_size 20480
# A backstop for memory: each worker is replaced after 1,000 to 1,100 requests (the jitter
# keeps the workers from all restarting at once), so whatever a worker's heap kept from
# its densest page goes back with it. Pages are bounded first (MAX_HTML_NODES).
GUNICORN_RECYCLE := --max-requests 1000 --max-requests-jitter 100
# gunicorn 27 opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl), which
# every instance on the machine would share; `make run` needs none. Read when the recipe
# runs (after install), and left out for a gunicorn that has no such socket.
GUNICORN_CONTROL = $(shell $(BIN)/gunicorn --help 2>/dev/null | grep -q -- --no-control-socket && echo --no-control-socket)

# Each gunicorn worker keeps its metric values in files here and /metrics adds them up
# (prometheus-client's multiprocess mode); gunicorn empties it as it starts
# (attest/gunicorn_hooks.py, which also marks an exited worker dead).
METRICS_DIR ?= $(CURDIR)/var/prometheus
GUNICORN_HOOKS := --config python:attest.gunicorn_hooks

.DEFAULT_GOAL := help
.PHONY: help install install-runtime test-deps run worker test lint typecheck format migrate superuser bench clean

help:
	@echo "make run        serve the API on http://$(HOST):$(PORT) (SQLite under var/ by default)"
	@echo "make worker     run only the background task worker (project rebuilds)"
	@echo "make test       run the whole test suite (SQLite unless DATABASE_URL is set)"
	@echo "make lint       ruff check, ruff format --check, the import contract, complexity, mypy"
	@echo "make typecheck  mypy with django-stubs (pyproject.toml, [tool.mypy])"
	@echo "make format     ruff format and ruff check --fix"
	@echo "make migrate    apply database migrations"
	@echo "make superuser  create a staff user for the admin"
	@echo "make bench      run the benchmarks under bench/"

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Attest needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

# The dependencies are installed by uv (from PyPI, into .venv, which keeps its own pip):
# resolving and installing them took pip about two minutes of a fresh `make run` on a loaded
# machine, uv about twenty seconds with an empty cache (bench/README.md, Start-up).
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "uv>=0.5,<1"

UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python

# Reinstall only when a dependency list changes. Serving needs the runtime dependencies
# only (.installed); the test and lint tools come on top of them (.installed-dev). The
# service imports attest_core, which ships in the client's distribution (clients/python):
# both are installed editable.
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e ./clients/python -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(UV_INSTALL) -e ./clients/python -e ".[dev]"
	touch $@

# Everything, for development; `make run` needs install-runtime only.
install: $(VENV)/.installed-dev

# The payments docs' Node client runs in the docs tests with the x402 packages pinned in
# tests/node. npm writes node_modules/.package-lock.json on every install, so they are
# installed again only when the lock file changes. Without npm there is nothing to install:
# that one test skips and says why (.ci/run installs nodejs and npm first, so CI never skips).
NODE_MODULES := tests/node/node_modules/.package-lock.json
NPM = $(shell command -v npm 2>/dev/null)

$(NODE_MODULES): tests/node/package-lock.json tests/node/package.json
	npm ci --prefix tests/node --no-audit --no-fund --silent
	touch $@

# What the suite needs beyond .venv that needs no root. Debian's Chromium for the browser
# tests is a system package: .ci/run installs it (apt-get), and those tests skip without it.
test-deps: install $(if $(NPM),$(NODE_MODULES))

install-runtime: $(VENV)/.installed

migrate: install-runtime
	$(BIN)/python manage.py migrate --noinput

# The task worker (project rebuilds) runs beside gunicorn; Ctrl-C stops both, and the trap
# stops the worker whenever gunicorn ends for another reason.
# --preload loads the app once in gunicorn's master and forks the workers from it, instead of
# each worker importing it again (nothing opens a connection, thread or pool at import).
run: migrate
	$(BIN)/python manage.py ensure_signing_key
	$(BIN)/python manage.py db_worker --interval 1 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	mkdir -p $(METRICS_DIR); \
	PROMETHEUS_MULTIPROC_DIR=$(METRICS_DIR) ATTEST_SERVE_URL=http://$(HOST):$(PORT) \
	$(BIN)/gunicorn attest.wsgi --bind $(HOST):$(PORT) --workers $(WORKERS) --preload --timeout 120 \
		$(GUNICORN_LIMITS) $(GUNICORN_RECYCLE) $(GUNICORN_CONTROL) $(GUNICORN_HOOKS) \
		--access-logfile - --forwarded-allow-ips ""

# Only the task worker, for a deployment that runs gunicorn elsewhere.
worker: migrate
	$(BIN)/python manage.py db_worker

# The MCP tests also drive the service with the official SDK's 2.x client (MCP 2026-07-28),
# which cannot share .venv with the service's mcp 1.x: it gets a venv of its own, reinstalled
# only when its pins change (tests/mcp/conftest.py finds it here).
MCP2_VENV := .venv-mcp2
$(MCP2_VENV)/.installed: tests/mcp/modern/requirements.txt | $(BIN)/uv
	$(BIN)/uv venv --quiet --allow-existing --python $(BIN)/python $(MCP2_VENV)
	$(BIN)/uv pip install --quiet --python $(MCP2_VENV)/bin/python -r tests/mcp/modern/requirements.txt
	touch $@

test: test-deps $(MCP2_VENV)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python scripts/complexity_gate.py
	$(BIN)/mypy

typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

superuser: migrate
	$(BIN)/python manage.py createsuperuser

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(MCP2_VENV) var/attest.sqlite3* .pytest_cache
