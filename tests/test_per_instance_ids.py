"""Evaluator.per_instance keeps the caller's instance ids and order for label sets (it returned the ids as
text in text order, 0, 1, 10, 11, 2, ..., so a column assigned back to the caller's frame landed on the wrong
rows)."""

from __future__ import annotations

import pandas as pd

from hiersql import Evaluator

EDGES = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2")]
# instance i is right (hF 1) when i is a multiple of 3, else it predicts b for a1: Yaug {a, a1}, Ŷaug {b} -> hF 0
TRUTH = [["a1"]] * 12
PRED = [["a1"] if i % 3 == 0 else ["b"] for i in range(12)]


def test_positions_are_integers_in_the_callers_order():
    ev = Evaluator(EDGES).add_truth(TRUTH).add_predictions("s", PRED)
    frame = ev.per_instance("hf")
    assert frame["instance_id"].tolist() == list(range(12))
    assert frame["hierarchical_f1"].tolist() == [1.0 if i % 3 == 0 else 0.0 for i in range(12)]
    ev.close()


def test_a_series_keeps_its_index():
    index = [f"doc{k}" for k in range(12)][::-1]
    ev = Evaluator(EDGES).add_truth(pd.Series(TRUTH, index=index)).add_predictions("s", PRED)
    frame = ev.per_instance("hf")
    assert frame["instance_id"].tolist() == index
    caller = pd.DataFrame({"truth": TRUTH}, index=index)
    caller["hf"] = frame.set_index("instance_id")["hierarchical_f1"]
    assert caller["hf"].tolist() == [1.0 if i % 3 == 0 else 0.0 for i in range(12)]
    ev.close()
