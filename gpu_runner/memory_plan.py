"""Memory by plan (issue 13): before the solution's first trial, what an evaluation will hold, and whether it fits.

The footprint of a problem: its inputs' and outputs' bytes and the reference's own peak (what one call of the
problem's Model holds on its device: inputs, output, temporaries). Before anything is allocated, the trusted
reference child works out the inputs' and outputs' sizes on PyTorch's meta device (no memory); after its first
trial, the measured figures (the CUDA allocator's peak, or the growth of the child's resident memory on a CPU)
are cached per problem and device model in the cache directory, so later evaluations plan from them at once.

From the footprint and the memory free now (the device's, and the host's: /proc/meminfo's MemAvailable, the
cgroup's limit less its usage) the plan decides:
- how many timing input sets the two children hold (today's K = 2..16 by a byte budget, down to 1 where
  memory is short),
- how many outputs a checked timing batch keeps (timing.batch_limits, down to 2),
- where the trials' expected outputs live: in the parent's memory when small, else computed by the reference
  one at a time, just before the solution's trial that needs it (never N of them in host RAM or /dev/shm),
- whether the solution's child may fault in its timing reserve (child.py _reserve_heap), which only small
  outputs can afford.
Where even one set and two kept outputs do not fit, the evaluation ends at once with the figures (needed, free,
what to do) instead of running into the host's OOM killer or CUDA's out-of-memory error minutes later.

KERNELHUB_HOST_MEMORY_GB and KERNELHUB_DEVICE_MEMORY_GB cap what the plan counts as free (a host shared with
other work; the tests).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_runner import config

GiB = 1 << 30
# A CPU child's own address space before any tensor: 0.7 GiB for torch's import alone on the development
# machine; the guards, the threads' heaps and the freed memory a heap keeps (heap.py) add to it (a reference
# holding three 2 GiB tensors ran out of 8 GiB).
CHILD_BASE_BYTES = 7 << 28
# What such a child holds in memory (its resident set, torch imported): about 0.4 GiB measured.
CHILD_RSS_BYTES = 1 << 29
# Per process on a GPU: the CUDA context and the L2 flush buffer.
CUDA_PROCESS_BYTES = 1 << 30
# The trials' expected outputs stay in the parent's memory up to this many bytes together.
EXPECTED_IN_MEMORY_BYTES = 1 << 30
# Of the free memory, the share an evaluation plans to use: the rest is for whatever else runs on the host.
USABLE_SHARE = 0.9
GOAL_RATIO = 3
MIN_KEEP = 2  # a timing batch needs a call on a fresh set and one on a reused set (timing.run_timing)
# Where the plan sets the solution child's address-space limit (the CPU track, KERNELHUB_CHILD_MEMORY_GB unset): this
# many times what it counts for that child before the trials. The timing plan, from the measured footprint, can
# count more (temporaries the shapes did not show) and must fit under the limit set at the load, which cannot be
# raised once the solution runs.
SOLUTION_LIMIT_MARGIN = 1.5
# Where a child's address-space limit comes from, for a refusal (plan's limit_notes).
FIXED_LIMIT_NOTE = "KERNELHUB_CHILD_MEMORY_GB"
CEILING_NOTE = "the host's memory"
SET_AT_LOAD_NOTE = ("set at its load from the memory plan, which cannot raise it once the solution runs; the footprint "
                    "measured since needs more. A fixed KERNELHUB_CHILD_MEMORY_GB sets another")
FLOOR_NOTE = ("the least limit, set at its load: no footprint could be worked out before it. A fixed "
              "KERNELHUB_CHILD_MEMORY_GB sets another")


def _cap(name: str, settings: config.RunnerConfig | None) -> int | None:
    """KERNELHUB_HOST_MEMORY_GB or KERNELHUB_DEVICE_MEMORY_GB in bytes (config.py), None where unset."""
    gb = getattr(settings, name) if settings is not None else config.setting(name)
    return None if gb is None else int(gb * GiB)


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def host_total() -> int | None:
    """The host's memory in bytes (MemTotal), or the cgroup's limit where that is lower; None where unknown."""
    info = host_free()
    figures = [v for v in (info.get("mem_total"), info.get("cgroup_limit")) if v is not None]
    return min(figures) if figures else None


def host_free(settings: config.RunnerConfig | None = None) -> dict[str, Any]:
    """Host memory this evaluation may count on, in bytes, and where the figure comes from."""
    out: dict[str, Any] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    out["mem_available"] = int(line.split()[1]) * 1024
                elif line.startswith("MemTotal:"):
                    out["mem_total"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    free = out.get("mem_available")
    # cgroup v2, then v1: the limit of the group this process runs in, less what the group uses.
    for limit_path, usage_path in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, usage = _read_int(limit_path), _read_int(usage_path)
        if limit is not None and usage is not None and limit < (1 << 60):
            out["cgroup_limit"], out["cgroup_usage"] = limit, usage
            free = min(free, limit - usage) if free is not None else limit - usage
            break
    cap = _cap("host_memory_gb", settings)
    if cap is not None:
        out["capped_by_env"] = cap
        free = min(free, cap) if free is not None else cap
    out["free"] = max(0, free) if free is not None else None
    return out


def device_free(device: str, settings: config.RunnerConfig | None = None) -> dict[str, Any]:
    """The GPU's free and total memory (NVML, without a CUDA context in this process), {} for the CPU."""
    if device != "cuda":
        return {}
    out: dict[str, Any] = {}
    try:
        from gpu_runner import sysinfo

        nv = sysinfo._nvml()
        if nv is not None:
            info = nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(sysinfo._visible_index()))
            out = {"free": int(info.free), "total": int(info.total)}
    except Exception:  # noqa: BLE001 - no NVML: torch's figure
        out = {}
    if not out:
        try:
            import torch

            free, total = torch.cuda.mem_get_info()
            out = {"free": int(free), "total": int(total)}
        except Exception:  # noqa: BLE001 - no figure: the plan cannot judge the device
            return {"free": None}
    cap = _cap("device_memory_gb", settings)
    if cap is not None:
        out["capped_by_env"] = cap
        out["free"] = min(out["free"], cap)
    return out


def release_device_cache() -> dict[str, int] | None:
    """Give back what this process's CUDA caching allocator keeps after an evaluation (the copies of outputs it
    read from the lent slots and compared: up to two outputs, 12 GiB for a 6 GiB output). A runner's worker
    process outlives its evaluations, and another evaluation on the same GPU would find that memory taken, with no
    entry in the memory ledger to say whose or to wait for. None where this process never used CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    if torch.cuda.memory_allocated():
        gc.collect()  # a tensor left in a reference cycle (an exception's frames) would keep its block
    before = int(torch.cuda.memory_reserved())
    torch.cuda.empty_cache()
    after = int(torch.cuda.memory_reserved())
    return {"released_bytes": before - after, "still_reserved_bytes": after,
            "still_allocated_bytes": int(torch.cuda.memory_allocated())}


class DeviceUsedWatch:
    """The GPU's used memory sampled through an evaluation (NVML, every `interval_s`), for the record: what the
    evaluation held at its peak beside what its plan counted, and in which of its stages. Device-wide: another
    process's memory on the same GPU (another job of KERNELHUB_GPU_JOBS) is in it too, which `at_start_bytes`
    shows for the moment the evaluation began. Never fails an evaluation: without NVML it records why."""

    def __init__(self, stages: Callable[[], list[str]], interval_s: float = 0.1,
                 roles: Callable[[], dict[int, str]] | None = None) -> None:
        self.stages, self.interval_s = stages, interval_s
        # pid of each child's sandbox -> its role, for the peak's share per process (peak_by_process)
        self.roles = roles or (lambda: {})
        self._processes: Callable[[], list[tuple[int, int]]] = lambda: []
        self.peak_processes: list[dict[str, Any]] = []
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.at_start: int | None = None
        self.peak: int | None = None
        self._used: Callable[[], int] = lambda: 0
        self.peak_stages: list[str] = []
        self._attributed_at = 0
        self.samples = 0
        self.error = ""

    def _open(self) -> Callable[[], int]:
        """A reader of the used bytes (the NVML handle taken once)."""
        from gpu_runner import sysinfo

        nv = sysinfo._nvml()
        if nv is None:
            raise RuntimeError("NVML is not available")
        handle = nv.nvmlDeviceGetHandleByIndex(sysinfo._visible_index())

        def processes() -> list[tuple[int, int]]:
            return [(int(p.pid), int(p.usedGpuMemory or 0)) for p in nv.nvmlDeviceGetComputeRunningProcesses(handle)]

        self._processes = processes
        return lambda: int(nv.nvmlDeviceGetMemoryInfo(handle).used)

    def _attribute(self) -> list[dict[str, Any]]:
        """Each process's device memory at this moment (NVML), named by the child it belongs to: the evaluator
        itself, one of its children (found by walking up from the process to a child's sandbox), or another
        process on the GPU (another job's evaluation, anything else). A record only: any failure gives []."""
        try:
            import psutil

            roles, me = self.roles(), os.getpid()
            out = []
            for pid, used in self._processes():
                role = "other"
                try:
                    chain = [psutil.Process(pid), *psutil.Process(pid).parents()]
                except psutil.Error:
                    chain = []
                for proc in chain:
                    if proc.pid == me:
                        role = "evaluator" if proc.pid == pid else "evaluator's descendant"
                        break
                    if proc.pid in roles:
                        role = roles[proc.pid]
                        break
                out.append({"pid": pid, "role": role, "bytes": used})
            return sorted(out, key=lambda p: -p["bytes"])
        except Exception:  # noqa: BLE001 - a record, not a check
            return []

    def own_bytes(self) -> int:
        """The device memory this evaluation's processes hold now (the evaluator and its children, by NVML's
        count per process); 0 where that cannot be read (no NVML, no per-process figures in a container)."""
        return sum(p["bytes"] for p in self._attribute() if p["role"] != "other")

    def start(self) -> DeviceUsedWatch:
        try:
            self._used = self._open()
            self.at_start = self.peak = self._used()
        except Exception as e:  # noqa: BLE001 - a record, not a check
            self.error = f"{type(e).__name__}: {e}"[:200]
            return self
        self.thread = threading.Thread(target=self._run, name="device-used-watch", daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            try:
                used = self._used()
            except Exception as e:  # noqa: BLE001
                self.error = f"{type(e).__name__}: {e}"[:200]
                return
            self.samples += 1
            if self.peak is None or used > self.peak:
                self.peak, self.peak_stages = used, self.stages()
                # Who holds it: read again only for a peak at least 256 MiB above the last one so attributed
                # (each reading walks /proc; the growth to a peak comes in many small steps).
                if used >= self._attributed_at + (256 << 20):
                    self.peak_processes, self._attributed_at = self._attribute(), used

    def stop(self) -> dict[str, Any]:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        if self.at_start is None:
            return {"error": self.error or "no reading"}
        out: dict[str, Any] = {
            "at_start_bytes": self.at_start, "peak_bytes": self.peak,
            "peak_over_start_bytes": (self.peak or 0) - self.at_start, "peak_in_stages": self.peak_stages,
            "samples": self.samples, "interval_s": self.interval_s}
        if self.peak_processes:
            # Within 256 MiB of the peak: each process's device memory then, by NVML (its own count, which
            # leaves out the driver's reserve; the sum may fall short of peak_bytes).
            out["peak_by_process"] = self.peak_processes
        if self.error:
            out["error"] = self.error
        return out


# ----- the footprint cache -----

def _footprint_path(problem_hash: str, device_model: str) -> Path:
    from gpu_runner.sandbox import cache_dir

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in device_model)[:80]
    return cache_dir() / "footprints" / f"{problem_hash[:32]}-{safe}.json"


def load_footprint(problem_hash: str, device_model: str) -> dict[str, int] | None:
    try:
        data = json.loads(_footprint_path(problem_hash, device_model).read_text())
    except (OSError, ValueError):
        return None
    keys = ("input_bytes", "output_bytes", "peak_bytes")
    if not isinstance(data, dict) or not all(type(data.get(k)) is int and data[k] >= 0 for k in keys):
        return None
    return {k: data[k] for k in keys}


def store_footprint(problem_hash: str, device_model: str, footprint: dict[str, int]) -> None:
    path = _footprint_path(problem_hash, device_model)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(footprint))
        os.replace(tmp, path)
    except OSError:
        pass


# ----- the plan -----

@dataclass
class Plan:
    fits: bool
    n_sets: int
    keep_outputs: int
    expected: str  # "memory" or "on_demand"
    reserve: bool
    footprint: dict[str, Any]
    needs: dict[str, int] = field(default_factory=dict)
    free: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _gib(n: float) -> str:
    return f"{n / GiB:.1f} GiB"


def plan(device: str, *, input_bytes: int, output_bytes: int, peak_bytes: int | None, source: str,
         host: dict[str, Any], gpu: dict[str, Any], child_limits: tuple[int | None, int | None], n_trials: int,
         sets_wanted: int,
         keep_wanted: int, tmpfs_work: bool, lent_outputs: int = 0, param_bytes: int = 0,
         limit_notes: tuple[str, str] = (FIXED_LIMIT_NOTE, FIXED_LIMIT_NOTE)) -> Plan:
    """The plan for one evaluation; `sets_wanted` and `keep_wanted` are what the evaluator would use with memory
    to spare (its byte budgets), reduced here until the evaluation fits. child_limits: the address-space limits of
    the reference's and the solution's child (None: none, on a GPU). lent_outputs: on a GPU, the outputs the device
    memory lent to the solution's child holds where the expected outputs are computed on demand
    (gpu_runner/ipc.py). param_bytes: the Model's parameters and buffers, which each child holds (outside the
    reference's measured peak, which starts once its Model is loaded). limit_notes: where the reference's and the
    solution's limits come from, for the refusal's words (a fixed KERNELHUB_CHILD_MEMORY_GB, the host's memory,
    the figure solution_address_space set)."""
    ref_limit, sol_limit = child_limits
    i_b, o_b, w_b = max(0, input_bytes), max(0, output_bytes), max(0, param_bytes)
    # The reference's own peak: what one call holds (inputs, output, temporaries); at least inputs + output. Each
    # child also holds the Model's parameters (w_b).
    peak = max(peak_bytes or 0, i_b + o_b)
    temps = peak - i_b - o_b
    poison = min(2 * o_b + (1 << 20), GiB)
    footprint = {"input_bytes": i_b, "output_bytes": o_b, "peak_bytes": peak, "param_bytes": w_b, "source": source}
    expected = "memory" if (n_trials + 1) * o_b <= EXPECTED_IN_MEMORY_BYTES else "on_demand"
    cpu = device == "cpu"

    def needs(k: int, keep: int) -> dict[str, int]:
        # The reference: a trial (with the previous trial's output, kept for the null call), then k sets, the
        # null call's output and a replayed output, or the poison block. The solution: a trial with the poison
        # block, then k sets and `keep` outputs of a batch (the poison block before the last call), and the
        # forward's temporaries.
        ref = w_b + max(peak + o_b, k * i_b + o_b + max(o_b, poison) + temps)
        # One more set: where the forward changes its inputs in place, each call runs on a copy of its set
        # (child._set_inputs). (Kept outputs no longer hold on to their calls' sets, since 2026-12-05: each had
        # kept alive a set that a later fresh call replaced, up to one per fresh call of a batch.)
        pinned = i_b if keep >= 2 else 0
        sol = w_b + max(peak + poison, k * i_b + pinned + max(keep * o_b, (keep - 1) * o_b + poison) + temps)
        # The parent: a solution's output at a time (the reference's are mapped from their files, which are
        # page cache on a disk, memory on tmpfs), and the trials' expected outputs when they are kept.
        parent = o_b + (n_trials * o_b if expected == "memory" else 0)
        files = 2 * o_b if tmpfs_work else 0  # the two output files being read, when the work base is tmpfs
        # (The host's share stays counted: the reference's outputs still come through files, and so do the
        # solution's where its child could not map the slot.)
        lent = lent_outputs * o_b if not cpu and expected == "on_demand" else 0
        out = {"reference_child": ref + (CHILD_BASE_BYTES if cpu else 0),
               "solution_child": sol + (CHILD_BASE_BYTES if cpu else 0)}
        if cpu:
            out["host"] = ref + sol + 2 * CHILD_RSS_BYTES + parent + files
        else:
            # On a GPU the children's tensors are on the device; the parent compares there (both outputs).
            out["device"] = ref + sol + 2 * o_b + lent + 3 * CUDA_PROCESS_BYTES
            out["host"] = parent + files
        return out

    host_free_b = host.get("free")
    gpu_free_b = gpu.get("free")

    def over_limit(n: dict[str, int]) -> list[tuple[str, int, int]]:
        return [(who, n[key], limit) for who, key, limit in (("the reference's", "reference_child", ref_limit),
                                                              ("the solution's", "solution_child", sol_limit))
                if limit is not None and n[key] > limit]

    def fits(n: dict[str, int]) -> bool:
        if over_limit(n):
            return False
        if host_free_b is not None and n["host"] > USABLE_SHARE * host_free_b:
            return False
        if "device" in n and gpu_free_b is not None and n["device"] > USABLE_SHARE * gpu_free_b:
            return False
        return True

    k, keep = max(1, sets_wanted), max(MIN_KEEP, keep_wanted)
    while not fits(needs(k, keep)) and k > 1:
        k -= 1
    while not fits(needs(k, keep)) and keep > MIN_KEEP:
        keep -= 1
    # The goal on a GPU: at most about GOAL_RATIO x the reference's own footprint, for footprints that matter, beside
    # the processes and the children's parameters, which no plan can spare. More sets and longer batches buy
    # little once a call moves gigabytes: they go first.
    goal = GOAL_RATIO * peak + 3 * CUDA_PROCESS_BYTES + 2 * w_b
    while not cpu and peak >= GiB and needs(k, keep)["device"] > goal and (k > 1 or keep > MIN_KEEP):
        if k > 1:
            k -= 1
        else:
            keep -= 1
    n = needs(k, keep)
    ok = fits(n)
    # The reserve faults in a batch's outputs, the poison block and two more outputs once more: only where twice
    # the solution's timing memory fits in its limit.
    reserve = cpu and 2 * n["solution_child"] + 2 * o_b <= (sol_limit or 1 << 62)
    result = Plan(ok, k, keep, expected, reserve, footprint, n,
                  {"host": host, **({"device": gpu} if device == "cuda" else {}),
                   "child_limits": {"reference": ref_limit, "solution": sol_limit}})
    if not ok:
        result.message = _refusal(device, footprint, n, host_free_b, gpu_free_b, over_limit(n), limit_notes)
    return result


def solution_address_space(p: Plan, floor: int, ceiling: int) -> int:
    """The solution child's address-space limit from the plan before its trials: SOLUTION_LIMIT_MARGIN times what
    the plan counts for it, at least `floor` (KERNELHUB_CHILD_MEMORY_GB's default), at most `ceiling` (the host's
    memory: session.address_space_ceiling)."""
    return max(floor, min(ceiling, int(SOLUTION_LIMIT_MARGIN * p.needs.get("solution_child", 0))))


def _refusal(device: str, fp: dict[str, Any], n: dict[str, int], host_free_b: int | None, gpu_free_b: int | None,
             over: list[tuple[str, int, int]],
             limit_notes: tuple[str, str] = (FIXED_LIMIT_NOTE, FIXED_LIMIT_NOTE)) -> str:
    what = (f"inputs {_gib(fp['input_bytes'])}, output {_gib(fp['output_bytes'])}, the reference's own peak "
            f"{_gib(fp['peak_bytes'])} ({'measured' if fp['source'] != 'meta' else 'estimated from the shapes'})"
            + (f", parameters {_gib(fp['param_bytes'])} in each process" if fp.get("param_bytes") else ""))
    short = []
    for who, need, limit in over:
        note = limit_notes[0] if who == "the reference's" else limit_notes[1]
        short.append(f"{who} process needs {_gib(need)} of address space, over its limit of {_gib(limit)} ({note})")
    if host_free_b is not None and n["host"] > USABLE_SHARE * host_free_b:
        short.append(f"it needs {_gib(n['host'])} of host memory, {_gib(host_free_b)} is free, of which a plan may "
                     f"take {USABLE_SHARE:.0%} ({_gib(USABLE_SHARE * host_free_b)})")
    if "device" in n and gpu_free_b is not None and n["device"] > USABLE_SHARE * gpu_free_b:
        short.append(f"it needs {_gib(n['device'])} of GPU memory, {_gib(gpu_free_b)} is free, of which a plan may "
                     f"take {USABLE_SHARE:.0%} ({_gib(USABLE_SHARE * gpu_free_b)})")
    return (f"the problem does not fit in this {'GPU' if device == 'cuda' else 'machine'}'s memory, even with one "
            f"timing input set and two checked outputs per batch: {'; '.join(short)} ({what}). Make the problem's "
            "inputs smaller, or run it on a runner with more memory"
            + ((" (or raise KERNELHUB_CHILD_MEMORY_GB where the host has it)"
                if all(note == FIXED_LIMIT_NOTE for note in limit_notes) else
                " (or set KERNELHUB_CHILD_MEMORY_GB where the host has the memory)") if over else ""))
