"""A queue whose file system fills up during a run: one line naming the queue, exit 2, no unit counted as
failed; once there is room again a run finishes every unit (a real tmpfs of a few kilobytes: needs root)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hiersql.cli import main
from tests.test_jobs import stored

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(folder)], check=True)
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_a_full_disk_stops_the_run_and_a_later_run_finishes(small_disk, tmp_path, data_dir, capsys):
    canonical = data_dir / "canonical"
    spec = tmp_path / "job.toml"
    spec.write_text(f"""name = "full"
queue = "{small_disk / 'q.duckdb'}"
metrics = ["hp", "hr"]

[[dataset]]
name = "germeval-a"
taxonomy = "{canonical / 'taxonomy.tsv'}"
truth = "{canonical / 'truth_a.tsv'}"
predictions = "{canonical / 'pred_a' / '*.tsv'}"
""", encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 2
    # (and the warning that GermEval A's twistbytes__thresholding predicted no label)
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("hiersql: warning:")]
    assert err == [f"hiersql: error: {small_disk / 'q.duckdb'}: cannot write to the queue (TransactionContext"
                   f" Error: Failed to commit: Could not write file \"{small_disk / 'q.duckdb.wal'}\": No space left"
                   " on device)"], err
    assert sorted(p.name for p in small_disk.iterdir()) == ["q.duckdb", "q.duckdb.wal"]  # no status file left
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    done = subprocess.run([sys.executable, "-m", "hiersql", "jobs", "run", "--queue", str(small_disk / "q.duckdb")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "21 unit(s) processed: 21 done, 0 unchanged, 0 failed"
    assert len(stored(small_disk / "q.duckdb")) == 21 * 2 * 2  # systems x (hp, hr) x (micro, macro)
