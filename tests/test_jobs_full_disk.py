"""A queue whose file system fills up during a run: one line naming the queue, exit 2, no unit counted as
failed; once there is room again a run finishes every unit (a real tmpfs of a few kilobytes: needs root)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from hiersql.cli import main
from hiersql.files import write_atomically
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
    # the disk fills in DuckDB's commit or, when the run's timing differs, in the status file's write
    queue = small_disk / "q.duckdb"
    assert err in ([f"hiersql: error: {queue}: cannot write to the queue (TransactionContext Error: Failed to commit:"
                    f" Could not write file \"{queue}.wal\": No space left on device)"],
                   [f"hiersql: error: {queue}: cannot write {queue}.status.json (No space left on device)"]), err
    assert sorted(p.name for p in small_disk.iterdir()) == ["q.duckdb", "q.duckdb.wal"]  # no status file left
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    done = subprocess.run([sys.executable, "-m", "hiersql", "jobs", "run", "--queue", str(small_disk / "q.duckdb")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "21 unit(s) processed: 21 done, 0 unchanged, 0 failed"
    assert len(stored(small_disk / "q.duckdb")) == 21 * 2 * 2  # systems x (hp, hr) x (micro, macro)


def test_a_page_or_status_file_written_on_a_full_disk_leaves_the_old_one_and_names_itself(small_disk):
    page = small_disk / "status.json"
    page.write_text("old", encoding="utf-8")
    filler = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(OSError):
        while True:  # until the file system is full
            os.write(filler, b"\0" * 4096)
    os.close(filler)
    with pytest.raises(OSError) as failed:
        write_atomically(page, "new " * 10_000)
    assert (failed.value.errno, failed.value.filename) == (errno.ENOSPC, str(page))
    assert page.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "status.json"]  # no partial file left
