"""Shared fixtures: the real data of ../shared/data, small taxonomies, a throwaway PostgreSQL server."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / ".." / "shared" / "data").resolve()
FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"real data not found at {DATA} (expected ../shared/data next to the repo)")
    return DATA


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


def _server_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[4]))
    which = shutil.which("pg_ctl")
    if found:
        return Path(found[-1]).parent
    if which:
        return Path(which).parent
    pytest.fail("PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install -y postgresql")


@pytest.fixture(scope="session")
def pg_dsn():
    """A throwaway PostgreSQL cluster (``initdb`` + ``pg_ctl``) in a temporary folder, listening on a Unix
    socket only (one per test process), removed afterwards; its DSN. ``HIERSQL_PG_DSN`` names a running
    server instead. As root the server runs as the ``postgres`` user. Without the server binaries (Debian:
    ``apt-get install -y postgresql``) the tests that use it fail with that message: they must run in CI."""
    if os.environ.get("HIERSQL_PG_DSN"):
        yield os.environ["HIERSQL_PG_DSN"]
        return
    bin_dir = _server_bin()
    base = Path(tempfile.mkdtemp(prefix="hiersql-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    data, log = base / "data", base / "server.log"

    def call(*args: str) -> None:
        done = subprocess.run([*run_as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            tail = log.read_text()[-2000:] if log.exists() else ""
            pytest.fail(f"PostgreSQL: {' '.join(args[:2])} failed:\n{done.stdout}{done.stderr}{tail}")

    call(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "hiersql", "-E", "UTF8", "--no-sync")
    options = f"-k {base} -p 5432 -c listen_addresses='' -c fsync=off -c full_page_writes=off -c jit=off"
    call(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start")
    try:
        yield f"host={base} port=5432 user=hiersql dbname=postgres"
    finally:
        subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    """One Spark session (pyspark local mode) per test process (``make test``: one per xdist worker), started
    by the first test that needs it: starting one takes 10-40 s."""
    import os
    import shutil

    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.fail("Spark needs a Java runtime: apt-get install -y openjdk-17-jre-headless")
    from hiersql.engines import open_engine
    from hiersql.options import RunOptions

    # rows=0: the tests' inputs are small, their JVM is a small input's (hiersql.engines.SMALL_INPUT_JAVA_OPTIONS)
    engine = open_engine(RunOptions(engine="spark", spark_master="local[2]",
                                    spark_conf={"spark.driver.memory": "1g", "spark.default.parallelism": "2"}),
                         rows=0)
    yield engine.spark
    engine.spark.stop()


# Seconds the slowest modules take on the CI's 2-core machine (``make test``'s --durations, 2026-12-02), each
# mostly one or two tests that start JVMs, servers, dbt or a browser, or run every family on Spark. pytest-xdist's
# worksteal mode gives each worker an equal share of the collection, in order, and an idle worker takes the tail
# of the busiest one's queue: a long test left near the end of a queue runs alone while the other core idles
# (the standalone cluster's ~200 s were in the middle of the second worker's share, by file name). So these
# modules go first, the longest first, each to the least loaded worker, and the many short tests after them
# are what the workers steal to finish together. A module stays whole (its module-scoped fixtures start once).
SLOW_MODULES = {
    "test_engines.py": 250, "test_engines_spark.py": 190, "test_spark_remote.py": 200,
    "test_plans_side_by_side.py": 45,
    "test_engines_postgres.py": 40, "test_spark_sources.py": 80, "test_sources.py": 80, "test_jobs_kill.py": 70,
    "test_spark_cli_log.py": 50, "test_dbt.py": 45, "test_macros.py": 45, "test_reproducible.py": 40,
    "test_severity.py": 35, "test_fuzz_inputs.py": 35, "test_spark_lca_open.py": 30,
    "test_spark_stages_result.py": 25, "test_pair_based_empty_root.py": 25, "test_jobs_diff.py": 25,
    "test_spark_ordered_means.py": 20, "test_sources_postgres.py": 20, "test_jobs_tables.py": 17,
    "test_compare_engines.py": 15, "test_report_browser.py": 20
}
# Slow modules that go to one worker together: they read DuckDB's rows of every family on all of GermEval B
# (tests/_engine_cases.germeval_b_all, ~20 s; _sources_cases.by_name_reference, as long), made once per process.
TOGETHER = (("test_engines.py", "test_engines_spark.py", "test_engines_postgres.py", "test_sources.py",
             "test_sources_postgres.py"),)


def _chunk_sizes(total: int, workers: int) -> list[int]:
    """The number of tests worksteal first gives each worker (``xdist.scheduler.worksteal``: each idle node in
    turn takes ``len(pending) // nodes_remaining``)."""
    sizes = []
    for i in range(workers):
        sizes.append(total // (workers - i))
        total -= sizes[-1]
    return sizes


@pytest.hookimpl(trylast=True)  # after -m/-k deselect: the shares are of the tests that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In xdist's workers (``make test``: worksteal), each worker's first share of the collection starts with
    slow modules (:data:`SLOW_MODULES`, :data:`TOGETHER`); the order is the same on every worker, as xdist
    requires. A run without workers keeps the file order."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        return
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path.name, []).append(item)
    units = [tuple(m for m in group if m in modules) for group in TOGETHER]
    units += [(m,) for m in modules if m in SLOW_MODULES and not any(m in group for group in TOGETHER)]
    units = sorted(filter(None, units), key=lambda unit: (-sum(SLOW_MODULES[m] for m in unit), unit))
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for unit in units:
        i = loads.index(min(loads))
        shares[i] += [item for m in sorted(unit, key=lambda m: -SLOW_MODULES[m]) for item in modules[m]]
        loads[i] += sum(SLOW_MODULES[m] for m in unit)
    rest = [item for module, its in modules.items() if module not in SLOW_MODULES for item in its]
    ordered: list[pytest.Item] = []
    for share, size in zip(shares, _chunk_sizes(len(items), workers), strict=True):
        take = max(0, size - len(share))
        ordered += share + rest[:take]
        rest = rest[take:]
    ordered += rest
    assert len(ordered) == len(items)
    items[:] = ordered
