"""The submission page keeps verdict, times, device and versions on top and folds the evaluator's diagnostics
into "How this was checked": human labels, units, durations instead of clock readings, no dict dumps and no
path of the runner's host, for anyone who opens it."""

import pytest

from apps.submissions.models import Evaluation
from apps.submissions.result_display import redact_paths

from .test_submission_detail import RESULT

# Shapes as gpu_runner/evaluate.py reports them (checks.device_lock, stage_started_s, clock_audit, builds).
DIAGNOSTICS = dict(
    RESULT,
    device={"name": "NVIDIA H200", "driver": "580.159.04", "sm_clock_mhz": 1980, "memory_total_bytes": 150754820096,
            "temperature_c": 37, "at": "timing"},
    versions={"torch": "2.11.0+cu130", "cuda": "13.0", "cxx": "g++ 13.3.0"},
    checks={
        "trials": 5, "max_abs_err": 0.000366,
        "builds": [{"name": "kh_cumsum_rows_cuda", "cached": False, "seconds": 68.48, "ok": True}],
        "stage_started_s": {"compiling": 0.116, "checking": 79.328, "timing": 136.323, "baselines": 179.613},
        "device_lock": [{"phase": "solution", "device": "cuda:0", "shared": False, "waited_s": 2.5,
                         "held_from": 1796130000.125, "held_until": 1796130043.625}],
        "clock_audit": {"ok": True, "bound_us": 12.5, "calls": 30},
        "speed_of_light": {"bandwidth_gbps": 3995.59, "floor_us": 268.7, "ok": True},
    },
    isolation={"sandbox": "bubblewrap", "fs": "read-only except its own directory, private /tmp and /dev/shm"},
    wall_s=196.744, seed=7,
    message="built /root/.cache/kernelhub/work/ab12/solution.py and ~/.cache/kernelhub/work/ab12/build.ninja",
)


@pytest.fixture
def finished(alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(
        status="done", stage="done", verdict="accepted", correct=True, runtime_us=1520.0, eager_us=3040.0,
        compile_us=2280.0, speedup_vs_eager=2.0, speedup_vs_compile=1.5, result=DIAGNOSTICS,
        message=DIAGNOSTICS["message"], system_info={"device": DIAGNOSTICS["device"]})
    return alice_submission


@pytest.mark.django_db
def test_it_folds_diagnostics_under_how_this_was_checked(client, finished):
    html = client.get(f"/submissions/{finished.pk}/").content.decode()
    top, folded = html[: html.index('id="how-checked"')], html[html.index('id="how-checked"'):]
    assert '<details class="card" id="how-checked">' in html
    # On top: device and versions, with units.
    assert "<tr><th>Name</th><td>NVIDIA H200</td></tr>" in top
    assert "<tr><th>SM clock</th><td>1980 MHz</td></tr>" in top and "<tr><th>Temperature</th><td>37 °C</td></tr>" in top
    assert "<tr><th>PyTorch</th><td class=\"mono small\">2.11.0+cu130</td></tr>" in top
    # Folded: stages as durations, the device lock as wait and hold times, builds in words.
    assert "<tr><th>Compiling</th><td>1 min 19 s (from 116 ms on)</td></tr>" in folded
    assert "<tr><th>Timing the baselines</th><td>17.1 s (from 3 min 00 s on)</td></tr>" in folded
    assert "<tr><th>While solution</th><td>exclusive; waited 2.5 s, held 43.5 s</td></tr>" in folded
    assert "<tr><th>kh_cumsum_rows_cuda</th><td>built in 1 min 08 s</td></tr>" in folded
    assert "<tr><th>Largest absolute error</th><td>0.000366</td></tr>" in folded
    assert "<tr><th>Speed-of-light bound · Fastest possible time</th><td>269 µs</td></tr>" in folded
    # No clock readings, no internal key names, no dict dumps.
    for internal in ("1796130000", "1.79613e+09", "held_from", "stage started", "s.compiling", "{'", "stage_started_s"):
        assert internal not in html, internal


@pytest.mark.django_db
@pytest.mark.parametrize("viewer", ["anonymous", "owner"])
def test_it_never_shows_a_host_path(client, finished, alice, viewer):
    if viewer == "owner":
        client.force_login(alice)
    html = client.get(f"/submissions/{finished.pk}/").content.decode()
    assert "/root/.cache" not in html and "~/.cache" not in html and "kernelhub/work" not in html
    if viewer == "owner":  # the message itself is shown, its paths cut to their last component
        assert "built …/solution.py and …/build.ninja" in html
    assert "private /tmp and /dev/shm" in html  # names every Linux has are not host paths


def test_it_redacts_absolute_and_home_paths():
    assert redact_paths("File \"/home/runner/.cache/kernelhub/work/x/solution.py\", line 3") == \
        "File \"…/solution.py\", line 3"
    assert redact_paths("see ~/.cache/kernelhub/work/ab/log.txt:12") == "see …/log.txt:12"
    assert redact_paths("1/2 and 3/4 and http://x/y") == "1/2 and 3/4 and http://x/y"
    assert redact_paths("writes to /tmp and /dev/shm only") == "writes to /tmp and /dev/shm only"
