"""One pending wake-up for Snakemake's job scheduler, whatever the number of finished jobs.

Snakemake 8 and 9 end every pass of their scheduling loop that finds ready jobs by starting a
``threading.Timer`` that wakes the loop again after the job-rate limit's timespan. A pass is
also started by every finished job, and every timer's pass starts one more timer, so the
number of live timer chains grows by one per finished job for as long as jobs are waiting:
near the end of a 600-job run about as many passes per timespan, each one checking the inputs
of every ready job. One pending timer does the same work, since any pass reconsiders every
ready job. Its thread is a daemon, so a run ends with its last job instead of after the
timespan of the timers still pending.
"""

from __future__ import annotations

import threading

__all__ = ["coalesce_reevaluation"]

_METHOD = "_schedule_reevalutation"  # Snakemake's spelling


def _reevaluate_once(self, delay: float) -> None:
    """Wake the scheduling loop after ``delay`` seconds, unless a wake-up is already pending."""
    if getattr(self, "_lppf_wakeup_pending", False):
        return
    self._lppf_wakeup_pending = True

    def wake():
        self._lppf_wakeup_pending = False  # before the release: the pass it starts may re-arm
        self._open_jobs.release()

    timer = threading.Timer(delay, wake)
    timer.daemon = True
    timer.start()


def coalesce_reevaluation(scheduler_class=None) -> bool:
    """Give Snakemake's ``JobScheduler`` (or ``scheduler_class``) the single pending wake-up.

    Returns False, changing nothing, where the class lacks the method this replaces (another
    Snakemake version), so that the workflow then runs on Snakemake's own scheduling.
    """
    if scheduler_class is None:
        try:
            from snakemake.scheduling.job_scheduler import JobScheduler as scheduler_class
        except ImportError:
            return False
    if not callable(getattr(scheduler_class, _METHOD, None)):
        return False
    setattr(scheduler_class, _METHOD, _reevaluate_once)
    return True
