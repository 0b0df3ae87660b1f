# One-command entry points (see README). Everything installs into .venv from requirements.txt.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install browser typecheck-tools plan test report-check screenshot bench clean

$(BIN)/modelplane: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	@touch $@

install: $(BIN)/modelplane

plan: install
	$(BIN)/modelplane plan dev

# Debian's chromium draws the fleet report in tests/test_report.py and report-check.
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null; }
	@command -v chromium >/dev/null || { echo "chromium could not be installed (apt-get)" >&2; exit 1; }

# Pinned TypeScript and pyright (tools/typecheck/package-lock.json): tests/test_package.py type-checks
# the TypeScript example against the package schema and the README's Python against the package.
# Without npm the target says so and those two tests skip with that reason.
typecheck-tools:
	@test -x tools/typecheck/node_modules/.bin/tsc || npm ci --prefix tools/typecheck --no-audit --no-fund >/dev/null \
		|| echo "typecheck-tools: npm ci failed; the TypeScript and pyright checks will skip" >&2

test: install browser typecheck-tools
	PULUMI_ERROR_OUTPUT_STRING=true $(BIN)/python -m pytest
	$(MAKE) --no-print-directory report-check

# The prod fleet report, drawn by a real browser: fails on an empty or missing picture.
report-check: install browser
	@mkdir -p out
	$(BIN)/modelplane plan prod --report out/prod-report.html >/dev/null
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1500 \
		--screenshot=out/prod-report.png file://$(CURDIR)/out/prod-report.html 2>/dev/null
	$(BIN)/python -c "from PIL import Image; im = Image.open('out/prod-report.png').convert('RGB'); \
		n = sum(c for c, p in im.getcolors(1 << 20) if p != (255, 255, 255)); assert im.size == (1400, 1500) and n > 50000, n; \
		print(f'report-check: {im.size[0]}x{im.size[1]} PNG, {n} drawn pixels')"

# Refresh the screenshot the README shows.
screenshot: report-check
	cp out/prod-report.png docs/fleet-report-prod.png

bench: install
	$(BIN)/python benchmarks/scheduler.py
	$(BIN)/python benchmarks/plan.py
	$(BIN)/python benchmarks/quality.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis out
