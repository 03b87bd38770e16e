# PowerOn: `make run` starts the app, `make test` runs lint and the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

HTMX_VERSION := 2.0.11
HTMX_WS_VERSION := 2.0.4
PICO_VERSION := 2.1.1
# The 14.x line: markdown-it-py, which renders answers on the server, is its port.
MARKDOWN_IT_VERSION := 14.3.3
DOMPURIFY_VERSION := 3.5.0

.PHONY: run password test lint format setup setup-test setup-bench setup-node system-deps vendor migrate bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

$(VENV)/.installed-bench: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $@ $(VENV)/.installed-test $(VENV)/.installed-run

setup: $(VENV)/.installed-run
setup-test: $(VENV)/.installed-test
setup-bench: $(VENV)/.installed-bench

# The official protocol clients the tests run against the app (package.json, versions pinned
# by package-lock.json); reinstalled only when those change.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup-node: node_modules/.installed

# Debian packages the tests need: Chromium for the browser test.
system-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "Installing Debian's chromium for the browser test..."; \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

migrate: setup
	$(PY) manage.py migrate --noinput

run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py ensure_first_account
	$(PY) manage.py settle_runs
	@echo "PowerOn is starting on http://$(HOST):$(PORT)/  (Ctrl-C stops it)"
	DEBUG=$${DEBUG:-1} $(PY) -m daphne -b $(HOST) -p $(PORT) poweron.asgi:application

# A new password for an account (the first one by default; ACCOUNT=name for another), asked
# for twice: the way back when the password `make run` printed once is lost.
ACCOUNT ?= admin
password: migrate
	$(PY) manage.py changepassword $(ACCOUNT)

lint: setup-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: setup-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: setup-test setup-node system-deps lint
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/pytest

# Every benchmark that runs on its own (real_model.py needs a model server: see the README).
BENCHES := engine_tokens checkpoints long_workflow first_event api_stream host_overhead event_latency vs_react mcp_catalog

bench: setup-bench
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

# Refresh the vendored front-end files from the npm registry at the pinned versions, and the
# code colours from the installed Pygments.
vendor: setup
	@set -e; tmp=$$(mktemp -d); cd $$tmp; \
	npm pack --silent htmx.org@$(HTMX_VERSION) htmx-ext-ws@$(HTMX_WS_VERSION) @picocss/pico@$(PICO_VERSION) \
		markdown-it@$(MARKDOWN_IT_VERSION) dompurify@$(DOMPURIFY_VERSION) >/dev/null; \
	for f in *.tgz; do tar xzf $$f && mv package $${f%.tgz}; done; \
	cd - >/dev/null; mkdir -p static/vendor; \
	cp $$tmp/htmx.org-$(HTMX_VERSION)/dist/htmx.min.js static/vendor/htmx.min.js; \
	cp $$tmp/htmx-ext-ws-$(HTMX_WS_VERSION)/dist/ws.js static/vendor/htmx-ext-ws.js; \
	cp $$tmp/picocss-pico-$(PICO_VERSION)/css/pico.min.css static/vendor/pico.min.css; \
	cp $$tmp/markdown-it-$(MARKDOWN_IT_VERSION)/dist/markdown-it.min.js static/vendor/markdown-it.min.js; \
	cp $$tmp/dompurify-$(DOMPURIFY_VERSION)/dist/purify.min.js static/vendor/purify.min.js; \
	sed -i '/^\/\/# sourceMappingURL=/d' static/vendor/markdown-it.min.js static/vendor/purify.min.js; \
	printf 'htmx.org %s\nhtmx-ext-ws %s\n@picocss/pico %s\nmarkdown-it %s\ndompurify %s\n' $(HTMX_VERSION) $(HTMX_WS_VERSION) \
		$(PICO_VERSION) $(MARKDOWN_IT_VERSION) $(DOMPURIFY_VERSION) > static/vendor/VERSIONS; \
	rm -rf $$tmp; echo "static/vendor refreshed"; cat static/vendor/VERSIONS
	$(PY) -c "from workflows.markdown import highlight_css; print(highlight_css(), end='')" > static/css/highlight.css

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache node_modules
