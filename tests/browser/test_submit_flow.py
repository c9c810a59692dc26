"""A person finds a problem, copies nothing, pastes a solution into /submit/ and lands on its live page."""

from __future__ import annotations

from playwright.sync_api import expect

from apps.submissions.models import Submission
from tests.browser.broker import take_job
from tests.pages.fixtures import SOLUTION


def test_it_submits_through_the_form_and_follows_the_submission(live_asgi_server, login_page, bob, problem):
    page = login_page(bob)
    page.goto("/")
    page.locator("#to-problems").click()  # the problems are one click from the home page
    page.get_by_role("link", name="ReLU and scale").click()
    expect(page.locator("h1")).to_have_text("ReLU and scale")
    expect(page.locator("#reference-source")).to_contain_text("def forward(self, x, bias)")
    page.get_by_role("link", name="Submit a solution").click()

    # The form first refuses an empty source, inline, and keeps the choices made.
    page.locator("#submit-form button[type=submit]").click()
    expect(page.locator("#field-source .errorlist")).to_have_text(
        "The source is empty: paste your ModelNew solution or upload its file."
    )
    expect(page.locator("#id_problem")).to_have_value("relu-scale")

    page.fill("#id_source", SOLUTION)
    page.locator("#submit-form button[type=submit]").click()

    submission = Submission.objects.get()
    expect(page).to_have_url(f"{live_asgi_server}/submissions/{submission.pk}/")
    expect(page.locator(".messages")).to_contain_text("Your entrant “bob” was created")
    expect(page.locator("#live-indicator")).to_have_attribute("data-state", "open")
    expect(page.locator('[data-stage="queued"]')).to_have_class("is-current")
    expect(page.locator("#solution-source")).to_contain_text("alice-private-kernel-trick")
    assert submission.entrant.name == "bob" and submission.language == "cpp"
    job = take_job(submission.evaluations.get().pk)
    assert job["problem_slug"] == "relu-scale" and job["solution_source"] == SOLUTION
    assert page.js_errors == []
