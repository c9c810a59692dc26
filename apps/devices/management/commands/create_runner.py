"""`manage.py create_runner --name N --pool P`: prints the runner's secret, once, as the last line."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.devices.models import HardwarePool, Runner
from apps.devices.services import pool_get_or_create, runner_create


class Command(BaseCommand):
    help = "Create a runner identity for a pool (the pool too, if new) and print its secret once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="A slug naming the host, e.g. h200-node-1.")
        parser.add_argument("--pool", required=True, help="The pool's slug: cpu, h200, m4-ane ...")

    def handle(self, *args: object, name: str, pool: str, **options: object) -> None:
        if Runner.objects.filter(name=name).exists():
            raise CommandError(f"A runner named {name!r} exists already: pick another name.")
        try:
            pool_obj, created = pool_get_or_create(slug=pool)
            runner, secret = runner_create(name=name, pool=pool_obj)
        except ValidationError as e:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in e.message_dict.items())) from None
        if created:
            self.stdout.write(f"Created pool {pool_obj.slug} ({pool_obj.kind}, runs "
                              f"{', '.join(pool_obj.languages)}).")
        if pool_obj.kind == HardwarePool.KIND_ANE:
            # A Mac serves an ANE pool with ane_runner (docs/ANE.md), never with gpu_runner.
            start = ("on the Mac (macOS 15 or later), start it with "
                     "`python -m ane_runner serve --site URL --token SECRET`")
        else:
            start = "start it with `python -m gpu_runner serve --site URL --token SECRET`"
        self.stdout.write(f"Created runner {runner.name} on pool {pool_obj.slug}. Its secret, shown only now "
                          f"({start}):")
        self.stdout.write(secret)
