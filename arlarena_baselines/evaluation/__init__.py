"""Evaluation: agents and models played through the episode loop into JSONL, and summarised."""

from arlarena_baselines.evaluation.config import EvalConfig
from arlarena_baselines.evaluation.report import (
    format_comparison,
    format_table,
    pass_at_k,
    summarize,
    write_csv,
)
from arlarena_baselines.evaluation.results import prepare_resume, read_records
from arlarena_baselines.evaluation.runner import ResultsLog, evaluate

__all__ = [
    "EvalConfig",
    "ResultsLog",
    "evaluate",
    "format_comparison",
    "format_table",
    "pass_at_k",
    "prepare_resume",
    "read_records",
    "summarize",
    "write_csv",
]
