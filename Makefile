# Quickstart: `make run` (serve on 127.0.0.1:8000) and `make test`. Both create .venv as needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# Demo values (sandbox): the first start creates this admin, a demo tenant and prints a demo API key once.
run: $(BIN)/.installed
	AGENTGATE_ADMIN_EMAIL="$${AGENTGATE_ADMIN_EMAIL:-admin@agentgate.example}" \
	AGENTGATE_ADMIN_PASSWORD="$${AGENTGATE_ADMIN_PASSWORD:-agentgate-demo-password}" \
	$(BIN)/agentgate serve --host 127.0.0.1 --port 8000

test: $(BIN)/.installed
	@for script in tests/support/deps/*.sh; do [ -e "$$script" ] || continue; sh "$$script" || exit 1; done
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

lint: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache
