#!/usr/bin/env bash
# `arlarena train openrlhf` (see its --help): train on an ARLArena env with a method of METHODS
# through OpenRLHF on a Ray cluster.
#   scripts/openrlhf/train.sh ENV METHOD [--model M] [--nodes N] [--gpus-per-node G]
#                             [--steps S] [--out DIR] [--address URL] [--dry-run] [-- FLAGS]
set -euo pipefail
exec "${PYTHON:-python3}" -m arlarena_baselines.cli train openrlhf "$@"
