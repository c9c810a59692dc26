"""The ANE board page follows results live like the GPU board: it subscribes to /ws/leaderboard/<chip>-ane/, and a
result a Mac runner posts through the runner API reaches that group as `leaderboard.updated` once it is stored.
(The page's script then re-fetches the page and swaps #ane-live: static/js/leaderboard.js, liveAneBoard.)"""
# ruff: noqa: F811

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from kernelhub.asgi import application
from tests.ane.site import POOL, alice, ane_pool, ane_problem, api, broker_queue, mac_runner  # noqa: F401
from tests.leaderboard.ane_results import accepted, mac_reports, queued_job

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://127.0.0.1")]


def test_the_page_subscribes_to_its_pools_group(ane_problem, client):
    html = client.get(f"/leaderboard/{POOL}/").content.decode()
    assert f'<div id="ane-live" data-ws="/ws/leaderboard/{POOL}/">' in html
    assert 'id="live-state"' in html and "js/leaderboard.js" in html
    assert f'href="/api/v1/leaderboard/ane/?hardware={POOL}"' in html


def test_a_mac_result_reaches_the_ane_boards_group(ane_problem, mac_runner, alice, api, broker_queue):
    _runner, secret = mac_runner
    # Submitted before the socket opens: the submission's own dispatch (on commit here) is not the board's news.
    job = queued_job(api(alice.token))

    async def scenario():
        board = WebsocketCommunicator(application, f"/ws/leaderboard/{POOL}/", headers=ORIGIN)
        assert (await board.connect())[0]
        assert await board.receive_nothing(timeout=0.3)
        await sync_to_async(mac_reports)(api, secret, job, accepted(
            10**9, runtime_us=200.0, coreml_us=500.0, coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9))
        event = await board.receive_json_from(timeout=5)
        assert event == {"type": "leaderboard.updated", "pool": POOL, "problem": "pointwise-conv-relu-ane",
                         "entrant": alice.entrant.slug, "evaluation_id": job["evaluation_id"]}
        await board.disconnect()

    async_to_sync(scenario)()
