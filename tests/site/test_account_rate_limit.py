"""The submission quota belongs to the account: every entrant its user owns draws on one budget (a user once
made 15 entrants with tokens to multiply a per-entrant quota)."""

from apps.submissions.services import entrant_create
from tests.site.conftest import SOLUTION_SOURCE, error_of, submit


def test_a_second_entrant_of_the_same_account_shares_the_budget(problem, alice, bob, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 2
    _second, second_token = entrant_create(name="Alice's second agent", kind="agent", owner=alice.user)
    assert submit(api(alice.token), source="# one\nx = 1\n").status_code == 201
    assert submit(api(second_token), source="# two\nx = 2\n").status_code == 201
    response = submit(api(second_token), source="# three\nx = 3\n")
    assert response.status_code == 429
    error = error_of(response)
    assert error["code"] == "rate_limited" and "per account" in error["message"]
    assert 3500 <= int(response.headers["Retry-After"]) <= 3601
    assert submit(api(alice.token), source="# four\nx = 4\n").status_code == 429
    # Another account has its own budget.
    assert submit(api(bob.token), source="# bob\n").status_code == 201


def test_the_web_form_and_the_api_draw_on_one_budget(problem, alice, api, client, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    assert submit(api(alice.token), source="# api\nx = 1\n").status_code == 201
    client.force_login(alice.user)
    # The web form without an entrant uses (or makes) the user's personal entrant: same account, same budget.
    response = client.post("/submit/", {"problem": "add-one-cpu", "pool": "cpu",
                                        "source": SOLUTION_SOURCE + "# web\n"})
    assert response.status_code == 200
    errors = " ".join(response.context["form"].non_field_errors())
    assert "Rate limit: 1 submissions per hour per account" in errors
