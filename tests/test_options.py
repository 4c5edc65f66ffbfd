"""The one options schema (hiersql/options.py): the dataclasses, the flags of evaluate and sql, job-file
options, and one-line errors for every bad value (issue 15's option cases)."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest

import hiersql
from hiersql import sqlfiles
from hiersql.api.evaluator import make_options
from hiersql.cli import build_parser, main
from hiersql.errors import InputError
from hiersql.measures import FAMILIES, REGISTRY, Options, plan_of
from hiersql.options import (
    MEASURE_OPTIONS,
    RUN_OPTIONS,
    OptionError,
    RunOptions,
    options_from_mapping,
    sql_options,
)
from hiersql.plan import Python

NAN = float("nan")


# ------------------------------------------------------------------------------------------------ Python API
def test_defaults_are_the_spec_defaults():
    assert dataclasses.asdict(Options()) == {
        "average": ("micro", "macro"), "include_root": False, "max_distance": None, "beta": 1.0,
        "zero_division": 0.0, "augment": "ancestors", "labels": None, "dmax": 5.0, "lca_graph": "greedy",
        "pairing": "nearest", "shared": "strict", "denominator": "union", "distance_limit": "side",
        "empty_prediction": "error",
        "tn": "published", "k": (1, 5), "severity_distance": "height", "offset": 0.0,
    }
    assert dataclasses.asdict(RunOptions()) == {"engine": "duckdb", "postgres_url": None, "spark_master": "local[*]",
                                                "spark_remote": None, "spark_conf": (), "memory_limit": None,
                                                "threads": None}


def test_values_are_normalised_and_options_stay_immutable():
    opts = Options(average="micro", beta=2, labels=["a", "b"], max_distance=np.int64(2), zero_division=1,
                   include_root=1)
    assert opts.average == ("micro",) and opts.labels == ("a", "b")
    assert type(opts.beta) is float and opts.beta == 2.0 and type(opts.max_distance) is int
    assert opts.zero_division == 1.0 and opts.include_root is True
    assert math.isnan(Options(zero_division=NAN).zero_division)
    assert Options(average=["micro"]) == Options(average="micro") and hash(Options()) == hash(Options())
    assert Options(average=()).average == ()  # the flat one-shot functions ask for no micro/macro row
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.beta = 3.0
    assert pickle.loads(pickle.dumps(opts)) == opts  # options travel to engine workers
    assert make_options(average="macro", dmax=2) == Options(average=("macro",), dmax=2.0)


@pytest.mark.parametrize(("keyword", "value", "message"), [
    ("beta", NAN, "beta must be a finite number >= 0: nan"),
    ("beta", math.inf, "beta must be a finite number >= 0: inf"),
    ("beta", -1.0, "beta must be a finite number >= 0: -1.0"),
    ("beta", "2", "beta must be a finite number >= 0: '2'"),
    ("beta", True, "beta must be a finite number >= 0: True"),
    ("dmax", 0.0, "dmax must be a finite number > 0: 0.0"),
    ("dmax", NAN, "dmax must be a finite number > 0: nan"),
    ("offset", 1, "offset must be <= 0 (a finite number): 1"),
    ("offset", -math.inf, "offset must be <= 0 (a finite number): -inf"),
    ("max_distance", -1, "max_distance must be an integer >= 0: -1"),
    ("max_distance", 1.5, "max_distance must be an integer >= 0: 1.5"),
    ("zero_division", 0.5, "zero_division must be 0, 1 or nan: 0.5"),
    ("zero_division", "warn", "zero_division must be 0, 1 or nan (scikit-learn's 'warn' is offered by the "
                              "one-shot functions, Evaluator and hiersql evaluate): 'warn'"),
    ("average", "binary", "average must be one or more of micro, macro, samples, weighted, label_macro: 'binary'"),
    ("average", ["micro", "foo"], "average must be one or more of micro, macro, samples, weighted, label_macro: 'foo'"),
    ("labels", [], "labels must name at least one label: []"),
    ("labels", ["a", 1], "labels must be label names (strings): 1"),
    ("lca_graph", "fast", "lca_graph must be one of greedy, optimal, extended, hemkit: 'fast'"),
    ("augment", "parents", "augment must be one of ancestors, descendants, cesa_bianchi: 'parents'"),
    ("tn", "all", "tn must be one of published, descendants: 'all'"),
    ("pairing", "best", "pairing must be one of nearest, flow: 'best'"),
    ("shared", "x", "shared must be one of strict, reuse: 'x'"),
    ("denominator", "x", "denominator must be one of union, symmetric_difference: 'x'"),
    ("distance_limit", "x", "distance_limit must be one of side, pair: 'x'"),
    ("include_root", "yes", "include_root must be true or false: 'yes'"),
])
def test_a_bad_value_names_the_keyword_and_the_value(keyword, value, message):
    for build in (Options, make_options, Options().with_):
        with pytest.raises(OptionError) as caught:
            build(**{keyword: value})
        assert str(caught.value) == message
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, InputError)


def test_unknown_keywords_are_type_errors():
    with pytest.raises(TypeError, match="'colour'.*known: average, include_root"):
        make_options(colour="red")
    with pytest.raises(TypeError, match="colour"):
        Options().with_(colour="red")


def test_the_evaluator_and_the_one_shot_functions_check_through_options():
    from hiersql import Evaluator, Taxonomy
    from hiersql.measures.pair_based import mgia
    from hiersql.measures.set_based import hierarchical_precision

    tax = [("r", "a"), ("r", "b")]
    ev = Evaluator(Taxonomy.from_edges(tax)).add_truth([["a"]]).add_predictions("s", [["b"]])
    with pytest.raises(OptionError, match="beta must be a finite number >= 0: nan"):
        ev.rows(["hf"], beta=NAN)
    with pytest.raises(OptionError, match="average of hierarchical_precision must be one of .*: 'binary'"):
        hierarchical_precision([["a"]], [["a"]], tax, average="binary")
    with pytest.raises(OptionError, match="dmax must be a finite number > 0: -2"):
        mgia([["a"]], [["b"]], tax, dmax=-2)


def test_run_options_engine_settings_and_memory_sizes():
    assert RunOptions(engine="spark", spark_conf={"spark.sql.shuffle.partitions": "4"}).spark_conf == (
        ("spark.sql.shuffle.partitions", "4"),)
    assert RunOptions(engine="postgres", postgres_url="postgresql://u@h/db").postgres_url == "postgresql://u@h/db"
    with pytest.raises(OptionError, match="postgres_url is only read by the postgres engine: 'postgresql://h'"):
        RunOptions(postgres_url="postgresql://h")
    with pytest.raises(OptionError, match="spark_conf sets a key twice: 'k'"):
        RunOptions(engine="spark", spark_conf=["k=1", "k=2"])
    con = duckdb.connect()
    for size in ("500MB", "2GiB", "1.5 GB", "3gb", "512 MiB", "64KB"):
        con.execute(f"SET memory_limit = '{RunOptions(memory_limit=size).memory_limit}'")  # DuckDB takes it
    for size in ("-5GB", "0GB", "0.0 MB", "lots", "100", "1e9", "5 GBs", ""):
        with pytest.raises(OptionError, match="memory_limit must be a size > 0 with a unit"):
            RunOptions(memory_limit=size)


# ---------------------------------------------------------------------------------------------- job files
def test_job_file_options_name_the_file_and_the_key():
    assert options_from_mapping({o.name: o.default for o in MEASURE_OPTIONS}, "job.toml") == Options()
    got = options_from_mapping({"average": ["micro"], "include_root": True, "dmax": 3}, "job.toml")
    assert got == Options(average=("micro",), include_root=True, dmax=3.0)
    with pytest.raises(InputError) as caught:
        options_from_mapping({"beta": 2.0, "colour": "red"}, "job.toml")
    assert str(caught.value).startswith("job.toml: unknown option (known: average, include_root, max_distance")
    assert str(caught.value).endswith(": 'colour'")
    with pytest.raises(InputError) as caught:
        options_from_mapping({"beta": "2"}, "job.toml")
    assert str(caught.value) == "job.toml: option beta must be a finite number >= 0: '2'"
    with pytest.raises(InputError) as caught:
        options_from_mapping({"average": ["micro", "binary"]}, "job.toml")
    assert str(caught.value) == ("job.toml: option average must be one or more of micro, macro, samples, weighted,"
                                 " label_macro: 'binary'")


# ---------------------------------------------------------------------------------------------- the flags
def _subparser(name: str):
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices[name]


def _flags(parser) -> dict[str, list]:
    out: dict[str, list] = {}
    for action in parser._actions:
        for flag in action.option_strings:
            out.setdefault(action.dest, []).append((flag, action))
    return out


def test_every_option_has_exactly_one_flag_in_evaluate_made_from_the_declaration():
    flags = _flags(_subparser("evaluate"))
    for option in (*MEASURE_OPTIONS, *RUN_OPTIONS):
        assert [flag for flag, _ in flags[option.name]] == ["--" + option.name.replace("_", "-")]
        action = flags[option.name][0][1]
        assert action.help == option.help_text() and action.default is None  # None: not given
    assert {f.name for f in dataclasses.fields(Options)} == {o.name for o in MEASURE_OPTIONS}
    assert {f.name for f in dataclasses.fields(RunOptions)} == {o.name for o in RUN_OPTIONS}


def test_sql_has_a_flag_for_each_option_that_is_a_parameter_of_the_sql_files():
    in_files = set()
    for file in sqlfiles.available():
        for text in sqlfiles.queries(file).values():
            in_files |= sqlfiles.parameters(text)
    for family in REGISTRY:  # and of the SQL generated from the declared measures ($beta of hF)
        for m in plan_of(family).measures:
            in_files |= sqlfiles.parameters(" ".join(filter(None, (m.numerator, m.denominator, m.undefined))))
    names = {o.name for o in MEASURE_OPTIONS}
    assert {o.name for o in sql_options() if o.sql} == names & in_files == {
        "include_root", "max_distance", "beta", "zero_division", "augment", "dmax", "empty_prediction", "tn",
        "severity_distance", "offset"}
    # and those that shape a family's plan (its derived parameters, its Python steps)
    assert {o.name for o in sql_options() if not o.sql} == {"lca_graph", "pairing", "shared", "denominator",
                                                             "distance_limit", "k"}
    flags = _flags(_subparser("sql"))
    assert names & flags.keys() == {o.name for o in sql_options()}
    for option in sql_options():
        assert flags[option.name][0][1].help == option.help_text()


@pytest.mark.parametrize(("metric", "flags", "shown"), [
    ("gie", ["--shared", "reuse"], "shared='reuse'"),
    ("mgia", ["--denominator", "symmetric_difference"], "denominator='symmetric_difference'"),
    ("lca", ["--lca-graph", "optimal"], "lca_graph='optimal'"),
])
def test_a_printed_script_names_the_plan_options_its_python_steps_read(capsys, metric, flags, shown):
    """An option that only a Python step reads printed the same script as its default (tu s24-sql finding F7):
    the step's comment names the family's plan options, so a kept script says which selection it was."""
    assert main(["sql", metric, *flags]) == 0
    script = capsys.readouterr().out
    assert main(["sql", metric]) == 0
    assert script != capsys.readouterr().out
    steps = [line for line in script.splitlines() if line.startswith("-- Python step")]
    assert steps and all(shown in line for line in steps), steps


def test_an_options_error_from_the_library_names_its_flag(tmp_path, capsys):
    """The library's OptionError names the Python keyword (labels, average); the command line names the flag
    (it said 'labels restricts ... (label_macro, weighted, None), not this one: "average=\'micro\'"': tu
    s24-sql finding F8)."""
    demo = Path(hiersql.__file__).resolve().parents[1] / "fixtures" / "demo"
    args = ["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"), "--pred",
            str(demo / "shallow.tsv"), "--metrics", "hf"]
    assert main([*args, "--labels", "jaguar,wolf"]) == 2
    assert capsys.readouterr().err == (
        "hiersql: error: --labels: restricts only the per-class averages of hierarchical_f1 (label_macro,"
        " weighted, or the per-class values), not the average: 'micro'\n")


def test_declared_families_are_the_modules_that_read_the_option():
    folder = Path(hiersql.__file__).parent / "measures"
    sources = {fam: (folder / fam / "__init__.py").read_text(encoding="utf-8") for fam in FAMILIES}
    for option in MEASURE_OPTIONS:
        if option.name == "average":  # read by the runner for every family
            assert option.families == FAMILIES
            continue
        if option.name == "zero_division":  # read by the runner: the families whose ratios fall back on it
            from hiersql.measures import plan_of

            uses = {fam for fam in FAMILIES
                    if any(m.denominator and m.zero == "$zero_division" for m in plan_of(fam).measures)}
            assert set(option.families) == uses
            continue
        readers = {fam for fam, text in sources.items() if re.search(rf"options\.{option.name}\b", text)}
        assert set(option.families) == readers, option.name


@pytest.mark.parametrize("command", ["evaluate", "sql"])
def test_help_lists_every_flag_with_its_default_and_choices(capsys, command):
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the help of a flag follows its last mention
    expected = {
        "--beta X": "default: 1.0", "--augment {ancestors,descendants,cesa_bianchi}":
        "one of: ancestors, descendants, cesa_bianchi; default: ancestors", "--max-distance K": "default: no limit",
        "--zero-division X":
        "0, 1 or nan; hiersql evaluate also takes warn (0 and a warning per ill-defined value) (default: 0.0",
        "--include-root": "(default: off", "--offset O":
        "default: 0.0", "--dmax X": "default: 5.0", "--tn {published,descendants}": "default: published",
    }
    if command == "evaluate":
        expected |= {
            "--average LIST": "one of: micro, macro, samples, weighted, label_macro; default: micro,macro",
            "--labels LIST": "default: the classes seen",
            "--lca-graph {greedy,optimal,extended,hemkit}":
                "one of: greedy, optimal, extended, hemkit; default: greedy",
            "--engine {duckdb,postgres,spark}": "default: duckdb", "--spark-master URL": "default: local[*]",
            "--spark-conf KEY=VALUE": "repeatable", "--memory-limit SIZE": "default: DuckDB's",
            "--postgres-url URL": "default: none", "--distance-limit {side,pair}": "default: side",
        }
    for flag, help_part in expected.items():
        assert flag in text, flag
        assert help_part in text.rsplit(flag, 1)[1][:400], flag


def test_every_argument_of_every_command_says_what_it_is_in_its_help():
    """Each argument of each command and subcommand has a help text, so ``--help`` lists none bare (``jobs
    schedule --workers``, ``jobs results --format`` and ``report --title`` were)."""
    import argparse

    def bare(parser: argparse.ArgumentParser, command: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from bare(sub, f"{command} {name}")
            elif not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
                yield command, action.option_strings[0] if action.option_strings else action.dest

    assert list(bare(build_parser(), "hiersql")) == []


def test_the_rank_column_help_names_every_family_whose_sql_reads_ranks(capsys):
    """``--rank-col``'s help names the families whose SQL reads ``rank`` (:func:`hiersql.sqlfiles.files_reading`,
    the words of the ranked-by-name warning); it named PL and the HCM, not the severity family."""
    assert main(["evaluate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    help_text = text.split("--rank-col COLUMN ", 1)[1].split(" --", 1)[0]
    assert all(family in help_text for family in sqlfiles.files_reading("rank"))


# ------------------------------------------------------------------------------- one-line errors (issue 15)
TAX = "a\tb\na\tc\nb\td\n"


def _evaluate(tmp_path: Path, capsys, *extra: str, truth: str = "1\tb\n2\td\n", pred: str = "1\tb\n"):
    for name, text in (("tax.tsv", TAX), ("truth.tsv", truth), ("pred.tsv", pred)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    code = main(["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                 "--pred", f"s={tmp_path / 'pred.tsv'}", "--format", "csv", *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("args", "flag", "shown"), [
    (["--beta", "nan"], "--beta", "'nan'"),
    (["--beta", "inf"], "--beta", "'inf'"),
    (["--beta", "-1"], "--beta", "'-1'"),
    (["--average", ","], "--average", "gives no average: ','"),
    (["--metrics", ","], "--metrics", "no metric given: ','"),
    (["--average", "micro,foo"], "--average", "'foo'"),
    (["--memory-limit=-5GB"], "--memory-limit", "'-5GB'"),
    (["--memory-limit", "lots"], "--memory-limit", "'lots'"),
    (["--max-distance", "-1"], "--max-distance", "'-1'"),
    (["--max-distance", "two"], "--max-distance", "'two'"),
    (["--dmax", "-1"], "--dmax", "'-1'"),
    (["--dmax", "0"], "--dmax", "'0'"),
    (["--dmax", "nan"], "--dmax", "'nan'"),
    (["--zero-division", "0.5"], "--zero-division", "'0.5'"),
    (["--zero-division", "2"], "--zero-division", "'2'"),
    (["--zero-division", "always"], "--zero-division", "'always'"),
    (["--offset", "1"], "--offset", "must be <= 0 (a finite number): '1'"),
    (["--labels", ","], "--labels", "gives no label: ','"),
    (["--labels", '"b, c'], "--labels", "is a comma-separated list of labels, a label with a comma in double quotes"),
    (["--lca-graph", "fastest"], "--lca-graph", "must be one of greedy, optimal, extended, hemkit: 'fastest'"),
    (["--augment", "parents"], "--augment", "'parents'"),
    (["--engine", "oracle"], "--engine", "must be one of duckdb, postgres, spark: 'oracle'"),
    (["--postgres-url", "postgresql://h/db"], "--postgres-url", "only read by the postgres engine"),
    (["--engine", "spark", "--spark-conf", "no-equals"], "--spark-conf", "KEY=VALUE settings: 'no-equals'"),
    # Spark's launcher refuses it (the gateway exits), SparkContext cannot parse it: said before Spark starts
    (["--engine", "spark", "--spark-master", "lcoal[2]"], "--spark-master", "or yarn: 'lcoal[2]'"),
    (["--engine", "spark", "--spark-master", "local[two]"], "--spark-master", "local[N,F], "),
    (["--engine", "spark", "--spark-master", "spark:/host:7077"], "--spark-master", "'spark:/host:7077'"),
    (["--engine", "spark", "--spark-remote", "http://h:15002"], "--spark-remote", "must be sc://HOST[:PORT]"),
    (["--spark-remote", "sc://h:15002"], "--spark-remote", "only read by the spark engine"),
    # a Spark Connect server runs on its own master: both flags named, the URL's token not shown
    (["--engine", "spark", "--spark-remote", "sc://h/;token=s3cret", "--spark-master", "local[2]"], "--spark-remote",
     "cannot be given with --spark-master (a Spark Connect server runs on the master it was started with):"
     " 'sc://h/;token=***'"),
])
def test_bad_option_exits_2_with_one_line_naming_flag_and_value(tmp_path, capsys, args, flag, shown):
    code, out, err = _evaluate(tmp_path, capsys, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"hiersql: error: {flag}: ") and shown in err


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4, 3]", "local[*,2]",
                                    "local-cluster[2, 1, 1024]", "spark://h1:7077,h2:7077", "k8s://https://k:443",
                                    "yarn"])
def test_the_masters_spark_starts_on_are_taken(master):
    """The forms of SparkContext (local ones) and of Spark's launcher (yarn; spark, k8s URLs)."""
    assert RunOptions(engine="spark", spark_master=master).spark_master == master


@pytest.mark.parametrize("url", ["sc://localhost", "sc://127.0.0.1:15002", "sc://[::1]:15002",
                                 "sc://spark.example.com:443/;use_ssl=true;token=abc", "sc://h:1/"])
def test_the_spark_connect_urls_are_taken(url):
    assert RunOptions(engine="spark", spark_remote=url).spark_remote == url


def test_zero_division_values_reach_the_measures(tmp_path, capsys):
    # instance 1: predicted {b} = true {b}: hP = 1; instance 2: nothing predicted: |Ŷaug| = 0, hP = 0/0
    def macro_hp(value: str) -> float:
        code, out, err = _evaluate(tmp_path, capsys, "--metrics", "hp", "--average", "macro",
                                   "--zero-division", value)
        assert code == 0, err
        return float(out.splitlines()[1].split(",")[3])

    # nan: the undefined instance is left out of the mean (scikit-learn's zero_division=np.nan)
    assert macro_hp("0") == 0.5 and macro_hp("1") == 1.0 and macro_hp("nan") == 1.0


def test_sql_rejects_parameters_the_query_does_not_take(capsys):
    assert main(["sql", "hp", "--param", "unknown=1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("hiersql: error: --param: unknown parameter")
    assert "'unknown'" in err
    assert "takes augment, beta, include_root, max_distance, zero_division" in err  # set_based.sql
    assert main(["sql", "hp", "--dmax", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hiersql: error: --dmax: sets no parameter of the query") and "'3'" in err
    assert main(["sql", "hp", "--param", "beta=nan"]) == 2
    assert capsys.readouterr().err == "hiersql: error: --param: beta must be a finite number >= 0: 'beta=nan'\n"
    assert main(["sql", "hp", "--beta", "-2"]) == 2
    assert capsys.readouterr().err == "hiersql: error: --beta: must be a finite number >= 0: '-2'\n"


def test_sql_param_named_after_an_option_equals_its_flag(capsys):
    assert main(["sql", "hf", "--param", "beta=2", "--compact"]) == 0  # hF's declared formula reads $beta
    by_param = capsys.readouterr().out
    assert main(["sql", "hf", "--beta", "2", "--compact"]) == 0
    assert capsys.readouterr().out == by_param
    assert main(["sql", "hf", "--compact"]) == 0
    assert capsys.readouterr().out != by_param


@pytest.mark.parametrize(("argv", "said"), [
    (["flat", "--param", "fixed_universe=maybe"], "fixed_universe must be true or false: 'fixed_universe=maybe'"),
    (["closure", "--param", "max_depth=abc"], "max_depth must be an integer >= 0 or null: 'max_depth=abc'"),
    (["closure", "--param", "max_depth=2.5"], "max_depth must be an integer >= 0 or null: 'max_depth=2.5'"),
    (["hf", "--param", "beta=2", "--beta", "3"], "sets beta, which --beta sets too: give one: 'beta=2'"),
])
def test_sql_checks_the_parameters_that_are_no_option_and_one_given_twice(capsys, argv, said):
    """``NOT 'maybe'`` and ``distance < 'abc'`` were printed (exit 0) to fail in the database; ``--param beta=2
    --beta 3`` used 2 without a word (tu s24-sql findings F2, F3)."""
    assert main(["sql", *argv]) == 2
    assert capsys.readouterr() == ("", f"hiersql: error: --param: {said}\n")
    assert main(["sql", "closure", "--param", "max_depth=null"]) == main(["sql", "flat", "--param",
                                                                         "fixed_universe=true"]) == 0


def test_a_label_with_a_comma_is_given_in_double_quotes(tmp_path, capsys):
    """GermEval B has 30 classes such as 'Echtes Leben, Realistischer Roman': ``--labels`` reads its text as a
    CSV row, so such a class is one label in double quotes (it was cut at the comma: 'not in the taxonomy')."""
    from hiersql import Taxonomy, hierarchical_f1

    tax = Taxonomy.from_edges([("r", "a"), ("r", "b, c"), ("a", "d")])
    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb, c\na\td\n", encoding="utf-8")
    (tmp_path / "truth.tsv").write_text("1\tb, c\n2\td\n", encoding="utf-8")
    (tmp_path / "pred.tsv").write_text("1\tb, c\n2\ta\n", encoding="utf-8")
    assert main(["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                 "--pred", f"s={tmp_path / 'pred.tsv'}", "--format", "csv", "--metrics", "hf",
                 "--average", "label_macro", "--labels", 'd, "b, c"']) == 0
    value = float(capsys.readouterr().out.splitlines()[1].rsplit(",", 1)[1])
    # class "b, c": F 1; class d: 0 (not predicted)
    assert value == hierarchical_f1([["b, c"], ["d"]], [["b, c"], ["a"]], tax, "label_macro",
                                    labels=["d", "b, c"]) == 0.5



def test_each_python_step_says_in_one_printed_line_why_sql_does_not_compute_it(capsys):
    """``hiersql sql`` prints one comment line per Python step: its declared reason and the command that runs
    the script with it (issue 37); docs/sql.md's table holds the same reasons."""
    docs = (Path(hiersql.__file__).resolve().parents[1] / "docs" / "sql.md").read_text(encoding="utf-8")
    for family, flags in (("confusion", []), ("pair_based", []), ("lca", []), ("lca", ["--lca-graph", "hemkit"])):
        options = Options(lca_graph=flags[1]) if flags else Options()
        steps = [s for s in plan_of(family).steps if isinstance(s, Python) and s.when(options)]
        assert main(["sql", family, *flags]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("-- Python step")]
        assert len(lines) == len(steps) > 0
        for step, line in zip(steps, lines, strict=True):
            assert line.startswith(f"-- Python step {step.name} (") and f"): {step.why}; it reads " in line
            assert line.endswith("; `hiersql evaluate --engine postgres` (or spark) runs the script with this step")
            assert f"| `{step.name}` | {step.why} |" in docs
