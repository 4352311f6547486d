# The two set-up commands are `make demo` and `make test`; each builds what it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Built artefacts that are expensive and identical across clones (llama-server, the
# Label Studio venv, assembled GGUF weights) live here, keyed by version.
ACCORD_CACHE ?= $(HOME)/.cache/accord
export ACCORD_CACHE

.PHONY: demo demo-deps demo-interactive real-studies test test-fast bench venv venv-demo system system-build services-deps stop clean

# Python writes each module's .pyc the first time a process imports it, so every later process (the pytest
# workers, each `accord` subprocess a test starts, Ray's workers) loads it compiled. These machines set
# PYTHONDONTWRITEBYTECODE, which turns that off: every process then compiled everything it imported again.
# Unset here (the .pyc files go to the venv and the checkout's __pycache__ folders, both git-ignored), it
# replaces compiling the whole venv up front (compileall of site-packages: 44 CPU-seconds, 24 s of wall time
# before any test could start) with compiling only what is imported, once. pip installs with --no-compile for
# the same reason.
unexport PYTHONDONTWRITEBYTECODE
PIP_INSTALL := $(PY) -m pip install -q --disable-pip-version-check --no-compile

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e '.[all,dev]'
	touch $@ $(VENV)/.installed-demo

# The demo needs the judges, the report and the coding app, not the test tools or the
# Label Studio client: a cold `make demo` installs less (a full venv satisfies it too).
$(VENV)/.installed-demo: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e '.[judges,app,report]'
	touch $@

venv: $(VENV)/.installed

venv-demo: $(VENV)/.installed-demo

system:
	bash scripts/install_system.sh

# The demo needs only the tools that build llama-server (no browser).
system-build:
	bash scripts/install_system.sh build

services-deps: venv system
	bash scripts/labelstudio.sh install
	bash scripts/llama_server.sh install
	bash scripts/ppi_venv.sh
	bash scripts/confseq_venv.sh

# Two tiers, nothing skipped, side by side: every test that starts a real service (marker `services`:
# PostgreSQL, Label Studio, llama-server, chromium, Ray, the demo; tests/conftest.py derives it from the fixtures
# a test uses) on two workers at normal priority, the tests of one costly session service (the demo and
# llama-server, Ray) in one xdist group each, handed out first so each starts at once and once, every other
# module in its own (Label Studio: one server per module); beside them, at the lowest CPU priority (nice 19),
# mypy and the in-process tests on every core (pytest-xdist, whole modules per worker). The service tier waits
# on servers, browsers and model calls for much of its run; the in-process tier takes only that idle CPU, so
# the browser tests keep their pace (side by side at equal priority two dashboard pages missed their
# timeouts). The in-process tier's output follows the service tier's; both run even when one fails, each
# prints its slowest 25 tests. README "Running the tests" has the timings.
PYTEST_WORKERS ?= 2
SERVICE_WORKERS ?= 2
IN_PROCESS_LOG := .run/tests-in-process.log
test: services-deps
	$(PY) -m ruff check .
	@mkdir -p .run; echo "in-process tier (mypy, then pytest -m 'not services') at nice 19 -> $(IN_PROCESS_LOG)"
	(nice -n 19 $(PY) -m mypy && nice -n 19 $(PY) -m pytest -m "not services" -n $(PYTEST_WORKERS) --dist loadscope) \
	  > $(IN_PROCESS_LOG) 2>&1 & fast=$$!; \
	$(PY) -m pytest -m services -n $(SERVICE_WORKERS) --dist loadgroup --no-loadscope-reorder; services=$$?; \
	wait $$fast; fast=$$?; \
	echo "===== in-process tier ($(IN_PROCESS_LOG)) ====="; cat $(IN_PROCESS_LOG); \
	test $$fast = 0 && test $$services = 0

# The in-process tests without the `slow` ones (9 s or more each): 318 CPU-seconds, about 2.7 minutes on 2 idle cores.
test-fast: venv
	$(PY) -m pytest -m "not services and not slow" -n $(PYTEST_WORKERS) --dist loadscope

bench: services-deps
	$(PY) -m benchmarks

# The project venv (network-bound pip) and llama-server (a CPU-bound build plus model
# downloads) are independent: a cold `make demo` prepares them side by side.
demo-deps:
	bash scripts/llama_server.sh install & llama=$$!; \
	$(MAKE) --no-print-directory venv-demo; venv=$$?; \
	wait $$llama && test $$venv = 0

# `make demo` leads with the real studies (real human labels, no model call, seconds once
# the venv exists) while llama-server builds beside them, then runs the live local-model
# study. A gate verdict of REJECT (exit 1) is an outcome, so only a usage/input error (2)
# or a crash fails `make demo`.
demo: system-build
	bash scripts/llama_server.sh install & llama=$$!; \
	$(MAKE) --no-print-directory venv-demo && bash scripts/real_studies.sh; real=$$?; \
	wait $$llama && test $$real = 0
	$(VENV)/bin/accord run data/demo/study.toml; rc=$$?; test $$rc -le 1

# The same study, but the run stops at the human stage and waits for you to label in
# the coding app (accord annotators add / accord app), then `make demo-interactive` again.
demo-interactive: system-build
	$(MAKE) --no-print-directory demo-deps
	$(VENV)/bin/accord run data/demo/study.toml --interactive --output studies/demo-interactive; rc=$$?; test $$rc -le 1

# The real studies alone (data/studies/: real human labels and judges' verdicts, no model call).
real-studies: venv-demo
	bash scripts/real_studies.sh

stop:
	bash scripts/stop_services.sh

clean: stop
	rm -rf $(VENV) .run
