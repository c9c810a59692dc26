"""/ws/leaderboard/<pool>/: joins the pool's group and relays leaderboard.updated; unknown pools refused."""

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from kernelhub.asgi import application

from .builders import make_pool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("embedded_redis")]

ORIGIN = [(b"origin", b"http://127.0.0.1")]


def test_it_relays_leaderboard_updates_of_its_pool_only():
    make_pool("h200")
    make_pool("cpu")

    async def scenario():
        h200 = WebsocketCommunicator(application, "/ws/leaderboard/h200/", headers=ORIGIN)
        cpu = WebsocketCommunicator(application, "/ws/leaderboard/cpu/", headers=ORIGIN)
        assert (await h200.connect())[0] and (await cpu.connect())[0]
        layer = get_channel_layer()
        event = {"type": "leaderboard.updated", "pool": "h200", "problem": "relu", "entrant": "ann",
                 "evaluation_id": 7, "extra": "not relayed"}
        await layer.group_send("leaderboard.h200", event)
        message = await h200.receive_json_from(timeout=5)
        assert message == {"type": "leaderboard.updated", "pool": "h200", "problem": "relu", "entrant": "ann",
                           "evaluation_id": 7}
        assert await cpu.receive_nothing(timeout=0.5)
        await h200.disconnect()
        await cpu.disconnect()

    async_to_sync(scenario)()


def test_it_refuses_an_unknown_pool():
    async def scenario():
        ws = WebsocketCommunicator(application, "/ws/leaderboard/tpu/", headers=ORIGIN)
        connected, _ = await ws.connect()
        assert not connected

    async_to_sync(scenario)()


def test_it_stops_relaying_after_disconnect():
    make_pool("h200")
    layer = get_channel_layer()

    async def scenario():
        ws = WebsocketCommunicator(application, "/ws/leaderboard/h200/", headers=ORIGIN)
        assert (await ws.connect())[0]
        await ws.disconnect()
        # The group is empty again: channels_redis keeps the group as a sorted set of channel names.
        members = await layer.connection(layer.consistent_hash("leaderboard.h200")).zcard(
            layer._group_key("leaderboard.h200"))
        assert members == 0

    async_to_sync(scenario)()
