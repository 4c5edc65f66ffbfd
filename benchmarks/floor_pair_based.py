"""The floor of the pair-based family: the numbers of ``hiersql evaluate --metrics pair_based --format csv`` (dmax 5,
no maximum distance, ``shared="strict"``, MGIA's nearest pairing over ``|P ∪ T|``) from the same long Parquet
tables, written by hand: the distances in plain DuckDB, the pairings in NumPy (no checks, no plan).

d(u, v) = min over common ancestors a of up(u, a) + up(v, a), up the shortest path down from a (Kosmopoulos et
al. 2015, §2.3; SPEC §3). Per problem (a system, an instance of the truth; T, P its true and predicted sets), each
problem shape |T| × |P| at once, every one-to-one pairing tried:

- GIE = (|T| + |P|)·dmax + min over pairings Σ min(d − 2·dmax, 0) (an unpaired class costs dmax);
- MGIA's fn = Σ_{t ∈ T} min_p d(t, p) + Σ_{p ∈ P} min_t d(t, p) − max over pairings Σ d of the pairs that are
  nearest for both their classes (a pair chosen from both sides counts once); an empty other set: dmax per
  class; mgia = 1 − fn / (|P ∪ T|·dmax), 1 when P = T; micro 1 − Σ fn / (Σ |P ∪ T|·dmax);
- the all-pairs error Σ_{T × P} d;
- the tree-induced error min over pairings Σ d, printed only when |T| = |P| for every problem (as ``evaluate``
  leaves it out of a family otherwise).

    .venv/bin/python benchmarks/floor_pair_based.py D/taxonomy.tsv D/truth.parquet D/predictions.parquet

Prints CSV rows ``system,metric,average,value`` in ``hiersql evaluate``'s order (each value as Python's repr).
With a fourth argument, a CSV of ``hiersql evaluate``, it checks that the rows are the same to 1e-9 (exit 1 if not).
"""

from __future__ import annotations

import itertools
import sys

import duckdb
import numpy as np

DMAX = 5.0
# The input tables of the floors (floor_lca.py too): the taxonomy's edges and closure (the shortest distance from
# each ancestor down to each descendant), the truth and the predictions, each row once.
INPUTS = {
    "edges": """SELECT DISTINCT column0::VARCHAR AS parent, column1::VARCHAR AS child
                FROM read_csv($taxonomy, delim = '\t', header = false,
                              columns = {'column0': 'VARCHAR', 'column1': 'VARCHAR'})""",
    "closure": """WITH RECURSIVE paths(ancestor, descendant, distance) AS (
                      SELECT node, node, 0 FROM (SELECT parent AS node FROM edges UNION SELECT child FROM edges)
                      UNION
                      SELECT e.parent, p.descendant, p.distance + 1 FROM edges e JOIN paths p ON p.ancestor = e.child)
                  SELECT ancestor, descendant, min(distance) AS distance FROM paths GROUP BY ALL""",
    "truth": "SELECT DISTINCT instance_id::VARCHAR AS instance_id, label::VARCHAR AS label FROM read_parquet($truth)",
    "pred": """SELECT DISTINCT system, instance_id::VARCHAR AS instance_id, label::VARCHAR AS label
               FROM read_parquet($pred)""",
}
# The tables, in order; the last two read out. Problems and labels are numbered (``i``, ``j``: a class's place in
# its set) so that NumPy can lay each problem out as a |T| × |P| matrix.
TABLES = {
    **INPUTS,
    "problems": """SELECT system, instance_id, row_number() OVER (ORDER BY system, instance_id) - 1 AS problem
                   FROM (SELECT DISTINCT system FROM pred), (SELECT DISTINCT instance_id FROM truth)""",
    "t": "SELECT *, row_number() OVER (PARTITION BY instance_id ORDER BY label) - 1 AS i FROM truth",
    "p": "SELECT *, row_number() OVER (PARTITION BY system, instance_id ORDER BY label) - 1 AS j FROM pred",
    "distances": """SELECT u, v, min(a.distance + b.distance) AS distance
                    FROM (SELECT DISTINCT t.label AS u, p.label AS v FROM t JOIN p USING (instance_id))
                    JOIN closure a ON a.descendant = u JOIN closure b ON b.descendant = v AND b.ancestor = a.ancestor
                    GROUP BY u, v""",
    "pairs": """SELECT problem, i, j, distance
                FROM problems JOIN t USING (instance_id) JOIN p USING (system, instance_id)
                JOIN distances ON u = t.label AND v = p.label""",
    "sizes": """SELECT problem, system, coalesce(nt.n, 0) AS n_true, coalesce(np.n, 0) AS n_pred,
                       coalesce(ns.n, 0) AS n_shared
                FROM problems
                LEFT JOIN (SELECT instance_id, count(*) AS n FROM truth GROUP BY ALL) nt USING (instance_id)
                LEFT JOIN (SELECT system, instance_id, count(*) AS n FROM pred GROUP BY ALL) np
                    USING (system, instance_id)
                LEFT JOIN (SELECT system, instance_id, count(*) AS n FROM truth JOIN pred USING (instance_id, label)
                           GROUP BY ALL) ns USING (system, instance_id)
                ORDER BY problem""",
}


def stored(tables: dict[str, str], params: dict[str, str]) -> duckdb.DuckDBPyConnection:
    """A connection holding ``tables`` as temporary tables, made in order (each query given the ``params`` it
    names): each step is planned on its own."""
    con = duckdb.connect()
    for name, query in tables.items():
        con.execute(f"CREATE TEMP TABLE {name} AS {query}", {k: v for k, v in params.items() if f"${k}" in query})
    return con


def pairings(d: np.ndarray) -> np.ndarray:
    """Σ d over each one-to-one pairing of the smaller side into the larger, per problem: ``[problems, pairings]``."""
    n, a, b = d.shape
    if a > b:
        return pairings(d.transpose(0, 2, 1))
    rows = np.arange(a)
    return np.stack([d[:, rows, list(cols)].sum(axis=1) for cols in itertools.permutations(range(b), a)], axis=1)


def measures(k: int, n_true: np.ndarray, n_pred: np.ndarray, pairs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per problem: GIE, MGIA's fn, the all-pairs and the tree-induced errors (NaN where |T| ≠ |P|)."""
    gie, fn = (n_true + n_pred) * DMAX, (n_true + n_pred) * DMAX  # an empty other set: every class at dmax
    all_pairs, tree = np.zeros(k), np.where(n_true == n_pred, 0.0, np.nan)
    for a, b in {(a, b) for a, b in zip(n_true, n_pred, strict=True) if a and b}:
        members = np.flatnonzero((n_true == a) & (n_pred == b))
        where = np.full(k, -1)
        where[members] = np.arange(len(members))
        kept = where[pairs["problem"]] >= 0
        d = np.zeros((len(members), a, b))
        d[where[pairs["problem"][kept]], pairs["i"][kept], pairs["j"][kept]] = pairs["distance"][kept]
        gie[members] += pairings(np.minimum(d - 2 * DMAX, 0)).min(axis=1)
        near_true, near_pred = d.min(axis=2), d.min(axis=1)
        mutual = (d == near_true[:, :, None]) & (d == near_pred[:, None, :])
        fn[members] = near_true.sum(axis=1) + near_pred.sum(axis=1) - pairings(np.where(mutual, d, 0)).max(axis=1)
        all_pairs[members] = d.sum(axis=(1, 2))
        if a == b:
            tree[members] = pairings(d).min(axis=1)
    return {"gie": gie, "fn": fn, "all_pairs": all_pairs, "tree": tree}


def main(taxonomy: str, truth: str, pred: str, check: str | None = None) -> None:
    con = stored(dict(list(TABLES.items())[:-2]), {"taxonomy": taxonomy, "truth": truth, "pred": pred})
    pairs, sizes = (con.execute(TABLES[name]).fetchnumpy() for name in ("pairs", "sizes"))
    k = len(sizes["problem"])
    n_true, n_pred, n_shared = (np.asarray(sizes[c], dtype=np.int64) for c in ("n_true", "n_pred", "n_shared"))
    per = measures(k, n_true, n_pred, {c: np.asarray(pairs[c]) for c in ("problem", "i", "j", "distance")})
    union = (n_true + n_pred - n_shared) * DMAX
    equal = (n_shared == n_true) & (n_shared == n_pred)
    mgia = np.where(equal, 1.0, 1 - per["fn"] / np.where(equal, 1, union))
    lines = ["system,metric,average,value"]
    systems = np.asarray(sizes["system"], dtype=object)
    for system in sorted(set(systems)):
        s = systems == system
        rows = [("graph_induced_error", "", per["gie"][s].mean()), ("mgia", "macro", mgia[s].mean()),
                ("mgia", "micro", 1 - per["fn"][s].sum() / union[s].sum()), ("mgia_fn", "", per["fn"][s].mean())]
        if not np.isnan(per["tree"]).any():
            rows.append(("tree_induced_error", "", per["tree"][s].mean()))
        rows.append(("all_pairs_error", "", per["all_pairs"][s].mean()))
        for metric, average, value in rows:
            lines.append(f"{system},{metric},{average},{float(value)!r}")
    print("\n".join(lines))
    if check:
        sys.exit(0 if same_rows(lines, check) else 1)


def same_rows(lines: list[str], check: str) -> bool:
    """Whether the CSV lines ``lines`` are those of file ``check`` (``hiersql evaluate --format csv``), each value
    to 1e-9; said on stderr."""
    with open(check) as file:
        theirs = [line.split(",") for line in file.read().splitlines()]
    mine = [line.split(",") for line in lines]
    same = len(mine) == len(theirs) and all(a[:3] == b[:3] and (a == b or abs(float(a[3]) - float(b[3])) <= 1e-9)
                                            for a, b in zip(mine, theirs, strict=False))
    print(f"the same as {check} to 1e-9: {same}", file=sys.stderr)
    return same

if __name__ == "__main__":
    main(*sys.argv[1:5])
