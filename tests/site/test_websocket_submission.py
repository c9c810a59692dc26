"""/ws/submissions/<id>/: the current state on connect, then every update published after commit."""

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from apps.submissions.events import publish_evaluation
from apps.submissions.models import Evaluation
from kernelhub.asgi import application
from tests.site.conftest import submit

ORIGIN = [(b"origin", b"http://127.0.0.1:8000")]


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test drives the consumer from its own event loop; a layer object shared with earlier tests (and
    their closed loops) can leave its receive lock held, so every test gets a new one."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def _connect(path):
    communicator = WebsocketCommunicator(application, path, headers=ORIGIN)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


@pytest.mark.django_db(transaction=True)
def test_it_sends_the_state_then_updates(problem, alice, api, embedded_redis):
    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])

    def finish():
        Evaluation.objects.filter(pk=evaluation.pk).update(status="done", stage="done", verdict="accepted",
                                                           correct=True, runtime_us=10.0, speedup_vs_eager=3.0)
        evaluation.refresh_from_db()
        publish_evaluation(evaluation)  # autocommit: sent at once

    async def scenario():
        communicator, connected, _ = await _connect(f"/ws/submissions/{body['id']}/")
        assert connected
        first = await communicator.receive_json_from(timeout=5)
        await database_sync_to_async(finish)()
        event = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first, event

    first, event = async_to_sync(scenario)()
    assert first["type"] == "evaluation.update"
    assert first["evaluation"]["id"] == evaluation.pk and first["evaluation"]["status"] == "queued"
    assert event == {"type": "evaluation.update", "evaluation": {
        "id": evaluation.pk, "submission_id": body["id"], "status": "done", "stage": "done",
        "verdict": "accepted", "correct": True, "runtime_us": 10.0, "eager_us": None, "compile_us": None,
        "speedup_vs_eager": 3.0, "speedup_vs_compile": None, "message": ""}}


@pytest.mark.django_db(transaction=True)
def test_an_unknown_submission_is_refused(embedded_redis):
    async def scenario():
        communicator, connected, code = await _connect("/ws/submissions/987654/")
        assert not connected and code == 4404

    async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_a_compile_error_message_is_not_broadcast(problem, alice, api, embedded_redis):
    body = submit(api(alice.token)).json()
    Evaluation.objects.filter(pk=body["evaluation_id"]).update(status="done", verdict="compile_error",
                                                               message="line 3: secret_trick()")

    async def scenario():
        communicator, connected, _ = await _connect(f"/ws/submissions/{body['id']}/")
        first = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first

    assert async_to_sync(scenario)()["evaluation"]["message"] == ""


@pytest.mark.django_db(transaction=True)
def test_an_idle_connection_stays_open(problem, alice, api, embedded_redis):
    """Longer than redis-py's default 5 s read timeout and channels_redis's 5 s blocking pop."""
    import asyncio

    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])

    def publish():
        publish_evaluation(evaluation)

    async def scenario():
        communicator, connected, _ = await _connect(f"/ws/submissions/{body['id']}/")
        await communicator.receive_json_from(timeout=5)
        await asyncio.sleep(12)
        await database_sync_to_async(publish)()
        event = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return event

    assert async_to_sync(scenario)()["evaluation"]["id"] == evaluation.pk
