"""python manage.py export_dataset OUT_DIR: the open dataset as Parquet files (docs/DATA.md)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.submissions.datasets import dataset_export


class Command(BaseCommand):
    help = ("Write problems.parquet, submissions.parquet and evaluations.parquet (public data only), with "
            "schema.json and README.md, into OUT_DIR.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_dir", metavar="OUT_DIR", help="directory to write into (created if missing)")

    def handle(self, *args: object, out_dir: str, **options: object) -> None:
        path = Path(out_dir)
        if path.exists() and not path.is_dir():
            raise CommandError(f"{path} exists and is not a directory: give a directory to write into.")
        try:
            manifest = dataset_export(out_dir=path)
        except OSError as exc:
            raise CommandError(f"Cannot write to {path}: {exc.strerror or exc}.") from exc
        for table in manifest["tables"].values():
            self.stdout.write(f"{path / table['file']}: {table['rows']} rows, {table['bytes']} bytes")
        self.stdout.write(f"{path / 'schema.json'} and {path / 'README.md'} describe the columns.")
