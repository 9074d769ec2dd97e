# `make test` is the README's test command and what CI runs (.ci/run).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: test demo lint golden bench clean

$(PY):
	python3 -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'

test: install
	bash tests/setup_browser.sh
	bash tests/setup_prometheus.sh
	$(PY) -m ruff check rooftop parsers analyzer reports tests bench
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2 $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

demo: $(PY)
	$(PY) -m pip install -q -e .
	$(VENV)/bin/rooftop analyze fixtures/ncu/demo.raw.csv --html rooftop-report.html

golden: install
	$(PY) tests/regen_golden.py
	$(PY) tests/golden_outputs.py regen

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache rooftop-report.html
