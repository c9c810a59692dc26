"""`kernelhub leaderboard --hardware <chip>-ane` shows the ANE board's columns (speedup over Core ML's default,
TFLOPS, the ANE's share), not the GPU board's columns as dashes. A Mac runner posts the result over the live
server's runner API."""
# ruff: noqa: F811

from tests.ane.site import POOL, ane_pool, ane_problem, broker_queue, mac_runner  # noqa: F401
from tests.client.helpers import one_json_object, run_cli
from tests.leaderboard.ane_results import accepted, mac_posts_over_http
from tests.pages.fixtures import alice, alice_agent  # noqa: F401


def test_the_cli_shows_an_ane_pool_with_the_ane_boards_columns(live_asgi_server, ane_problem, mac_runner,
                                                               alice_agent, broker_queue):
    _runner, secret = mac_runner
    mac_posts_over_http(live_asgi_server, secret, alice_agent, ane_problem, accepted(
        10**9, runtime_us=200.0, coreml_us=500.0, coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9))

    code, out, err = run_cli("--url", live_asgi_server, "leaderboard", "--hardware", POOL)
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert "GEOMEAN VS COREML" in header and "TFLOPS" in header and "ANE SHARE" in header
    assert "FAST_1" not in header and "GEOMEAN EAGER" not in header
    row = next(line for line in out.splitlines() if alice_agent.name in line)
    assert "2.5" in row  # 500 us against Core ML's 200 us

    code, out, err = run_cli("--url", live_asgi_server, "leaderboard", "--hardware", POOL, "--json")
    assert code == 0, err
    board = one_json_object(out)
    assert board["board"] == "ane" and board["rows"][0]["geomean_speedup_vs_coreml"] == 2.5
