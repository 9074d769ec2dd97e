# `make test` is the README's test command and what CI runs (.ci/run). It runs two legs of the
# support matrix (README "Supported versions"):
#   dev:    .venv (python3, 3.11), the newest releases of every dependency: ruff, mypy --strict, the suite
#   newest: .venv-newest, the newest Python we test, newest releases, installed from the sdist: the
#           suite, run inside the unpacked sdist
# The declared floors (pyproject.toml) are those releases. `make test-floor` runs the suite on the oldest
# declared Python with every dependency pinned at its floor (tests/constraints-floor.txt); it joins `make
# test` again when older floors are declared (README: the 6 failures the Python 3.10 / pandas 2.3 floors had).
# Each leg runs the whole suite with warnings as errors (pyproject.toml [tool.pytest.ini_options]).
# `make test-dev` runs the first leg alone; `make test-quick` the everyday tier.
VENV ?= .venv
PY := $(VENV)/bin/python
FLOOR_PYTHON ?= 3.11
NEWEST_PYTHON ?= 3.13
PYTEST_ARGS ?=
PYTEST = -m pytest -q -n 2 $(PYTEST_ARGS)
# pytest exits 5 when no test was collected (a -k that matches nothing): say so, not fail
RUN_PYTEST = rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

.PHONY: test test-quick test-dev test-floor test-newest install venvs demo lint golden bench clean

$(PY):
	python3 -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,dev]'

# A leg's venv: made with the interpreter tests/find_python.sh finds (again when that changed).
# $(1) venv, $(2) Python X.Y.
define leg_venv
	@py=$$(bash tests/find_python.sh $(2)) || exit 1; \
	if [ ! -x $(1)/bin/python ] || ! $(1)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != tuple(map(int, "$(2)".split("."))))'; then \
	  rm -rf $(1) && "$$py" -m venv $(1); fi
	$(1)/bin/python -m pip install -q --upgrade pip
endef

test: test-dev test-newest

test-dev: install
	bash tests/setup_browser.sh
	bash tests/setup_prometheus.sh
	$(PY) -m ruff check rooftop parsers analyzer reports tests bench
	$(PY) -m mypy
	@echo "== leg dev: $$($(PY) -V), newest dependencies"
	$(PY) $(PYTEST); $(RUN_PYTEST)

# The quick tier for everyday work (issue 23): no corpus (ROOFTOP_SHARED points nowhere, so corpus tests
# skip), no browser, nothing marked slow (tests/conftest.py SLOW_MODULES). `make test` runs everything.
test-quick:
	ROOFTOP_SHARED=/nonexistent $(PY) -m pytest -q -n 2 -m "not slow and not browser" $(PYTEST_ARGS); $(RUN_PYTEST)

test-floor:
	$(call leg_venv,.venv-floor,$(FLOOR_PYTHON))
	.venv-floor/bin/python -m pip install -q -e '.[all,dev]' -c tests/constraints-floor.txt
	@echo "== leg floor: $$(.venv-floor/bin/python -V), declared minimum versions (tests/constraints-floor.txt)"
	.venv-floor/bin/python $(PYTEST); $(RUN_PYTEST)

# The newest leg runs from the sdist, unpacked on its own (what a distribution packager does): it
# proves the sdist carries every test, fixture and doc, and that a non-editable install works.
SDIST_DIR := .venv-newest/sdist
ROOFTOP_SHARED ?= $(abspath ../shared)
export ROOFTOP_SHARED

# The goldens are byte-compared in the dev leg, the environment that writes them: on another Python and
# numpy a full-precision float can differ in its last bit (5.753214587915991 vs ...992 in a data-v attribute),
# so the newest leg runs every other test and leaves the byte comparison to the dev leg.
NEWEST_DESELECT = --deselect tests/test_golden_outputs.py::test_fixture_outputs_identical_to_goldens \
	--deselect tests/test_golden_outputs.py::test_corpus_sample_outputs_identical_to_goldens

test-newest: install
	$(call leg_venv,.venv-newest,$(NEWEST_PYTHON))
	rm -rf $(SDIST_DIR) && mkdir -p $(SDIST_DIR)
	$(PY) -m build --sdist --no-isolation -o $(SDIST_DIR) . >/dev/null
	tar -xzf $(SDIST_DIR)/rooftop-*.tar.gz -C $(SDIST_DIR)
	.venv-newest/bin/python -m pip uninstall -q -y rooftop 2>/dev/null || true
	.venv-newest/bin/python -m pip install -q "$$(ls $(SDIST_DIR)/rooftop-*.tar.gz)[all,dev]"
	@echo "== leg newest: $$(.venv-newest/bin/python -V), newest dependencies, from the unpacked sdist"
	cd $$(ls -d $(SDIST_DIR)/rooftop-*/) && $(CURDIR)/.venv-newest/bin/python $(PYTEST) $(NEWEST_DESELECT); $(RUN_PYTEST)

demo: $(PY)
	$(PY) -m pip install -q -e .
	$(VENV)/bin/rooftop analyze fixtures/ncu/demo.raw.csv --html rooftop-report.html

golden: install
	$(PY) tests/regen_golden.py
	$(PY) tests/golden_outputs.py regen

bench: install
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .venv-floor .venv-newest .pytest_cache .mypy_cache .ruff_cache rooftop-report.html
