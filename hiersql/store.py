"""The DuckDB store: schema, taxonomy tables, truth and prediction labels.

A :class:`Store` owns one DuckDB connection (in memory by default, a file with ``db=``). It creates the schema
of ``sql/schema.sql``, loads a :class:`~hiersql.taxonomy.Taxonomy` with its closure, and reads label files into
``truth(instance_id, label, rank)`` and ``predictions(system, instance_id, label, rank, score)``.

Label formats (SPEC §1, §10): ``long`` (``instance_id<TAB>label[<TAB>score]`` per row, or CSV with a header
``instance_id,label[,score]``), ``lines`` (HEMKit: one line per instance, whitespace-separated labels, the line
number is the instance id), ``germeval-a`` and ``germeval-b`` (the ``subtask_a``/``subtask_b`` sections of a
GermEval 2019 file), ``wide`` (a CSV/TSV 0/1 indicator matrix with a header: ``instance_id`` then one column per
label), a pandas DataFrame, a DuckDB relation or a Parquet file (long layout).

Rules: labels are sets (duplicates collapse, with a :class:`~hiersql.errors.DataWarning` giving the count); a
label not in the taxonomy is an :class:`~hiersql.errors.InputError` naming it, its file and line
(``unknown="ignore"`` drops such labels and warns with the count); a predicted instance absent from the truth is
an error (``no_truth="ignore"`` drops it with a count); an instance of the truth with no prediction has an empty
predicted set.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import sqlfiles
from .errors import DataWarning, InputError
from .taxonomy import Taxonomy

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")
# SQL files whose intermediate queries nobody reads after Store.run: run as one composed query, which lets
# DuckDB pipeline them instead of writing each to a temp table (set-based measures on a 325,000-node DAG with
# 450,000 instances: 52 instead of 77-86 CPU-s).
COMPOSED = frozenset({"set_based"})
LabelSource = Any  # path, DataFrame, DuckDB relation, or a sequence of label sets


class Store:
    """A DuckDB database holding one taxonomy, one truth and any number of systems' predictions.

    Parameters
    ----------
    db:
        Path of a DuckDB file, or ``None`` for an in-memory database.
    con:
        An existing DuckDB connection to use instead (``db`` is then ignored).
    memory_limit:
        DuckDB's memory limit (``"3GB"``); larger intermediate results spill to disk.
    """

    def __init__(
        self, db: str | Path | None = None, con: duckdb.DuckDBPyConnection | None = None,
        memory_limit: str | None = None,
    ) -> None:
        import duckdb

        self.db = str(db) if db is not None else None
        self.con = con if con is not None else duckdb.connect(self.db or ":memory:")
        if memory_limit:  # DuckDB spills to its temp directory beyond it
            try:
                self.con.execute(f"SET memory_limit = '{memory_limit.replace(chr(39), '')}'")
            except duckdb.Error as exc:
                raise InputError(f"invalid memory limit ({str(exc).splitlines()[0]})", "--memory-limit",
                                 value=memory_limit) from None
        self.con.execute(sqlfiles.queries("schema")["schema"])
        self.taxonomy: Taxonomy | None = None

    # ------------------------------------------------------------------ taxonomy
    def load_taxonomy(self, taxonomy: Taxonomy, max_depth: int | None = None) -> None:
        """Replace the taxonomy tables (edges, nodes, closure) with ``taxonomy``; the closure is computed by
        ``sql/closure.sql`` inside DuckDB, only up to ``max_depth`` edges when given (a partial closure, for
        measures that never look further, such as HEMKit mode)."""
        edges = taxonomy.all_edges()
        depths = taxonomy.depths()
        nodes = taxonomy.all_nodes()
        weights = ["" if e.weight is None else repr(e.weight) for e in edges]
        with self.transaction():
            for table in ("closure", "nodes", "edges"):
                self.con.execute(f"DELETE FROM {table}")
            self.con.execute(
                "INSERT INTO edges SELECT unnest(string_split($p, chr(31))), unnest(string_split($c, chr(31))),"
                " CAST(nullif(unnest(string_split($w, chr(31))), '') AS DOUBLE)",
                {"p": _joined([e.parent for e in edges], taxonomy.source),
                 "c": _joined([e.child for e in edges], taxonomy.source), "w": _joined(weights, taxonomy.source)},
            )
            self.con.execute(
                "INSERT INTO nodes SELECT n.label, n.depth, n.label = $root, e.parent IS NULL,"
                " $virtual AND n.label = $root, n.position"
                " FROM (SELECT unnest(string_split($n, chr(31))) AS label,"
                "  CAST(unnest(string_split($d, chr(31))) AS INTEGER) AS depth,"
                "  generate_subscripts(string_split($n, chr(31)), 1) - 1 AS position) AS n"
                " LEFT JOIN (SELECT DISTINCT parent FROM edges) AS e ON e.parent = n.label ORDER BY n.position",
                {"n": _joined(nodes, taxonomy.source), "d": _joined([str(depths[n]) for n in nodes], taxonomy.source),
                 "root": taxonomy.root, "virtual": taxonomy.virtual_root},
            )
            self.con.execute(f"INSERT INTO closure {sqlfiles.queries('closure')['closure']}",
                             {"max_depth": max_depth})
        self.taxonomy = taxonomy

    def _require_taxonomy(self) -> Taxonomy:
        if self.taxonomy is None:
            raise RuntimeError("load a taxonomy first (Store.load_taxonomy)")
        return self.taxonomy

    # ------------------------------------------------------------------ labels
    def add_truth(
        self, source: LabelSource, format: str = "long", *, unknown: str = "error", name: str | None = None
    ) -> None:
        """Replace the truth with the labels read from ``source`` (see the module docstring for formats)."""
        self._require_taxonomy()
        where = self._stage(source, format, name)
        with self.transaction():
            self._check_staged(where, unknown)
            self.con.execute("DELETE FROM truth")
            self.con.execute("DELETE FROM instances")
            self.con.execute("INSERT INTO instances SELECT DISTINCT instance_id FROM _incoming_instances")
            self.con.execute(
                "INSERT INTO truth SELECT instance_id, label,"
                " row_number() OVER (PARTITION BY instance_id ORDER BY line, pos) FROM _incoming"
            )

    def add_predictions(
        self,
        system: str,
        source: LabelSource,
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
        name: str | None = None,
    ) -> None:
        """Replace the predictions of ``system`` with the labels read from ``source``."""
        self._require_taxonomy()
        if not self._one("SELECT count(*) FROM instances")[0]:
            raise RuntimeError("add the truth before predictions (Store.add_truth)")
        where = self._stage(source, format, name)
        with self.transaction():
            self._check_staged(where, unknown)
            self._check_no_truth(where, no_truth)
            self.con.execute("DELETE FROM predictions WHERE system = $s", {"s": system})
            self.con.execute("DELETE FROM systems WHERE system = $s", {"s": system})
            self.con.execute("INSERT INTO systems VALUES ($s, $w)", {"s": system, "w": where})
            self.con.execute(
                "INSERT INTO predictions SELECT $s, instance_id, label,"
                " row_number() OVER (PARTITION BY instance_id ORDER BY line, pos), score FROM _incoming",
                {"s": system},
            )

    def systems(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT system FROM systems ORDER BY system").fetchall()]

    # ------------------------------------------------------------------ staging
    def _stage(self, source: LabelSource, format: str, name: str | None) -> str:
        """Read ``source`` into the temp tables ``_incoming(instance_id, label, line, score)`` and
        ``_incoming_instances(instance_id, line)``; returns the name used in messages."""
        if isinstance(source, str | Path):
            return self._stage_file(Path(source), format)
        if hasattr(source, "columns") and hasattr(source, "dtypes") and not hasattr(source, "fetchall"):
            return self._stage_dataframe(source, name or "<DataFrame>")
        if hasattr(source, "fetchall"):  # a DuckDB relation
            return self._stage_relation(source, name or "<relation>")
        return self._stage_sets(source, name or "<label sets>")

    def _stage_file(self, path: Path, format: str) -> str:
        where = str(path)
        if format not in LABEL_FORMATS:
            raise InputError(f"unknown label format (one of {', '.join(LABEL_FORMATS)})", path, value=format)
        if not path.is_file():
            raise InputError("label file not found", path)
        if path.suffix.lower() == ".parquet":
            return self._stage_relation(self.con.read_parquet(str(path)), where)
        if path.stat().st_size == 0:
            raise InputError("label file is empty", path)
        if format == "wide":
            return self._stage_wide(path)
        if format == "long" and path.suffix.lower() == ".csv":
            rel = self.con.read_csv(str(path), header=True, all_varchar=True)
            return self._stage_relation(rel, where, first_line=2)
        self._raw_lines(path)
        q = sqlfiles.queries("readers")
        if format == "long":
            self._stage_long(path, q)
        elif format == "lines":
            self._temp("_incoming",
                       f"SELECT instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['lines_rows']})")
            self._temp("_incoming_instances", q["lines_instances"])
        else:
            self._stage_germeval(path, format[-1], q)
        return where

    def _raw_lines(self, path: Path) -> None:
        """Temp table ``raw_lines(line, raw)``: every physical line of ``path``, blank lines as NULL."""
        try:
            self._temp(
                "raw_lines",
                "SELECT row_number() OVER () AS line, raw FROM read_csv($path, columns={'raw': 'VARCHAR'},"
                " delim=chr(31), quote='', escape='', header=false, auto_detect=false)",
                {"path": str(path)},
            )
        except Exception as exc:  # duckdb.Error: invalid UTF-8, unreadable file, ...
            raise InputError(f"cannot read file ({str(exc).splitlines()[0]})", path) from None
        if not self._one("SELECT count(*) FROM raw_lines WHERE trim(raw) <> ''")[0]:
            raise InputError("label file is empty", path)

    def _stage_long(self, path: Path, q: dict[str, str]) -> None:
        self._temp(
            "_incoming",
            f"SELECT *, TRY_CAST(score_text AS DOUBLE) AS score FROM ({q['long_rows']})",
        )
        bad = self._one(
            "SELECT line, raw, n_fields FROM _incoming WHERE n_fields NOT IN (2, 3) ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError(
                f"expected 2 fields (instance_id, label) or 3 (instance_id, label, score), found {bad[2]}",
                path, bad[0], bad[1],
            )
        self._check_score_text(path)
        self._temp("_incoming_instances", "SELECT instance_id, min(line) AS line FROM _incoming GROUP BY ALL")

    def _check_score_text(self, where: str | Path) -> None:
        bad = self._one(
            "SELECT line, score_text FROM _incoming WHERE score_text IS NOT NULL AND score_text <> ''"
            " AND (score IS NULL OR isnan(score)) ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError("score is not a number", where, bad[0], bad[1])

    def _stage_germeval(self, path: Path, subtask: str, q: dict[str, str]) -> None:
        self._temp("germeval_lines", q["germeval_lines"])
        bad = self._one(
            "SELECT line, raw FROM germeval_lines WHERE section IS NULL ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError("line before any 'subtask_a'/'subtask_b' header", path, bad[0], bad[1])
        section = f"subtask_{subtask}"
        dup = self._one(
            "SELECT instance_id, min(line), max(line) FROM germeval_lines WHERE section = $s"
            " GROUP BY instance_id HAVING count(*) > 1 ORDER BY 2 LIMIT 1", {"s": section},
        )
        if dup:
            raise InputError(f"instance listed twice in {section} (first on line {dup[1]})", path, dup[2], dup[0])
        self._temp(
            "_incoming",
            f"SELECT instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['germeval_rows']})",
            {"section": section},
        )
        self._temp(
            "_incoming_instances",
            "SELECT instance_id, line FROM germeval_lines WHERE section = $s", {"s": section},
        )

    def _stage_wide(self, path: Path) -> str:
        sep = "," if path.suffix.lower() == ".csv" else "\t"
        rel = self.con.read_csv(str(path), header=True, sep=sep, all_varchar=True)
        cols = rel.columns
        if len(cols) < 2:
            raise InputError("wide label file needs an instance_id column and one column per label", path)
        self._register("_wide_src", rel)
        label_cols = cols[1:]
        self._temp("_wide", "SELECT row_number() OVER () + 1 AS line, * FROM _wide_src")
        self.con.unregister("_wide_src")
        checks = " UNION ALL ".join(
            f"SELECT line, {_lit(c)} AS col, \"{c}\" AS v FROM _wide WHERE \"{c}\" IS NULL"
            f" OR trim(\"{c}\") NOT IN ('0', '1', '0.0', '1.0')" for c in label_cols
        )
        bad = self._one(f"SELECT * FROM ({checks}) ORDER BY line LIMIT 1")
        if bad:
            raise InputError(f"wide matrix cell of column {bad[1]!r} is not 0 or 1", path, bad[0], bad[2])
        ones = " UNION ALL ".join(
            f"SELECT \"{cols[0]}\" AS instance_id, {_lit(c)} AS label, line, {i} AS pos FROM _wide"
            f" WHERE trim(\"{c}\") IN ('1', '1.0')" for i, c in enumerate(label_cols)
        )
        self._temp(
            "_incoming",
            f"SELECT instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({ones})",
        )
        self._temp("_incoming_instances", f"SELECT \"{cols[0]}\" AS instance_id, line FROM _wide")
        return str(path)

    def _stage_relation(self, rel: Any, where: str, first_line: int = 1) -> str:
        cols = [c.lower() for c in rel.columns]
        if not {"instance_id", "label"} <= set(cols):
            raise InputError(f"label table needs columns instance_id, label; it has {list(rel.columns)}", where)
        self._register("_rel_src", rel)
        score = f'"{rel.columns[cols.index("score")]}"' if "score" in cols else "NULL"
        iid, lab = (f'"{rel.columns[cols.index(c)]}"' for c in ("instance_id", "label"))
        self._temp(
            "_incoming",
            f"SELECT CAST({iid} AS VARCHAR) AS instance_id, CAST({lab} AS VARCHAR) AS label,"
            f" row_number() OVER () + {first_line - 1} AS line, 1 AS pos, CAST({score} AS VARCHAR) AS score_text,"
            f" TRY_CAST({score} AS DOUBLE) AS score FROM _rel_src",
        )
        self.con.unregister("_rel_src")
        bad = self._one(
            "SELECT line, instance_id, label FROM _incoming WHERE instance_id IS NULL OR label IS NULL"
            " OR trim(label) = '' OR lower(label) = 'nan' OR lower(instance_id) = 'nan'"
            " ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError("missing instance_id or label (empty, None or NaN)", where, bad[0],
                             f"instance_id={bad[1]!r}, label={bad[2]!r}")
        self._check_score_text(where)
        self._temp("_incoming_instances", "SELECT instance_id, min(line) AS line FROM _incoming GROUP BY ALL")
        return where

    def _stage_dataframe(self, df: pd.DataFrame, where: str) -> str:
        return self._stage_relation(self.con.from_df(df), where)

    def _stage_sets(self, sets: Iterable[Iterable[str]], where: str) -> str:
        """A sequence of label sets (the instance id is the position, from 0)."""
        import pandas as pd

        ids, labels = [], []
        instances = []
        for i, labelset in enumerate(sets):
            if isinstance(labelset, str):
                labelset = [labelset]
            instances.append(str(i))
            for label in labelset:
                ids.append(str(i))
                labels.append(label)
        self._stage_relation(self.con.from_df(pd.DataFrame({"instance_id": ids, "label": labels})), where)
        self._temp("_incoming_instances", "SELECT unnest($i) AS instance_id, unnest($n) AS line",
                   {"i": instances, "n": list(range(1, len(instances) + 1))})
        return where

    # ------------------------------------------------------------------ checks
    def _check_staged(self, where: str, unknown: str) -> None:
        """Unknown labels, empty ids, duplicates; leaves ``_incoming`` deduplicated."""
        if unknown not in ("error", "ignore"):
            raise ValueError("unknown must be 'error' or 'ignore'")
        bad = self._one(
            "SELECT line, instance_id FROM _incoming_instances WHERE instance_id IS NULL OR instance_id = ''"
            " ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError("empty instance_id", where, bad[0], bad[1])
        bad = self._one(
            "SELECT line, instance_id FROM _incoming WHERE label IS NULL OR label = '' ORDER BY line LIMIT 1"
        )
        if bad:
            raise InputError("empty label", where, bad[0], f"instance_id={bad[1]!r}")
        first = self._one(
            "SELECT i.line, i.label, count(*) OVER () FROM _incoming i ANTI JOIN nodes n ON n.label = i.label"
            " ORDER BY i.line LIMIT 1"
        )
        if first:
            if unknown == "error":
                raise InputError("label not in the taxonomy", where, first[0], first[1])
            self.con.execute("DELETE FROM _incoming WHERE label NOT IN (SELECT label FROM nodes)")
            warnings.warn(f"{where}: ignored {first[2]} label(s) not in the taxonomy (first: {first[1]!r})",
                          DataWarning, stacklevel=3)
        dups = self._one(
            "SELECT count(*) - count(DISTINCT (instance_id, label)) FROM _incoming"
        )[0]
        if dups:
            warnings.warn(f"{where}: {dups} duplicate (instance_id, label) row(s) collapsed", DataWarning,
                          stacklevel=3)
            self._temp("_incoming", "SELECT * FROM _incoming QUALIFY row_number() OVER"
                       " (PARTITION BY instance_id, label ORDER BY line, pos) = 1")

    def _check_no_truth(self, where: str, no_truth: str) -> None:
        if no_truth not in ("error", "ignore"):
            raise ValueError("no_truth must be 'error' or 'ignore'")
        first = self._one(
            "SELECT s.line, s.instance_id, count(*) OVER () FROM _incoming_instances s"
            " ANTI JOIN instances i ON i.instance_id = s.instance_id ORDER BY s.line LIMIT 1"
        )
        if not first:
            return
        if no_truth == "error":
            raise InputError("predicted instance has no truth", where, first[0], first[1])
        self.con.execute("DELETE FROM _incoming WHERE instance_id NOT IN (SELECT instance_id FROM instances)")
        warnings.warn(f"{where}: ignored {first[2]} predicted instance(s) with no truth (first: {first[1]!r})",
                      DataWarning, stacklevel=3)

    # ------------------------------------------------------------------ queries
    def _register(self, name: str, rel: Any) -> None:
        """Register a relation as a view; a relation of another DuckDB connection goes through Arrow."""
        import duckdb

        try:
            self.con.register(name, rel)
        except duckdb.InvalidInputException:
            self.con.register(name, rel.arrow())

    def _one(self, sql: str, params: dict[str, object] | None = None) -> tuple | None:
        """The first row of a query (the result is fetched completely, as DuckDB requires)."""
        rows = self.con.execute(sql, params or {}).fetchall()
        return rows[0] if rows else None

    def _temp(self, table: str, sql: str, params: dict[str, object] | None = None) -> None:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {sql}", params or {})

    def run(
        self, file: str, name: str | None = None, params: dict[str, object] | None = None
    ) -> duckdb.DuckDBPyRelation:
        """Run query ``name`` of ``sql/<file>.sql``; queries it reads are first materialised as temp tables
        named after them, except for the files of :data:`COMPOSED`, whose queries are run as one query with
        the queries it reads as common table expressions. Returns the result as a DuckDB relation."""
        queries = sqlfiles.queries(file)
        name = name or list(queries)[-1]
        params = params or {}
        deps = sqlfiles.dependencies(file, name)
        sql = queries[name]
        if file in COMPOSED and deps:
            ctes = ",\n".join(f"{dep} AS (\n{queries[dep]}\n)" for dep in deps)
            sql = f"WITH {ctes}\nSELECT * FROM (\n{sql}\n) AS _{name}"
        else:
            for dep in deps:
                self._temp(dep, queries[dep], sqlfiles.bind(queries[dep], params))
        self._temp(f"_{name}_result", sql, sqlfiles.bind(sql, params))
        return self.con.table(f"_{name}_result")

    def transaction(self) -> _Transaction:
        """``with store.transaction(): ...`` commits on success and rolls back on any error."""
        return _Transaction(self.con)

    def close(self) -> None:
        self.con.close()


class _Transaction:
    def __init__(self, con: Any) -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")


def _joined(values: list[str], source: str) -> str:
    """``values`` joined by the unit separator U+001F, to pass a column as one string parameter and split it
    in SQL (``unnest(string_split($p, chr(31)))``): several times faster than a list parameter."""
    text = "\x1f".join(values)
    if text.count("\x1f") != len(values) - 1:
        bad = next(v for v in values if "\x1f" in v)
        raise InputError("node name contains the control character U+001F", source, value=bad)
    return text


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
