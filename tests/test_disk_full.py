"""A full disk under DuckDB's ``temp_directory`` while a step or the load spills: one error naming the step and
the folder (:class:`hiersql.options.DiskFull`, reported by the command line as ``--memory-limit: ...``), not
DuckDB's IO error. The disk is a real tmpfs of 1 MB (mounting it needs root, as CI runs)."""

from __future__ import annotations

import os
import subprocess

import pyarrow as pa
import pytest

from hiersql import Store, Taxonomy
from hiersql.cli import _as_flag
from hiersql.engines import DuckDBEngine
from hiersql.options import DiskFull


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                           capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def small_disk_store(disk) -> Store:
    """A store of 50 MB spilling onto ``disk``. DuckDB bounds its spill by the free space it sees
    (``max_temp_directory_size``); set above the disk's size, as when another writer fills the disk during the
    spill, the write fails on the full disk."""
    store = Store(memory_limit="50MB")
    for setting, value in (("temp_directory", str(disk)), ("max_temp_directory_size", "1GB"), ("threads", 1)):
        store.con.execute(f"SET {setting} = $value", {"value": value})
    return store


def disk_full(step: str, disk) -> str:
    """DiskFull's line (as the CLI prints it after ``hiersql: error: ``) for ``step``, spilling into ``disk``."""
    return (f"--memory-limit: out of disk space while {step}: DuckDB spilled beyond its memory limit into its"
            f" temp_directory ({disk}) until the disk was full; free disk space there, or give it more memory")


def many_truth_rows(n: int = 3_000_000) -> pa.Table:
    """``n`` truth rows of label ``a``, more than a 50 MB store holds: staging them spills."""
    return pa.table({"instance_id": [f"instance-{i:09d}" for i in range(n)], "label": ["a"] * n})


def test_a_step_that_fills_the_disk_names_the_step_and_the_folder(small_disk):
    store = small_disk_store(small_disk)
    with pytest.raises(DiskFull) as caught:
        DuckDBEngine(store).stage("set_based", "spilled", {}, set(), text=(
            "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(3000000) AS t(i) ORDER BY h"))
    assert str(_as_flag(caught.value)) == disk_full("the SQL step set_based.spilled", small_disk)


def test_a_load_that_fills_the_disk_names_the_load_and_the_folder(small_disk):
    """3,000,000 truth rows staged in 50 MB spill; the staging table's write fails on the full disk."""
    store = small_disk_store(small_disk)
    with pytest.raises(DiskFull) as caught:
        store.load(Taxonomy.from_edges([("r", "a")]), many_truth_rows(), {})
    assert str(_as_flag(caught.value)) == disk_full("reading taxonomy, closure and labels", small_disk)


def test_add_truth_that_fills_the_disk_names_its_step_and_the_folder(small_disk):
    """The one-by-one call of the Python API (Evaluator.add_truth reads through it) names its own step."""
    store = small_disk_store(small_disk)
    store.load_taxonomy(Taxonomy.from_edges([("r", "a")]))
    with pytest.raises(DiskFull) as caught:
        store.add_truth(many_truth_rows())
    assert str(_as_flag(caught.value)) == disk_full("reading and checking truth", small_disk)
