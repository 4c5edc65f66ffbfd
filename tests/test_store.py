"""Label readers of every format, ranks, empty instances, the DuckDB file, transactions."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from hiersql import Store, Taxonomy
from hiersql.cli import main
from hiersql.errors import DataWarning

TAX = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")])


def store_with(source, fmt="long", **kw) -> Store:
    store = Store()
    store.load_taxonomy(TAX)
    store.add_truth(source, fmt, **kw)
    return store


def truth_rows(store: Store):
    return store.con.execute("SELECT instance_id, label, rank FROM truth ORDER BY instance_id, rank").fetchall()


def instances(store: Store):
    return sorted(r[0] for r in store.con.execute("SELECT instance_id FROM instances").fetchall())


def test_long_tsv_keeps_input_order_as_rank(tmp_path):
    path = tmp_path / "y.tsv"
    path.write_text("i1\ta2\ni2\tb\ni1\ta1\n\ni1\tb1\t0.5\n")
    assert truth_rows(store_with(path)) == [("i1", "a2", 1), ("i1", "a1", 2), ("i1", "b1", 3), ("i2", "b", 1)]


def test_ranks_close_up_when_duplicates_collapse_and_unknown_labels_are_dropped(tmp_path):
    """Ranks are numbered as the labels are read, then renumbered: the repeated a1 (line 3) and the unknown
    zz (line 2) leave i1 with a1, b1 ranked 1, 2 (not 1, 4); the tab-separated HEMKit line likewise."""
    path = tmp_path / "y.tsv"
    path.write_text("i1\ta1\ni1\tzz\ni1\ta1\ni1\tb1\n")
    with pytest.warns(DataWarning):
        store = store_with(path, unknown="ignore")
    assert truth_rows(store) == [("i1", "a1", 1), ("i1", "b1", 2)]
    lines = tmp_path / "gold.txt"
    lines.write_text("zz\ta1  a1 \tb1\n")
    with pytest.warns(DataWarning):
        store = store_with(lines, "lines", unknown="ignore")
    assert truth_rows(store) == [("1", "a1", 1), ("1", "b1", 2)]


def test_long_csv_with_header_and_scores(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("instance_id,label,score\n1,a1,0.9\n1,b,0.2\n2,a,1\n")
    store = store_with(tmp_path / "p.csv")
    store.add_predictions("s", path)
    rows = store.con.execute("SELECT instance_id, label, rank, score FROM predictions ORDER BY 1, 3").fetchall()
    assert rows == [("1", "a1", 1, 0.9), ("1", "b", 2, 0.2), ("2", "a", 1, 1.0)]


def test_hemkit_lines_blank_line_is_an_empty_instance(tmp_path):
    path = tmp_path / "gold.txt"
    path.write_text("a1 b1\n\nb  a2\n")
    store = store_with(path, "lines")
    assert instances(store) == ["1", "2", "3"]
    assert truth_rows(store) == [("1", "a1", 1), ("1", "b1", 2), ("3", "b", 1), ("3", "a2", 2)]


def test_germeval_sections_and_trailing_tabs(tmp_path):
    path = tmp_path / "sub.txt"
    path.write_text("subtask_a\nx\ta\tb\t\ny\t\nsubtask_b\nx\ta1\t\t\n")
    a = store_with(path, "germeval-a")
    assert truth_rows(a) == [("x", "a", 1), ("x", "b", 2)]
    assert instances(a) == ["x", "y"]  # y is listed with no label: an empty set
    b = store_with(path, "germeval-b")
    assert truth_rows(b) == [("x", "a1", 1)] and instances(b) == ["x"]


def test_missing_ids_in_a_submission_have_empty_predicted_sets(tmp_path):
    (tmp_path / "gold.txt").write_text("subtask_a\nx\ta\ny\tb\n")
    (tmp_path / "sub.txt").write_text("subtask_a\nx\ta\n")
    store = store_with(tmp_path / "gold.txt", "germeval-a")
    store.add_predictions("s", tmp_path / "sub.txt", "germeval-a")
    from hiersql.measures import Options, set_based

    per = set_based.per_instance(store, Options()).set_index("instance_id")
    assert per.loc["y", "n_pred"] == 0 and per.loc["y", "hierarchical_recall"] == 0


def test_wide_matrix(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("instance_id,a1,b,b1\n1,1,0,1\n2,0,0,0\n3,0,1,0\n")
    store = store_with(path, "wide")
    assert instances(store) == ["1", "2", "3"]
    assert truth_rows(store) == [("1", "a1", 1), ("1", "b1", 2), ("3", "b", 1)]


def test_dataframe_relation_parquet_and_label_sets_agree(tmp_path):
    df = pd.DataFrame({"instance_id": [1, 1, 2], "label": ["a1", "b", "a"]})
    df.to_parquet(tmp_path / "y.parquet")
    con = duckdb.connect()
    want = [("1", "a1", 1), ("1", "b", 2), ("2", "a", 1)]
    assert truth_rows(store_with(df)) == want
    assert truth_rows(store_with(tmp_path / "y.parquet")) == want
    assert truth_rows(store_with(con.from_df(df))) == want
    sets = store_with([["a1", "b"], ["a"]])
    assert truth_rows(sets) == [("0", "a1", 1), ("0", "b", 2), ("1", "a", 1)]


def test_database_file_persists(tmp_path):
    db = tmp_path / "h.duckdb"
    store = Store(db)
    store.load_taxonomy(TAX)
    store.add_truth([["a1"], ["b"]])
    store.add_predictions("s", [["a"], []])
    store.close()
    with duckdb.connect(str(db), read_only=True) as con:
        # reflexive 6; r over 5 nodes; a over a1, a2; b over b1
        assert con.execute("SELECT count(*) FROM closure").fetchall() == [(6 + 5 + 2 + 1,)]
        assert con.execute("SELECT system, count(*) FROM predictions GROUP BY 1").fetchall() == [("s", 1)]
        assert con.execute("SELECT count(*) FROM systems").fetchall() == [(1,)]


def closure_kind(con) -> str:
    return con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'closure'").fetchone()[0]


def test_closure_view_reads_the_same_rows_and_becomes_a_table_again(tmp_path):
    """``closure_view=True`` leaves ``closure`` a view of ``node_closure`` (names joined when read): the 14 rows
    of TAX (reflexive 6; r over 5 nodes; a over a1, a2; b over b1), also in a reopened file; the next load
    without it makes it the schema's table again; a taxonomy walked level by level (a ladder of 12 diamonds:
    4,096 paths over 37 nodes) gets the view too."""
    db = tmp_path / "v.duckdb"
    store = Store(db)
    store.load(TAX, [["a1"]], {"s": [["a"]]}, closure_view=True)
    assert closure_kind(store.con) == "VIEW"
    want = sorted(store.con.execute(
        "SELECT a.label, d.label, c.distance FROM node_closure c JOIN nodes a ON a.position = c.ancestor"
        " JOIN nodes d ON d.position = c.descendant").fetchall())
    assert len(want) == 14 and sorted(store.con.execute("SELECT * FROM closure").fetchall()) == want
    assert ("r", "a1", 2) in want
    store.close()
    store = Store(db)
    assert closure_kind(store.con) == "VIEW" and store.con.execute("SELECT count(*) FROM closure").fetchone()[0] == 14
    store.load_taxonomy(TAX)
    assert closure_kind(store.con) == "BASE TABLE"
    assert sorted(store.con.execute("SELECT * FROM closure").fetchall()) == want
    store.close()
    with duckdb.connect(str(db), read_only=True) as con:
        assert closure_kind(con) == "BASE TABLE" and con.execute("SELECT count(*) FROM closure").fetchone()[0] == 14
    edges = []
    for i in range(12):
        edges += [(f"t{i}", f"l{i}"), (f"t{i}", f"r{i}"), (f"l{i}", f"t{i + 1}"), (f"r{i}", f"t{i + 1}")]
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges), closure_view=True)
    assert closure_kind(store.con) == "VIEW"
    assert store.con.execute("SELECT distance FROM closure WHERE ancestor = 't0' AND descendant = 't12'").fetchall() \
        == [(24,)]


def test_cursor_shares_the_tables_but_not_the_temp_tables():
    """``Store.cursor()``: a second connection to the same database, usable from another thread at the same
    time (hiersql hemkit runs hP/hR on one while the LCA graphs are built on the other)."""
    from concurrent.futures import ThreadPoolExecutor

    store = store_with([["a1"], ["b"]])
    other = store.cursor()
    assert other.taxonomy is store.taxonomy
    other.con.execute("CREATE TEMP TABLE mine AS SELECT label FROM truth")
    with pytest.raises(duckdb.CatalogException):
        store.con.execute("SELECT * FROM mine")
    with ThreadPoolExecutor(1) as pool:
        counted = pool.submit(lambda: other.con.execute("SELECT count(*) FROM mine").fetchone()[0])
        assert store.con.execute("SELECT count(*) FROM closure").fetchone()[0] == 14
        assert counted.result() == 2


def test_failed_load_changes_nothing(tmp_path):
    store = store_with([["a1"], ["b"]])
    store.add_predictions("s", [["a"], ["b"]])
    with pytest.raises(Exception, match="not in the taxonomy"):
        store.add_predictions("s", [["a"], ["zebra"]])
    assert store.con.execute("SELECT label FROM predictions ORDER BY 1").fetchall() == [("a",), ("b",)]
    with pytest.raises(Exception, match="not in the taxonomy"):
        store.add_truth([["zebra"]])
    assert store.con.execute("SELECT count(*) FROM truth").fetchall() == [(2,)]


def test_fast_switching_keeps_the_short_interval_until_the_last_user_leaves():
    """``fast_switching`` (SQL beside Python: DuckDB's client takes the GIL back between tasks) lowers CPython's
    switch interval; a second thread entering meanwhile keeps it low after the first leaves, and the last to
    leave restores it. ``beside_python`` re-raises the error of the work it ran beside."""
    import sys
    import threading

    from hiersql.engines.concurrency import SWITCH_INTERVAL, beside_python, fast_switching

    before = sys.getswitchinterval()
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with fast_switching():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with fast_switching():
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL) and before > SWITCH_INTERVAL
        thread.start()
        assert entered.wait(10)
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    release.set()
    thread.join()
    assert sys.getswitchinterval() == before
    with pytest.raises(ZeroDivisionError), beside_python(lambda: 1 / 0):
        pass
    assert sys.getswitchinterval() == before


def test_threads_set_duckdb_threads_and_leave_the_values(data_dir, capsys):
    """``Store(threads=)`` (``--threads``) is DuckDB's setting; one thread gives the same output as the default."""
    assert Store(threads=1).con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_a.tsv"),
            "--pred", str(canonical / "pred_a" / "A*"), "--metrics", "hf,lca_f1", "--format", "csv"]
    outputs = []
    for extra in ([], ["--threads", "1"]):
        assert main([*args, *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") > 2


def test_duckdb_progress_bar_off_on_our_connections_only(tmp_path):
    """DuckDB's progress bar would write into the output of a long command: off on the connections hiersql
    opens (in memory, or a --db file), left as it is on a caller's own connection."""
    setting = "SELECT current_setting('enable_progress_bar')"
    assert Store().con.execute(setting).fetchone() == (False,)
    assert Store(tmp_path / "r.duckdb").con.execute(setting).fetchone() == (False,)
    theirs = duckdb.connect()
    theirs.execute("SET enable_progress_bar = true")
    assert Store(con=theirs).con.execute(setting).fetchone() == (True,)


def test_staging_and_stage_tables_are_dropped_unless_kept_for_reuse(data_dir):
    """DuckDB holds temporary tables within its memory limit: the store drops its staging tables once the rows
    are committed, and each family's stages are dropped after its measures, unless the engine keeps them for
    reuse (batch jobs' per-instance tables). Every family of ``all`` gives the same rows either way."""
    from hiersql.engines import DuckDBEngine
    from hiersql.measures import compute

    canonical = data_dir / "canonical"
    temporary = "SELECT table_name FROM duckdb_tables() WHERE temporary ORDER BY table_name"
    stores = []
    for _ in range(2):
        store = Store()
        store.load(canonical / "taxonomy.tsv", canonical / "truth_b.tsv",
                   [("x", str(sorted((canonical / "pred_b").glob("*.tsv"))[0]))])
        assert store.con.execute(temporary).fetchall() == []
        stores.append(store)
    dropped, kept = DuckDBEngine(stores[0]), DuckDBEngine(stores[1])
    kept.reuse_stages()
    rows = compute(dropped, ["all"])
    assert stores[0].con.execute(temporary).fetchall() == []
    assert compute(kept, ["all"]) == rows and len({row.metric for row in rows}) > 20
    left = {name for (name,) in stores[1].con.execute(temporary).fetchall()}
    assert {"set_based_instance", "lca_instance", "pair_arcs"} <= left
