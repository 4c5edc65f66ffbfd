"""The Python API's arguments (tuB finding 5, 12): a value of the wrong kind is an ``InputError`` (an
``OptionError``, also a ``ValueError``) whose one line names the parameter as the caller wrote it and the value,
never a bare ``TypeError``/``AttributeError``/``KeyError`` or a DuckDB error from deep inside; what a careful
user would pass and is unambiguous (edges for ``Evaluator``, a numpy array or a pandas Series of label sets,
the DataFrame ``evaluate`` returns for ``save``) is accepted; spaces around labels and instance ids are
stripped from every source, as the file readers strip them."""

from __future__ import annotations

import re
import warnings

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import hiersql
from hiersql import DataWarning, Evaluator, InputError, Taxonomy
from hiersql.options import OptionError

EDGES = [("r", "a"), ("r", "b"), ("a", "a1")]
TAX = Taxonomy.from_edges(EDGES)
TAXONOMY_RULE = ("taxonomy must be a Taxonomy, a path, a table reference, edges (parent, child), a DataFrame or a"
                 " networkx DiGraph")


def raises(call, message: str, kind: type[Exception] = OptionError) -> InputError:
    """``call()`` raises ``kind`` (an InputError) whose one line is ``message`` (``...`` matches anything)."""
    with pytest.raises(kind) as caught:
        call()
    text = str(caught.value)
    assert isinstance(caught.value, InputError) and isinstance(caught.value, ValueError)
    assert "\n" not in text, text
    pattern = ".*".join(re.escape(part) for part in message.split("..."))
    assert re.fullmatch(pattern, text), text
    return caught.value


def evaluator() -> Evaluator:
    return Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions("s", [["a"], ["b"]])


# ---------------------------------------------------------------------------------------------- taxonomy
@pytest.mark.parametrize("value, shown", [(None, "None"), (5, "5"), ({"r": ["a"]}, "{'r': ['a']}"),
                                          (b"r\ta", "b'r\\ta'")])
def test_a_taxonomy_of_no_known_form_is_named_with_its_value(value, shown):
    raises(lambda: hiersql.hierarchical_f1([["a1"]], [["a"]], value), f"{TAXONOMY_RULE}: {shown}")
    raises(lambda: Evaluator(value), f"{TAXONOMY_RULE}: {shown}")


def test_evaluator_takes_every_taxonomy_form_of_the_one_shot_functions(fixtures_dir):
    forms = [EDGES, pd.DataFrame(EDGES, columns=["parent", "child"]), nx.DiGraph(EDGES)]
    for form in forms:
        ev = Evaluator(form).add_truth([["a1"], ["b"]]).add_predictions("s", [["a"], ["b"]])
        assert ev.evaluate("hf", average="micro")["value"].tolist() == evaluator().evaluate(
            "hf", average="micro")["value"].tolist()
    path = fixtures_dir / "demo" / "taxonomy.tsv"
    assert Evaluator(str(path)).taxonomy.nodes == Evaluator(path).taxonomy.nodes == Taxonomy.from_file(path).nodes


def test_the_taxonomy_constructors_name_their_argument():
    raises(lambda: Taxonomy.from_networkx([("r", "a")]), "graph must be a networkx DiGraph: [('r', 'a')]")
    raises(lambda: Taxonomy.from_edges(None), "pairs must be (parent, child) or (parent, child, weight) tuples: None")
    raises(lambda: Taxonomy.from_file(None), "path must be a path (a str or a pathlib.Path): None")
    raises(lambda: Taxonomy.from_dataframe(EDGES), f"df must be a pandas DataFrame: {EDGES!r}")
    # a string is no edge (it was read as a parent and a child of one character each)
    raises(lambda: Taxonomy.from_edges(["ra"]), "<edges>:1: an edge needs a parent and a child: 'ra'", InputError)
    raises(lambda: Taxonomy.from_edges([1, 2]), "<edges>:1: an edge needs a parent and a child: 1", InputError)


def test_evaluator_db_and_con_must_be_what_they_say(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raises(lambda: Evaluator(TAX, db=5), "db must be the path of a DuckDB file, or None (in memory): 5")
    raises(lambda: Evaluator(TAX, con="x.duckdb"), "con must be a DuckDB connection or None: 'x.duckdb'")
    assert list(tmp_path.iterdir()) == []  # no file "5" made
    # the file checks of --db: a URL (the password not shown), a folder
    raises(lambda: Evaluator(TAX, db="postgresql://me:secret@h/db"), "db: takes the path of a DuckDB file, not a URL",
           InputError)
    raises(lambda: Evaluator(TAX, db=str(tmp_path)), "db: is a folder, not a DuckDB file", InputError)


# --------------------------------------------------------------------------------- label sets (one-shot)
@pytest.mark.parametrize("value, message", [
    (None, "y_true must be a sequence of label sets, one per instance (a list, a tuple, a 1-D array or a pandas"
           " Series of lists of labels): None"),
    (5, "y_true must be a sequence of label sets, one per instance (...): 5"),
    ({"a1"}, "y_true must be a sequence of label sets, one per instance (...): {'a1'}"),
    ({0: ["a1"]}, "y_true must be a sequence of label sets, one per instance (...): {0: ['a1']}"),
    (np.array("a1"), "y_true must be a sequence of label sets, one per instance (...): <ndarray>"),
    ("a1", "y_true must be a sequence of label sets, one per instance (a list of lists), not one string: 'a1'"),
    (pd.DataFrame({"instance_id": [1], "label": ["a1"]}),
     "y_true must be a sequence of label sets, one per instance; a table of instance_id, label rows is read by"
     " Evaluator(taxonomy).add_truth(table) and add_predictions(system, table): <DataFrame>"),
])
def test_y_true_that_is_no_sequence_of_label_sets_is_named(value, message):
    raises(lambda: hiersql.hierarchical_f1(value, [["a"]], TAX), message)
    raises(lambda: hiersql.label_f1(value, [["a"]]), message)
    raises(lambda: hiersql.classification_report(value, [["a"]], TAX), message)
    raises(lambda: hiersql.hierarchical_confusion(value, [["a"]], TAX), message)
    raises(lambda: hiersql.multilabel_confusion_matrix(value, [["a"]]), message)
    raises(lambda: hiersql.path_length_score(value, ["a"], TAX), message)
    raises(lambda: hiersql.hierarchical_average_precision(value, np.zeros((1, 1)), ["a"], TAX), message)


def test_y_pred_is_named_too_and_as_many_sets_as_y_true():
    raises(lambda: hiersql.hierarchical_f1([["a1"]], None, TAX), "y_pred must be a sequence of label sets, ...: None")
    message = "y_pred must have as many label sets as y_true has instances (1): 2"
    raises(lambda: hiersql.hierarchical_f1([["a1"]], [["a"], ["b"]], TAX), message)
    raises(lambda: hiersql.hierarchical_confusion([["a1"]], [["a"], ["b"]], TAX), message)
    raises(lambda: hiersql.example_f1([["a1"]], [["a"], ["b"]]), message)


def test_ordered_sequences_of_label_sets_give_the_value_of_the_list():
    y_true, y_pred = [["a1"], ["b"]], [["a"], ["b"]]
    expected = hiersql.hierarchical_f1(y_true, y_pred, TAX)
    assert hiersql.hierarchical_f1(pd.Series(y_true), np.array(y_pred, dtype=object), TAX) == expected
    assert hiersql.hierarchical_f1(tuple(y_true), (s for s in y_pred), TAX) == expected
    assert hiersql.hierarchical_f1(np.array(["a1", "b"]), np.array(["a", "b"]), TAX) == expected  # one label each
    assert evaluator().evaluate("hf")["value"].tolist() == Evaluator(TAX).add_truth(pd.Series(y_true)).add_predictions(
        "s", np.array(["a", "b"])).evaluate("hf")["value"].tolist()


def test_a_label_set_that_is_missing_or_a_number_is_read_by_the_store_as_by_the_one_shot_functions():
    raises(lambda: Evaluator(TAX).add_truth([None]),
           "<label sets>[0]: missing label set (None or NaN; an instance with no label is an empty list): None",
           InputError)
    raises(lambda: hiersql.hierarchical_f1([None], [["a"]], TAX),
           "y_true[0]: missing label set (None or NaN; an instance with no label is an empty list): None", InputError)
    raises(lambda: Evaluator(TAX).add_truth([5]), "<label sets>[0]: label not in the taxonomy: '5'", InputError)
    tax = Taxonomy.from_edges([(0, 1), (0, 2)])
    assert Evaluator(tax).add_truth([1, 2]).add_predictions("s", [[1], 1]).evaluate("hp", average="micro")[
        "value"].tolist() == [hiersql.hierarchical_precision([1, 2], [[1], 1], tax)]


def test_labels_must_be_labels():
    raises(lambda: hiersql.hierarchical_f1([["a1"]], [["a"]], TAX, average="label_macro", labels=5),
           "labels must be a list of labels or None: 5")
    raises(lambda: hiersql.label_f1([["a"]], [["a"]], labels=5), "labels must be a list of labels or None: 5")
    raises(lambda: hiersql.multilabel_confusion_matrix([["a"]], [["a"]], labels=5),
           "labels must be a list of labels or None: 5")
    raises(lambda: hiersql.classification_report([["a1"]], [["a"]], TAX, labels=5),
           "labels must be a list of labels or None: 5")
    # one string is one label, as everywhere (Options, the one-shot hierarchical functions)
    assert hiersql.label_f1([["ab"]], [["ab"]], average="macro", labels="ab") == 1.0
    assert list(hiersql.classification_report([["a1"]], [["a"]], TAX, labels="a").frame["label"])[0] == "a"


def test_other_one_shot_arguments_are_named():
    raises(lambda: hiersql.classification_report([["a1"]], [["a"]], TAX, digits="x"),
           "digits must be an integer >= 0: 'x'")
    raises(lambda: hiersql.classification_report([["a1"]], [["a"]], TAX, digits=True),
           "digits must be an integer >= 0: True")
    assert "0.500" in hiersql.classification_report([["a1"]], [["a"]], TAX, digits=np.int64(3)).text
    raises(lambda: hiersql.path_length_score(["a1"], ["a"], TAX, weights=5),
           "weights must be None, a strategy name or a mapping {child: weight of the edge into it}: 5")
    raises(lambda: hiersql.multilabel_confusion_matrix([["a"]], [["a"]], kind="f1"),
           "kind must be one of raw, recall, precision: 'f1'")


def test_hierarchical_confusion_takes_what_the_other_one_shot_functions_take(fixtures_dir):
    expected = hiersql.hierarchical_confusion([["a1"], ["b"]], [["a"], ["b"]], TAX)
    assert hiersql.hierarchical_confusion(["a1", "b"], (s for s in [["a"], ["b"]]), EDGES) == expected
    path = fixtures_dir / "demo" / "taxonomy.tsv"
    assert hiersql.hierarchical_confusion([["jaguar"]], [["feline"]], path) == hiersql.hierarchical_confusion(
        [["jaguar"]], [["feline"]], Taxonomy.from_file(path))


# ---------------------------------------------------------------------------------------------- Evaluator
@pytest.mark.parametrize("source", [None, 5, 2.5, True, {"a1", "b"}])
def test_a_label_source_of_no_known_kind_is_named(source):
    rule = ("source must be a path, a table reference, a DataFrame, an Arrow table, a DuckDB relation, a mapping"
            " of columns or a sequence of label sets")
    raises(lambda: Evaluator(TAX).add_truth(source), f"{rule}: {source!r}")
    raises(lambda: Evaluator(TAX).add_truth([["a1"]]).add_predictions("s", source), f"{rule}: {source!r}")


@pytest.mark.parametrize("system", [3, "", "  ", ("s",)])
def test_a_system_that_is_no_name_is_named(system):
    rule = "system must be a non-empty string (or None for a table with a system column)"
    ev = Evaluator(TAX).add_truth([["a1"]])
    raises(lambda: ev.add_predictions(system, [["a1"]]), f"{rule}: {system!r}")
    raises(lambda: ev.add_predictions_many([(system, [["a1"]])]), f"{rule}: {system!r}")
    assert ev.systems == []


def test_add_predictions_many_wants_systems_and_sources():
    rule = "predictions must be a mapping {system: source} or (system, source) pairs"
    ev = Evaluator(TAX).add_truth([["a1"]])
    raises(lambda: ev.add_predictions_many(5), f"{rule}: 5")
    raises(lambda: ev.add_predictions_many([("s",)]), f"{rule}: ('s',)")
    ev.add_predictions_many((name, [["a"]]) for name in ("s", "t"))  # an iterator of pairs, read once
    assert ev.systems == ["s", "t"]


def test_format_and_column_keywords_that_do_not_apply_are_errors(fixtures_dir):
    formats = "format must be one of long, lines, germeval-a, germeval-b, wide"
    raises(lambda: Evaluator(TAX).add_truth([["a1"]], format="xml"), f"{formats}: 'xml'")
    raises(lambda: Evaluator(TAX).add_truth(fixtures_dir / "demo" / "truth.tsv", format=None), f"{formats}: None")
    frame = pd.DataFrame({"instance_id": ["1"], "label": ["a1"]})
    for source in ([["a1"]], frame):
        raises(lambda source=source: Evaluator(TAX).add_truth(source, format="wide"),
               "format names the format of label text files (and of a wide CSV file), and no source is one (a table"
               " is read by its columns, label sets as they are): 'wide'")
    raises(lambda: Evaluator(TAX).add_truth([["a1"]], instance_col="foo"),
           "instance_col names a column of table sources (...), and no source it applies to is one: 'foo'")
    ev = Evaluator(TAX).add_truth([["a1"]])
    raises(lambda: ev.add_predictions("s", [["a"]], score_col="p"),
           "score_col names a column of table sources ...: 'p'")
    raises(lambda: ev.add_predictions_many({"s": [["a"]]}, system_col="sys"),
           "system_col names a column of table sources ...: 'sys'")
    renamed = pd.DataFrame({"id": ["0"], "lab": ["a1"]})  # where they apply, they are read
    Evaluator(TAX).add_truth(renamed, instance_col="id", label_col="lab")
    raises(lambda: ev.add_predictions("s", [["a"]], unknown="x"), "unknown must be 'error' or 'ignore': 'x'")
    raises(lambda: ev.add_predictions("s", [["a"]], no_truth=None), "no_truth must be 'error' or 'ignore': None")


def test_an_unknown_measure_names_the_python_argument():
    ev = evaluator()
    raises(lambda: ev.per_instance("nonsense"), "family: unknown metric (known: ...): 'nonsense'", InputError)
    raises(lambda: ev.per_class("nonsense"), "metric: unknown metric (known: ...): 'nonsense'", InputError)
    raises(lambda: ev.evaluate(["hp", "hpx"]), "metrics: unknown metric (known: ...): 'hpx'", InputError)
    raises(lambda: ev.compare(["nonsense"]), "metrics: unknown metric (known: ...): 'nonsense'", InputError)
    raises(lambda: ev.per_class(5), "metric must hold names of measures (strings): 5")
    raises(lambda: ev.per_class("lca_f1"), "metric must be a measure with per-class values (...): 'lca_f1'")
    assert ev.per_instance("hcm").shape[0] == ev.per_instance("hf").shape[0] == 2  # a group, a measure


@pytest.mark.parametrize("metrics, message", [
    (None, "metrics must be a measure's name or alias, or a list of them: None"),
    (5, "metrics must be a measure's name or alias, or a list of them: 5"),
    ([], "metrics must name at least one measure: []"),
    (",", "metrics must name at least one measure: ','"),
    (["hp", 5], "metrics must hold names of measures (strings): 5"),
])
def test_metrics_must_name_measures(metrics, message):
    ev = evaluator()
    raises(lambda: ev.evaluate(metrics), message)
    raises(lambda: ev.rows(metrics), message)
    raises(lambda: ev.compare(metrics), message)


def test_nothing_to_evaluate_is_an_error_not_an_empty_frame():
    ev = Evaluator(TAX).add_truth([["a1"]])
    message = "nothing to evaluate: no system's predictions were added (Evaluator.add_predictions)"
    for call in (ev.evaluate, lambda: ev.per_class("hp"), lambda: ev.per_instance("hp")):
        raises(call, message, InputError)


def test_save_takes_the_frame_evaluate_returns(tmp_path):
    ev = Evaluator(TAX, db=tmp_path / "r.duckdb").add_truth([["a1"], ["b"]]).add_predictions("s", [["a"], ["b"]])
    by_frame = ev.save(ev.evaluate(["hp", "sdl"]), dataset="d")
    by_rows = ev.save(ev.rows(["hp", "sdl"]), dataset="d")
    stored = ev.con.execute("SELECT run_id, system, metric, average, value FROM results ORDER BY ALL").fetchall()
    assert [row[1:] for row in stored if row[0] == by_frame] == [row[1:] for row in stored if row[0] == by_rows]
    assert len(stored) == 6
    rule = "rows must be Evaluator.rows() or the DataFrame of Evaluator.evaluate() (system, metric, average, value)"
    raises(lambda: ev.save(5), f"{rule}: 5")
    raises(lambda: ev.save(["s"]), f"{rule}: 's'")
    raises(lambda: ev.save(pd.DataFrame({"value": [1.0]})), f"{rule}: <DataFrame>")
    raises(lambda: ev.save(ev.rows("hp"), dataset=5), "dataset must be a non-empty string: 5")


# -------------------------------------------------------------------------- spaces around labels and ids
def test_spaces_around_labels_and_ids_are_stripped_from_every_source(tmp_path):
    (tmp_path / "truth.tsv").write_text("i1\ta1\ni2\tb\n")
    (tmp_path / "pred.tsv").write_text("i1 \t a1\ni2\tb \n")
    files = Evaluator(TAX).add_truth(tmp_path / "truth.tsv").add_predictions("s", tmp_path / "pred.tsv")
    expected = files.evaluate("hp,hr")
    frame = pd.DataFrame({"instance_id": ["i1 ", " i2"], "label": [" a1", "b\u00a0"]})  # a no-break space too
    from_frame = Evaluator(TAX).add_truth(tmp_path / "truth.tsv").add_predictions("s", frame)
    pd.testing.assert_frame_equal(from_frame.evaluate("hp,hr"), expected)
    columns = {"instance_id": ["i1", "i2 "], "label": ["a1 ", " b"]}
    from_columns = Evaluator(TAX).add_truth(columns).add_predictions("s", tmp_path / "pred.tsv")
    pd.testing.assert_frame_equal(from_columns.evaluate("hp,hr"), expected)
    (tmp_path / "wide.csv").write_text("instance_id,a1,b\n i1 ,1,0\ni2,0,1\n")
    wide = Evaluator(TAX).add_truth(tmp_path / "wide.csv", format="wide").add_predictions("s", tmp_path / "pred.tsv")
    pd.testing.assert_frame_equal(wide.evaluate("hp,hr"), expected)
    label_sets = Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions("s", [[" a1"], ["b "]])
    assert label_sets.evaluate("hp,hr")["value"].tolist() == expected["value"].tolist()


def test_spaces_around_a_system_column_s_values_are_stripped(tmp_path):
    """A system column's values are read as ids and labels are: 'M1\u00a0' (a no-break space) is the system
    'M1'; beside a 'M1' it is an error naming both spellings, not two systems that each predicted half the
    instances and print alike (tu s24-warehouse finding 3), nor one merged silently (issue 42); a value that
    is nothing but spaces is a missing system."""
    long = pd.DataFrame({"model": ["M1\u00a0", "M1\u00a0", " M2", " M2"], "instance_id": ["0", "1", "0", "1"],
                         "label": ["a1", "a", "a", "b"]})
    ev = Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions(None, long, system_col="model")
    got = ev.evaluate("hp,hr", average=["micro"])
    assert got["system"].tolist() == ["M1", "M1", "M2", "M2"]
    # the same predictions read one system at a time
    one = Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions("M1", [["a1"], ["a"]]).add_predictions(
        "M2", [["a"], ["b"]])
    pd.testing.assert_frame_equal(got, one.evaluate("hp,hr", average=["micro"]))
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions(
        None, long.assign(model=["M1", "M1\u00a0", "M2", "M2"]), system_col="model"),
        "<DataFrame>: system column 'model' spells one system two ways, differing only by the spaces around it:"
        " 'M1' and 'M1\\xa0'", InputError)
    blank = long.assign(model=["M1", "\u3000", "M2", "M2"], instance_id=["0", "1", "0", "1"])
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions(None, blank, system_col="model"),
           "<DataFrame>:2: missing system (NULL or empty): ''", InputError)


def test_a_bad_row_of_one_systems_dataframe_is_named_by_its_system():
    """add_predictions("s", frame) is the one-system case of add_predictions_many: the same message, which
    names the system's source (it said <DataFrame>:2, as a bad truth does: tu s24-warehouse finding 5)."""
    bad = pd.DataFrame({"instance_id": ["0", "1"], "label": ["a", "zebra"]})
    said = "s=<DataFrame>:2: label not in the taxonomy: 'zebra'"
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions("s", bad), said, InputError)
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions_many({"s": bad}), said, InputError)


def test_a_taxonomy_table_reference_is_read_by_every_taxonomy_parameter(tmp_path):
    """Evaluator, the one-shot functions and Store.load_taxonomy take ``duckdb:PATH::table`` as Store.load and
    --taxonomy do (they said "taxonomy file not found", and load_taxonomy raised AttributeError: tu
    s24-warehouse finding 6)."""
    import duckdb

    from hiersql import Store

    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE tax AS SELECT * FROM (VALUES ('r', 'a'), ('r', 'b'), ('a', 'a1')) t(parent, child)")
    ref = f"duckdb:{path}::tax"
    y_true, y_pred = [["a1"], ["b"]], [["a"], ["b"]]
    assert hiersql.hierarchical_f1(y_true, y_pred, ref) == hiersql.hierarchical_f1(y_true, y_pred, TAX)
    got = Evaluator(ref).add_truth(y_true).add_predictions("s", y_pred).evaluate("hf")
    pd.testing.assert_frame_equal(got, evaluator().evaluate("hf"))
    store = Store()
    store.load_taxonomy(ref)
    assert sorted(store.taxonomy.nodes) == sorted(TAX.nodes)
    raises(lambda: Store().load_taxonomy(5), f"{TAXONOMY_RULE}: 5")


def test_spaces_around_the_labels_an_option_names_are_stripped():
    """``labels=`` names labels as the data does: the spaces around each stripped (with them, " a" would be
    a class of its own, never predicted); a label that is nothing but spaces is refused."""
    assert hiersql.label_f1([["a"]], [["a"]], labels=[" a"], average="macro") == 1.0
    got = evaluator().evaluate(["label_f1"], average=["macro"], labels=["\u3000b "])
    assert list(got["value"]) == [1.0]  # class b: its one instance predicted
    raises(lambda: hiersql.label_f1([["a"]], [["a"]], labels=["  "], average="macro"),
           "labels must be label names (strings): '  '")
    raises(lambda: evaluator().evaluate(["label_f1"], average=["macro"], labels="\u3000"),
           "labels must be label names (strings): '\\u3000'")


def test_spaces_around_labels_are_stripped_by_the_one_shot_functions():
    y_true = [["a1"], ["b"]]
    assert hiersql.hierarchical_precision(y_true, [["a1 "], ["\u3000b"]], TAX) == 1.0
    assert hiersql.label_f1([[" x"]], [["x "]], average="micro") == 1.0  # no taxonomy: the labels' own
    assert hiersql.label_f1([[" a1"]], [["a1"]], TAX, average="micro") == 1.0
    assert hiersql.hierarchical_confusion([[" a1"]], [["a1 "]], TAX)["fn"] == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hiersql.hierarchical_recall([["a1", " a1"]], [["a1"]], TAX) == 1.0  # one label, counted once
    assert any(issubclass(w.category, DataWarning) and "duplicate" in str(w.message) for w in caught)
    # a tab is no space: not stripped, and so not a node
    raises(lambda: hiersql.hierarchical_precision(y_true, [["a1\t"], ["b"]], TAX),
           "y_pred[0]: label not in the taxonomy: 'a1\\t'", InputError)
    raises(lambda: hiersql.hierarchical_precision(y_true, [["  "], ["b"]], TAX),
           "y_pred[0]: missing label (empty, None or NaN): '  '", InputError)


def test_a_table_with_a_column_name_twice_is_refused_naming_it():
    """A DataFrame or an Arrow table with two ``label`` columns (DuckDB read the first and renamed the second
    ``label_1``: issue 42) is refused, naming the source and the column, as a CSV file's header is; so is a
    taxonomy's, and a name given twice in another case."""
    import pyarrow as pa

    two = pd.DataFrame([["0", "a1", "b"], ["1", "b", "a"]], columns=["instance_id", "label", "label"])
    raises(lambda: Evaluator(TAX).add_truth(two), "<DataFrame>: column name given twice: 'label'", InputError)
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions("s", two),
           "s=<DataFrame>: column name given twice: 'label'", InputError)
    raises(lambda: Evaluator(TAX).add_truth([["a1"], ["b"]]).add_predictions_many({"s": two}),
           "s=<DataFrame>: column name given twice: 'label'", InputError)
    cased = pd.DataFrame({"instance_id": ["0"], "label": ["a1"], "Label": ["b"]})
    raises(lambda: Evaluator(TAX).add_truth(cased), "<DataFrame>: column name given twice: 'Label'", InputError)
    arrow = pa.table([pa.array(["0"]), pa.array(["a1"]), pa.array(["b"])], names=["instance_id", "label", "label"])
    raises(lambda: Evaluator(TAX).add_truth(arrow), "<Arrow table>: column name given twice: 'label'", InputError)
    edges = pd.DataFrame([["r", "a", "b"]], columns=["parent", "child", "child"])
    raises(lambda: Taxonomy.from_dataframe(edges), "<DataFrame>: column name given twice: 'child'", InputError)
    raises(lambda: Evaluator(edges), "<DataFrame>: column name given twice: 'child'", InputError)
    raises(lambda: Taxonomy.from_table(edges), "<DataFrame>: column name given twice: 'child'", InputError)


def test_a_label_repeated_in_a_set_is_found_however_the_pairs_are_checked():
    """The one-shot functions' check of repeated labels (``oneshot._no_repeats``): pairs counted where their
    span is small, sorted where it is not; either finds the repeat, and a repeat counts once with a warning."""
    from hiersql.engines.oneshot import _no_repeats

    for sets in (np.array([0, 0, 1, 1]), np.array([0, 0, 1_500_000, 1_500_000])):  # spans 4 and 3·10^6
        assert _no_repeats(sets, np.array([0, 1, 0, 1]), 2)
        assert not _no_repeats(sets, np.array([0, 1, 1, 1]), 2)
    assert _no_repeats(np.array([], np.int64), np.array([], np.int64), 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hiersql.hierarchical_recall([["a1", "a1"], ["b"]], [["a1"], ["b"]], TAX) == 1.0
    assert any(issubclass(w.category, DataWarning) and "duplicate" in str(w.message) for w in caught)
