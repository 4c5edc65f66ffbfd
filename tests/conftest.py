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
