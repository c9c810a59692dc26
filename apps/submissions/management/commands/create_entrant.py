"""`manage.py create_entrant --name N --kind agent|llm|human`: prints the API token as the last line."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.submissions.models import Entrant
from apps.submissions.services import SubmissionError, entrant_create


class Command(BaseCommand):
    help = "Create an entrant (and a user owning it, unless --owner names one) and print a new API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="The name shown on the leaderboards.")
        parser.add_argument("--kind", required=True, choices=[k for k, _ in Entrant.KIND_CHOICES])
        parser.add_argument("--model", default="", help="Model name, for an LLM or agent.")
        parser.add_argument("--model-version", default="")
        parser.add_argument("--owner", default="", help="Username of an existing user to own the entrant.")

    def handle(self, *args: object, name: str, kind: str, model: str, model_version: str, owner: str,
               **options: object) -> None:
        owner_user = None
        if owner:
            owner_user = get_user_model().objects.filter(username=owner).first()
            if owner_user is None:
                raise CommandError(f"No user {owner!r}: create it first (manage.py createsuperuser) or leave "
                                   "out --owner to make one for this entrant.")
        try:
            entrant, token = entrant_create(name=name, kind=kind, model_name=model, model_version=model_version,
                                            owner=owner_user)
        except SubmissionError as e:
            raise CommandError(e.message) from None
        self.stdout.write(f"Created entrant {entrant.name} ({entrant.kind}, slug {entrant.slug}), owned by "
                          f"{entrant.owner.get_username()}. Its API token, shown only now:")
        self.stdout.write(token)
