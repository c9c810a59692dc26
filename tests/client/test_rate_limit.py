"""Past the site's real hourly limit the client neither hangs for an hour nor hammers: it says when to retry."""

import pytest
from django.conf import settings

from apps.submissions.services import submission_create
from tests.client.conftest import solution
from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_reports_the_sites_rate_limit_with_its_retry_after(site, tmp_path):
    for variant in range(settings.SUBMISSIONS_PER_HOUR):  # the live server runs with the same settings
        submission_create(entrant=site["entrant"], problem_slug=site["problem"], source=solution(100 + variant),
                          hardware="cpu")
    path = tmp_path / "s.py"
    path.write_text(solution(1))
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                             "--json")
    assert code == 5
    error = one_json_object(out)["error"]
    assert error["status"] == 429 and error["code"] == "rate_limited"
    assert "Rate limited: try again in" in err
    assert "retrying" not in err  # an hour's wait is beyond the client's patience: no retry loop
