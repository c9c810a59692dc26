"""Memory of one evaluation of a KernelBench level-1 elementwise problem at its own size (issue 13).

Runs `python -m gpu_runner evaluate --json` on the problem with an honest ReLU solution (C++ on the CPU, CUDA on
a GPU; both written here) and samples, every 0.25 s: the resident memory of each process of the evaluation
(the evaluator, its children by role), the GPU's used memory (NVML), and /dev/shm's use. Prints the peaks, the
wall time, the verdict and the memory plan the evaluator made.

    python benchmarks/evaluator_memory.py --device cuda          # 19_ReLU at 4096 x 393216 (6 GiB in, 6 out)
    python benchmarks/evaluator_memory.py --device cpu --scale 0.02   # rehearsal: dim shrunk 50x

--scale shrinks the problem's module-level `dim` (KernelBench's level-1 elementwise problems read it in
get_inputs) in a copy under a temporary directory; the KernelBench checkout is read, never changed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PROBLEM = Path("/work/shared/data/kernelbench/KernelBench/level1/19_ReLU.py")

CPU_SOLUTION = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "contiguous float32 expected");
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = x.numel();
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

ext = load_inline(name="kh_bench_relu_cpu", cpp_sources=SOURCE, functions=["relu_forward"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x.contiguous())
'''

CUDA_SOLUTION = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = in[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        out[i] = v;
    }
}

__global__ void relu_tail(const float* __restrict__ in, float* __restrict__ out, int64_t start, int64_t n) {
    int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(in[i], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "contiguous CUDA float32");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel(), n4 = n / 4;
    if (n4) relu_kernel<<<4096, 256>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                       reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    if (n % 4) relu_tail<<<1, 4>>>(x.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
    return y;
}
"""

CPP_SOURCE = "torch::Tensor relu_forward(torch::Tensor x);"

ext = load_inline(name="kh_bench_relu_cuda", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                  functions=["relu_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x.contiguous())
'''


def _role(p: psutil.Process, root: int) -> str:
    if p.pid == root:
        return "evaluator"
    try:
        cmd = p.cmdline()
    except psutil.Error:
        return "?"
    if "gpu_runner.child" in cmd:
        return "child:" + cmd[cmd.index("gpu_runner.child") + 1]
    if "gpu_runner.builds" in cmd:
        return "build"
    return "other:" + (Path(cmd[0]).name if cmd else "?")


class Sampler:
    def __init__(self, root: int, device: str) -> None:
        self.root, self.device = root, device
        self.peaks: dict[str, int] = {}
        self.gpu_peak = 0
        self.gpu_start: int | None = None
        self.shm_peak = 0
        self.shm_start = shutil.disk_usage("/dev/shm").used
        self.stop = threading.Event()
        self.nv: Any = None
        if device == "cuda":
            try:
                import pynvml

                pynvml.nvmlInit()
                self.nv = pynvml
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
                self.gpu_start = int(pynvml.nvmlDeviceGetMemoryInfo(self.handle).used)
            except Exception as e:  # noqa: BLE001
                print(f"NVML not available ({e}): no GPU figures", file=sys.stderr)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                procs = [psutil.Process(self.root), *psutil.Process(self.root).children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                role = _role(p, self.root)
                self.peaks[role] = max(self.peaks.get(role, 0), rss)
            if self.nv is not None:
                self.gpu_peak = max(self.gpu_peak, int(self.nv.nvmlDeviceGetMemoryInfo(self.handle).used))
            self.shm_peak = max(self.shm_peak, shutil.disk_usage("/dev/shm").used - self.shm_start)
            time.sleep(0.25)


def _scaled(problem: Path, scale: float, out_dir: Path) -> Path:
    text = problem.read_text()
    if scale != 1.0:
        if not re.search(r"^dim\s*=", text, re.M):
            raise SystemExit(f"{problem} has no module-level `dim` to scale")
        text += f"\n\n# Shrunk by benchmarks/evaluator_memory.py --scale {scale}\ndim = max(4, int(dim * {scale}))\n"
    copy = out_dir / problem.name
    copy.write_text(text)
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, default=DEFAULT_PROBLEM)
    parser.add_argument("--solution", type=Path, help="default: the honest ReLU written here for the device")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the problem's `dim` by this factor")
    parser.add_argument("--json-out", type=Path, help="write the figures here as well")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kh-memory-bench-") as tmp:
        tmpdir = Path(tmp)
        problem = _scaled(args.problem, args.scale, tmpdir)
        solution = args.solution
        if solution is None:
            solution = tmpdir / "relu_solution.py"
            solution.write_text(CUDA_SOLUTION if args.device == "cuda" else CPU_SOLUTION)
        cmd = [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(problem), "--solution",
               str(solution), "--device", args.device, "--json"]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = Sampler(proc.pid, args.device)
        thread = threading.Thread(target=sampler.run, daemon=True)
        thread.start()
        out, err = proc.communicate()
        wall = time.monotonic() - started
        sampler.stop.set()
        thread.join()
    try:
        result = json.loads(out)
    except ValueError:
        result = {}
    gib = 1 << 30
    figures = {
        "problem": str(args.problem), "scale": args.scale, "device": args.device, "exit_status": proc.returncode,
        "wall_s": round(wall, 1), "verdict": result.get("verdict"), "message": (result.get("message") or "")[:500],
        "peak_rss_gib": {k: round(v / gib, 2) for k, v in sorted(sampler.peaks.items())},
        "peak_gpu_used_gib": round(sampler.gpu_peak / gib, 2) if sampler.nv else None,
        "gpu_used_at_start_gib": round(sampler.gpu_start / gib, 2) if sampler.gpu_start is not None else None,
        "peak_dev_shm_growth_gib": round(sampler.shm_peak / gib, 2),
        "memory_plan": result.get("checks", {}).get("memory_plan"),
        "timing_input_sets": result.get("checks", {}).get("timing_input_sets"),
        "stage_seconds": result.get("stage_seconds"),
    }
    print(json.dumps(figures, indent=2))
    if proc.returncode != 0 or not result:
        print(err[-4000:], file=sys.stderr)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2))
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main())
