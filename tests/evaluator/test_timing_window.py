"""The timed window: on CUDA the evaluator's time is a plain event timing of forward (guards, synchronise and
fingerprints outside it), and work left running past forward on another stream is still counted (the tail
beyond the trusted reference's calibrated allowance). The pure rules run everywhere; the GPU cases on the H200."""

import statistics
import subprocess
import sys
import textwrap

import pytest
import torch

from gpu_runner import timing
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import FIXTURES, PROBLEM, with_forward

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
CUDA_SOLUTION = (FIXTURES / "relu_scale_cuda.py").read_text()


def test_it_adds_only_the_tail_beyond_the_allowance():
    allowance = timing.tail_allowance([4.0] * 90 + [6.0] * 10)
    assert allowance == pytest.approx(6.0 + timing.TAIL_MARGIN_US)
    # An honest call: the synchronise's latency is inside the allowance, nothing is added.
    assert timing.with_tail(100.0, 5.0, allowance) == 100.0
    # Work left running for 50 us past the end event: all of it beyond the allowance is counted.
    assert timing.with_tail(10.0, 58.0, allowance) == pytest.approx(10.0 + 58.0 - allowance)
    # On a CPU there is no tail.
    assert timing.with_tail(10.0, None, allowance) == 10.0


def test_it_takes_a_high_quantile_so_one_slow_reading_does_not_move_the_allowance():
    tails = [3.0] * 99 + [500.0]
    assert timing.tail_allowance(tails) == pytest.approx(3.0 + timing.TAIL_MARGIN_US)


PLAIN = textwrap.dedent('''
    import importlib.util, json, statistics, sys
    import torch
    spec = importlib.util.spec_from_file_location("sol", sys.argv[1]); sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    torch.manual_seed(0)
    model = sol.ModelNew(2.0).cuda()
    x = torch.randn(128, 1024, device="cuda")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 256 << 20), dtype=torch.uint8, device="cuda")  # Triton do_bench's 256 MiB
    times = []
    with torch.no_grad():
        for i in range(210):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_(); start.record(); model(x); end.record(); torch.cuda.synchronize()
            if i >= 10:
                times.append(start.elapsed_time(end) * 1000.0)
    print(json.dumps(statistics.median(times)))
''')


@pytest.mark.cuda
@CUDA
def test_it_reports_what_plain_cuda_events_measure_for_a_short_kernel():
    # Met since 1.7.1 (the head start and the drain): 1.004-1.009 for the solutions on an H100 (2026-12-06 12:31,
    # docs/BENCHMARKS.md), where 1.4.0 read them at 1.5-1.9x. Expected to fail with KERNELHUB_HEAD_START_MAX_US=0.
    result = evaluate(PROBLEM, CUDA_SOLUTION, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    path = FIXTURES / "relu_scale_cuda.py"
    plain = [float(subprocess.run([sys.executable, "-c", PLAIN, str(path)], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(2)]
    plain_us = statistics.median(plain)
    assert abs(result["runtime_us"] - plain_us) <= max(0.05 * plain_us, 3.0), (result["runtime_us"], plain)
    # What the tail beyond its allowance adds to the honest kernel's median takes at most half the tolerance. (With
    # the drain the tails sit at the allowance, half of them over it by a little: 151 of 281 calls, a median 0.72 us
    # added, on an H100 on 2026-12-06 18:49 beside another test's evaluation; this test counted calls over the
    # allowance before the drain, and failed there though the median was within 5% of plain events.)
    window = result["checks"]["timed_window_tail"]
    assert window["added_median_us"] <= max(0.05 * plain_us, 3.0) / 2, window
    assert result["checks"]["kernel_time"]["measured"] is True
    assert 0 < result["kernel_time_us"] <= result["runtime_us"] * 1.5
    assert result["eager_kernel_time_us"] > 0 and result["compile_kernel_time_us"] > 0
    assert result["speedup_vs_compile_kernel_time"] == pytest.approx(
        result["compile_kernel_time_us"] / result["kernel_time_us"])


# The same kernel launched on a side stream that forward never joins: forward returns at once, the work goes on.
ESCAPING = with_forward("""
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    y = ext.relu_scale(x.contiguous(), self.scale)
    for _ in range(20):
        y = ext.relu_scale(y, 1.0)
return y
""", prelude="import torch", base=CUDA_SOLUTION)
JOINED = with_forward("""
y = ext.relu_scale(x.contiguous(), self.scale)
for _ in range(20):
    y = ext.relu_scale(y, 1.0)
return y
""", base=CUDA_SOLUTION)


@pytest.mark.cuda
@CUDA
def test_it_counts_work_left_running_on_another_stream():
    honest = evaluate(PROBLEM, JOINED, device="cuda")
    assert honest["verdict"] == "accepted", honest["message"]
    escaping = evaluate(PROBLEM, ESCAPING, device="cuda")
    if escaping["verdict"] == "rejected":  # a guard or heuristic may name it first: then it gains nothing either
        return
    assert escaping["verdict"] == "accepted", escaping["message"]
    if "window_drain" not in escaping["checks"]:
        # Without the drain the escaped work shows in the tail after the end event; with it, inside the window.
        assert escaping["checks"]["timed_window_tail"]["calls_over_allowance"] > escaping["checks"]["timed_calls"] // 2
    # Without the tail or the drain it would report a few us (forward returns before its 21 kernels run).
    assert escaping["runtime_us"] >= 0.8 * honest["runtime_us"], (escaping["runtime_us"], honest["runtime_us"])
