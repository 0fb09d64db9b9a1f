# Two commands do all the set-up on a fresh machine with Python >= 3.10:
#   make lab    -- JupyterLab on notebooks/ (creates .venv and installs everything on first use)
#   make test   -- lint, types and the test suite (the notebooks too, headless with nbval);
#                  GPU tests skip without a GPU
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: lab test install lint typecheck demo bench-cpu clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[lab,test]"
	touch $(STAMP)

install: $(STAMP)

# root (containers, CI machines) needs --allow-root; nobody else gets it
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/

lint: $(STAMP)
	$(BIN)/ruff check umapviz tests bench
	$(BIN)/ruff format --check umapviz tests bench

# The core packages' types (config: [tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider tests notebooks --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg

demo: $(STAMP)
	$(BIN)/umapviz demo

bench-cpu: $(STAMP)
	$(BIN)/python bench/cpu_layout.py

clean:
	rm -rf $(VENV) data/cache .pytest_cache .mypy_cache
