"""The site's actors and pools (tests/site/conftest.py), and the example workdirs' problem on the cpu pool."""

import pytest

from tests.site.conftest import alice, api, bob, pools  # noqa: F401
from tests.workdirs.helpers import PROBLEM_FILE


@pytest.fixture
def workdir_problem(pools):  # noqa: F811
    from apps.submissions.problems import problem_load_from_file

    problem, _ = problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu", "h200"])
    return problem
