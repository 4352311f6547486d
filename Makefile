# The two set-up commands are `make demo` and `make test`; each builds what it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Built artefacts that are expensive and identical across clones (llama-server, the
# Label Studio venv, assembled GGUF weights) live here, keyed by version.
ACCORD_CACHE ?= $(HOME)/.cache/accord
export ACCORD_CACHE

.PHONY: demo test bench venv system services-deps stop clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[all,dev]'
	touch $@

venv: $(VENV)/.installed

system:
	bash scripts/install_system.sh

services-deps: venv system
	bash scripts/labelstudio.sh install
	bash scripts/llama_server.sh install
	bash scripts/ppi_venv.sh

test: services-deps
	$(PY) -m pytest

bench: services-deps
	$(PY) -m benchmarks

demo: venv
	$(VENV)/bin/accord agree data/examples/identify_panel.csv --judge judge_a --judge judge_b --cluster trajectory

stop:
	bash scripts/stop_services.sh

clean: stop
	rm -rf $(VENV) .run
