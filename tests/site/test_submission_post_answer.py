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
    # 11 on the test database: token, problem with its version, the pool among the problem's, a savepoint, the
    # entrant's lock, duplicate, rate limit, 2 inserts, a savepoint release, dispatch's update. Before issue 3's
    # fixes, 8 more: the existence checks of full_clean (4), two re-reads of the new evaluation, the version and
    # the problem's pools read apart.
    with django_assert_max_num_queries(11), django_capture_on_commit_callbacks(execute=True):
        assert submit(client).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_a_rerun_is_published_to_whoever_watches_the_submission(problem, alice, api, redis_queue, embedded_redis):
    """A new submission's first dispatch sends no live event (nobody knows its id yet; the page gets the state
    when it connects); a re-run of a submission someone may be watching does."""
    import asyncio

    from asgiref.sync import async_to_sync
    from channels.db import database_sync_to_async
    from channels.layers import channel_layers, get_channel_layer

    client = api(alice.token)
    first = submit(client, language="cpp").json()

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(f"submission.{first['id']}", channel)
        rerun = await database_sync_to_async(submit)(client, language="cpp", rerun=True)
        event = await asyncio.wait_for(layer.receive(channel), timeout=5)
        await layer.group_discard(f"submission.{first['id']}", channel)
        return rerun.json(), event

    channel_layers.backends.clear()  # a layer of this test's own event loop
    try:
        rerun, event = async_to_sync(scenario)()
    finally:
        channel_layers.backends.clear()
    assert rerun["id"] == first["id"] and rerun["evaluation_id"] != first["evaluation_id"]
    assert event["type"] == "evaluation.update"
    assert event["evaluation"]["id"] == rerun["evaluation_id"] and event["evaluation"]["status"] == "queued"


def test_a_problem_whose_version_row_is_missing_gets_it_at_its_first_submission(problem, alice, api, redis_queue):
    """The problem and its current version are read in one query; a problem without the row (stored before
    versions existed) is still found, and the submission creates the row."""
    from apps.submissions.models import Submission

    problem.versions.all().delete()
    response = submit(api(alice.token))
    assert response.status_code == 201, response.content
    submission = Submission.objects.get(pk=response.json()["id"])
    assert submission.problem_version.version == problem.version == response.json()["problem_version"]
    assert submission.problem_version.source == problem.source
