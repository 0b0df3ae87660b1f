# One-command entry points (see README). Everything installs into .venv from requirements.txt.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install plan test bench clean

$(BIN)/modelplane: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	@touch $@

install: $(BIN)/modelplane

plan: install
	$(BIN)/modelplane plan dev

test: install
	PULUMI_ERROR_OUTPUT_STRING=true $(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/scheduler.py
	$(BIN)/python benchmarks/plan.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis out
