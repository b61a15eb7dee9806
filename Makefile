# Two commands on a fresh machine: `make demo` and `make test`.
# Each sets up everything first: the pinned uv, a virtualenv holding exactly uv.lock (package,
# test extras), Debian's chess engines, node and the pinned Stockfish 18 (npm, project-local).

PYTHON    ?= python3
VENV      := .venv
PY        := $(VENV)/bin/python
# uv, from requirements-uv.txt (version and sha256 pinned), in a folder of its own: `uv sync`
# removes from .venv whatever uv.lock does not list, uv included.
UV_HOME   := .uv
UV        := $(UV_HOME)/bin/uv
# uv never downloads an interpreter: the lock is installed into the $(PYTHON) given.
export UV_PYTHON_DOWNLOADS := never
# The newest allowed versions, no lock: `make test-latest` (never part of `make test` or CI).
LATEST    := $(or $(TMPDIR),/tmp)/rungbench-latest
# Debian packages and the binaries that prove them installed: the labeller (Stockfish) and
# the different-family evaluators (Ethereal, Toga II) of seed 002.
ENGINES   := /usr/games/stockfish /usr/games/ethereal-chess /usr/games/toga2
PACKAGES  := stockfish ethereal-chess toga2
# Seed 002's registered labeller, Stockfish 18 as WebAssembly under node: the npm package
# `stockfish`, version and integrity hash pinned by $(SF18)/package-lock.json, installed into
# the project-local $(SF18)/node_modules (never global, no install scripts) once (the stamp),
# then its files checked against the committed $(SF18)/SHA256SUMS on every setup (~0.5 s).
# Node and npm are Debian's (nodejs, npm) when missing. Nothing is downloaded at run time.
SF18       := engines/stockfish18
SF18_STAMP := $(SF18)/node_modules/.rungbench-installed
# For `make test` only (not `make demo`): Debian's PostgreSQL server, which the ledger, claim-store
# and graph-store suites start in a temporary directory; its initdb proves it installed.
PG_PROOF    := $(or $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb)),/usr/lib/postgresql/15/bin/initdb)
PG_PACKAGES := postgresql
# For `make test` only: Debian's Chromium, which renders the HTML report headless in
# tests/report/test_chromium.py (console errors, the rendered tables, a screenshot).
CHROMIUM_PROOF    := /usr/bin/chromium
CHROMIUM_PACKAGES := chromium
PYTEST_ARGS ?= -n 2 --dist loadgroup

.PHONY: setup venv lock engines node stockfish18 postgres chromium demo test test-latest lint \
	bench clean

setup: venv engines stockfish18

# One line, before anything is installed, when $(PYTHON) is older than the lock covers (read
# when make starts, for the targets that install or run the package).
INSTALLING := $(filter-out engines node stockfish18 postgres chromium clean,$(or $(MAKECMDGOALS),setup))
ifneq ($(INSTALLING),)
ifneq ($(shell { $(PYTHON) -c 'import sys; print(sys.version_info >= (3, 11))'; } 2>/dev/null),True)
$(error rungbench needs Python 3.11 or newer; $(PYTHON) is $(or $(shell { $(PYTHON) -V; } 2>/dev/null),not found))
endif
endif

$(UV): requirements-uv.txt
	rm -rf $(UV_HOME)
	$(PYTHON) -m venv $(UV_HOME)
	$(UV_HOME)/bin/pip install --quiet --no-deps --require-hashes -r requirements-uv.txt
	touch $(UV)

# Exactly uv.lock (every package and version, sha256-checked), then the package itself
# (editable); --locked refuses a lock that no longer matches pyproject.toml. Run every time:
# with nothing to change it takes about a second, and it undoes any hand-made change to .venv.
venv: $(UV)
	@$(UV) sync --quiet --locked --extra test --python $(PYTHON)

# Re-resolve every dependency to the newest release pyproject.toml allows and rewrite uv.lock
# (and the uv pin). Commit both; `make test` then installs and tests exactly that.
lock: $(UV)
	echo uv > $(UV_HOME)/uv.in
	$(UV) pip compile --quiet --universal --generate-hashes --no-header $(UV_HOME)/uv.in \
		-o $(UV_HOME)/uv.txt
	{ sed -n '/^# /p' requirements-uv.txt; cat $(UV_HOME)/uv.txt; } > requirements-uv.txt.new
	mv requirements-uv.txt.new requirements-uv.txt
	$(UV) lock --upgrade

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

node:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory engines ENGINES="/usr/bin/node /usr/bin/npm" \
			PACKAGES="nodejs npm"; \
	fi

$(SF18_STAMP): $(SF18)/package.json $(SF18)/package-lock.json $(SF18)/SHA256SUMS | node
	npm ci --prefix $(SF18) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

stockfish18: $(SF18_STAMP)
	@cd $(SF18) && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1 || { \
		echo "error: $(SF18)/node_modules differs from $(SF18)/SHA256SUMS; reinstall:" \
			"rm -rf $(SF18)/node_modules && make setup" >&2; exit 1; }

postgres:
	@$(MAKE) --no-print-directory engines ENGINES="$(PG_PROOF)" PACKAGES="$(PG_PACKAGES)"

chromium:
	@$(MAKE) --no-print-directory engines ENGINES="$(CHROMIUM_PROOF)" \
		PACKAGES="$(CHROMIUM_PACKAGES)"

# Writes ./rungbench-demo (reused and verified on a re-run); its last line is the report's path.
demo: setup
	$(VENV)/bin/rungbench demo

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no test: a run that tested nothing is a failure.
test: setup postgres chromium lint
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

# The suite in a throwaway venv holding the newest releases pyproject.toml allows (no lock),
# to find what a future `make lock` would break. The lock-equality tests are left out there.
test-latest: $(UV) engines stockfish18 postgres chromium
	rm -rf $(LATEST)
	$(UV) venv --quiet --python $(PYTHON) $(LATEST)
	$(UV) pip install --quiet --python $(LATEST)/bin/python --upgrade --no-sources -e '.[test]'
	$(UV) pip list --python $(LATEST)/bin/python > $(LATEST)/versions.txt
	@$(LATEST)/bin/python -m pytest $(PYTEST_ARGS) --deselect tests/test_lock.py; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(UV_HOME) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info \
		$(SF18)/node_modules
