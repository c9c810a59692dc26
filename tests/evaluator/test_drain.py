"""The window's drain (gpu_runner/drain.py): its kernel, the size of its blocks, and on a GPU what it orders."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpu_runner import config, drain

ROOT = Path(__file__).resolve().parents[2]


def _instructions(ptx: str) -> list[str]:
    """The PTX's instructions and declarations, without comments, blank lines and the header nvcc writes."""
    lines = []
    for line in ptx.splitlines():
        line = re.sub(r"//.*", "", line).strip()
        if line and not line.startswith((".version", ".target", ".address_size")):
            lines.append(" ".join(line.split()))
    return lines


def test_a_drain_block_holds_its_sm_alone():
    # An H100's or H200's figures: 228 KiB of shared memory an SM, 227 KiB at most a block, 1 KiB reserved a block.
    size = drain.block_shared_bytes(233472, 232448, 1024)
    assert size == 232448
    assert size + 2 * 1024 > 233472  # no second block, however small, fits beside it
    # A device whose blocks may take only half an SM's shared memory cannot be drained this way: it says so.
    with pytest.raises(drain.DrainError, match="another block would fit beside it"):
        drain.block_shared_bytes(233472, 116736, 1024)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_ptxas_accepts_the_drain_kernel(tmp_path, arch):
    source = tmp_path / "drain.ptx"
    source.write_text(drain.PTX)
    run = subprocess.run(["ptxas", f"-arch={arch}", str(source), "-o", str(tmp_path / "drain.cubin")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit)")
def test_the_ptx_is_what_the_documented_source_compiles_to(tmp_path):
    cuda = drain.__doc__.split("`nvcc -arch=compute_75 -ptx`")[1].split("\n\n", 1)[1]
    source = tmp_path / "drain.cu"
    source.write_text("\n".join(line[4:] for line in cuda.splitlines()))
    run = subprocess.run(["nvcc", "-arch=compute_75", "-ptx", str(source), "-o", str(tmp_path / "drain.ptx")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert _instructions((tmp_path / "drain.ptx").read_text()) == _instructions(drain.PTX)


def test_the_drain_is_a_setting_the_children_get():
    settings = config.RunnerConfig.from_env({"KERNELHUB_WINDOW_DRAIN": "0"})
    assert settings.window_drain is False
    assert config.RunnerConfig.from_env({}).window_drain is True  # on as the evaluator ships, with the head start
    with pytest.raises(config.ConfigError, match="KERNELHUB_WINDOW_DRAIN"):
        config.RunnerConfig.from_env({"KERNELHUB_WINDOW_DRAIN": "sometimes"})


def side_stream_windows(size: int, kernels: int, calls: int) -> dict[str, float]:
    """Median windows (us) of `kernels` ReLUs on `size` floats after a 256 MiB flush: on the timed stream or on
    another, with the drain before the end event or not. Run in a process of its own by the tests below, since the
    hardware queues are fixed when CUDA starts (CUDA_DEVICE_MAX_CONNECTIONS)."""
    d = drain.Drain(torch)
    x = torch.rand(size, device="cuda")
    y = torch.empty_like(x)
    flush = torch.empty(1 << 26, dtype=torch.int32, device="cuda")
    cur, side = torch.cuda.current_stream(), torch.cuda.Stream()

    def window(on_side: bool, with_drain: bool) -> float:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        start.record(cur)
        stream = side if on_side else cur
        stream.wait_stream(cur)
        with torch.cuda.stream(stream):
            for _ in range(kernels):
                torch.clamp_min(x, 0.0, out=y)
        if with_drain:
            d.launch(cur.cuda_stream)
        end.record(cur)
        end.synchronize()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000.0

    cases = {"own": (False, False), "escaped": (True, False), "own_drained": (False, True),
             "side_drained": (True, True)}
    for _ in range(10):
        for on_side, with_drain in cases.values():
            window(on_side, with_drain)
    out = {name: statistics.median(window(*case) for _ in range(calls)) for name, case in cases.items()}
    out["own_stream"] = float(d.stream is not None)
    out["complete"] = float(d.arrived() == d.launches * d.grid and d.timeouts() == 0)
    return out


def windows_in_a_process(connections: str, size: int, kernels: int, calls: int) -> dict[str, float]:
    code = ("import json; from tests.evaluator.test_drain import side_stream_windows as w; "
            f"print(json.dumps(w({size}, {kernels}, {calls})))")
    env = {**os.environ, "CUDA_DEVICE_MAX_CONNECTIONS": connections}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_the_end_event_follows_kernels_left_on_another_stream():
    # With one hardware queue, as the evaluator's children have it. (There plain events catch most of ten dependent
    # side-stream kernels too, since the end event waits in the one queue behind each one's launch: 834 against
    # 925 us on an H100, 2026-12-06; the short-kernel test below is where they escape.)
    w = windows_in_a_process("1", 1 << 25, 10, 20)
    assert w["own_stream"], w
    assert w["side_drained"] >= 0.95 * w["own"], w
    assert w["complete"], w


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_with_several_hardware_queues_the_drain_stays_on_the_timed_stream():
    # With the driver's 8 no placement orders kernels queued on another stream behind a dependency (on the timed
    # stream the drain met after the first of ten side kernels: 95 against 925 us on an H100, 2026-12-06), and on
    # its own stream it met before even one had begun: the evaluator gives every child one queue.
    w = windows_in_a_process("8", 1 << 22, 1, 20)
    assert not w["own_stream"], w
    assert w["complete"], w


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_a_short_kernel_left_on_another_stream_gains_nothing_against_the_same_kernel_on_the_timed_stream():
    # On the timed stream the drain started only after forward's last kernel there, paying its launch and its meeting
    # after it (about 3 us on an H100), while a kernel left on another stream ran beside it: that kernel's window read
    # those microseconds shorter. On a stream of its own (one hardware queue) it waits beside both alike.
    w = windows_in_a_process("1", 1 << 22, 1, 200)
    assert w["own_stream"], w
    assert w["side_drained"] > w["own_drained"] - 1.0, w
    assert w["own_drained"] < w["own"] + 2.0, w  # what it costs a window
    assert w["complete"], w
