"""A Python step solved per partition in Spark's Python workers: the data warnings it raises there (such as the
optimal LCA graphs' count of instances that fell back to the greedy ones) are raised again on the driver, one
per partition that raised it, in the order of their text; the rows it writes are all there."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest

from hiersql.engines import SparkEngine
from hiersql.errors import DataWarning
from hiersql.measures import Options
from hiersql.plan import Python


@pytest.mark.spark
def test_data_warnings_of_a_step_solved_per_partition_reach_the_driver(spark):
    def double(con, params, options):  # defined here: Spark ships it to the workers by value
        n = con.execute("SELECT count(*) FROM numbers").fetchall()[0][0]
        con.execute("CREATE TABLE doubled AS SELECT k, 2 * k AS v FROM numbers")
        if n:  # a step warns of what it found: on no rows (its run that learns its schemas) of nothing
            warnings.warn(f"{n} number(s) doubled", DataWarning, stacklevel=2)
            warnings.warn("not a data warning", FutureWarning, stacklevel=2)

    step = Python("double", double, reads=("numbers",), writes=("doubled",), why="a test step",
                  partition_by={"numbers": "k"})
    engine = SparkEngine(spark, partition_rows=0)
    engine.write("numbers", pa.table({"k": list(range(20))}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine.solve(step, {}, Options())
    messages = [str(w.message) for w in caught if w.category is DataWarning]
    assert len(messages) == engine.partitions_solved["double"] > 1  # partitions without rows are not solved
    assert messages == sorted(messages)
    assert sum(int(m.split()[0]) for m in messages) == 20
    assert "not a data warning" not in {str(w.message) for w in caught}  # the workers' other warnings stay there
    assert sorted(engine.execute("SELECT k, v FROM doubled")) == [(k, 2 * k) for k in range(20)]
