"""`manage.py sweep_jobs`: what beat runs every minute, by hand (re-queue silent and long-queued jobs)."""

from django.core.management.base import BaseCommand

from apps.submissions.lifecycle import evaluations_sweep


class Command(BaseCommand):
    help = "Re-queue evaluations whose runner fell silent or that no runner took; fail them after the last attempt."

    def handle(self, *args: object, **options: object) -> None:
        counts = evaluations_sweep()
        self.stdout.write(f"requeued {counts['requeued']}, failed {counts['failed']}, skipped {counts['skipped']}, "
                          f"held {counts['held']}, waiting for a runner {counts['waiting']}")
