"""Does using torch's op profiler leave a cost behind in the process? A tiny CUDA forward (a + b on 1x128) timed
as the evaluator times it (256 MiB flush, events around forward), before and after N profiled calls, for the
legacy autograd profiler (the guard's op record) and for the kineto profiler (CPU activity only, then CUDA too).
Each in a fresh process.   python benchmarks/profiler_aftereffect.py [legacy|kineto_cpu|kineto_cuda|none]"""

import json
import statistics
import sys
import time

import torch


def measure(fn, flush, calls=300):
    hosts, windows = [], []
    for i in range(calls + 20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        start.record()
        h0 = time.perf_counter()
        fn()
        h1 = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        if i >= 20:
            hosts.append((h1 - h0) * 1e6)
            windows.append(start.elapsed_time(end) * 1000)
    return {"host_us": round(statistics.median(hosts), 2), "window_us": round(statistics.median(windows), 2)}


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "legacy"
    a, b = torch.randn(1, 128, device="cuda"), torch.randn(1, 128, device="cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def fn():
        return a + b

    with torch.no_grad():
        out = {"kind": kind, "before": measure(fn, flush)}
        for _ in range(20):
            if kind == "legacy":
                with torch.autograd.profiler.profile(use_kineto=False):
                    fn()
            elif kind.startswith("kineto"):
                acts = [torch.profiler.ProfilerActivity.CPU]
                if kind == "kineto_cuda":
                    acts.append(torch.profiler.ProfilerActivity.CUDA)
                with torch.profiler.profile(activities=acts):
                    fn()
            torch.cuda.synchronize()
        out["after"] = measure(fn, flush)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
