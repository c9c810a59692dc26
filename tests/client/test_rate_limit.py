"""The site's real hourly limit, as the client meets it: a short Retry-After is waited out and the submission
goes through; an hour's is not waited (no hanging, no hammering): the client says when to try again."""

import re
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from apps.submissions.models import Evaluation
from apps.submissions.services import submission_create
from tests.client.conftest import solution
from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def _use_the_hourly_quota(site) -> None:
    for variant in range(settings.SUBMISSIONS_PER_HOUR):  # the live server runs with the same settings
        submission_create(entrant=site["entrant"], problem_slug=site["problem"], source=solution(100 + variant),
                          hardware="cpu")


def test_it_reports_the_sites_rate_limit_with_its_retry_after(site, tmp_path):
    _use_the_hourly_quota(site)
    path = tmp_path / "s.py"
    path.write_text(solution(1))
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                             "--json")
    assert code == 5
    error = one_json_object(out)["error"]
    assert error["status"] == 429 and error["code"] == "rate_limited"
    assert "Rate limited: try again in" in err
    assert "retrying" not in err  # an hour's wait is beyond the client's patience: no retry loop


def test_it_waits_out_a_short_retry_after_from_the_site_then_submits(site, tmp_path):
    _use_the_hourly_quota(site)
    # The quota frees up in a few seconds: every counted submission was queued almost an hour ago.
    frees_in_s = 3
    Evaluation.objects.filter(submission__entrant=site["entrant"]).update(
        queued_at=timezone.now() - timedelta(seconds=3600 - frees_in_s))
    path = tmp_path / "s.py"
    path.write_text(solution(1))
    start = time.monotonic()
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                             "--json")
    elapsed = time.monotonic() - start
    assert code == 0, err
    created = one_json_object(out)
    assert created["status"] == "queued" and created["duplicate"] is False
    # The site's own Retry-After (seconds until the oldest counted submission leaves the hour), honoured.
    pauses = [float(s) for s in re.findall(r"HTTP 429 from POST \S+; retrying in ([\d.]+) s", err)]
    assert pauses and 1 <= pauses[0] <= frees_in_s + 1, err
    assert elapsed >= sum(pauses)
