# Two commands on a fresh machine: `make demo` and `make test`.
# Each sets up everything first (virtualenv, package with test extras, Debian's chess engines).

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
# Debian packages and the binaries that prove them installed: the labeller (Stockfish) and
# the different-family evaluators (Ethereal, Toga II) of seed 002.
ENGINES   := /usr/games/stockfish /usr/games/ethereal-chess /usr/games/toga2
PACKAGES  := stockfish ethereal-chess toga2
# For `make test` only (not `make demo`): Debian's PostgreSQL server, which the ledger, claim-store
# and graph-store suites start in a temporary directory; its initdb proves it installed.
PG_PROOF    := $(or $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb)),/usr/lib/postgresql/15/bin/initdb)
PG_PACKAGES := postgresql
# For `make test` only: Debian's Chromium, which renders the HTML report headless in
# tests/report/test_chromium.py (console errors, the rendered tables, a screenshot).
CHROMIUM_PROOF    := /usr/bin/chromium
CHROMIUM_PACKAGES := chromium
PYTEST_ARGS ?= -n 2 --dist loadgroup

.PHONY: setup engines postgres chromium demo test lint bench clean

setup: $(STAMP) engines

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

engines:
	@missing=""; for e in $(ENGINES); do [ -x $$e ] || missing="$$missing $$e"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	install="apt-get install -y --no-install-recommends $(PACKAGES)"; \
	if [ "$$(id -u)" = "0" ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive $$install; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive $$install; \
	else \
		echo "error:$$missing missing and this user cannot install them." >&2; \
		echo "run: sudo apt-get update && sudo $$install" >&2; \
		exit 1; \
	fi

postgres:
	@$(MAKE) --no-print-directory engines ENGINES="$(PG_PROOF)" PACKAGES="$(PG_PACKAGES)"

chromium:
	@$(MAKE) --no-print-directory engines ENGINES="$(CHROMIUM_PROOF)" \
		PACKAGES="$(CHROMIUM_PACKAGES)"

# Writes ./rungbench-demo (reused and verified on a re-run); its last line is the report's path.
demo: setup
	$(VENV)/bin/rungbench demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no test: a run that tested nothing is a failure.
test: setup postgres chromium lint
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info
