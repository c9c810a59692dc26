"""The site's own Celery tasks (queue `site`). Evaluation jobs go to the pools' queues, to gpu_runner.worker."""

from celery import shared_task

from apps.submissions import services


@shared_task(name="submissions.sweep_jobs", ignore_result=True)
def sweep_jobs() -> dict[str, int]:
    """Run by beat every SWEEP_INTERVAL_S: re-queue silent or long-queued jobs (services.evaluations_sweep)."""
    return services.evaluations_sweep()
