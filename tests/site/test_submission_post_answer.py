"""POST /api/v1/submissions/ answers with the submission as dispatch left it, in a bounded number of queries."""

import pytest

from tests.site.conftest import submit


# A real commit (not the test's wrapping transaction), so that dispatch runs before the view answers, as in
# production.
@pytest.mark.django_db(transaction=True)
def test_the_answer_is_the_row_as_dispatched(problem, alice, api, redis_queue):
    client = api(alice.token)
    response = submit(client)
    assert response.status_code == 201
    body = response.json()
    assert body.pop("duplicate") is False
    assert body["attempt"] == 1 and body["status"] == "queued" and body["stage"] == "queued"
    assert client.get(f"/api/v1/submissions/{body['id']}/").json() == body
    assert len(redis_queue("pool.cpu")) == 1


def test_a_duplicate_answers_with_the_existing_submission(problem, alice, api, redis_queue,
                                                          django_capture_on_commit_callbacks):
    client = api(alice.token)
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(client).json()
        again = submit(client)
    assert again.status_code == 200
    body = again.json()
    assert body.pop("duplicate") is True
    first.pop("duplicate")
    assert body == first


def test_a_post_takes_a_bounded_number_of_queries(problem, alice, api, redis_queue,
                                                  django_capture_on_commit_callbacks, django_assert_max_num_queries):
    client = api(alice.token)
    submit(client, source="# warm: the token's last_used_at is written once\n")
    # 13 on the test database: token, problem, pool, the problem's pools, a savepoint, the entrant's lock, version,
    # duplicate, rate limit, 2 inserts, a savepoint release, dispatch's update. Before issue 3's fixes, 6 more: the
    # existence checks of full_clean (4) and two re-reads of the new evaluation.
    with django_assert_max_num_queries(13), django_capture_on_commit_callbacks(execute=True):
        assert submit(client).status_code == 201
