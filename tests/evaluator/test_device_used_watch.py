"""memory_plan.DeviceUsedWatch: the GPU's used memory through an evaluation, for the record beside its plan.

NVML is the outside part here: a reader of scripted figures stands in for it (the watch's own logic, the
peak and the stages under way at the peak, is what these test); without NVML the watch records why, and never
raises."""

from __future__ import annotations

import time

import pytest
import torch

from gpu_runner import memory_plan


class _Scripted(memory_plan.DeviceUsedWatch):
    """Reading i is taken while stages[i] are under way; after the last, the last again."""

    def __init__(self, readings: list[int], stages: list[list[str]]) -> None:
        self.readings, self.stage_list, self.taken = readings, stages, 0
        super().__init__(lambda: self.stage_list[min(self.taken, len(self.stage_list)) - 1], interval_s=0.01)

    def _open(self):  # the reader NVML would give
        def read() -> int:
            value = self.readings[min(self.taken, len(self.readings) - 1)]
            self.taken += 1
            return value
        return read


def test_the_peak_and_the_stages_under_way_at_it() -> None:
    gib = 1 << 30
    watch = _Scripted([10 * gib, 12 * gib, 40 * gib, 30 * gib, 11 * gib],
                      [["reference_trials"], ["trials"], ["timing"], ["baselines"], ["baselines"]]).start()
    deadline = time.monotonic() + 5
    while watch.taken <= len(watch.readings) and time.monotonic() < deadline:
        time.sleep(0.01)
    record = watch.stop()
    assert record["at_start_bytes"] == 10 * gib
    assert record["peak_bytes"] == 40 * gib
    assert record["peak_over_start_bytes"] == 30 * gib
    assert record["peak_in_stages"] == ["timing"]
    assert record["samples"] >= 4
    assert watch.thread is not None and not watch.thread.is_alive()


def test_without_nvml_it_records_why_and_never_raises(monkeypatch) -> None:
    from gpu_runner import sysinfo

    monkeypatch.setattr(sysinfo, "_nvml", lambda: None)
    watch = memory_plan.DeviceUsedWatch(lambda: []).start()
    record = watch.stop()
    assert watch.thread is None
    assert record == {"error": "RuntimeError: NVML is not available"}


def test_the_peak_is_attributed_to_the_evaluator_its_children_and_others() -> None:
    """NVML's per-process figures (scripted: real pids) are named by walking up from each process: a child's
    grandchild (the sandboxed Python under its bwrap) takes that child's role, the evaluator's own pid is the
    evaluator, a process outside the evaluation is other."""
    import os
    import subprocess
    import sys

    import psutil

    gib = 1 << 30
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])"])
    try:
        deadline = time.monotonic() + 20
        while not psutil.Process(child.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchild = psutil.Process(child.pid).children()[0].pid
        watch = _Scripted([1 * gib, 20 * gib], [["trials"], ["timing"]])
        watch.roles = lambda: {child.pid: "solution"}
        watch._processes = lambda: [(os.getpid(), 2 * gib), (grandchild, 9 * gib), (1, 3 * gib)]
        watch.start()
        while watch.taken <= 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        record = watch.stop()
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()
    assert record["peak_by_process"] == [{"pid": grandchild, "role": "solution", "bytes": 9 * gib},
                                         {"pid": 1, "role": "other", "bytes": 3 * gib},
                                         {"pid": os.getpid(), "role": "evaluator", "bytes": 2 * gib}]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_evaluators_own_cache_is_given_back() -> None:
    """What the evaluator's process read and compared stays in torch's caching allocator after the tensors go;
    release_device_cache (at each evaluation's end) gives it back to the GPU, for the next evaluation to find."""
    before = memory_plan.release_device_cache() or {}
    x = torch.ones(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    del x
    record = memory_plan.release_device_cache()
    assert record is not None and record["released_bytes"] >= 1 << 30, (before, record)
    assert record["still_reserved_bytes"] <= before.get("still_reserved_bytes", 0) + (64 << 20), (before, record)
