# Two commands do all the set-up on a fresh machine with Python >= 3.10:
#   make lab    -- JupyterLab on notebooks/ (creates .venv and installs everything on first use)
#   make test   -- lint, types, the docs site and the test suite (the notebooks too, headless with nbval);
#                  GPU tests skip without a GPU
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: lab test install lint typecheck docs demo bench-cpu clean

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
	$(BIN)/ruff check umapviz tests bench docs/conf.py
	$(BIN)/ruff format --check umapviz tests bench docs/conf.py

# The core packages' types (config: [tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

# The docs site from the docstrings, docs/*.md and the stored notebooks (not executed), warnings as errors:
# docs/_build/html/index.html.
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html

test: $(STAMP) lint typecheck docs
	$(BIN)/python -m pytest -q -p no:cacheprovider tests notebooks --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg

demo: $(STAMP)
	$(BIN)/umapviz demo

bench-cpu: $(STAMP)
	$(BIN)/python bench/cpu_layout.py

clean:
	rm -rf $(VENV) data/cache .pytest_cache docs/_build .mypy_cache
