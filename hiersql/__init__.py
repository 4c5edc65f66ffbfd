"""hiersql: hierarchical classification evaluation where the taxonomy and predictions are tables and the
measures are SQL.

>>> import hiersql
>>> tax = hiersql.Taxonomy.from_edges([("animal", "cat"), ("animal", "dog")])
>>> hiersql.hierarchical_f1([["cat"]], [["dog"]], tax)
0.0

Names are imported lazily so that ``import hiersql`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Taxonomy": "hiersql.inputs.taxonomy",
    "Store": "hiersql.inputs.store",
    "Evaluator": "hiersql.api.evaluator",
    "Options": "hiersql.measures",
    "InputError": "hiersql.errors",
    "DataWarning": "hiersql.errors",
    "UndefinedMetricWarning": "hiersql.averages",
    "hierarchical_precision": "hiersql.measures.set_based",
    "hierarchical_recall": "hiersql.measures.set_based",
    "hierarchical_f1": "hiersql.measures.set_based",
    "symmetric_difference_loss": "hiersql.measures.set_based",
    "example_accuracy": "hiersql.measures.flat",
    "example_precision": "hiersql.measures.flat",
    "example_recall": "hiersql.measures.flat",
    "example_f1": "hiersql.measures.flat",
    "hamming_loss": "hiersql.measures.flat",
    "subset_accuracy": "hiersql.measures.flat",
    "label_precision": "hiersql.measures.flat",
    "label_recall": "hiersql.measures.flat",
    "label_f1": "hiersql.measures.flat",
    "label_accuracy": "hiersql.measures.flat",
    "multilabel_confusion_matrix": "hiersql.measures.multilabel",
    "hierarchical_confusion": "hiersql.measures.confusion",
    "lca_precision": "hiersql.measures.lca",
    "lca_recall": "hiersql.measures.lca",
    "lca_f1": "hiersql.measures.lca",
    "graph_induced_error": "hiersql.measures.pair_based",
    "mgia": "hiersql.measures.pair_based",
    "tree_induced_error": "hiersql.measures.pair_based",
    "all_pairs_error": "hiersql.measures.pair_based",
    "path_length_score": "hiersql.measures.scoring",
    "lca_reward": "hiersql.measures.scoring",
    "lpp": "hiersql.measures.scoring",
    "lpptps": "hiersql.measures.scoring",
    "lpppps": "hiersql.measures.scoring",
    "scoring_precision": "hiersql.measures.scoring",
    "scoring_recall": "hiersql.measures.scoring",
    "scoring_f1": "hiersql.measures.scoring",
    "top_k_accuracy": "hiersql.measures.severity",
    "hierarchical_distance_at_k": "hiersql.measures.severity",
    "best_hierarchical_distance_at_k": "hiersql.measures.severity",
    "mistake_severity": "hiersql.measures.severity",
    "hierarchical_precision_at_k": "hiersql.measures.severity",
    "hierarchical_map_at_k": "hiersql.measures.severity",
    "classification_report": "hiersql.analyses.breakdowns",
    "hierarchical_precision_recall_curve": "hiersql.analyses.curves",
    "hierarchical_average_precision": "hiersql.analyses.curves",
    "labels_from_indicator": "hiersql.inputs.adapters",
    "labels_from_paths": "hiersql.inputs.adapters",
    "labels_from_unk_paths": "hiersql.inputs.adapters",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hiersql' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
