"""The examples in README.md run and say what they claim."""

from __future__ import annotations

import re

import pytest

from hiersql import Evaluator
from tests.conftest import ROOT


def readme_blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_the_two_commands():
    first = readme_blocks("sh")[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]


def test_readme_python_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(readme_blocks("python")[0], namespace)  # noqa: S102 - our own README
    import hiersql

    assert hiersql.hierarchical_f1([["jaguar"]], [["house cat"]], namespace["tax"]) == pytest.approx(2 / 3)
    assert namespace["ev"].store.systems() == ["cautious", "flat_errors", "shallow"]


def test_readme_plain_sql_equals_micro_hp(fixtures_dir):
    folder = fixtures_dir / "demo"
    ev = Evaluator(folder / "taxonomy.tsv").add_truth(folder / "truth.tsv")
    for system in ("cautious", "flat_errors", "shallow"):
        ev.add_predictions(system, folder / f"{system}.tsv")
    sql = readme_blocks("sql")[0]
    got = dict(ev.con.execute(sql).fetchall())
    want = {r.system: r.value for r in ev.rows(["hp"], average="micro")}
    assert got == pytest.approx(want)


def test_readme_macro_sql_runs(fixtures_dir, tmp_path):
    from hiersql.cli import main

    db = tmp_path / "mine.duckdb"
    folder = fixtures_dir / "demo"
    ev = Evaluator(folder / "taxonomy.tsv", db=db).add_truth(folder / "truth.tsv")
    ev.add_predictions("shallow", folder / "shallow.tsv")
    want = {(r.average): r.value for r in ev.rows(["hf"], include_root=True)}
    ev.close()
    assert main(["install-macros", "--db", str(db)]) == 0
    import duckdb

    with duckdb.connect(str(db)) as con:
        rows = con.execute(readme_blocks("sql")[1]).fetchall()
    assert {r[2]: r[3] for r in rows} == pytest.approx(want)
