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
    "Taxonomy": "hiersql.taxonomy",
    "Store": "hiersql.store",
    "Evaluator": "hiersql.evaluator",
    "Options": "hiersql.metrics",
    "InputError": "hiersql.errors",
    "DataWarning": "hiersql.errors",
    "UndefinedMetricWarning": "hiersql.averages",
    "hierarchical_precision": "hiersql.metrics.set_based",
    "hierarchical_recall": "hiersql.metrics.set_based",
    "hierarchical_f1": "hiersql.metrics.set_based",
    "symmetric_difference_loss": "hiersql.metrics.set_based",
    "example_accuracy": "hiersql.metrics.flat",
    "example_precision": "hiersql.metrics.flat",
    "example_recall": "hiersql.metrics.flat",
    "example_f1": "hiersql.metrics.flat",
    "hamming_loss": "hiersql.metrics.flat",
    "subset_accuracy": "hiersql.metrics.flat",
    "label_precision": "hiersql.metrics.flat",
    "label_recall": "hiersql.metrics.flat",
    "label_f1": "hiersql.metrics.flat",
    "label_accuracy": "hiersql.metrics.flat",
    "multilabel_confusion_matrix": "hiersql.metrics.multilabel",
    "hierarchical_confusion": "hiersql.metrics.confusion",
    "lca_precision": "hiersql.metrics.lca",
    "lca_recall": "hiersql.metrics.lca",
    "lca_f1": "hiersql.metrics.lca",
    "graph_induced_error": "hiersql.metrics.pair_based",
    "mgia": "hiersql.metrics.pair_based",
    "tree_induced_error": "hiersql.metrics.pair_based",
    "all_pairs_error": "hiersql.metrics.pair_based",
    "path_length_score": "hiersql.metrics.scoring",
    "lca_reward": "hiersql.metrics.scoring",
    "lpp": "hiersql.metrics.scoring",
    "lpptps": "hiersql.metrics.scoring",
    "lpppps": "hiersql.metrics.scoring",
    "scoring_precision": "hiersql.metrics.scoring",
    "scoring_recall": "hiersql.metrics.scoring",
    "scoring_f1": "hiersql.metrics.scoring",
    "top_k_accuracy": "hiersql.metrics.severity",
    "hierarchical_distance_at_k": "hiersql.metrics.severity",
    "best_hierarchical_distance_at_k": "hiersql.metrics.severity",
    "mistake_severity": "hiersql.metrics.severity",
    "hierarchical_precision_at_k": "hiersql.metrics.severity",
    "hierarchical_map_at_k": "hiersql.metrics.severity",
    "classification_report": "hiersql.breakdowns",
    "hierarchical_precision_recall_curve": "hiersql.curves",
    "hierarchical_average_precision": "hiersql.curves",
    "labels_from_indicator": "hiersql.adapters",
    "labels_from_paths": "hiersql.adapters",
    "labels_from_unk_paths": "hiersql.adapters",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hiersql' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
