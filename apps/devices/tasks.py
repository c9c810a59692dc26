"""The devices app's Celery task (queue `site`, run by beat)."""

from celery import shared_task

from apps.devices import services


@shared_task(name="devices.sweep_offline_runners", ignore_result=True)
def sweep_offline_runners() -> int:
    """Re-queue the running jobs of runners that went offline (services.runners_offline_requeue)."""
    return services.runners_offline_requeue()
