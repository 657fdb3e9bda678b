#!/usr/bin/env bash
# Train on an ARLArena env with a method of METHODS through OpenRLHF on a Ray cluster.
#   scripts/openrlhf/train.sh ENV METHOD [--model M] [--nodes N] [--gpus-per-node G]
#                             [--steps S] [--out DIR] [--address URL] [--dry-run] [-- FLAGS]
# ENV: sokoban, alfworld, webshop, webshop-small, math, bandit. METHOD: e.g. SAMPO, GRPO.
# --dry-run prints the `ray job submit` command; FLAGS after `--` go to OpenRLHF unchanged.
# The settings live in arlarena_baselines/openrlhf/launch.py; see the README section
# "Multi-GPU training with OpenRLHF".
set -euo pipefail
exec "${PYTHON:-python3}" -m arlarena_baselines.openrlhf.launch "$@"
