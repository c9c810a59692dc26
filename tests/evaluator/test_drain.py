"""The window's drain (gpu_runner/drain.py): its kernel, the size of its blocks, and on a GPU what it orders."""

import re
import shutil
import statistics
import subprocess

import pytest
import torch

from gpu_runner import config, drain


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


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_the_end_event_follows_a_kernel_left_on_another_stream():
    d = drain.Drain(torch)
    x = torch.rand(1 << 25, device="cuda")
    y = torch.empty_like(x)
    cur, side = torch.cuda.current_stream(), torch.cuda.Stream()

    def window(on_side: bool, with_drain: bool) -> float:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(cur)
        stream = side if on_side else cur
        stream.wait_stream(cur)
        with torch.cuda.stream(stream):
            for _ in range(10):
                torch.clamp_min(x, 0.0, out=y)
        if with_drain:
            d.launch(cur.cuda_stream)
        end.record(cur)
        end.synchronize()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000.0

    own = statistics.median(window(False, False) for _ in range(20))
    escaped = statistics.median(window(True, False) for _ in range(20))
    drained = statistics.median(window(True, True) for _ in range(20))
    assert escaped < 0.5 * own, (escaped, own)  # plain events miss it
    assert drained >= 0.9 * own, (drained, own)  # the drain's end event does not
    assert d.arrived() == d.launches * d.grid
    assert d.timeouts() == 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_a_short_kernel_left_on_another_stream_gains_nothing_against_the_same_kernel_on_the_timed_stream():
    # On the timed stream the drain used to start only after forward's last kernel there, paying its launch and its
    # meeting after it (about 3 us on an H100), while a kernel left on another stream ran beside it: that kernel's
    # window read those microseconds shorter. On a stream of its own the drain waits beside both alike.
    d = drain.Drain(torch)
    x = torch.rand(1 << 22, device="cuda")
    y = torch.empty_like(x)
    flush = torch.empty(1 << 26, dtype=torch.int32, device="cuda")
    cur, side = torch.cuda.current_stream(), torch.cuda.Stream()

    def window(on_side: bool) -> float:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        start.record(cur)
        stream = side if on_side else cur
        stream.wait_stream(cur)
        with torch.cuda.stream(stream):
            torch.clamp_min(x, 0.0, out=y)
        d.launch(cur.cuda_stream)
        end.record(cur)
        end.synchronize()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000.0

    for _ in range(10):
        window(False), window(True)
    own = statistics.median(window(False) for _ in range(200))
    side_stream = statistics.median(window(True) for _ in range(200))
    assert side_stream > own - 1.0, (side_stream, own)
    assert d.arrived() == d.launches * d.grid
    assert d.timeouts() == 0
