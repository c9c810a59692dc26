"""Checks the bundled GPU problems' sizing rule: PyTorch eager takes at least 1 ms per call on this GPU.

    python3 scripts/gpu/problem_times.py OUT.json [--min-ms 1.0]
Each problem's Model runs on CUDA on its own get_inputs(), 5 warm-up calls then 30 timed calls, each after an
L2 flush, timed with CUDA events around a device-wide synchronise; the median is reported. This is a sizing
check, not a leaderboard figure (the evaluator's eager baseline is measured by gpu_runner itself).
"""

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"problem_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_problem(path: Path, flush: torch.Tensor) -> dict:
    module = load(path)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    times = []
    with torch.no_grad():
        for i in range(35):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            torch.cuda.synchronize()
            if i >= 5:
                times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "n": len(times)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--min-ms", type=float, default=1.0)
    ap.add_argument("--only", nargs="*", default=[], help="problem file stems to time (default: all)")
    args = ap.parse_args()
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda")
    rows = {}
    for path in sorted((REPO / "problems" / "gpu").glob("level*/*.py")):
        if args.only and path.stem not in args.only:
            continue
        name = f"{path.parent.name}/{path.stem}"
        t0 = time.monotonic()
        try:
            row = time_problem(path, flush)
            row["meets_min"] = row["median_ms"] >= args.min_ms
        except Exception as exc:  # noqa: BLE001 - report and go on to the next problem
            row = {"error": f"{type(exc).__name__}: {exc}"}
        row["wall_s"] = round(time.monotonic() - t0, 1)
        rows[name] = row
        print(name, json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "min_ms": args.min_ms,
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "problems": rows}
    Path(args.out).write_text(json.dumps(result, indent=1))
    bad = [n for n, r in rows.items() if not r.get("meets_min")]
    print("below the minimum or failed:", bad or "none")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
