"""The scoring-tree macros (``hiersql_scoring``, ``hiersql_scoring_instance``) in a user's DuckDB file: Lanus et
al.'s Table VIII and IX values of Model 3 (decreasing weights), evaluate's values to 1e-12, and the checks that
evaluate makes first (a tree, the root never a label, edge weights that make a scoring tree, the offset)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from hiersql.cli import main
from hiersql.engines import DuckDBEngine
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import REGISTRY, Options, compute, scoring
from hiersql.measures.scoring import read_confusion
from hiersql.measures.scoring.trees import validate
from tests.test_lanus_tables import _printed

SCORING = REGISTRY["scoring"]


def lanus_file(path: Path, fixtures_dir: Path, tree: str = "tree_decreasing.tsv", model: str = "table2_model3.tsv"
               ) -> Store:
    """A store file of the Fig. 1 ``tree`` and the label sets of a confusion matrix of the paper: an instance per
    counted pair (an empty set on the missing side of a detection error)."""
    lanus = fixtures_dir / "lanus"
    taxonomy = Taxonomy.from_file(lanus / tree)
    truth: list[list[str]] = []
    predicted: list[list[str]] = []
    for t, p, n in read_confusion(lanus / model, Taxonomy.from_file(lanus / "tree.tsv")):
        truth += [[t] if t else []] * int(n)
        predicted += [[p] if p else []] * int(n)
    store = Store(path)
    store.load_taxonomy(taxonomy)
    store.add_truth(truth)
    store.add_predictions("model3", predicted)
    return store


@pytest.fixture(scope="module")
def lanus_db(tmp_path_factory, fixtures_dir):
    path = tmp_path_factory.mktemp("lanus") / "user.duckdb"
    lanus_file(path, fixtures_dir).close()
    assert main(["install-macros", "--db", str(path)]) == 0
    return path


@pytest.mark.parametrize(("table", "offset"), [(8, 0.0), (9, -1.0)])
def test_the_macro_gives_the_papers_table_and_evaluates_values(lanus_db, fixtures_dir, table, offset):
    with duckdb.connect(str(lanus_db)) as con:
        got = {(m, a): v for _, m, a, v in con.execute(
            f'SELECT * FROM hiersql_scoring("offset" := {offset})').fetchall()}
    store = Store(lanus_db)
    want = {(r.metric, r.average): r.value for r in compute(store, list(SCORING), Options(offset=offset))}
    store.close()
    assert got.keys() == want.keys() and len(got) == 16
    assert all(got[k] == pytest.approx(want[k], abs=1e-12) for k in want)
    printed = _printed(fixtures_dir / "lanus" / f"table{table}.tsv")
    cells = {(m, a): v for (m, a, strategy, model), v in printed.items()
             if model == "3" and strategy in ("", "decreasing") and m in SCORING}
    assert len(cells) == 6 and all(round(got[k], 2) == pytest.approx(v) for k, v in cells.items())


def test_tables_without_a_rank_column_under_table_renames(lanus_db, tmp_path):
    """``--table truth=gold --table predictions=runs`` with hiersql's columns but no ``rank`` (the scoring pairs
    read the ranks): ranked as the readers rank a table's (by score, then name), the same values."""
    with duckdb.connect(str(lanus_db), read_only=True) as con:
        want = con.execute("SELECT * FROM hiersql_scoring() ORDER BY ALL").fetchall()
    path = tmp_path / "user.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(f"ATTACH '{lanus_db}' AS src (READ_ONLY)")
        for table in ("edges", "nodes", "closure", "instances", "systems"):
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table}")
        con.execute("CREATE TABLE gold AS SELECT instance_id, label FROM src.truth")
        con.execute("CREATE TABLE runs AS SELECT system, instance_id, label, score FROM src.predictions")
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold", "--table", "predictions=runs"]) == 0
    with duckdb.connect(str(path)) as con:
        assert con.execute("SELECT * FROM hiersql_scoring() ORDER BY ALL").fetchall() == want


def test_the_instance_macro_scores_every_pair(lanus_db):
    with duckdb.connect(str(lanus_db)) as con:
        rows = con.execute("SELECT sum(n), sum(n * pl) / sum(n) FROM hiersql_scoring_instance()").fetchall()[0]
        micro = con.execute("SELECT value FROM hiersql_scoring() WHERE metric = 'pl' AND average = 'micro'"
                            ).fetchall()[0][0]
    assert rows[0] == 1100 and rows[1] == pytest.approx(micro, abs=1e-12)


def test_without_the_weights_of_a_scoring_tree_pl_alone_has_values(tmp_path, fixtures_dir, capsys):
    """On the tree without weights, evaluate gives PL alone (the weighted measures do not apply), and so do the
    macro and the printed family's query (they gave NULL rows for the weighted measures)."""
    assert_pl_alone_at_every_door(tmp_path, fixtures_dir, "tree.tsv", capsys)


def assert_pl_alone_at_every_door(tmp_path: Path, fixtures_dir: Path, tree: str, capsys) -> None:
    """On ``tree`` (weights that make no scoring tree), evaluate gives the family's PL rows alone, and the macro
    and the printed family's query give those rows with their values."""
    path = tmp_path / "user.duckdb"
    store = lanus_file(path, fixtures_dir, tree=tree)
    want = {(r.metric, r.average): r.value for r in compute(store, ["scoring"], Options())}
    store.close()
    assert {m for m, _ in want} == {"pl"}
    assert main(["install-macros", "--db", str(path)]) == 0
    with duckdb.connect(str(path)) as con:
        got = {(m, a): v for _, m, a, v in con.execute("SELECT * FROM hiersql_scoring()").fetchall()}
    assert got == pytest.approx(want, abs=1e-12)
    assert printed_rows(path, "scoring", capsys) == pytest.approx(want, abs=1e-12)


def printed_rows(path: Path, metric: str, capsys) -> dict[tuple[str, str], float]:
    """``(metric, average): value`` of the DuckDB script ``hiersql sql METRIC`` prints, run on the file."""
    capsys.readouterr()
    assert main(["sql", metric]) == 0
    script = capsys.readouterr().out
    with duckdb.connect(str(path)) as con:
        return {(m, a): v for _, m, a, v in con.execute(script).fetchall()}


@pytest.mark.parametrize(("edit", "valid"), [
    (None, True),
    (("F", "0.09", None), False),  # an edge without weight
    (("B", "0.9", "-0.9"), False),  # a negative weight
    (("D", "0.1", "0.0999"), False),  # a root-to-leaf sum of 0.9999
    (("B", "0.9", "0.0"), False),  # W(B) = 0 (and the sums below B are 0.1)
])
def test_sqls_rule_of_a_scoring_tree_is_pythons(tmp_path, fixtures_dir, edit, valid):
    """``scoring_constants.weighted`` (no row of ``scoring_weight_faults``, read by the macros and every engine)
    holds exactly when :func:`~hiersql.measures.scoring.trees.validate` (the rule's first fault,
    ``scoring_weight_fault``) accepts the weights."""
    lines = (fixtures_dir / "lanus" / "tree_decreasing.tsv").read_text(encoding="utf-8").splitlines()
    if edit is not None:
        child, old, new = edit
        lines = [line if line.split("\t")[1] != child else "\t".join(line.split("\t")[:2] + ([new] if new else []))
                 for line in lines]
    tree = tmp_path / "tree.tsv"
    tree.write_text("\n".join(lines) + "\n", encoding="utf-8")
    taxonomy = Taxonomy.from_file(tree)
    try:
        validate(taxonomy)
        accepted = True
    except InputError:
        accepted = False
    store = Store()
    store.load_taxonomy(taxonomy)
    weighted = DuckDBEngine(store).run("scoring", "scoring_constants", scoring.PLAN.params(Options()))[0][2]
    store.close()
    assert accepted is valid and weighted is valid


@pytest.mark.parametrize(("case", "said"), [
    ("dag", "hiersql: edges: scoring trees must be trees (the paper's measures are defined on trees); nodes with"
            " several parents: F"),
    ("root", "hiersql: truth: the root of a scoring tree is never a label (Lanus et al. §III): 'A'"),
    ("offset", "hiersql: offset must be <= 0 (a finite number): 0.5"),
])
def test_what_evaluate_refuses_the_macro_refuses_in_one_error(tmp_path, fixtures_dir, case, said):
    path = tmp_path / "user.duckdb"
    lanus_file(path, fixtures_dir, tree="tree.tsv").close()
    assert main(["install-macros", "--db", str(path)]) == 0
    with duckdb.connect(str(path)) as con:
        if case == "dag":
            con.execute("INSERT INTO edges VALUES ('B', 'F', NULL)")
            con.execute("INSERT INTO closure VALUES ('B', 'F', 1)")
        elif case == "root":
            con.execute("UPDATE truth SET label = 'A' WHERE instance_id = '0'")
        call = 'hiersql_scoring("offset" := 0.5)' if case == "offset" else "hiersql_scoring()"
        with pytest.raises(duckdb.Error, match=re.escape(said)):
            con.execute(f"SELECT * FROM {call}").fetchall()


def _edited_tree(tmp_path: Path, fixtures_dir: Path, edit: str) -> Path:
    """The decreasing-weights tree of Fig. 1 with a second parent of F (``dag``) or the weight 0.0999 of the edge
    into the leaf D, whose root-to-leaf sum becomes 0.9999 (``weights``)."""
    text = (fixtures_dir / "lanus" / "tree_decreasing.tsv").read_text(encoding="utf-8")
    if edit == "dag":
        text += "B\tF\t0.0\n"
    else:
        lines = text.splitlines()
        lines = ["\t".join([*line.split("\t")[:2], "0.0999"]) if line.split("\t")[1:2] == ["D"] else line
                 for line in lines]
        assert lines != text.splitlines()
        text = "\n".join(lines) + "\n"
    tree = tmp_path / f"tree_{edit}.tsv"
    tree.write_text(text, encoding="utf-8")
    return tree


@pytest.mark.parametrize(("case", "metric", "said"), [
    ("dag", "scoring", "hiersql: edges: scoring trees must be trees (the paper's measures are defined on trees);"
                       " nodes with several parents: F"),
    ("root", "pl", "hiersql: truth: the root of a scoring tree is never a label (Lanus et al. §III): 'A'"),
    ("weights", "lpp", "hiersql: edges: the weighted scoring-tree measures need edge weights that make a scoring"
                       " tree: every root-to-leaf weight sum must be 1; the leaf D (0.9999"),
    ("weights", "scoring_hf", "every root-to-leaf weight sum must be 1; the leaf D (0.9999"),
])
def test_the_printed_script_refuses_what_evaluate_refuses(tmp_path, fixtures_dir, capsys, case, metric, said):
    """The printed DuckDB script of the family or of one measure fails with one error naming the fault where
    evaluate refuses the same input, in evaluate's words (the script had no check: it gave numbers on a DAG)."""
    path = tmp_path / "user.duckdb"
    tree = _edited_tree(tmp_path, fixtures_dir, case) if case != "root" else fixtures_dir / "lanus" / "tree.tsv"
    store = lanus_file(path, fixtures_dir, tree=str(tree))
    if case == "root":
        store.con.execute("UPDATE truth SET label = 'A' WHERE instance_id = '0'")
    with pytest.raises(InputError) as refused:
        compute(store, [metric], Options())
    store.close()
    capsys.readouterr()
    assert main(["sql", metric]) == 0
    script = capsys.readouterr().out
    with duckdb.connect(str(path)) as con, pytest.raises(duckdb.Error, match=re.escape(said)) as failed:
        con.execute(script).fetchall()
    words = refused.value.message.removeprefix("does not apply to this input: ")  # the family named, on a DAG
    assert words in str(failed.value)  # one rule's words at both doors


def test_the_family_on_weights_that_make_no_scoring_tree_is_pl_alone_at_every_door(tmp_path, fixtures_dir, capsys):
    """Weights whose sum to the leaf D is 0.9999: the family named gives PL alone through evaluate, the macro and
    the printed query, the same values; the weighted measures named are refused (above)."""
    assert_pl_alone_at_every_door(tmp_path, fixtures_dir, str(_edited_tree(tmp_path, fixtures_dir, "weights")),
                                  capsys)
