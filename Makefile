# Entry points on a fresh machine (each installs what it needs):
#   make serve   - the HTTP service on the embedded default (built-in catalog, no cluster)
#   make check   - lint, format, types and every test that needs no API server, browser or Redis (minutes)
#   make test    - every test
VENV ?= .venv
PY := $(VENV)/bin/python
# Let pytest keep its rewritten test modules and Python its bytecode between runs (a shell that
# sets PYTHONDONTWRITEBYTECODE would make every run recompile ~500 modules in every worker).
unexport PYTHONDONTWRITEBYTECODE
STAMP := $(VENV)/.installed

.PHONY: serve check lint test tools kube bench bench-http soak fuzz-long

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $(STAMP)

# gojq (the upstream jq engine) is the oracle of the differential tests; wrk drives the soak;
# Chromium (driven by Playwright, no browser download) renders the web UI tests; promtool (from Debian's
# prometheus package) evaluates the queries of the Grafana dashboard; redis-server is the real store of the
# sharded-mode tests (--store); jq and curl run the commands the docs show (tests/test_docs.py); zsh and fish
# run the shell-completion tests.
tools:
	@command -v gojq >/dev/null 2>&1 && command -v wrk >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 && \
	  command -v promtool >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 && \
	  command -v jq >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && \
	  command -v zsh >/dev/null 2>&1 && command -v fish >/dev/null 2>&1 || \
	  { apt-get update -qq && apt-get install -y -qq gojq wrk chromium redis-server jq curl zsh fish >/dev/null && \
	    apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# A real kube-apiserver + etcd for the cluster tests, built once from Debian's packages and
# cached outside the repository (~4 min the first time, instant afterwards).
kube:
	@bash scripts/kube-apiserver/build.sh >/dev/null

serve: $(STAMP)
	$(VENV)/bin/wlmap serve

# What each test needs is a marker set from its fixtures (tests/needs.py); the fast set is the unmarked.
FAST := not kube and not browser and not redis and not soak
# Two pytest-xdist workers, each with its own session fixtures (API server, services); JOBS=0 runs in
# this process.  Tests are handed out one by one (--dist load): loadscope and loadgroup schedule by node
# id, and schemathesis gives all the operations of a test one node id, so they would run only one.
JOBS ?= 2
XDIST := $(if $(filter-out 0,$(JOBS)),-n $(JOBS) --dist load)

lint: $(STAMP)
	$(VENV)/bin/ruff check app
	$(VENV)/bin/ruff format --check app
	$(VENV)/bin/mypy

check: lint tools
	$(PY) -m pytest -q -m "$(FAST)" $(XDIST) $(ARGS)

test: $(STAMP) tools kube
	WLMAP_REQUIRE_KUBE=1 WLMAP_REQUIRE_IMAGE=1 $(PY) -m pytest -q $(XDIST) $(ARGS)

bench: $(STAMP) tools
	$(PY) benchmarks/engine_bench.py

bench-http: $(STAMP) tools
	@command -v wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
	$(PY) benchmarks/http_bench.py

# Long runs (results in BENCHMARKS.md): 10 minutes at 80% of capacity; >= 10,000 fuzz cases.
soak: $(STAMP) tools
	$(PY) benchmarks/soak.py --minutes 10

fuzz-long: $(STAMP) tools
	$(PY) benchmarks/fuzz_long.py --scale 8
