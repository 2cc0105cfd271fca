"""Retrieval evaluations of memdb on public benchmarks (LoCoMo), and an extraction check of
``remember`` on labeled chat turns (:func:`run_extraction`).

>>> from memdb.evaluation import run_locomo, format_table
>>> print(format_table(run_locomo("../shared/data/locomo/locomo_dev.json")))
"""

from ._locomo_data import Conversation, Question, Turn, load_locomo, parse_date, parse_evidence
from ._metrics import CATEGORY_NAMES
from .crossval import format_cv_table, run_locomo_cv
from .extraction import format_extraction, run_extraction
from .locomo import DEFAULT_CONFIGS, format_table, memory_inputs, run_locomo

__all__ = ["run_locomo", "format_table", "run_locomo_cv", "format_cv_table", "run_extraction",
           "format_extraction", "load_locomo",
           "DEFAULT_CONFIGS", "memory_inputs", "Conversation", "Question", "Turn", "parse_date",
           "parse_evidence", "CATEGORY_NAMES"]
