# Quickstart: `make run` (serve on 127.0.0.1:8000; `make run PORT=18123 HOST=0.0.0.0` elsewhere) and
# `make test`. Both create .venv as needed: run installs the runtime dependencies only, test the dev extra.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Set on the command line (make run HOST=...): shells keep the machine's name in HOST.
HOST := 127.0.0.1
PORT ?= 8000
# Test workers: two per core. Many tests wait on servers, browsers and Node processes; with one
# worker per core the CPU sat partly idle (the suite took 433-445 s on 2 cores, 354 s with 4 workers).
TEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) )))

.PHONY: run test lint bench clean

# The installs are quiet; each says first what it does and that it takes a while. uv installs the
# packages: from its cache it takes 9 s where pip took 28 s of every fresh clone's `make test`
# (docs/performance.md); --compile-bytecode writes the .pyc files pip would have written.
UV_INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

$(BIN)/python:
	@echo "Creating the virtual environment $(VENV) (first run only)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv

# The runtime dependencies only (make run); the agentgate command lands in $(BIN).
$(BIN)/.installed-runtime: pyproject.toml | $(BIN)/python
	@echo "Installing agentgate and its runtime dependencies into $(VENV) (first run: about a minute)..."
	$(UV_INSTALL) -e .
	touch $@

# With the dev extra (make test, make lint).
$(BIN)/.installed: pyproject.toml | $(BIN)/python
	@echo "Installing agentgate with its development extra into $(VENV) (first run: about a minute)..."
	$(UV_INSTALL) -e '.[dev]'
	touch $@

# Demo values (sandbox): the first start creates this admin, a demo tenant and prints a demo API key once.
# The demo password is shown in that banner; set AGENTGATE_ADMIN_PASSWORD to use your own.
run: $(BIN)/.installed-runtime
	AGENTGATE_ADMIN_EMAIL="$${AGENTGATE_ADMIN_EMAIL:-admin@agentgate.example}" \
	AGENTGATE_ADMIN_PASSWORD="$${AGENTGATE_ADMIN_PASSWORD:-agentgate-demo-password}" \
	$(BIN)/agentgate serve --host $(HOST) --port $(PORT)

test: $(BIN)/.installed
	@for script in tests/support/deps/*.sh; do [ -e "$$script" ] || continue; sh "$$script" || exit 1; done
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# Byte-code for the project's own modules, written once: where PYTHONDONTWRITEBYTECODE is set, every
	@# server process the tests start compiled them again (~0.3 s of CPU each).
	$(BIN)/python -m compileall -q -j 0 agent_server http_facade tools resources wellknown
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

lint: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache
