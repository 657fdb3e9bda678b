"""Evaluation: run agents on envs through the wrapper stack, write JSONL, summarise."""

from arlarena_baselines.evaluation.report import (
    format_comparison,
    format_table,
    pass_at_k,
    summarize,
    write_csv,
)
from arlarena_baselines.evaluation.results import prepare_resume, read_records
from arlarena_baselines.evaluation.runner import EvalConfig, evaluate, make_env

__all__ = [
    "EvalConfig",
    "evaluate",
    "format_comparison",
    "format_table",
    "make_env",
    "pass_at_k",
    "prepare_resume",
    "read_records",
    "summarize",
    "write_csv",
]
