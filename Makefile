# Two commands on a fresh machine: `make demo` and `make test`.
# Each sets up everything first (virtualenv, package with test extras, Debian's stockfish).

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
STOCKFISH := /usr/games/stockfish
PYTEST_ARGS ?= -n 2

.PHONY: setup stockfish demo test lint bench clean

setup: $(STAMP) stockfish

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

stockfish:
	@if [ -x $(STOCKFISH) ]; then exit 0; fi; \
	if [ "$$(id -u)" = "0" ]; then \
		apt-get update && apt-get install -y stockfish; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get update && sudo apt-get install -y stockfish; \
	else \
		echo "error: $(STOCKFISH) is missing and this user cannot install it." >&2; \
		echo "run: sudo apt-get update && sudo apt-get install -y stockfish" >&2; \
		exit 1; \
	fi

demo: setup
	$(VENV)/bin/rungbench demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no test: a run that tested nothing is a failure.
test: setup lint
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info
