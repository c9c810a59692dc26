"""manage.py create_entrant prints a working API token as the last line of stdout."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.submissions.models import ApiToken, Entrant, token_hash


def test_it_prints_a_token_that_authenticates(db, api):
    out = StringIO()
    call_command("create_entrant", "--name", "GPT Kernel Agent", "--kind", "agent", "--model", "gpt-x", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    entrant = Entrant.objects.get(name="GPT Kernel Agent")
    assert entrant.kind == "agent" and entrant.model_name == "gpt-x" and entrant.owner is not None
    # Only the hash is stored.
    assert ApiToken.objects.get(entrant=entrant).key_hash == token_hash(token)
    assert not ApiToken.objects.filter(key_hash=token).exists()
    assert api(token).get("/api/v1/submissions/?mine=1").status_code == 200


def test_it_refuses_a_taken_name(db):
    call_command("create_entrant", "--name", "Twin", "--kind", "human", stdout=StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_entrant", "--name", "Twin", "--kind", "human", stdout=StringIO())


def test_it_refuses_an_unknown_owner(db):
    with pytest.raises(CommandError, match="No user"):
        call_command("create_entrant", "--name", "X", "--kind", "llm", "--owner", "nobody", stdout=StringIO())
