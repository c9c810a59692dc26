"""The site's own Celery tasks (queue `site`). Evaluation jobs go to the pools' queues, to gpu_runner.worker."""

from celery import shared_task
from django.conf import settings

from apps.submissions import lifecycle


@shared_task(name="submissions.sweep_jobs", ignore_result=True)
def sweep_jobs() -> dict[str, int]:
    """Run by beat every SWEEP_INTERVAL_S: re-queue silent or long-queued jobs (lifecycle.evaluations_sweep)."""
    return lifecycle.evaluations_sweep()


@shared_task(name="devices.sweep_offline_runners", ignore_result=True)
def sweep_offline_runners() -> int:
    """Run by beat every SWEEP_INTERVAL_S: re-queue the running jobs of runners that went offline
    (lifecycle.runners_offline_requeue). It kept the name it had in the devices app (settings' beat schedule)."""
    return lifecycle.runners_offline_requeue()


@shared_task(name="submissions.prepare_ane_job", ignore_result=True, acks_late=True,
             soft_time_limit=settings.ANE_PREPARE_TIME_LIMIT_S,
             time_limit=int(settings.ANE_PREPARE_TIME_LIMIT_S * 1.2))
def prepare_ane_job(job: dict) -> str:
    """An ANE job from evaluation_dispatch: validated and converted here, then finished or sent to its Mac pool
    (apps/submissions/ane.py). Left queued on a crash: the sweeper dispatches it again."""
    from apps.submissions.ane import ane_job_forward

    return ane_job_forward(job=job)
