# One-command entry points (see README). Everything installs into .venv from requirements.txt.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: install browser typecheck-tools plan test report-check report-draw screenshot bench crosscheck clean \
	e2e-build e2e cluster cluster-down

# Progress: one line per package pip collects (its full output goes to $(VENV)/install.log, whose
# tail is printed if it fails; a shell loop, because mawk holds its input back).
# modelplane itself is installed editable in setuptools' `compat` mode: a static .pth naming this
# checkout, which pyright and mypy follow (the default mode's import hook is invisible to them);
# `strict` (a tree of links, also static) where a setuptools no longer offers compat.
# PYTHONWARNINGS silences setuptools' notices about the editable install and the compat mode.
EDITABLE_QUIET := ignore:Editable installation,ignore:Compat editable installs
$(BIN)/modelplane: requirements.txt pyproject.toml
	@echo "install: a virtualenv in $(VENV), then the pinned packages of requirements.txt (about a minute)"
	$(PY) -m venv $(VENV)
	@$(BIN)/pip install -q --upgrade pip
	@$(BIN)/pip install -r requirements.txt 2>&1 | tee $(VENV)/install.log | while IFS= read -r line; do \
		set -- $$line; case $$line in \
		"Collecting "*) echo "  $$((++n)) $$2";; \
		"Processing "*) f=$${2##*/}; echo "  $$((++n)) $${f%%-[cp][py][0-9]*}";; \
		"Installing collected"*) echo "  installing the $$n packages...";; esac; done \
		|| { tail -n 30 $(VENV)/install.log >&2; exit 1; }
	@echo "install: modelplane itself (editable: the package is this checkout)"
	@PYTHONWARNINGS="$(EDITABLE_QUIET)" $(BIN)/pip install -q --no-deps -e . --config-settings editable_mode=compat \
		|| $(BIN)/pip install -q --no-deps -e . --config-settings editable_mode=strict
	@touch $@
	@echo "install: done ($(BIN)/modelplane)"

install: $(BIN)/modelplane

plan: install
	$(BIN)/modelplane plan dev

# chromium draws the fleet report in tests/test_report.py and report-check. Optional: without it
# those checks are skipped with a line saying so. As root on Debian/Ubuntu (CI: .ci/run) it is
# installed with apt-get; elsewhere install chromium yourself (any package that puts `chromium` on
# PATH). BROWSER=required (what .ci/run sets) fails instead of skipping.
BROWSER ?= optional
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || { \
		echo "browser: installing Debian's chromium with apt-get (a minute or two)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-dejavu-core; }
	@command -v chromium >/dev/null || [ "$(BROWSER)" != required ] || \
		{ echo "browser: chromium is required (BROWSER=required) and could not be installed" >&2; exit 1; }
	@command -v chromium >/dev/null || echo "browser: no chromium on PATH; the fleet report's browser checks are \
	skipped (install chromium to run them: apt-get install chromium, dnf install chromium, brew install --cask chromium)"

# Pinned TypeScript and pyright (tools/typecheck/package-lock.json): tests/test_package.py type-checks
# the TypeScript example against the package schema and the README's Python against the package.
# Without npm the target says so and those two tests skip with that reason.
typecheck-tools:
	@test -x tools/typecheck/node_modules/.bin/tsc || npm ci --prefix tools/typecheck --no-audit --no-fund >/dev/null \
		|| echo "typecheck-tools: npm ci failed; the TypeScript and pyright checks will skip" >&2

# The suite runs on every core (pytest-xdist): a worker per core, each test file on one worker so
# its module fixtures (a plan computed once, read by many tests) are computed once; tests/conftest.py
# names the units (the files sharing plans are one) and their order, longest first. Parallel-safe:
# tests write only under tmp_path, the user cache is written atomically, goldens only on request.
test: install $(VENV)/prices.stamp $(VENV)/sizing.stamp browser typecheck-tools
	PULUMI_ERROR_OUTPUT_STRING=true $(BIN)/python -m pytest -n auto --dist loadgroup --no-loadscope-reorder
	$(MAKE) --no-print-directory report-check

# The prod fleet report, drawn by a real browser: fails on an empty or missing picture; skipped
# (saying so) without chromium.
report-check: install browser
	@if ! command -v chromium >/dev/null; then echo "report-check: skipped (no chromium on PATH)"; exit 0; fi; \
	$(MAKE) --no-print-directory report-draw

report-draw:
	@mkdir -p out
	$(BIN)/modelplane plan prod --report out/prod-report.html >/dev/null
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1500 \
		--screenshot=out/prod-report.png file://$(CURDIR)/out/prod-report.html 2>/dev/null
	$(BIN)/python -c "from PIL import Image; im = Image.open('out/prod-report.png').convert('RGB'); \
		n = sum(c for c, p in im.getcolors(1 << 20) if p != (255, 255, 255)); assert im.size == (1400, 1500) and n > 50000, n; \
		print(f'report-check: {im.size[0]}x{im.size[1]} PNG, {n} drawn pixels')"

# Refresh the screenshot the README shows.
screenshot: install report-draw
	cp out/prod-report.png docs/fleet-report-prod.png

crosscheck: install
	$(BIN)/python tools/crosscheck_shared.py

bench: install
	$(BIN)/python benchmarks/scheduler.py
	$(BIN)/python benchmarks/plan.py
	$(BIN)/python benchmarks/quality.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis out

# The price API clients of the optional extra modelplane[prices]: tests/test_prices.py runs
# `modelplane prices refresh` through them on recorded responses.
$(VENV)/prices.stamp: requirements-prices.txt $(BIN)/modelplane
	$(BIN)/pip install -q -r requirements-prices.txt
	@touch $@

# The estimator of the optional extra modelplane[sizing]: tests/test_sizing_estimator.py runs it
# (without it the test skips; every other test reads the shipped profiles).
$(VENV)/sizing.stamp: requirements-sizing.txt $(BIN)/modelplane
	$(BIN)/pip install -q -r requirements-sizing.txt
	@touch $@

# The real engine and control plane (tools/e2e/): the pulumi CLI and the Kubernetes provider plugin,
# etcd, kube-apiserver/-controller-manager/-scheduler v1.35 and KWOK, and the operators' controllers,
# all built from the Go module proxy at pinned versions and cached by version under
# ~/.cache/modelplane/e2e (cold: see the README's budget; warm: nothing to build).
e2e-build: install
	$(BIN)/python tools/e2e/build.py

# `make e2e`: the first `up` of a production-like stack and changes to it under the real engine, on
# two loopback clusters; writes out/e2e/report.json (versions, scenarios, order, serving counts).
e2e: install
	MODELPLANE_E2E=1 PULUMI_ERROR_OUTPUT_STRING=true $(BIN)/python -m pytest tests/e2e -p no:cacheprovider -x

# `make cluster`: one loopback cluster ("local") with GPU nodes shaped like STACK's pools of CLUSTER,
# for `modelplane up` by hand; `make cluster-down` stops it.
STACK_FILE ?= tests/e2e/stacks/Pulumi.e2e.yaml
POOLS_OF ?= e2e-a
cluster: install
	$(BIN)/python tools/e2e/build.py pulumi kubernetes-provider etcd kubernetes kwok
	$(BIN)/python tools/e2e/local.py up --stack-file $(STACK_FILE) --pools-of $(POOLS_OF)

cluster-down:
	$(BIN)/python tools/e2e/local.py down
