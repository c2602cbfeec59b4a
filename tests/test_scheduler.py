"""The workflow's single pending wake-up of Snakemake's job scheduler (lppf._scheduler)."""

import subprocess
import sys
import threading

import pytest

from lppf._scheduler import coalesce_reevaluation


class _Loop:
    """The two attributes of Snakemake's JobScheduler that the wake-up uses."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay):
        threading.Timer(delay, self._open_jobs.release).start()


def test_many_requests_wake_the_loop_once_and_a_later_one_again():
    class Loop(_Loop):
        pass

    assert coalesce_reevaluation(Loop)
    loop = Loop()
    for _ in range(50):
        loop._schedule_reevalutation(0.05)
    assert loop._open_jobs.acquire(timeout=10)
    assert not loop._open_jobs.acquire(timeout=0.5)
    loop._schedule_reevalutation(0.05)  # what the pass woken by the timer does
    assert loop._open_jobs.acquire(timeout=10)


def test_the_pending_wakeup_does_not_hold_the_interpreter():
    class Loop(_Loop):
        pass

    coalesce_reevaluation(Loop)
    before = set(threading.enumerate())
    Loop()._schedule_reevalutation(60)
    (timer,) = set(threading.enumerate()) - before
    assert timer.daemon
    timer.cancel()


def test_a_class_without_the_method_is_left_alone():
    class Other:
        pass

    assert not coalesce_reevaluation(Other)
    assert not hasattr(Other, "_schedule_reevalutation")


def test_the_installed_snakemake_gets_it():
    job_scheduler = pytest.importorskip("snakemake.scheduling.job_scheduler")
    assert callable(getattr(job_scheduler.JobScheduler, "_schedule_reevalutation", None))


# 24 jobs ready at once on one core; each job writes the number of threads of Snakemake's
# process (its parent): without the wake-up above, one more timer thread per finished job
SNAKEFILE = """
if {patch}:
    from lppf._scheduler import coalesce_reevaluation
    assert coalesce_reevaluation()

rule all:
    input: expand("out/{{i}}.txt", i=range(24))

rule job:
    output: "out/{{i}}.txt"
    shell: "ls /proc/$PPID/task | wc -l > {{output}}"
"""


@pytest.mark.workflow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("patch", [True, False])
def test_the_scheduler_threads_of_a_run(tmp_path, patch):
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(patch=patch))
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--max-jobs-per-timespan", "1000/5s"],
        cwd=tmp_path, check=True, capture_output=True,
    )
    threads = [int(p.read_text()) for p in (tmp_path / "out").glob("*.txt")]
    growth = max(threads) - min(threads)
    assert growth <= 2 if patch else growth >= 10
