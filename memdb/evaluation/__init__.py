"""Retrieval evaluations of memdb on public benchmarks (LoCoMo).

>>> from memdb.evaluation import run_locomo, format_table
>>> print(format_table(run_locomo("../shared/data/locomo/locomo_dev.json")))
"""

from ._locomo_data import Conversation, Question, Turn, load_locomo, parse_date, parse_evidence
from .locomo import DEFAULT_CONFIGS, format_table, memory_inputs, run_locomo

__all__ = ["run_locomo", "format_table", "load_locomo", "DEFAULT_CONFIGS", "memory_inputs",
           "Conversation", "Question", "Turn", "parse_date", "parse_evidence"]
