"""The solution's outputs moved through device memory the evaluator lends its child (gpu_runner/ipc.py, issue 13):
the marker the child writes is checked before a byte is copied, and only a regular file is read as one; on a GPU, a
2 GiB problem's outputs go that way and an honest solution is accepted, a wrong one rejected. The CUDA case runs on
the H200 (docs/GPU_RUNS.md)."""

import os

import pytest
import torch

from gpu_runner import ipc, memory_plan
from gpu_runner.evaluate import _marker, evaluate
from tests.evaluator.helpers import FIXTURES, with_forward

LARGE = (FIXTURES / "relu_large.py").read_text()
CUDA_SOLUTION = (FIXTURES / "relu_scale_cuda.py").read_text()


def _entry(**over):
    e = {"shape": [4, 8], "dtype": "float32", "offset": 0, "nbytes": 128}
    e.update(over)
    return e


def test_offsets_are_aligned_and_in_order():
    assert ipc.layout([1, 512, 513, 0, 7]) == [0, 512, 1024, 2048, 2048]
    assert ipc.slot_bytes_needed([1, 512]) == 1024


def test_a_well_formed_marker_is_read_back():
    raw = ipc.MAGIC + b'[{"shape": [4, 8], "dtype": "float32", "offset": 0, "nbytes": 128}]'
    specs = ipc._validate(ipc.read_marker(raw), 1024)
    assert specs == [([4, 8], torch.float32, 0, 128)]


@pytest.mark.parametrize("entries, says", [
    ({"not": "a list"}, "list of tensors"),
    (["x"], "other than a tensor"),
    ([_entry(shape=[-1, 8])], "impossible shape"),
    ([_entry(shape=[1] * 17)], "impossible shape"),
    ([_entry(dtype="object")], "unknown dtype"),
    ([_entry(offset=-512)], "impossible place"),
    ([_entry(offset=3)], "impossible place"),
    ([_entry(nbytes=64)], "do not fit"),  # not shape x dtype
    ([_entry(offset=1024)], "do not fit"),  # past the slot's end
    ([_entry()] * (ipc.MAX_ENTRIES + 1), "list of tensors"),
    # Each within the slot, together far over it: one marker must not make the evaluator allocate without bound.
    ([_entry(), _entry()], "overlap"),
    ([_entry(offset=512), _entry()], "overlap"),
])
def test_a_marker_that_lies_is_refused_before_anything_is_copied(entries, says):
    with pytest.raises(ipc.IpcError, match=says):
        ipc._validate(entries, 1024)


def test_a_tensor_file_is_not_a_marker_and_a_broken_marker_is_an_error():
    with pytest.raises(ValueError, match="not a marker"):
        ipc.read_marker(b"PK\x03\x04 a torch.save zip")
    with pytest.raises(ipc.IpcError, match="not valid JSON"):
        ipc.read_marker(ipc.MAGIC + b"[{")
    with pytest.raises(ipc.IpcError, match="not valid JSON"):
        ipc.read_marker(ipc.MAGIC + b"[" * 200_000)  # nested past the parser's recursion


def test_only_a_regular_file_is_read_as_a_marker(tmp_path):
    (tmp_path / "m.pt").write_bytes(ipc.MAGIC + b"[]")
    assert _marker(tmp_path / "m.pt") == ipc.MAGIC + b"[]"
    (tmp_path / "t.pt").write_bytes(b"PK\x03\x04 a tensor file")
    assert _marker(tmp_path / "t.pt") is None  # load_tensors reads it
    (tmp_path / "link.pt").symlink_to(tmp_path / "m.pt")
    assert _marker(tmp_path / "link.pt") is None  # a link is not followed
    os.mkfifo(tmp_path / "fifo.pt")  # would block a plain read
    assert _marker(tmp_path / "fifo.pt") is None
    assert _marker(tmp_path / "missing.pt") is None
    assert _marker(tmp_path / "nul\x00.pt") is None


def test_the_plan_counts_the_lent_memory_on_the_gpu_and_no_host_copies():
    gib = 1 << 30
    common = dict(input_bytes=6 * gib, output_bytes=6 * gib, peak_bytes=12 * gib, source="measured",
                  host={"free": 120 * gib}, gpu={"free": 139 * gib}, child_limits=(None, None), n_trials=5,
                  sets_wanted=1, keep_wanted=4, tmpfs_work=True)
    files = memory_plan.plan("cuda", **common)
    lent = memory_plan.plan("cuda", **common, lent_outputs=1)
    assert files.expected == lent.expected == "on_demand"
    assert lent.needs["device"] - files.needs["device"] == 6 * gib
    # The host's share stays: the reference's outputs come through files, and the solution's where it cannot map.
    assert lent.needs["host"] == files.needs["host"] > 0
    # Kept expected outputs (small ones) never go through lent memory: nothing changes.
    small = dict(common, input_bytes=1 << 20, output_bytes=1 << 20, peak_bytes=2 << 20)
    assert memory_plan.plan("cuda", **small, lent_outputs=2).needs == memory_plan.plan("cuda", **small).needs


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_a_2_gib_problem_moves_its_outputs_through_lent_device_memory(monkeypatch):
    monkeypatch.setenv("KERNELHUB_TIMING_BUDGET_S", "2")
    monkeypatch.setenv("KERNELHUB_OUTPUT_IPC", "1")  # the legacy slot, whatever the host's setting
    result = evaluate(LARGE, CUDA_SOLUTION, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    transfer = result["checks"]["output_transfer"]
    # The solution's outputs only: the reference's go through files (ipc.py says why).
    assert set(transfer) == {"solution"} and transfer["solution"]["way"] == "cuda_ipc", transfer
    assert transfer["solution"]["slot_bytes"] % ipc.GRANULE == 0
    assert result["checks"]["timed_calls_checked"] >= 1
    # Wrong by a little everywhere: caught by the comparison of what came through the slot.
    wrong = evaluate(LARGE, with_forward("return ext.relu_scale(x.contiguous(), self.scale * 1.01)",
                                         base=CUDA_SOLUTION), device="cuda")
    assert wrong["verdict"] == "wrong_answer", wrong["message"]
    assert wrong["checks"]["output_transfer"]["solution"]["way"] == "cuda_ipc"


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_capability_slots_carry_both_childrens_outputs(monkeypatch):
    monkeypatch.setenv("KERNELHUB_TIMING_BUDGET_S", "2")
    monkeypatch.setenv("KERNELHUB_OUTPUT_IPC", "capability")
    result = evaluate(LARGE, CUDA_SOLUTION, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    transfer = result["checks"]["output_transfer"]
    # Descriptors passed to each child alone: the reference's expected outputs may come back this way too.
    assert {transfer[role]["way"] for role in ("solution", "eager")} == {"cuda_ipc_fd"}, transfer
    # The GPU's used memory, read from outside through the evaluation: at its peak at least the reference's 2 GiB
    # input and the solution's input and output were there (a checked trial holds all three), and the plan counted
    # more than that.
    used, plan = result["checks"]["memory_plan"]["device_used"], result["checks"]["memory_plan"]["before_trials"]
    assert used["samples"] > 0 and used["peak_over_start_bytes"] >= 6 << 30, used
    assert used["peak_in_stages"], used
    assert plan["needs"]["device"] > 6 << 30, plan
    wrong = evaluate(LARGE, with_forward("return ext.relu_scale(x.contiguous(), self.scale * 1.01)",
                                         base=CUDA_SOLUTION), device="cuda")
    assert wrong["verdict"] == "wrong_answer", wrong["message"]


def test_descriptors_follow_a_message_without_being_read_as_one(tmp_path):
    import socket

    from gpu_runner.protocol import Channel

    a, b = socket.socketpair()
    sender, receiver = Channel(a), Channel(b)
    target = tmp_path / "shared"
    target.write_bytes(b"")
    fd = os.open(target, os.O_RDWR)
    try:
        sender.send({"op": "ipc_slot", "kind": "fd"})
        sender.send_fds([fd])
        sender.send({"op": "ping"})
        assert receiver.recv()["op"] == "ipc_slot"
        [got] = receiver.recv_fds(deadline=None)
        assert receiver.recv()["op"] == "ping"
        os.write(got, b"through the passed descriptor")
        os.close(got)
        assert target.read_bytes() == b"through the passed descriptor"
        # A message where descriptors were expected: refused, not taken as a descriptor.
        sender.send({"op": "ping"})
        with pytest.raises(Exception, match="descriptors were expected"):
            receiver.recv_fds(deadline=None)
    finally:
        os.close(fd)
        sender.close()
        receiver.close()


def test_a_child_takes_a_slots_descriptor_and_stays_in_step(tmp_path):
    """On the CPU the child cannot map device memory, but it must still take the descriptor that follows a
    capability slot's request, so that the next request is read as one."""
    from gpu_runner.evaluate import Session, _limits

    s = Session("eager", device="cpu", limits_=_limits("cpu", "eager"))
    try:
        (tmp_path / "f").write_bytes(b"")
        fd = os.open(tmp_path / "f", os.O_RDONLY)
        s.pending_fds = [fd]
        reply = s.request("ipc_slot", kind="fd", nbytes=1 << 21)
        os.close(fd)
        assert reply["mapped"] is False and "not on a CUDA device" in reply["why"]
        assert s.request("ping") is not None
    finally:
        s.close()


def test_an_unknown_output_ipc_setting_is_refused_with_the_choices(monkeypatch):
    from gpu_runner.config import ConfigError
    from gpu_runner.evaluate import evaluate

    monkeypatch.setenv("KERNELHUB_OUTPUT_IPC", "fast")
    problem = (FIXTURES / "relu_scale.py").read_text()
    # Before anything starts: the evaluation reads its settings first.
    with pytest.raises(ConfigError, match="KERNELHUB_OUTPUT_IPC='fast': use 0 .* 1 .* or capability"):
        evaluate(problem, CUDA_SOLUTION, device="cpu")
