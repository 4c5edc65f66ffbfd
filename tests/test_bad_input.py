"""Malformed inputs: each gives exit status 2 and one line naming the file, line and value at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from hiersql.cli import main

TAX = "a\tb\na\tc\nb\td\n"
TRUTH = "1\tb\n2\td\n"


def write(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def run_cli(tmp: Path, capsys, *, tax: str = TAX, truth: str = TRUTH, pred: str = TRUTH,
            extra: tuple[str, ...] = (), fmt: str = "long") -> tuple[int, str]:
    args = ["evaluate", "--taxonomy", write(tmp, "tax.tsv", tax), "--truth", write(tmp, "truth.tsv", truth),
            "--pred", "sys=" + write(tmp, "pred.tsv", pred), "--labels-format", fmt, *extra]
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


CASES = [
    # id, kwargs, expected fragments of the message
    ("cycle", {"tax": "a\tb\nb\tc\nc\ta\n"}, ["tax.tsv", "cycle", "a -> b -> c -> a"]),
    ("self-loop", {"tax": "a\tb\nb\tb\n"}, ["tax.tsv:2", "self-loop", "'b'"]),
    ("empty taxonomy", {"tax": ""}, ["tax.tsv", "empty"]),
    ("blank-only taxonomy", {"tax": "\n\n  \n"}, ["tax.tsv", "empty"]),
    ("taxonomy field count", {"tax": "a\tb\na\tc\td\te\n"}, ["tax.tsv:2", "expected 2 fields", "found 4"]),
    ("taxonomy bad weight", {"tax": "a\tb\t0.5\na\tc\theavy\n"}, ["tax.tsv:2", "weight is not a number", "heavy"]),
    ("taxonomy not utf-8", {"tax": b"a\tb\n\xff\xfe\tc\n"}, ["tax.tsv", "UTF-8"]),
    ("empty truth", {"truth": ""}, ["truth.tsv", "empty"]),
    ("truth field count", {"truth": "1\tb\n2\n"}, ["truth.tsv:2", "expected 2 fields", "found 1"]),
    ("unknown truth label", {"truth": "1\tb\n2\tzebra\n"}, ["truth.tsv:2", "not in the taxonomy", "zebra"]),
    ("unknown predicted label", {"pred": "1\tb\n\n2\tzebra\n"}, ["pred.tsv:3", "not in the taxonomy", "zebra"]),
    ("prediction without truth", {"pred": "1\tb\n3\td\n"}, ["pred.tsv:2", "no truth", "'3'"]),
    ("score not a number", {"pred": "1\tb\t0.9\n2\td\tNaN\n"}, ["pred.tsv:2", "score is not a number", "NaN"]),
    ("empty label field", {"truth": "1\tb\n2\t\n"}, ["truth.tsv:2", "empty label", "instance_id='2'"]),
    ("germeval line before header", {"truth": "1\tb\nsubtask_a\n2\td\n", "fmt": "germeval-a"},
     ["truth.tsv:1", "before any 'subtask_a'"]),
    ("germeval duplicate instance", {"truth": "subtask_a\n1\tb\n2\td\n1\tc\n", "fmt": "germeval-a"},
     ["truth.tsv:4", "listed twice", "'1'"]),
    ("unknown metric", {"extra": ("--metrics", "hp,bogus")}, ["--metrics", "unknown metric", "bogus"]),
    ("bad average", {"extra": ("--average", "binary")}, ["--average", "binary"]),
]


@pytest.mark.parametrize("kwargs,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_message(tmp_path, capsys, kwargs, fragments):
    code, err = run_cli(tmp_path, capsys, **kwargs)
    assert code == 2, err
    assert err.count("\n") == 0, f"expected one line, got: {err}"
    assert err.startswith("hiersql: error: ")
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"


def test_missing_files(tmp_path, capsys):
    code = main(["evaluate", "--taxonomy", str(tmp_path / "nope.tsv"), "--truth", "x", "--pred", "s=y"])
    err = capsys.readouterr().err
    assert code == 2 and "nope.tsv" in err and "not found" in err


def test_pred_glob_matching_nothing(tmp_path, capsys):
    args = ["evaluate", "--taxonomy", write(tmp_path, "t.tsv", TAX), "--truth", write(tmp_path, "y.tsv", TRUTH),
            "--pred", str(tmp_path / "none_*.tsv")]
    assert main(args) == 2
    assert "matches no file" in capsys.readouterr().err


def test_same_system_twice(tmp_path, capsys):
    p = write(tmp_path, "p.tsv", TRUTH)
    args = ["evaluate", "--taxonomy", write(tmp_path, "t.tsv", TAX), "--truth", write(tmp_path, "y.tsv", TRUTH),
            "--pred", f"s={p}", "--pred", f"s={p}"]
    assert main(args) == 2
    assert "same system name" in capsys.readouterr().err


def test_wide_matrix_bad_cell(tmp_path, capsys):
    wide = "instance_id,b,c,d\n1,1,0,0\n2,0,2,1\n"
    path = write(tmp_path, "w.csv", wide)
    args = ["evaluate", "--taxonomy", write(tmp_path, "t.tsv", TAX), "--truth", path, "--pred", f"s={path}",
            "--labels-format", "wide"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "w.csv:3" in err and "'c'" in err and "not 0 or 1" in err


def test_csv_taxonomy_without_header_columns(tmp_path, capsys):
    args = ["evaluate", "--taxonomy", write(tmp_path, "t.csv", "from,to\na,b\n"),
            "--truth", write(tmp_path, "y.tsv", "1\tb\n"), "--pred", "s=" + write(tmp_path, "p.tsv", "1\tb\n")]
    assert main(args) == 2
    assert "t.csv:1" in capsys.readouterr().err


def test_dataframe_nan_label_names_the_row():
    import pandas as pd

    from hiersql import Evaluator, InputError, Taxonomy

    ev = Evaluator(Taxonomy.from_edges([("a", "b"), ("a", "c")]))
    df = pd.DataFrame({"instance_id": ["1", "2", "3"], "label": ["b", None, "c"]})
    with pytest.raises(InputError, match=r"<DataFrame>:2: missing instance_id or label"):
        ev.add_truth(df)


def test_unknown_ignore_drops_and_counts(tmp_path):
    from hiersql import DataWarning, Evaluator

    ev = Evaluator(write(tmp_path, "t.tsv", TAX))
    with pytest.warns(DataWarning, match=r"ignored 2 label\(s\) not in the taxonomy \(first: 'zebra'\)"):
        ev.add_truth(write(tmp_path, "y.tsv", "1\tb\n1\tzebra\n2\td\n2\tyak\n"), unknown="ignore")
    assert sorted(ev.con.execute("SELECT label FROM truth").fetchall()) == [("b",), ("d",)]


def test_unknown_ignore_counts_the_unmarked_columns_of_a_wide_header(tmp_path):
    """A wide header's label not in the taxonomy follows ``unknown`` though no row marks it (was accepted)."""
    from hiersql import DataWarning, Evaluator, InputError

    wide = write(tmp_path, "w.csv", "instance_id,b,zebra,d,yak\n1,1,0,0,0\n2,0,0,1,0\n")
    with pytest.raises(InputError, match=r"w\.csv:1: wide header: label not in the taxonomy: 'zebra'"):
        Evaluator(write(tmp_path, "t.tsv", TAX)).add_truth(wide, format="wide")
    ev = Evaluator(write(tmp_path, "t.tsv", TAX))
    with pytest.warns(DataWarning, match=r"w\.csv: ignored 2 column\(s\) of the wide header not in the taxonomy"
                                         r" \(first: 'zebra'\)"):
        ev.add_truth(wide, format="wide", unknown="ignore")
    assert sorted(ev.con.execute("SELECT label FROM truth").fetchall()) == [("b",), ("d",)]


def test_duplicates_collapse_with_warning(tmp_path):
    from hiersql import DataWarning, Evaluator

    ev = Evaluator(write(tmp_path, "t.tsv", TAX))
    with pytest.warns(DataWarning, match=r"1 duplicate \(instance_id, label\) row\(s\) collapsed"):
        ev.add_truth(write(tmp_path, "y.tsv", "1\tb\n1\tb\n2\td\n"))
    assert ev.con.execute("SELECT count(*) FROM truth").fetchall() == [(2,)]


def test_nul_byte_in_a_node_name_names_the_taxonomy_and_its_row():
    """A NUL byte in a node name is the taxonomy's fault, named there (it was accepted, and a truth label that
    then matched no node was blamed: issue 42)."""
    import pandas as pd

    from hiersql import InputError, Taxonomy

    with pytest.raises(InputError, match=r"^<edges>:2: node name holds a NUL byte: 'c\\x00'$"):
        Taxonomy.from_edges([("a", "b"), ("a", "c\0")])
    with pytest.raises(InputError, match=r"^<DataFrame>:1: node name holds a NUL byte"):
        Taxonomy.from_dataframe(pd.DataFrame({"parent": ["a\0"], "child": ["b"]}))
