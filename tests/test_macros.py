"""``hiersql install-macros``: the measures in plain SQL in a user's DuckDB file equal the Python API."""

from __future__ import annotations

import math
import re
import shutil

import duckdb
import pytest

from hiersql.cli import main
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import REGISTRY, Options, Row, compute
from tests._engine_cases import (
    HAND_EDGES,
    HAND_PRED,
    HAND_TRUTH,
    SET_BASED,
    all_metrics,
    assert_hand_values,
    assert_rows_match,
    germeval_store,
    reference,
)

ORDER = " ORDER BY system, metric, average"


def _hand_file(path) -> Store:
    store = Store(path)
    store.load_taxonomy(Taxonomy.from_edges(HAND_EDGES))
    store.add_truth(HAND_TRUTH)
    for system, sets in HAND_PRED.items():
        store.add_predictions(system, sets)
    return store


def _rows(con, sql: str) -> list[Row]:
    return [Row(*r) for r in con.execute(sql).fetchall()]


@pytest.fixture(scope="module")
def installed_hand_db(tmp_path_factory):
    """The hand example's file with the macros installed by ``hiersql install-macros`` (~2.5 s: it generates
    every macro's SQL), once per module."""
    path = tmp_path_factory.mktemp("hand") / "user.duckdb"
    _hand_file(path).close()
    assert main(["install-macros", "--db", str(path)]) == 0
    assert not path.with_name(path.name + ".wal").exists()  # closed: the file alone holds it
    return path


@pytest.fixture
def hand_db(installed_hand_db, tmp_path):
    """A test's own copy of that file (a test may change its tables)."""
    path = tmp_path / "user.duckdb"
    shutil.copyfile(installed_hand_db, path)
    return path


def test_plain_sql_gives_the_hand_values(hand_db):
    con = duckdb.connect(str(hand_db))
    assert_hand_values(_rows(con, "SELECT * FROM hiersql_set_based()" + ORDER))


@pytest.mark.parametrize("options", [
    Options(include_root=True, max_distance=1, beta=2.0),
    Options(augment="descendants", zero_division=1.0),
    Options(augment="cesa_bianchi"),
], ids=["root_k1_beta2", "descendants", "cesa_bianchi"])
def test_named_parameters_equal_the_python_api(hand_db, options):
    con = duckdb.connect(str(hand_db))
    sql = (f"SELECT * FROM hiersql_set_based(include_root := {str(options.include_root).lower()},"
           f" max_distance := {options.max_distance if options.max_distance is not None else 'NULL'},"
           f" beta := {options.beta}, augment := '{options.augment}', zero_division := {options.zero_division})")
    got = _rows(con, sql + ORDER)
    con.close()
    store = Store(hand_db)
    assert_rows_match(got, reference(store, SET_BASED, options), tol=1e-12)


@pytest.mark.parametrize(("call", "said"), [
    ("hiersql_set_based(augment := 'Descendants')",
     "hiersql: augment must be one of ancestors, descendants, cesa_bianchi: Descendants"),
    ("hiersql_set_based(max_distance := -1)", "hiersql: max_distance must be an integer >= 0 or NULL: -1"),
    ("hiersql_set_based_instance(zero_division := 2)", "hiersql: zero_division must be 0, 1 or nan: 2"),
    ("hiersql_set_based(beta := -1)", "hiersql: beta must be a finite number >= 0: -1"),
    ("hiersql_flat(fixed_universe := NULL)", "hiersql: fixed_universe must not be NULL: NULL"),
    ("hiersql_closure(max_depth := 1.5)", "hiersql: max_depth must be an integer >= 0 or NULL: 1.5"),
    ("hiersql_flat(unknown := 'Ignore')", "hiersql: unknown must be one of error, ignore: Ignore"),
    ("hiersql_check(no_truth := NULL)", "hiersql: no_truth must be one of error, ignore: NULL"),
])
def test_a_parameter_the_flag_would_refuse_is_an_error(hand_db, call, said):
    """The macros check their parameters as the command line checks the options: ``augment := 'Descendants'``
    gave the ancestors' values, ``max_distance := -1`` zeros (tu s24-sql finding F4)."""
    con = duckdb.connect(str(hand_db))
    with pytest.raises(duckdb.Error, match=re.escape(said)):
        con.execute(f"SELECT * FROM {call}").fetchall()
    assert con.execute("SELECT count(*) FROM hiersql_set_based(max_distance := 2, zero_division := 'nan'::DOUBLE)"
                       ).fetchall()[0][0] > 0  # allowed values pass


def test_per_instance_macro(hand_db):
    con = duckdb.connect(str(hand_db))
    rows = con.execute("SELECT system, instance_id, n_true, n_pred, n_both FROM hiersql_set_based_instance()"
                       " ORDER BY system, instance_id").fetchall()
    # s1: Ŷaug {B,E}, {B,D}, {} against Yaug {B,D}, {B,C,E,F}, {C} (root A left out)
    assert rows[:3] == [("s1", "0", 2, 2, 1), ("s1", "1", 4, 2, 1), ("s1", "2", 1, 0, 0)]


def test_flat_macros_and_the_fixed_universe(hand_db):
    con = duckdb.connect(str(hand_db))
    default = _rows(con, "SELECT * FROM hiersql_flat()" + ORDER)
    con.execute("INSERT INTO flat_labels VALUES ('A'), ('B'), ('C'), ('D'), ('E'), ('F')")
    fixed = _rows(con, "SELECT * FROM hiersql_flat(fixed_universe := true)" + ORDER)
    con.close()
    store = Store(hand_db)
    flat = list(REGISTRY["flat"])
    assert_rows_match(default, reference(store, flat, Options()), tol=1e-12)
    assert_rows_match(fixed, reference(store, flat, Options(labels=tuple("ABCDEF"))), tol=1e-12)
    # Hamming loss of s1 over the 6 labels: |{D}Δ{E}| + |{E,F}Δ{D}| + |{C}Δ{}| = 2 + 3 + 1 -> (2/6+3/6+1/6)/3
    hamming = {r.system: r.value for r in fixed if r.metric == "hamming_loss"}
    assert math.isclose(hamming["s1"], 1 / 3)


@pytest.mark.parametrize(("labels", "said"), [
    (("A", "B", "Z"), "hiersql: flat_labels holds a label not in the taxonomy: 'Z'"),
    (("B", "C", "B"), "hiersql: flat_labels holds a label twice: 'B'"),
])
def test_a_fixed_universe_evaluate_refuses_fails_every_door(hand_db, capsys, labels, said):
    """A fixed class universe with a label that is no node, or one given twice: evaluate refuses it (labels=),
    and so do the per-instance values of both families with classes (compare's and the report's; they counted
    a class that cannot occur), the one-shot functions (the flat ones counted it and merged the repeated one, the
    set-based one said another message and took the repeated one), the flat macros and the printed flat script,
    in one error naming the label."""
    import hiersql
    from hiersql.errors import InputError
    from hiersql.measures import as_engine, plan_of

    store = Store(hand_db)
    engine = as_engine(store)
    taxonomy = engine.taxonomy()
    refused = set()
    for call in (lambda: compute(store, ["label_f1"], Options(labels=labels)),
                 lambda: compute(store, ["hierarchical_f1"], Options(labels=labels, average=("label_macro",))),
                 lambda: engine.per_instance(plan_of("flat"), Options(labels=labels)),
                 lambda: engine.per_instance(plan_of("set_based"), Options(labels=labels)),
                 lambda: hiersql.label_f1([["A"]], [["B"]], taxonomy, average="macro", labels=list(labels)),
                 lambda: hiersql.hierarchical_f1([["A"]], [["B"]], taxonomy, "label_macro",
                                                 labels=list(labels))):
        with pytest.raises(InputError) as info:
            call()
        refused.add(str(info.value))
    assert refused == {said.replace("hiersql: flat_labels", "labels")}
    store.close()
    assert main(["sql", "flat", "--param", "fixed_universe=true"]) == 0
    printed = capsys.readouterr().out
    with duckdb.connect(str(hand_db)) as con:
        con.executemany("INSERT INTO flat_labels VALUES (?)", [(label,) for label in labels])
        for query in ("SELECT * FROM hiersql_flat(fixed_universe := true)",
                      "SELECT * FROM hiersql_flat_instance(fixed_universe := true)", printed):
            with pytest.raises(duckdb.Error, match=re.escape(said)):
                con.execute(query).fetchall()
        assert con.execute("SELECT count(*) FROM hiersql_flat()").fetchone()[0] > 0  # the universe unused


def test_closure_macro_recomputes_the_closure(hand_db):
    con = duckdb.connect(str(hand_db))
    assert sorted(con.execute("SELECT * FROM hiersql_closure()").fetchall()) == \
        sorted(con.execute("SELECT * FROM closure").fetchall())


def test_tables_under_other_names(tmp_path, capsys):
    """A user's file whose truth table is called gold_labels: the macros read it with --table."""
    path = tmp_path / "renamed.duckdb"
    store = _hand_file(path)
    store.con.execute("ALTER TABLE truth RENAME TO gold_labels")
    store.close()
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold_labels"]) == 0
    assert "installed hiersql_closure, hiersql_nodes, hiersql_root_edges, hiersql_set_based" in capsys.readouterr().out
    con = duckdb.connect(str(path))
    assert_hand_values(_rows(con, "SELECT * FROM hiersql_set_based()" + ORDER))


def test_one_table_name_with_and_without_a_rank_column_each_gives_the_hand_values(tmp_path, capsys):
    """The macros are made once per process and renames (``hiersql.api.macros``). A renamed truth table without a
    rank column is read through a query that ranks it, under the same name: two installs in one process, the
    table first with its rank column and then without, each give the hand values."""
    for rank in (True, False):
        path = tmp_path / f"rank_{rank}.duckdb"
        store = _hand_file(path)
        store.con.execute(f"CREATE TABLE gold AS SELECT instance_id, label{', rank' if rank else ''} FROM truth")
        store.close()
        assert main(["install-macros", "--db", str(path), "--table", "truth=gold"]) == 0, capsys.readouterr().err
        with duckdb.connect(str(path)) as con:
            assert_hand_values(_rows(con, "SELECT * FROM hiersql_set_based()" + ORDER))


def test_an_empty_instances_table_beside_a_renamed_truth_is_warned_of(tmp_path, capsys):
    """--taxonomy makes hiersql's tables, instances and systems empty; with the truth and predictions renamed,
    every macro returned no rows without a word (tu s24-sql finding F11): a warning says what to give."""
    path = tmp_path / "renamed.duckdb"
    store = _hand_file(path)
    store.con.execute("CREATE TABLE gold AS SELECT * FROM truth")
    store.con.execute("DELETE FROM instances")
    store.close()
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold"]) == 0
    err = capsys.readouterr().err
    assert err == (f"hiersql: warning: --db {path}: instances is empty while gold has rows: the macros will return"
                   " no rows; give --table instances=VIEW, e.g. CREATE VIEW instances_v AS SELECT DISTINCT"
                   " instance_id FROM <truth>\n")
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE VIEW instances_v AS SELECT DISTINCT instance_id FROM gold")
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold", "--table", "instances=instances_v"]
                ) == 0
    assert capsys.readouterr().err == ""
    with duckdb.connect(str(path)) as con:
        assert_hand_values(_rows(con, "SELECT * FROM hiersql_set_based()" + ORDER))


def test_germeval_b_sample_equals_the_python_api(tmp_path, data_dir):
    path = tmp_path / "germeval.duckdb"
    germeval_store(data_dir, ("Averbis__BOHB_CNN", "LT-UHH__baseline"), path).close()
    assert main(["install-macros", "--db", str(path)]) == 0
    store = Store(path)
    got = _rows(store.con, "SELECT * FROM hiersql_set_based(max_distance := 2)" + ORDER)
    assert_rows_match(got, reference(store, SET_BASED, Options(max_distance=2)), tol=1e-12)


def test_taxonomy_option_loads_edges_nodes_and_closure(tmp_path):
    edges = tmp_path / "tax.tsv"
    edges.write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    path = tmp_path / "new.duckdb"
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(edges)]) == 0
    con = duckdb.connect(str(path))
    # reflexive pairs 6, A above 5 nodes, B above D and E, C above F
    assert con.execute("SELECT count(*) FROM closure").fetchone()[0] == 6 + 5 + 2 + 1
    assert con.execute("SELECT count(*) FROM hiersql_closure()").fetchone()[0] == 14


def test_bad_table_name_is_an_input_error(tmp_path, capsys):
    assert main(["install-macros", "--db", str(tmp_path / "x.duckdb"), "--table", "gold=truth"]) == 2
    assert "unknown table" in capsys.readouterr().err


def test_a_table_without_hiersqls_columns_fails_in_one_line_and_changes_nothing(tmp_path, capsys):
    """--table truth=gold where gold(doc, genre): one line naming the file and the missing column (it was an
    internal error), and the file as it was, the taxonomy of --taxonomy not loaded (it was, with 8 empty
    tables: tu s24-sql finding F1); a bad --taxonomy on a new file creates no file."""
    import hashlib

    edges = tmp_path / "tax.tsv"
    edges.write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    path = tmp_path / "gold.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE gold AS SELECT * FROM (VALUES ('0', 'D')) t(doc, genre)")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(edges), "--table", "truth=gold"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hiersql: error: --db {path}: a table the macros read lacks a column they read (")
    assert "instance_id" in err and err.count("\n") == 1, err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with duckdb.connect(str(path)) as con:
        assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("gold",)]
    (tmp_path / "cycle.tsv").write_text("a\tb\nb\ta\n")
    new = tmp_path / "new.duckdb"
    assert main(["install-macros", "--db", str(new), "--taxonomy", str(tmp_path / "cycle.tsv")]) == 2
    assert "cycle" in capsys.readouterr().err and not new.exists()


@pytest.mark.parametrize("case", ["defaults", "root_k1_beta2"])
def test_duckdb_engine_equals_the_python_api(data_dir, case):
    """The engine path (one composed, constant-folded statement) against the store's own (temp tables)."""
    from hiersql.engines import DuckDBEngine
    from tests._engine_cases import OPTION_CASES

    store = germeval_store(data_dir)
    options = OPTION_CASES[case]
    assert_rows_match(compute(DuckDBEngine(store), all_metrics(), options),
                      reference(store, all_metrics(), options))


def test_duckdb_engine_copies_into_renamed_tables(tmp_path):
    from hiersql.engines import STORE_TABLES, DuckDBEngine
    from tests._engine_cases import hand_store

    engine = DuckDBEngine(str(tmp_path / "copy.duckdb"), tables={t: f"h_{t}" for t in STORE_TABLES})
    engine.copy_store(hand_store())
    assert engine.execute("SELECT count(*) FROM h_closure") == [(14,)]
    assert_hand_values(compute(engine, SET_BASED))


def test_the_sql_in_docs_runs(hand_db):
    """Every statement of the ```sql block of docs/sql.md runs on an installed file."""
    import re

    from tests.conftest import ROOT

    block = re.findall(r"```sql\n(.*?)```", (ROOT / "docs" / "sql.md").read_text(encoding="utf-8"), re.S)[0]
    con = duckdb.connect(str(hand_db))
    closure_before = sorted(con.execute("SELECT * FROM closure").fetchall())
    for statement in filter(str.strip, block.split(";")):
        con.execute(statement)
    assert sorted(con.execute("SELECT * FROM closure").fetchall()) == closure_before
    assert con.execute("SELECT count(*) FROM flat_labels").fetchone()[0] == 6


def _user_tables(path, data_dir) -> None:
    """GermEval B's first 300 instances and two systems in a user's DuckDB file, under the user's names:
    ``gold(doc_id, genre)``, ``runs(model, doc_id, genre)``."""
    canonical = data_dir / "canonical"
    truth = [line.split("\t")[:2] for line in (canonical / "truth_b.tsv").read_text().splitlines()]
    kept = set(list(dict.fromkeys(i for i, _ in truth))[:300])
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE gold (doc_id VARCHAR, genre VARCHAR)")
        con.executemany("INSERT INTO gold VALUES (?, ?)", [r for r in truth if r[0] in kept])
        con.execute("CREATE TABLE runs (model VARCHAR, doc_id VARCHAR, genre VARCHAR)")
        for system in ("Averbis__BOHB_CNN", "Comtravo-DS__global_clf_cnn"):
            rows = (canonical / "pred_b" / f"{system}.tsv").read_text().splitlines()
            con.executemany("INSERT INTO runs VALUES (?, ?, ?)",
                            [(system, *line.split("\t")[:2]) for line in rows if line.split("\t")[0] in kept])


USER = ["--truth", "gold", "--predictions", "runs", "--instance-col", "doc_id", "--label-col", "genre",
        "--system-col", "model"]


def test_the_users_tables_under_their_own_column_names_equal_evaluate(tmp_path, data_dir, capsys):
    """``install-macros --truth gold --predictions runs --instance-col doc_id ...``: the macros read the user's
    tables where they are (no view), equal to ``evaluate`` of the same tables; a re-install without the flags
    keeps reading them; the problems name the user's table."""
    path = tmp_path / "user.duckdb"
    _user_tables(path, data_dir)
    taxonomy = str(data_dir / "canonical" / "taxonomy.tsv")
    assert main(["install-macros", "--db", str(path), "--taxonomy", taxonomy, *USER]) == 0
    table = f"duckdb:{path}::"
    capsys.readouterr()
    assert main(["evaluate", "--taxonomy", taxonomy, "--truth", table + "gold", "--pred", table + "runs",
                 "--system-col", "model", "--instance-col", "doc_id", "--label-col", "genre", "--metrics",
                 "set_based,flat", "--format", "csv"]) == 0
    want = [Row(s, m, a, float(v)) for s, m, a, v in
            (line.split(",") for line in capsys.readouterr().out.splitlines()[1:])]
    query = ("SELECT * FROM (SELECT * FROM hiersql_set_based() UNION ALL SELECT * FROM hiersql_flat())"
             " WHERE average IN ('micro', 'macro', '')" + ORDER)
    with duckdb.connect(str(path)) as con:
        got = _rows(con, query)
        assert {r[:3] for r in got} >= {r[:3] for r in want} and len(want) > 20
        assert_rows_match([r for r in got if r[:3] in {w[:3] for w in want}], want)
    assert main(["install-macros", "--db", str(path)]) == 0  # the same tables again
    with duckdb.connect(str(path)) as con:
        assert _rows(con, query) == got
        instance, = con.execute("SELECT doc_id FROM gold ORDER BY doc_id LIMIT 1").fetchone()
        con.execute("UPDATE gold SET genre = 'zebra' WHERE doc_id = ?", [instance])
        problems = con.execute("SELECT table_name, column_name, message FROM hiersql_check()"
                               " WHERE action = 'error'").fetchall()
        assert problems == [("gold", "label", f"hiersql: gold, column 'label', instance_id='{instance}': label"
                                              " not in the taxonomy: 'zebra'")]
        with pytest.raises(duckdb.Error, match="label not in the taxonomy: 'zebra'"):
            con.execute("SELECT * FROM hiersql_set_based()").fetchall()


@pytest.mark.parametrize(("args", "says"), [
    (["--truth", "gold", "--instance-col", "doc_id", "--label-col", "label"],
     "--label-col: table gold has no such column (it has doc_id, genre): 'label'"),
    (["--instance-col", "doc_id"], "--instance-col: names a column of --truth or --predictions, and neither is given"
                                   ": 'doc_id'"),
    (["--truth", "gold", "--table", "truth=gold"], "--truth: names the truth table as --table truth= does"),
])
def test_a_user_table_that_cannot_be_mapped_is_one_line(tmp_path, data_dir, capsys, args, says):
    path = tmp_path / "user.duckdb"
    _user_tables(path, data_dir)
    assert main(["install-macros", "--db", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and says in err, err
