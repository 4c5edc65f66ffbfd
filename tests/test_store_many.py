"""Store.add_predictions_many: many sources read and checked at once, the same tables as one by one."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from hiersql import DataWarning, InputError, Store, Taxonomy
from hiersql.inputs.store import LOAD_STEPS

TAX = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")])
TRUTH = "1\ta1\n2\tb\n3\tb1\n"


def new_store(tmp_path: Path) -> Store:
    store = Store()
    store.load_taxonomy(TAX)
    truth = tmp_path / "truth.tsv"
    truth.write_text(TRUTH)
    store.add_truth(truth)
    return store


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def tables(store: Store) -> tuple[list, list]:
    preds = store.con.execute("SELECT * FROM predictions ORDER BY ALL").fetchall()
    return preds, store.con.execute("SELECT * FROM systems ORDER BY ALL").fetchall()


def test_germeval_submissions_equal_one_by_one(data_dir: Path) -> None:
    folder = data_dir / "germeval2019"
    files = sorted((folder / "submissions").glob("*.txt"))
    stores = []
    for _ in range(2):
        store = Store()
        store.load_taxonomy(Taxonomy.from_file(folder / "hierarchy.txt"))
        store.add_truth(folder / "blurbs_test_label.txt", "germeval-b")
        stores.append(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        stores[0].add_predictions_many({f.stem: f for f in files}, "germeval-a", no_truth="ignore")
        for f in files:
            stores[1].add_predictions(f.stem, f, "germeval-a", no_truth="ignore")
    many, single = tables(stores[0]), tables(stores[1])
    assert len(many[1]) == 22 and len(many[0]) > 80_000
    assert many == single


def test_mixed_sources_and_one_file_twice_equal_one_by_one(tmp_path: Path) -> None:
    p1 = write(tmp_path, "p1.tsv", "1\ta1\t0.5\n1\ta\n\n3\tb1\n")
    p2 = write(tmp_path, "p2.csv", "instance_id,label\n2,b\n1,a2\n")
    df = pd.DataFrame({"instance_id": ["3", "2"], "label": ["a", "b1"]})
    columns = {"instance_id": [1, 1, 3], "label": ["b", "a2", "a"], "score": [0.25, None, 1]}
    sources = {"one": p1, "csv": p2, "df": df, "again": p1, "columns": columns}
    many, single = new_store(tmp_path), new_store(tmp_path)
    many.add_predictions_many(sources)
    for system, source in sources.items():
        single.add_predictions(system, source)
    assert tables(many)[0] == tables(single)[0]
    assert [s for s, _ in tables(many)[1]] == sorted(sources)
    assert dict(tables(many)[1])["df"] == "df=<DataFrame>"  # the name its messages use
    assert many.con.execute("SELECT label, rank, score FROM predictions WHERE system = 'again'"
                            " AND instance_id = '1' ORDER BY rank").fetchall() == [("a1", 1, 0.5), ("a", 2, None)]
    assert many.con.execute("SELECT label, rank, score FROM predictions WHERE system = 'columns'"
                            " AND instance_id = '1' ORDER BY rank").fetchall() == [("b", 1, 0.25), ("a2", 2, None)]


def test_label_sets_and_columns_together(tmp_path: Path) -> None:
    store = Store()
    store.load_taxonomy(TAX)
    store.add_truth([["a1"], ["b"], ["a"], []])
    store.add_predictions_many({"sets": [[], ["b1", "a", "b"], "a1"], "columns": {"instance_id": ["3", "1"],
                                                                             "label": ["b", "a2"]}})
    rows = store.con.execute("SELECT system, instance_id, label, rank FROM predictions ORDER BY ALL").fetchall()
    assert rows == [("columns", "1", "a2", 1), ("columns", "3", "b", 1), ("sets", "1", "a", 2),
                    ("sets", "1", "b", 3), ("sets", "1", "b1", 1), ("sets", "2", "a1", 1)]
    with pytest.raises(InputError, match=r"c=<columns>: columns of different lengths"):
        store.add_predictions_many({"c": {"instance_id": ["1", "2"], "label": ["a"]}})
    with pytest.raises(InputError, match=r"c=<columns>: label table needs columns instance_id, label"):
        store.add_predictions_many({"c": {"id": ["1"], "label": ["a"]}})
    with pytest.raises(InputError, match=r"s=<label sets>\[2\]: label not in the taxonomy: 'zebra'"):
        store.add_predictions_many({"c": {"instance_id": ["1"], "label": ["a"]}, "s": [[], ["a"], ["b", "zebra"]]})


def test_bad_label_in_third_file_names_it_and_loads_nothing(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    files = {f"s{i}": write(tmp_path, f"p{i}.tsv", "1\ta\n2\tb\n") for i in range(1, 5)}
    write(tmp_path, "p3.tsv", "1\ta\n\n2\tzebra\n")
    with pytest.raises(InputError, match=r"p3\.tsv:3: label not in the taxonomy: 'zebra'"):
        store.add_predictions_many(files)
    assert tables(store) == ([], [])


def test_germeval_error_line_is_counted_in_its_own_file(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    good = write(tmp_path, "good.txt", "subtask_a\n1\ta\n2\tb\n3\tb\n")
    bad = write(tmp_path, "bad.txt", "subtask_a\n1\ta\n2\tb\n1\tb\n")
    with pytest.raises(InputError, match=r"bad\.txt:4: instance listed twice in subtask_a \(first on line 2\)"):
        store.add_predictions_many({"good": good, "bad": bad}, "germeval-a")


def test_system_named_twice(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    path = write(tmp_path, "p.tsv", "1\ta\n")
    with pytest.raises(InputError) as raised:  # the second source, naming the first
        store.add_predictions_many([("s", path), ("t", path), ("s", path)])
    assert str(raised.value) == f"{path}: system name given twice (also by {path}): 's'"


def test_empty_file_among_many(tmp_path: Path) -> None:
    # an empty prediction file is a system that predicted nothing (issue 15): loaded, with a warning naming it
    store = new_store(tmp_path)
    files = {"a": write(tmp_path, "a.tsv", "1\ta\n"), "b": write(tmp_path, "b.tsv", "  \n\n"),
             "c": write(tmp_path, "c.tsv", "1\tb\n")}
    for text in ("  \n\n", ""):
        write(tmp_path, "b.tsv", text)
        with pytest.warns(DataWarning, match=r"b\.tsv: no predicted label; evaluated as a system that predicted"
                                             " nothing"):
            store.add_predictions_many(files)
        assert store.systems() == ["a", "b", "c"]
        assert store.con.execute("SELECT count(*) FROM predictions WHERE system = 'b'").fetchall() == [(0,)]


def test_ignored_unknown_labels_are_counted_per_file(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    files = {"a": write(tmp_path, "a.tsv", "1\tzebra\n2\tb\n3\tyak\n"), "b": write(tmp_path, "b.tsv", "1\ta\n"),
             "c": write(tmp_path, "c.tsv", "2\tgnu\n")}
    with pytest.warns(DataWarning) as record:
        store.add_predictions_many(files, unknown="ignore")
    messages = sorted(str(w.message) for w in record)
    assert messages == [f"{tmp_path / 'a.tsv'}: ignored 2 label(s) not in the taxonomy (first: 'zebra')",
                        f"{tmp_path / 'c.tsv'}: ignored 1 label(s) not in the taxonomy (first: 'gnu')",
                        f"{tmp_path / 'c.tsv'}: no predicted label; evaluated as a system that predicted nothing"
                        " for every instance"]
    assert store.con.execute("SELECT system, count(*) FROM predictions GROUP BY 1 ORDER BY 1").fetchall() == [
        ("a", 1), ("b", 1)]
    assert store.systems() == ["a", "b", "c"]  # c is a system with only empty predicted sets


def test_sources_that_are_not_files_are_named_after_their_system(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    with pytest.raises(InputError, match=r"sys2=<label sets>\[1\]: label not in the taxonomy: 'zebra'"):
        store.add_predictions_many({"sys1": [["a"], ["b"]], "sys2": [["a"], ["zebra"]]})


def test_evaluator_add_predictions_many(tmp_path: Path) -> None:
    from hiersql import Evaluator

    ev = Evaluator(TAX).add_truth([["a1"], ["b"]])
    ev.add_predictions_many({"exact": [["a1"], ["b"]], "other": [["b1"], ["b"]]})
    rows = {r.system: r.value for r in ev.rows(["hierarchical_precision"], average="micro")}
    # other: {b, b1} against {a, a1}, {b} against {b}: 1 of 3 ancestor-augmented labels right
    assert rows == pytest.approx({"exact": 1.0, "other": 1 / 3})


def test_cli_names_the_bad_file_among_many_preds(tmp_path: Path, capsys) -> None:
    from hiersql.cli import main

    tax = write(tmp_path, "tax.tsv", "r\ta\nr\tb\na\ta1\na\ta2\nb\tb1\n")
    truth = write(tmp_path, "truth.tsv", TRUTH)
    p1 = write(tmp_path, "p1.tsv", TRUTH)
    p2 = write(tmp_path, "p2.tsv", "1\ta\n2\tb\n3\tb1\t0.5\n3\ta\tlow\n")
    code = main(["evaluate", "--taxonomy", str(tax), "--truth", str(truth), "--pred", f"s1={p1}",
                 "--pred", f"s2={p2}"])
    err = capsys.readouterr().err
    assert code == 2 and "p2.tsv:4: score is not a number: 'low'" in err


def test_crlf_line_ends(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    long = tmp_path / "long.tsv"
    long.write_bytes(b"1\ta1\r\n2\tb\t0.5\r\n")
    germeval = tmp_path / "g.txt"
    germeval.write_bytes(b"subtask_a\r\n1\ta\tb\r\n3\tb1\t\r\n")
    store.add_predictions_many({"long": long})
    store.add_predictions_many({"g": germeval}, "germeval-a")
    rows = store.con.execute("SELECT system, instance_id, label, rank, score FROM predictions ORDER BY ALL").fetchall()
    assert rows == [("g", "1", "a", 1, None), ("g", "1", "b", 2, None), ("g", "3", "b1", 1, None),
                    ("long", "1", "a1", 1, None), ("long", "2", "b", 1, 0.5)]


def every_table(store: Store) -> dict[str, list]:
    names = ("edges", "nodes", "closure", "node_closure", "instances", "truth", "predictions", "systems")
    return {t: store.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in names}


def test_load_equals_the_calls_one_by_one(data_dir: Path) -> None:
    """Store.load (taxonomy file validated on a second thread while the labels are read) fills every table
    as load_taxonomy + add_truth + add_predictions_many do."""
    folder = data_dir / "germeval2019"
    files = {f.stem: f for f in sorted((folder / "submissions").glob("*.txt"))[:5]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        one_by_one = Store()
        one_by_one.load_taxonomy(Taxonomy.from_file(folder / "hierarchy.txt"))
        one_by_one.add_truth(folder / "blurbs_test_label.txt", "germeval-a")
        one_by_one.add_predictions_many(files, "germeval-a", no_truth="ignore")
        at_once, steps = Store(), []
        at_once.load(folder / "hierarchy.txt", folder / "blurbs_test_label.txt", files, "germeval-a",
                     no_truth="ignore", on_step=steps.append)
    expected = every_table(one_by_one)
    assert len(expected["systems"]) == 5 and len(expected["predictions"]) > 10_000
    assert every_table(at_once) == expected
    assert steps == list(LOAD_STEPS)
    only_truth = Store()
    only_truth.load(TAX, {"instance_id": ["1", "2", "3"], "label": ["a1", "b", "b1"]}, {})
    assert only_truth.systems() == [] and only_truth.con.execute("SELECT count(*) FROM truth").fetchone()[0] == 3


def test_load_reports_a_bad_taxonomy_before_bad_labels(tmp_path: Path) -> None:
    cyclic = write(tmp_path, "tax.tsv", "r\ta\na\tb\nb\ta\n")
    truth = write(tmp_path, "truth.tsv", "1\tnot-a-node\n")
    pred = write(tmp_path, "pred.tsv", "1\ta\n2\n")  # a row without a label: a reader error
    with pytest.raises(InputError, match="cycle") as err:
        Store().load(cyclic, truth, {"s": pred})
    assert str(cyclic) in str(err.value)
    good = write(tmp_path, "good.tsv", "r\ta\na\tb\n")
    with pytest.raises(InputError) as err:
        Store().load(good, truth, {"s": write(tmp_path, "p.tsv", "1\ta\n")})
    assert "not in the taxonomy" in str(err.value) and "truth.tsv:1" in str(err.value)
    store = Store()
    with pytest.raises(InputError) as err:
        store.load(good, write(tmp_path, "t.tsv", "1\ta\n"), {"s": pred})
    assert "pred.tsv:2" in str(err.value)
    assert store.con.execute("SELECT count(*) FROM truth").fetchone()[0] == 0  # a reader error loads nothing
    assert store.con.execute("SELECT count(*) FROM edges").fetchone()[0] == 0  # not even the taxonomy


def test_load_with_bad_labels_keeps_the_taxonomy_loaded_before(tmp_path: Path) -> None:
    """The taxonomy loads on its own connection while the label files are read; a bad label file rolls it back."""
    store = Store()
    store.load(write(tmp_path, "one.tsv", "r\ta\n"), write(tmp_path, "t.tsv", "1\ta\n"), {})
    before = every_table(store)
    with pytest.raises(InputError, match="p.tsv:2"):
        store.load(write(tmp_path, "two.tsv", "r\tb\nb\tc\n"), write(tmp_path, "t2.tsv", "1\tc\n"),
                   {"s": write(tmp_path, "p.tsv", "1\tb\n2\n")})
    assert every_table(store) == before
    assert store.taxonomy.nodes == ["r", "a"]
