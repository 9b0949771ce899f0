# Thin targets: CI and the README call these, nothing else.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# Quiet installs: errors only, no progress bars, no "new pip available" notice.
PIP    := $(PY) -m pip install -qq --progress-bar off --disable-pip-version-check

.PHONY: install compile uncompile run test test-unit test-pure check-builds lint bench openapi docs services clean ui-vendor

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing tcpfr and its test tools into $(VENV) ..."
	@$(PIP) --upgrade pip
	@$(PIP) -e '.[dev,compile]'
	@touch $(STAMP) $(RUN_STAMP)

# Serving needs the package and its compiler, not the test tools.
$(RUN_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing tcpfr into $(VENV) ..."
	@$(PIP) --upgrade pip
	@$(PIP) -e '.[compile]'
	@touch $(RUN_STAMP)

# The per-packet modules compiled with mypyc into engine/_native/ (scripts/compile_engine.py
# says which): a no-op while the build matches the sources, a rebuild (about a minute and a
# half) when one changed. Without a C compiler the engine runs pure Python and says so; in
# CI that fails instead. The engine never runs a build that does not match its sources.
COMPILE_FLAGS ?= $(if $(filter true,$(CI)),--strict,)
compile: $(RUN_STAMP)
	@$(PY) scripts/compile_engine.py $(COMPILE_FLAGS)

install: $(STAMP) compile

uncompile:
	$(PYTHON) scripts/compile_engine.py --clean

run: compile
	@$(PY) -m api.serve

# Postgres and Redis are started when installed but stopped; with CI=true a missing one fails.
services:
	@bash scripts/services.sh

# The tests run the compiled engine: with CI=true they fail rather than run pure Python.
TEST_BUILD := $(if $(filter true,$(CI)),compiled,auto)
# The unit tests (one process each, no services) spread over every core (pytest-xdist, a
# file to a process so module fixtures are built once); the integration and browser tests,
# which start workers and time what they see, then run one at a time.
test: install services
	TCPFR_ENGINE_BUILD=$(TEST_BUILD) $(PY) -m pytest -q -m unit -n auto --dist loadfile
	TCPFR_ENGINE_BUILD=$(TEST_BUILD) $(PY) -m pytest -q -m "not unit"

test-unit: install
	TCPFR_ENGINE_BUILD=$(TEST_BUILD) $(PY) -m pytest -q -m unit -n auto --dist loadfile

# The fallback guarded: the engine's own unit tests on pure Python, and every case of
# bench/goldens.py (presets, scale cases, variants) identical to the byte in both builds.
test-pure: install
	TCPFR_ENGINE_BUILD=pure $(PY) -m pytest -q -m unit -n auto --dist loadfile tests/unit/test_engine_*.py

check-builds: install
	@mkdir -p build
	TCPFR_ENGINE_BUILD=compiled $(PY) bench/goldens.py --write build/goldens-compiled.json
	TCPFR_ENGINE_BUILD=pure $(PY) bench/goldens.py --check build/goldens-compiled.json

# What CI checks before the tests (and .pre-commit-config.yaml on each commit): lint rules,
# the formatter's layout, types (strict for engine/, the defaults elsewhere), dead code
# (vulture; pyproject.toml's [tool.vulture] and vulture_whitelist.py).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m vulture

bench: $(STAMP)
	@for b in bench/*_bench.py; do echo "== $$b"; $(PY) $$b || exit 1; done

openapi: $(STAMP)
	$(PY) -m api.export_openapi > openapi/openapi.json

# The UI's libraries from the npm registry into api/ui/assets/vendor/ (checked in, so
# `make run` and `make test` need no npm): uPlot (charts) as published; CodeMirror 5 (the
# scenario editor, its YAML mode, lint and hint addons) and `yaml` (a parser that keeps source
# ranges) bundled by esbuild from api/ui/vendor-src/ into one script and one stylesheet.
# Run it to move to other versions.
UPLOT_VERSION ?= 1.6.32
CODEMIRROR_VERSION ?= 5.65.20
YAML_VERSION ?= 2.9.1
ESBUILD_VERSION ?= 0.28.2
VENDOR := api/ui/assets/vendor
ui-vendor:
	rm -rf .ui-vendor && mkdir .ui-vendor
	cd .ui-vendor && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null && tar xzf uplot-$(UPLOT_VERSION).tgz
	cp .ui-vendor/package/dist/uPlot.iife.min.js .ui-vendor/package/dist/uPlot.min.css $(VENDOR)/
	cp .ui-vendor/package/LICENSE $(VENDOR)/uPlot.LICENSE
	cd .ui-vendor && echo '{"private": true}' > package.json && npm install --silent --no-audit --no-fund \
		codemirror@$(CODEMIRROR_VERSION) yaml@$(YAML_VERSION) esbuild@$(ESBUILD_VERSION)
	cp api/ui/vendor-src/editor-entry.mjs api/ui/vendor-src/editor.css .ui-vendor/
	cd .ui-vendor && ./node_modules/.bin/esbuild editor-entry.mjs --bundle --minify \
		--format=iife --legal-comments=none --outfile=editor.min.js
	cd .ui-vendor && ./node_modules/.bin/esbuild editor.css --bundle --minify --outfile=editor.min.css
	cp .ui-vendor/editor.min.js .ui-vendor/editor.min.css $(VENDOR)/
	cp .ui-vendor/node_modules/codemirror/LICENSE $(VENDOR)/CodeMirror.LICENSE
	cp .ui-vendor/node_modules/yaml/LICENSE $(VENDOR)/yaml.LICENSE
	printf '%s\n' "uPlot $(UPLOT_VERSION) from the npm registry (make ui-vendor)" \
		"CodeMirror $(CODEMIRROR_VERSION) and yaml $(YAML_VERSION) from the npm registry, bundled by esbuild $(ESBUILD_VERSION) into editor.min.js, editor.min.css (make ui-vendor)" \
		> $(VENDOR)/VERSIONS
	rm -rf .ui-vendor

# The field reference of docs/scenario.md, from the models (a unit test fails when stale).
docs: $(STAMP)
	$(PY) -m engine.docs --write

clean: uncompile
	rm -rf $(VENV) .tcpfr .pytest_cache
