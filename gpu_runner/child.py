"""The harness that runs inside a sandboxed child: `python -m gpu_runner.child <role> <fd>`.

Roles: `solution` (untrusted: imports the submitted ModelNew under the anti-cheat guards), `eager` and
`compile` (trusted: the problem's Model, as is or through torch.compile; they compute expected outputs and
time the baselines). The parent drives every step over the channel on <fd>; this process decides nothing.

Order in the solution role, which matters: lock the sandbox down, capture the references the harness times
and synchronises with, import the problem and build the reference parameters, redirect extension builds to
the parent, install the process guards, and only then import the solution.
"""

from __future__ import annotations

import collections
import os
import sys
import types
from typing import Any

from gpu_runner import config


def main() -> None:
    role, fd = sys.argv[1], int(sys.argv[2])
    from gpu_runner.heap import keep_freed_memory

    # Before torch allocates anything: freed blocks stay in the heap, so the harness's cost per call is the same
    # in every child (heap.py).
    heap_threshold = keep_freed_memory()
    lockdown_result: dict = {}
    if os.environ.get("KERNELHUB_LOCKDOWN"):
        from gpu_runner.sandbox import lockdown

        lockdown_result = lockdown(os.environ["KERNELHUB_LOCKDOWN"])
    import socket

    from gpu_runner.protocol import Channel

    channel = Channel(socket.socket(fileno=fd))
    harness = Harness(channel, role, lockdown_result)
    harness.heap_threshold = heap_threshold
    harness.serve()


MAX_AWAKE_S = 2.0  # the longest a request may keep its child polling for the next one

# The cache flush before each timed call on a GPU: at least Triton's do_bench's (a 256 MiB buffer, zeroed), and
# twice the L2 where that is larger. While the GPU writes it, the host launches forward: host work in forward
# shorter than the flush is outside the window, as in a plain do_bench or KernelBench timing.
CUDA_FLUSH_MIN_BYTES = 256 << 20


def cuda_flush_bytes(l2_bytes: int) -> int:
    return max(2 * int(l2_bytes), CUDA_FLUSH_MIN_BYTES)


# The host's head start on a GPU (Harness._head_start_us). A plain event timing gives the host the flush's
# duration (tens of microseconds on an H200) to launch forward before the start event runs; the evaluator's
# process pays more host time in forward than a plain one (the guard's entry and exit, the harness's work between
# calls, a child woken for each request), and what exceeded the flush fell inside the window: on the H200
# (2026-12-04) honest solutions of 70-140 us read 1.22-1.25x their plain-event time. So, after the flush, the GPU
# also waits (a spin kernel) for the harness's share of that host time: how much longer the side's calls take to
# launch forward in the timing loop than in a tight loop of plain timed calls in the same process
# (Harness._measure_tight, after the warm-up). The side's own host time, which a plain timing carries beyond the
# flush, stays in the window (torch.compile's launch on a short kernel, a forward that launches many kernels):
# on every side alike (eager, compile, solution). The clock audit's null call spins as many GPU cycles as the
# solution's call it is compared with said it did (the child's word, bounded): the GPU's idle time is then the
# harness's on both sides. Capped: host work hidden this way, and what a child could misstate to the audit, is
# bounded by HEAD_START_MAX_US per call (plus the flush); the back-to-back rule (work_outside_timer) sees the host
# time on the parent's clock. Work that forward leaves on another stream cannot run during the spin (one hardware
# queue per child, sandbox.CUDA_CONNECTIONS_VAR) and cannot end after the end event unseen (the drain, below).
# KERNELHUB_HEAD_START_MAX_US sets the cap (0 turns it off; the parent and every child read it alike).
HEAD_START_VAR = "KERNELHUB_HEAD_START_MAX_US"
HEAD_START_MAX_US = float(config.setting("head_start_max_us"))
# The drain (gpu_runner/drain.py, KERNELHUB_WINDOW_DRAIN): after forward, before the end event, a kernel that ends
# only once every stream's work has; its cost, measured by the trusted reference (op_tail_calibrate), comes off
# every window in the parent. On with the head start (KERNELHUB_WINDOW_DRAIN=0 turns it off): while the GPU spins,
# the host has time to queue a side stream's kernel after forward's, and without the drain what such a kernel left
# running past the end event was charged only beyond the tail's allowance (docs/EVALUATOR.md, "The timed window").
WINDOW_DRAIN = bool(config.setting("window_drain"))
# The calls that measure the drain's cost: after a spin of this many GPU cycles (the host then has queued the start
# event, the drain and the end event before the GPU reaches them, as in a timed call with the head start), a kernel
# of DRAIN_CALIBRATION_KERNEL_CYCLES, with the drain after it or not. After a kernel rather than in an empty window:
# on the H200 (2026-12-05 03:05) a cost measured in empty windows left a 3 us add's eager time 1.2 us above plain
# events, and the drain's own benchmark showed 0.3-1.2 us more after a kernel than in an empty window.
DRAIN_CALIBRATION_SPIN_CYCLES = 200_000
DRAIN_CALIBRATION_KERNEL_CYCLES = 2_000
HEAD_START_MEASURED_CAP_US = 300.0  # the cap of the H200 runs of 2026-12-02 and -04 (the whole host time covered)
HEAD_START_SAMPLES = 32  # the recent unrecorded calls whose host time sets it
# The tight loop that the head start's excess is measured against (Harness._measure_tight): plain timed calls one
# after another, the first few left out, within a small budget of time.
TIGHT_CALLS, TIGHT_WARMUP, TIGHT_MAX_S = 32, 4, 0.5
# The null call spins as many GPU cycles as the solution's call did (its child's word), at most the cap's worth at
# this process's own rate and a quarter more: both measure the rate at their highest clock (_spin_rate).
HEAD_START_CYCLES_SLACK = 1.25


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of a sorted, non-empty list, by rank (the head start's percentiles)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def busy_union_us(intervals: list[tuple[float, float]]) -> float:
    """How long at least one of the intervals (start, end) was running: their union's length, so that work on
    several streams at once counts once (a sum would count it as often as it overlaps)."""
    total, reach = 0.0, None
    for start, end in sorted((a, b) for a, b in intervals if b > a):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _device_busy_us(prof: Any) -> float | None:
    """The union of the profiled device activities' intervals, in microseconds: how long the GPU was doing the
    calls' work, however many streams it ran on. None where the profiler gave no device events (or this torch
    names them otherwise): the figure is a cross-check beside the event time, never needed."""
    try:
        from torch.autograd import DeviceType

        spans = [(float(e.time_range.start), float(e.time_range.end)) for e in prof.events()
                 if getattr(e, "device_type", None) == DeviceType.CUDA]
        return busy_union_us(spans) or None
    except Exception:  # noqa: BLE001 - a missing cross-check, not a failed evaluation
        return None


class HarnessError(Exception):
    def __init__(self, kind: str, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.rule = kind, message, rule


class Harness:
    def __init__(self, channel, role: str, lockdown_result: dict) -> None:
        import gc
        import json
        import math
        import time
        import traceback

        import torch

        self.channel = channel
        self.role = role
        self.lockdown_result = lockdown_result
        # References captured before any solution code exists; the harness uses only these.
        self.torch = torch
        self.perf = time.perf_counter
        self.monotonic = time.monotonic
        self.save = torch.save
        self.empty = torch.empty
        self.manual_seed = torch.manual_seed
        self.no_grad = torch.no_grad
        self.is_tensor_type = torch.Tensor
        self.strided = torch.strided
        self.isinstance = isinstance
        self.type = type
        self.json = json
        self.math = math
        self.gc_collect = gc.collect
        self.format_exc = traceback.format_exc
        self.cuda_sync = torch.cuda.synchronize
        self.Event = torch.cuda.Event
        self.cuda_spin: Any = getattr(torch.cuda, "_sleep", None)  # a kernel that spins for a number of GPU cycles
        self.spin_cycles_per_us = 0.0  # measured in op_load on CUDA; 0: no head start
        self.drain: Any = None  # gpu_runner.drain.Drain where WINDOW_DRAIN is on (CUDA)
        # Host time in forward of recent unrecorded calls: the model's, and the null call's (op_null_call).
        self.host_recent: dict[bool, collections.deque] = {
            own: collections.deque(maxlen=HEAD_START_SAMPLES) for own in (True, False)}
        # The model's host time in forward in a tight loop of plain timed calls (_measure_tight), sorted; [] until then.
        self.host_tight: list[float] = []
        self.head_starts: list[int] = []  # the head start of each timed call of the current request, in GPU cycles
        self.guards: Any = None
        self.null_guards: Any = None
        self.phases_us: dict[str, float] = {}
        self.batch_outputs: list = []
        self.heap_threshold = 0  # set by main(): heap.keep_freed_memory's mmap threshold (0: not in force)
        self.policy: dict = {}
        self.model: Any = None
        self.problem: Any = None
        self.device = "cpu"
        self.sets: list[list] = []
        self.copy_sets = False
        self.flush_buf: Any = None
        self.poison_bytes = 0
        self.builds = 0
        self.awake_until = 0.0  # serve() polls without sleeping until then (a request's stay_awake_s)
        # The device memory the parent lends for outputs (gpu_runner/ipc.py; op_ipc_slot), None: files.
        from gpu_runner import ipc

        self.ipc = ipc
        self.close_fd = os.close
        self.slot: Any = None
        if role in ("solution", "eager"):
            # Imported now, before the job arrives (a pre-started child waits here, gpu_runner/warm.py): entering
            # the guards' dispatch mode imports torch._dynamo lazily, seconds of work that would fall in `load`.
            # The trusted reference enters it too, for the clock audit's null call under the solution's guard
            # (op_warm_audit): 5.4 s of a 9.9 s evaluation whose processes had been started ahead, on an H100
            # (2026-12-05 18:02), paid while the solution's trials waited for it. After the references above are
            # captured, as before; nothing here initialises CUDA.
            import torch._dynamo  # noqa: F401
        if role == "solution":
            import torch.utils.cpp_extension  # noqa: F401

    # ----- the loop -----
    def serve(self) -> None:
        while True:
            try:
                if self.awake_until > self.monotonic():
                    self.channel.spin_until_readable(self.awake_until)
                msg = self.channel.recv()
            except Exception:  # noqa: BLE001 - the parent went away: nothing left to do
                os._exit(0)
            op = msg.get("op")
            if op == "exit":
                self.channel.send({"ok": True})
                self.channel.close()
                os._exit(0)
            handler = getattr(self, f"op_{op}", None)
            if self.slot is not None:
                self.slot.cursor = 0  # a request's saves fill the slot from its start (the parent read the last's)
            try:
                if handler is None:
                    raise HarnessError("internal", f"unknown op {op!r}")
                reply = handler(msg) or {}
                if msg.get("quiesce") and self.device != "cpu":
                    # The parent stops this process once it has the reply (another evaluation may time on this GPU
                    # next): every kernel it queued, on any stream, has ended first. One that never ends holds the
                    # reply back until the request's deadline, and the process is killed with it.
                    self.cuda_sync()
                reply["ok"] = True
            except HarnessError as e:
                reply = {"ok": False, "kind": e.kind, "message": e.message, "rule": e.rule}
            except Exception as e:  # noqa: BLE001 - whatever the solution raised is reported, not fatal
                reply = self._error_reply(e)
            self._stay_awake(msg.get("stay_awake_s"))
            self.channel.send(reply)

    def _stay_awake(self, seconds: Any) -> None:
        """A request may say that the next one follows within `seconds` (timing.AWAKE_S: timed calls and the clock
        audit's null calls on a GPU): until then serve() waits for it polling, not asleep. A thread woken from
        sleep by the next request starts its work on a core that has gone idle: on the H200 host a 1-kernel
        forward timed one request at a time took 56 us against 27 us awake and 3 us in a plain loop
        (benchmarks/forward_host_cost.py, docs/BENCHMARKS.md)."""
        try:
            wait = min(MAX_AWAKE_S, max(0.0, float(seconds or 0.0)))
        except (TypeError, ValueError):
            wait = 0.0
        self.awake_until = self.monotonic() + wait if wait else 0.0

    def _error_reply(self, e: BaseException) -> dict:
        name = self.type(e).__name__
        if name == "GuardViolation":
            findings: list[dict] = self.guards.integrity_report() if self.guards else []
            rule = findings[-1]["rule"] if findings else "anti_cheat"
            return {"ok": False, "kind": "rejected", "message": str(e), "rule": rule}
        tb = self.format_exc()
        lines = tb.strip().splitlines()
        return {"ok": False, "kind": "runtime_error", "message": "\n".join(lines[-12:])[-3000:]}

    # ----- loading -----
    def _import_file(self, name: str, path: str):
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    def op_load(self, msg: dict) -> dict:
        torch = self.torch
        self.device = msg["device"]
        self.policy = msg.get("policy") or {}
        seed = int(msg["seed"])
        if msg.get("memory_bytes") is not None:
            self._limit_address_space(int(msg["memory_bytes"]))
        if msg.get("build_only"):
            return self._load_for_builds(msg, seed)
        # Full fp32 on both sides: a TF32 reference would loosen what a solution must match.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        # Inference only, for the whole process: set before the guards record torch's global state.
        torch.set_grad_enabled(False)
        if self.device == "cuda":
            if not torch.cuda.is_available():
                raise HarnessError("internal", "CUDA is not available in the evaluation process")
            torch.cuda.init()
            props = torch.cuda.get_device_properties(0)
            # Written before each timed call: evicts the previous call's data from the L2 (cuda_flush_bytes).
            self.flush_buf = torch.empty(cuda_flush_bytes(getattr(props, "L2_cache_size", 50 << 20)),
                                         dtype=torch.uint8, device="cuda")
            self.spin_cycles_per_us = self._spin_rate() if HEAD_START_MAX_US > 0 else 0.0
            if WINDOW_DRAIN:
                from gpu_runner.drain import Drain, DrainError

                try:
                    self.drain = Drain(torch)
                except DrainError as e:
                    raise HarnessError("internal", f"KERNELHUB_WINDOW_DRAIN is on but {e}") from None
        else:
            # A CPU's last-level cache is often too large to flush per call; this evicts the private L1/L2.
            self.flush_buf = torch.empty(16 << 20, dtype=torch.uint8)
        self.problem = self._import_file("kernelhub_problem", msg["problem_file"])
        self.manual_seed(seed)
        init_inputs = list(self.problem.get_init_inputs())
        self.manual_seed(seed)
        reference = self.problem.Model(*init_inputs)
        info = self._versions()
        info["lockdown"] = self.lockdown_result
        if self.role == "solution":
            state = {k: v.detach().clone() for k, v in reference.state_dict().items()}
            del reference
            self._redirect_builds()
            try:
                from gpu_runner import guards
            except ImportError:
                guards = None  # type: ignore[assignment]
            info["guards"] = guards is not None
            if guards is not None:
                guards.install_process_guards()
                # The functions themselves, captured now: the solution can reach the module through sys.modules
                # and replace its attributes, but not these references.
                self.guards = types.SimpleNamespace(forward_guard=guards.forward_guard,
                                                    integrity_report=guards.integrity_report,
                                                    last_call_recorded=guards.last_call_recorded)
            solution = self._import_solution(msg)
            if not hasattr(solution, "ModelNew"):
                raise HarnessError("compile_error", "the solution defines no ModelNew class")
            self.manual_seed(seed)
            with self.no_grad():
                model = solution.ModelNew(*init_inputs)
            own = model.state_dict()
            matching = {k: v for k, v in state.items() if k in own and tuple(own[k].shape) == tuple(v.shape)}
            model.load_state_dict(matching, strict=False)
            info["parameters_loaded"] = len(matching)
            info["builds"] = self.builds
        else:
            model = reference
            if self.role == "compile":
                model = torch.compile(model)
        # Used as constructed, like KernelBench (which never calls eval()): a module in training mode stays in it.
        self.model = model.to(self.device) if hasattr(model, "to") else model
        if self.role != "solution":
            # What the Model's parameters and buffers hold: each child has its own copy, which the memory plan counts.
            info["param_bytes"] = self._param_bytes(self.model)
        return {"info": info}

    @staticmethod
    def _limit_address_space(nbytes: int) -> None:
        """The solution's address-space limit on the CPU track, set by the harness before the solution is imported:
        the memory plan's figure (context.load_fields). Soft and hard alike, never above the hard limit the process
        started with; without CAP_SYS_RESOURCE nothing in this process can raise it again."""
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            nbytes = min(nbytes, hard)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
        except (OSError, ValueError) as e:
            raise HarnessError("internal", f"could not set the address-space limit to {nbytes} bytes: {e}") from None

    def _param_bytes(self, model) -> int:
        """The bytes of the storages under a Module's parameters and buffers, each storage once (shared and
        expanded tensors); lazy parameters (not yet materialised) count nothing. 0 where they cannot be read."""
        torch = self.torch
        try:
            tensors = [*model.parameters(), *model.buffers()]
            storages = {}
            for t in tensors:
                if torch.nn.parameter.is_lazy(t):
                    continue
                storage = t.untyped_storage()
                storages[(storage.data_ptr(), t.device.type)] = storage.nbytes()
            return sum(storages.values())
        except Exception:  # noqa: BLE001 - a Model without the usual Module methods: the plan counts none
            return 0

    def _import_solution(self, msg: dict):
        """The solution's module, its builds redirected to the parent already."""
        extension = msg.get("extension")
        if extension:
            # A CUDA Agent workdir (gpu_runner/workdir.py): the parent builds its sources, from its own copy, into
            # the one extension model_new.py imports by name. Loaded under the guards, like any solution code,
            # and put in sys.modules before model_new.py runs, so that its `import cuda_extension` finds it.
            sys.modules[str(extension["name"])] = self._build_and_import({"workdir": True,
                                                                          "name": str(extension["name"])})
        try:
            return self._import_file("kernelhub_solution", msg["solution_file"])
        except SyntaxError as e:
            raise HarnessError("compile_error", f"the solution is not valid Python: line {e.lineno}: {e.msg}") \
                from None

    def _load_for_builds(self, msg: dict, seed: int) -> dict:
        """A build slot's load (gpu_runner/prebuild.py): no GPU, no reference, no guards, nothing timed. The solution
        is imported, so that its load_inline/load calls reach the parent, which builds into the host's cache; then
        ModelNew is constructed on the CPU where it can be, for a solution that builds in its constructor. What
        fails past the import is not an error here: the evaluation meets it again, with the GPU."""
        self._redirect_builds()
        solution = self._import_solution(msg)
        constructed = False
        if hasattr(solution, "ModelNew"):
            try:
                problem = self._import_file("kernelhub_problem", msg["problem_file"])
                self.manual_seed(seed)
                with self.no_grad():
                    solution.ModelNew(*list(problem.get_init_inputs()))
                constructed = True
            except HarnessError:
                raise
            except Exception:  # noqa: BLE001 - it may need the GPU this process has not got
                pass
        return {"info": {"builds": self.builds, "constructed": constructed}}

    def _versions(self) -> dict:
        torch = self.torch
        info: dict = {"torch": torch.__version__, "cuda_runtime": torch.version.cuda}
        from importlib import metadata

        # From the installed metadata: importing CuPy or Triton only to read a version costs seconds.
        for name, dists in (("triton", ("triton",)), ("numpy", ("numpy",)),
                            ("cupy", ("cupy", "cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x"))):
            info[name] = None
            for dist in dists:
                try:
                    info[name] = metadata.version(dist)
                    break
                except metadata.PackageNotFoundError:
                    continue
        if torch.backends.cudnn.is_available():
            info["cudnn"] = torch.backends.cudnn.version()
        if self.device == "cuda":
            info["device_name"] = torch.cuda.get_device_name(0)
        return info

    def _redirect_builds(self) -> None:
        """Make load_inline/load ask the parent to build, then import the library it hands back."""
        import inspect

        import torch.utils.cpp_extension as cpp

        import_library = cpp._import_module_from_library
        original_inline, original_load = cpp.load_inline, cpp.load
        sig_inline, sig_load = inspect.signature(original_inline), inspect.signature(original_load)
        channel, harness = self.channel, self

        def request(req: dict):
            channel.send({"op": "build", "request": req})
            reply = channel.recv()
            if not reply.get("ok"):
                raise HarnessError("compile_error", str(reply.get("message", "the build failed")))
            harness.builds += 1
            path = os.path.join(os.getcwd(), str(reply["dir"]))
            return import_library(req["name"], path, req.get("is_python_module", True))

        def load_inline(*args, **kwargs):
            bound = sig_inline.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            req = {k: a.get(k) for k in ("name", "cpp_sources", "cuda_sources", "functions", "extra_cflags",
                                          "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                          "with_cuda", "is_python_module")}
            return request(req)

        def load(*args, **kwargs):
            bound = sig_load.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            sources = a.get("sources") or []
            sources = [sources] if isinstance(sources, str) else list(sources)
            files: dict[str, str] = {}
            for src in sources:
                folder = os.path.dirname(os.path.abspath(src))
                # headers beside the sources travel with them
                for fname in os.listdir(folder):
                    if fname.endswith((".h", ".hpp", ".cuh", ".inl")):
                        with open(os.path.join(folder, fname)) as f:
                            files[fname] = f.read()
                with open(src) as f:
                    files[os.path.basename(src)] = f.read()
            req = {k: a.get(k) for k in ("name", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
                                          "extra_include_paths", "with_cuda", "is_python_module")}
            req["files"] = files
            return request(req)

        cpp.load_inline = load_inline
        cpp.load = load
        self._build_and_import = request

    # ----- inputs, calls, outputs -----
    def _make_inputs(self, seed: int) -> list:
        self.manual_seed(seed)
        if self.device == "cuda":
            # Generated on the GPU (the same in every child on this device model): generating gigabytes
            # of inputs on the CPU, again and again, was most of an evaluation's time.
            with self.torch.device("cuda"):
                inputs = list(self.problem.get_inputs())
        else:
            inputs = list(self.problem.get_inputs())
        return [x.detach().to(self.device) if self.isinstance(x, self.torch.Tensor) else x for x in inputs]

    def _set_inputs(self, k: int) -> list:
        """Input set k as a call gets it: a fresh copy where a forward changes its inputs in place."""
        if not self.copy_sets:
            return self.sets[k]
        return [x.clone() if self.isinstance(x, self.torch.Tensor) else x for x in self.sets[k]]

    def _input_prints(self, inputs: list) -> list:
        """What _changed_inputs compares after the call: each tensor input's shape, dtype and sums of its bytes
        read as 64-bit words (all, every third, every seventh from the second), or None for a non-tensor. No
        copy of the inputs: a clone of every input had doubled their memory (a 2 GiB input ran the solution's
        child out of its address space)."""
        torch = self.torch
        prints: list = []
        for x in inputs:
            if not self.isinstance(x, torch.Tensor):
                prints.append(None)
                continue
            raw = x.detach().contiguous().view(-1).view(torch.uint8)
            words = raw.numel() // 8
            sums = []
            try:
                wide = raw[: words * 8].view(torch.int64)
                sums = [int(wide.sum()), int(wide[::3].sum()), int(wide[1::7].sum())]
                raw = raw[words * 8:]
            except RuntimeError:  # a storage offset that is not a multiple of 8 bytes
                pass
            sums.append(int(torch.sum(raw, dtype=torch.int64)) if raw.numel() else 0)
            prints.append((tuple(x.shape), x.dtype, sums))
        return prints

    def _changed_inputs(self, inputs: list, before: list) -> list[int]:
        """Positions of the tensor inputs a call changed in place, by their prints from _input_prints (a value
        written back bit for bit the same is no change; a NaN stays equal to itself)."""
        after = self._input_prints(inputs)
        return [j for j, (b, a) in enumerate(zip(before, after, strict=True)) if b is not None and a != b]

    def _sync(self) -> None:
        if self.device == "cuda":
            self.cuda_sync()

    def _poison(self) -> None:
        """Fill memory the allocator will hand out next with 0xFF bytes (NaN in every float format)."""
        if self.poison_bytes <= 0:
            return
        block = self.empty(self.poison_bytes, dtype=self.torch.uint8, device=self.device)
        block.fill_(0xFF)
        self._sync()
        del block

    def _call(self, inputs: list):
        with self.no_grad():
            if self.guards is not None:
                with self.guards.forward_guard(self.policy):
                    return self._forward(inputs)
            return self._forward(inputs)

    def _forward(self, inputs: list):
        """The model's forward; its host time (inside the guard) is left in forward_host_s."""
        t0 = self.perf()
        out = self.model(*inputs)
        self.forward_host_s = self.perf() - t0
        if HEAD_START_MAX_US > 0 and (self.guards is None or not self.guards.last_call_recorded()):
            self.host_recent[True].append(self.forward_host_s * 1e6)
        return out

    def _spin_rate(self) -> float:
        """GPU cycles per microsecond of the head start's spin kernel, measured with events (0.0: no spin): the
        highest of five readings after 20 million cycles of spinning, so that the clock has left its idle
        frequency. Measured on an idle GPU alone it read low (a trusted process's rate of 2026-12-02 left its
        null call's spins some 170 us short of the solution's and an honest kernel was rejected as forged); the
        null call now spins the solution's cycles (op_null_call), and this rate only turns microseconds into
        cycles and bounds them."""
        if self.cuda_spin is None:
            return 0.0
        try:
            cycles = 2_000_000
            self.cuda_spin(20_000_000)  # loaded, and the clock raised, before it is timed
            rates = []
            for _ in range(5):
                start, end = self.Event(enable_timing=True), self.Event(enable_timing=True)
                start.record()
                self.cuda_spin(cycles)
                end.record()
                end.synchronize()
                us = start.elapsed_time(end) * 1000.0
                if us > 0:
                    rates.append(cycles / us)
        except Exception:  # noqa: BLE001 - a torch without the kernel: no head start, as a plain timing
            return 0.0
        return max(rates, default=0.0)

    def _head_start_us(self, own: bool) -> float:
        """How long the GPU waits after the flush before the start event (HEAD_START_MAX_US), at most the cap.

        The model's calls (own): a fifth more than the harness's share of the host's time in forward, the 90th
        percentile over this process's recent unrecorded calls less the 90th percentile of the tight loop's
        (_measure_tight): where the timing loop launches forward no slower than plain calls do, no head start, and
        the window is a plain timing's. Before the tight loop has run, none. The null call's empty forward (not
        own) has no plain counterpart to set against: a fifth more than its 90th percentile, plus the start
        event's own launch."""
        if not self.spin_cycles_per_us or not self.host_recent[own]:
            return 0.0
        p90 = _quantile(sorted(self.host_recent[own]), 0.9)
        if not own:
            return min(HEAD_START_MAX_US, 1.2 * p90 + 10.0)
        if not self.host_tight:
            return 0.0
        return min(HEAD_START_MAX_US, 1.2 * max(0.0, p90 - _quantile(self.host_tight, 0.9)))

    def _measure_tight(self, inputs: list) -> None:
        """The model's host time in forward in a tight loop (the head start's baseline, _head_start_us): timed
        calls one after another as a plain event timing makes them (flush, start event, forward, end event,
        synchronise), with none of the timing loop's work between them, the solution's inside one entry of its
        guard with the op record off (the guard's hooks on each op stay, its entry and exit do not come between
        the calls). What the timing loop's calls take beyond these is the harness's. Only the child's own word, as
        every head start is: a solution that misstates it gains at most the cap, which bounds host time alone."""
        guard = self.guards.forward_guard({**self.policy, "record_ops": False}) if self.guards is not None else None
        hosts: list[float] = []
        deadline = self.monotonic() + TIGHT_MAX_S
        # (A second no_grad stands in for the guard where there is none: the trusted roles'.)
        with self.no_grad(), (guard if guard is not None else self.no_grad()):
            for i in range(TIGHT_WARMUP + TIGHT_CALLS):
                out, host_us, _, _ = self._window(self.model, inputs, 0)
                del out
                if i >= TIGHT_WARMUP:
                    hosts.append(host_us)
                if self.monotonic() > deadline:
                    break
        self.host_tight = sorted(hosts)

    def _window(self, model, inputs: list, head_cycles: int) -> tuple[object, float, float, float]:
        """One CUDA call between events, as a plain event timing makes it: (output, host time in forward, the
        window, the tail), all in us. The flush is not waited for: while the GPU flushes, and then spins for
        head_cycles, the host records the start and launches forward."""
        start, end = self.Event(enable_timing=True), self.Event(enable_timing=True)
        stream = self.torch.cuda.current_stream()
        self.flush_buf.zero_()
        if head_cycles > 0 and self.cuda_spin is not None:
            self.cuda_spin(head_cycles)
        start.record(stream)
        h0 = self.perf()
        out = model(*inputs)
        if self.drain is not None:
            # Before h1: its launch is host time the head start covers, as forward's own.
            self.drain.launch(stream.cuda_stream)
        h1 = self.perf()
        end.record(stream)
        end.synchronize()
        t0 = self.perf()
        self.cuda_sync()
        tail_us = (self.perf() - t0) * 1e6
        return out, (h1 - h0) * 1e6, start.elapsed_time(end) * 1000.0, tail_us

    def _timed_call(self, inputs: list, model=None, guards=None,
                    head_cycles: int | None = None) -> tuple[object, float, float | None]:
        """One call, timed: (output, the window in us, on CUDA the tail in us).

        The window is what KernelBench and Triton's do_bench time: the cache flush is queued, then events are
        recorded right around forward, with nothing of the harness's between them. The guard's entry and exit,
        the device-wide synchronise and the fingerprints are outside it. The flush is not waited for: while the
        GPU flushes, and then spins for the head start (HEAD_START_MAX_US), the host records the start and
        launches forward, as in a plain event timing.

        No work may escape the window: once the end event has passed, the harness synchronises the whole device.
        How long that takes (the tail) is the synchronise's own cost on an idle device for an honest call, and
        that plus the unfinished work for a call that left kernels running on another stream. The parent adds
        to the window whatever tail exceeds what empty calls measured in the same process (timing.py,
        op_tail_calibrate): every side pays the same, and escaped work is counted.
        (model, guards and head_cycles, the spin in GPU cycles: the trusted roles' null call, op_null_call.)"""
        own = model is None
        model = self.model if model is None else model
        guards = self.guards if guards is None else guards
        with self.no_grad():
            guard = guards.forward_guard(self.policy) if guards is not None else None
            if guard is not None:
                guard.__enter__()
            try:
                if self.device == "cuda":
                    rate = self.spin_cycles_per_us
                    if head_cycles is None:
                        head_cycles = int(self._head_start_us(own) * rate)
                    if rate <= 0.0:
                        head_cycles = 0
                    head_us = head_cycles / rate if rate > 0.0 else 0.0
                    out, host_us, elapsed_us, tail = self._window(model, inputs, head_cycles)
                    tail_us: float | None = tail
                    # The host's time in forward (a diagnostic: where a short kernel's window goes), and the next
                    # calls' head start (calls the op record ran on left out: it costs a millisecond or more).
                    phases = self.phases_us
                    phases["forward_host"] = phases.get("forward_host", 0.0) + host_us
                    phases["head_start"] = phases.get("head_start", 0.0) + head_us
                    self.head_starts.append(head_cycles)
                    if HEAD_START_MAX_US > 0 and (guards is None or not guards.last_call_recorded()):
                        self.host_recent[own].append(host_us)
                else:
                    self.flush_buf.zero_()
                    t0 = self.perf()
                    out = model(*inputs)
                    elapsed_us = (self.perf() - t0) * 1e6
                    tail_us = None
            except BaseException:
                if guard is not None:
                    guard.__exit__(*sys.exc_info())
                raise
            if guard is not None:
                guard.__exit__(None, None, None)
        return out, elapsed_us, tail_us

    def _flatten(self, out, inputs: list) -> tuple[list, list[str], str]:
        """Output tensors in order, what is wrong with them as objects (subclass, layout, aliasing an input), and
        the output's structure: "tensor", "float", "int", "bool", "None", or "(a, b)" for a tuple or list.

        Python numbers become 0-dim tensors (float as float32). The trusted roles' output is taken as it is
        (a problem's Model may return its input or a parameter); the solution's must be plain, new tensors.
        """
        torch = self.torch
        trusted = self.role != "solution"
        problems: list[str] = []
        spans = []
        for x in inputs:
            if self.isinstance(x, torch.Tensor) and x.numel():
                s = x.untyped_storage()
                spans.append((s.data_ptr(), s.data_ptr() + s.nbytes()))
        tensors: list = []

        def leaf(t) -> str:
            i = len(tensors) + len(problems)
            kind = self.type(t)
            if kind in (bool, int, float):
                try:
                    dtype = {bool: torch.bool, int: torch.int64, float: torch.float32}[kind]
                    tensors.append(torch.tensor(t, dtype=dtype))
                except (OverflowError, RuntimeError, ValueError):
                    problems.append(f"output {i} is the {kind.__name__} {t!r}, which does not fit a 64-bit tensor")
                return kind.__name__
            if trusted and self.isinstance(t, torch.Tensor):
                t = t.detach().as_subclass(torch.Tensor)
            if kind is not torch.Tensor and not trusted:
                if self.isinstance(t, (tuple, list)):
                    problems.append(f"output {i} is a {kind.__module__}.{kind.__qualname__}: return a plain tuple")
                    return "?"
                problems.append(f"output {i} is a {kind.__module__}.{kind.__qualname__}, not a plain torch.Tensor")
                return "?"
            if not self.isinstance(t, torch.Tensor):
                problems.append(f"output {i} is a {kind.__module__}.{kind.__qualname__}; outputs are tensors, "
                                "Python numbers, None, or tuples and lists of these")
                return "?"
            if t.layout is not self.strided:
                problems.append(f"output {i} has layout {t.layout}, not a dense strided tensor")
                return "?"
            if t.is_meta or t.device.type != self.device:
                problems.append(f"output {i} is on {t.device}, expected {self.device}")
                return "?"
            if t.numel() and not trusted:
                s = t.untyped_storage()
                lo, hi = s.data_ptr(), s.data_ptr() + s.nbytes()
                if any(lo < b and a < hi for a, b in spans):
                    problems.append(f"output {i} shares memory with an input: return a new tensor")
            tensors.append(t)
            return "tensor"

        def walk(obj, depth: int) -> str:
            if obj is None:
                return "None"
            # The reference may return a named tuple (torch.return_types.max); the solution's own classes are not
            # iterated here, outside the guards.
            if self.type(obj) in (tuple, list) or (trusted and self.isinstance(obj, (tuple, list))):
                if depth >= 8 or len(tensors) + len(obj) > 4096:
                    problems.append("the output nests sequences deeper than 8 or holds over 4096 items")
                    return "?"
                return "(" + ", ".join(walk(x, depth + 1) for x in obj) + ("," if len(obj) == 1 else "") + ")"
            return leaf(obj)

        structure = walk(out, 0)
        # walk refers to itself through its closure: a reference cycle that kept this call's output tensors alive
        # until the next garbage collection (2 GiB more per trial with a 2 GiB output). Broken here.
        walk = None  # type: ignore[assignment]  # noqa: F841
        return tensors, problems, structure

    def _prints(self, tensors: list) -> list[int]:
        """Sums of each of an output's tensors (as _flatten lists them), its bytes read as 64-bit words (all of
        them, and every third one, which a reordering changes): enough to see that an output changed after the
        call. Summing 64-bit words instead of single bytes makes this a memory-speed pass (on a CPU, 2 ms instead
        of 100 ms for 16 MB)."""
        torch = self.torch
        prints: list[int] = []
        for t in tensors:
            raw = t.detach().contiguous().view(-1).view(torch.uint8)
            words = raw.numel() // 8
            try:
                wide = raw[: words * 8].view(torch.int64)
            except RuntimeError:  # a storage offset that is not a multiple of 8 bytes
                prints += [int(torch.sum(raw, dtype=torch.int64)), 0]
                continue
            tail = int(torch.sum(raw[words * 8:], dtype=torch.int64)) if raw.numel() % 8 else 0
            prints += [int(wide.sum()) + tail, int(wide[::3].sum())]
        return prints

    def _save(self, tensors: list, name: str) -> None:
        """The tensors for the parent as file `name`: into the lent slot where they fit (the file then holds the
        marker that says where), else the tensors themselves."""
        if "/" in name or name.startswith("."):
            raise HarnessError("internal", "bad file name")
        marker = self.slot.put(tensors) if self.slot is not None else None
        if marker is not None:
            with open(name, "wb") as f:
                f.write(marker)
            return
        self.save([t.detach().cpu().contiguous() for t in tensors], name)

    def op_ipc_slot(self, msg: dict) -> dict:
        """Map the device memory the parent lends for outputs (gpu_runner/ipc.py); where that fails, say why: the
        parent then reads files."""
        fd = None
        if msg.get("kind") == "fd":
            # A capability slot: its descriptor follows the request on the channel; taken first, whatever happens
            # next, so that the channel stays in step.
            fds = self.channel.recv_fds(deadline=self.monotonic() + 30)
            fd = fds[0] if fds else None
            for extra in fds[1:]:
                self.close_fd(extra)
        if self.device != "cuda":
            if fd is not None:
                self.close_fd(fd)
            return {"mapped": False, "why": "not on a CUDA device"}
        try:
            self.slot = self.ipc.Mapped(msg, fd=fd)
        except Exception as e:  # noqa: BLE001 - no IPC on this host: files serve
            return {"mapped": False, "why": f"{self.type(e).__name__}: {str(e)[:300]}"}
        return {"mapped": True}

    def op_ping(self, msg: dict) -> dict:
        return {}

    def op_trial(self, msg: dict) -> dict:
        inputs = self._make_inputs(int(msg["seed"]))
        before = self._input_prints(inputs)
        self.poison_bytes = int(msg.get("poison_bytes", 0))
        self._poison()
        if msg.get("rng_seed") is not None:
            # A second run of the reference from another random state: a forward that draws random numbers differs.
            self.manual_seed(int(msg["rng_seed"]))
        # The float64 run (gpu_runner/precision.py) starts from the model as it was before this call.
        wants_fp64 = self.role == "eager" and msg.get("fp64_file") is not None
        model64 = self._float64_copy() if wants_fp64 else None
        out = self._call(inputs)
        self._sync()
        # The memory plan's measure of the reference's own footprint is read before the float64 run adds its own.
        memory_after_call = self.op_memory({}) if wants_fp64 else None
        changed = self._changed_inputs(inputs, before)
        tensors, problems, structure = self._flatten(out, inputs)
        input_bytes = sum(x.numel() * x.element_size() for x in inputs if self.isinstance(x, self.torch.Tensor))
        output_bytes = sum(t.numel() * t.element_size() for t in tensors)
        if not problems:
            self._save(tensors, msg["file"])
        fp64: dict = {}
        if wants_fp64:
            # The inputs as they were before the call: the same seed draws them again where the forward changed
            # them in place (no copy of every input is kept: gpu_runner/memory_plan.py).
            original = self._make_inputs(int(msg["seed"])) if changed else inputs
            fp64 = self._float64_outputs(model64, original, tensors, structure, msg)
            del original
        del before, model64
        if self.role != "solution":
            # The null call's output (op_null_call): the same tensors, shapes, dtypes and strides as a real call's.
            self.null_template = out
        del out, tensors
        # Inputs the parent may perturb between timed calls: floating, contiguous, at least two elements.
        perturbable = [[j, x.numel()] for j, x in enumerate(inputs)
                       if self.isinstance(x, self.torch.Tensor) and x.is_floating_point() and x.is_contiguous()
                       and x.numel() >= 2]
        if msg.get("release"):
            # A trial beside memory the plan counts elsewhere (the kernel time's, after the timing): its input set
            # leaves the caching allocator too, not only the Python objects.
            del inputs
            self._release()
        return {"problems": problems, "structure": structure, "input_bytes": input_bytes,
                "output_bytes": output_bytes, "perturbable": perturbable, "changed_inputs": changed,
                "memory_after_call": memory_after_call, **fp64}

    def _float64_copy(self) -> Any:
        """A float64 copy of the reference model (its floating parameters and buffers), or the reason there is none."""
        import copy

        try:
            return copy.deepcopy(self.model).double()
        except Exception as e:  # noqa: BLE001 - out of memory, or a module that cannot be copied: no precision check
            self._release()
            return f"the model could not be copied to float64 ({self.type(e).__name__}: {str(e)[:200]})"

    def _release(self) -> None:
        self.gc_collect()
        if self.device == "cuda":
            self.torch.cuda.empty_cache()

    def _float64_outputs(self, model64, inputs: list, tensors32: list, structure: str, msg: dict) -> dict:
        """The trusted reference run again in float64 on the same inputs (as they were before the call), its
        outputs saved beside the float32 ones: {"fp64": True} or {"fp64": False, "fp64_note": why not}.
        Only for float32 outputs (None in the list elsewhere); for an output over precision.SAMPLE_ABOVE
        elements only the values at precision.sample_index's positions. Never fails the trial: no memory, an op
        without a float64 kernel or a model that casts back to float32 leave the problem without the check."""
        torch = self.torch
        from gpu_runner import precision

        if self.isinstance(model64, str):
            return {"fp64": False, "fp64_note": model64}
        if not any(t.dtype == torch.float32 for t in tensors32):
            return {"fp64": False, "fp64_note": "no float32 output"}
        note = self._float64_memory_note(model64, inputs, tensors32)
        if note:
            return {"fp64": False, "fp64_note": note}
        default_dtype = torch.get_default_dtype()
        try:
            wide = [x.detach().to(torch.complex128 if x.is_complex() else torch.float64)
                    if self.isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()) else x
                    for x in inputs]
            # Tensors the forward makes itself (torch.zeros, torch.arange(..., dtype=float)) in float64 too.
            torch.set_default_dtype(torch.float64)
            try:
                with self.no_grad():
                    out64 = model64(*wide)
                self._sync()
            finally:
                torch.set_default_dtype(default_dtype)
            tensors64, _, structure64 = self._flatten(out64, wide)
            if structure64 != structure or len(tensors64) != len(tensors32):
                return {"fp64": False, "fp64_note": f"the float64 run returned {structure64}, not {structure}"}
            seed = int(msg.get("sample_seed", 0))
            saved: list = []
            for j, (t32, t64) in enumerate(zip(tensors32, tensors64, strict=True)):
                if t32.dtype != torch.float32:
                    saved.append(None)
                    continue
                if t64.dtype != torch.float64 or tuple(t64.shape) != tuple(t32.shape):
                    return {"fp64": False, "fp64_note": f"output {j} of the float64 run is {t64.dtype} "
                                                        f"{tuple(t64.shape)}: the model does not follow its "
                                                        "parameters' and inputs' dtype"}
                index = precision.sample_index(t64.numel(), seed + j)
                saved.append(precision.sampled(t64, index).detach().cpu().clone() if index is not None
                             else t64.detach().cpu().contiguous())
            del out64, tensors64, wide
            self.save(saved, msg["fp64_file"])
            return {"fp64": True}
        except Exception as e:  # noqa: BLE001 - no float64 kernel, no memory: the check is skipped, said so
            return {"fp64": False, "fp64_note": f"the reference failed in float64 ({self.type(e).__name__}: "
                                                f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''})"}
        finally:
            self._release()

    def _float64_memory_note(self, model64, inputs: list, tensors32: list) -> str:
        """Why the float64 run should not be tried here for lack of memory ("" when it may be): it needs float64
        copies of the inputs and outputs, and room for intermediates (counted as the outputs twice more)."""
        torch = self.torch
        need = sum(2 * x.numel() * 8 for x in inputs if self.isinstance(x, torch.Tensor) and x.is_floating_point())
        need += sum(4 * t.numel() * 8 for t in tensors32 if t.is_floating_point())
        if self.device == "cuda":
            free, _ = torch.cuda.mem_get_info()
            free += torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        else:
            import resource

            limit = resource.getrlimit(resource.RLIMIT_AS)[0]
            frees = []
            if limit != resource.RLIM_INFINITY:
                with open("/proc/self/statm") as f:
                    frees.append(limit - int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE"))
            # The host's memory too (MemAvailable, the cgroup's room): a trusted child's limit can be the host's
            # whole memory (session.limits), and the memory plan does not count this run.
            from gpu_runner import memory_plan

            host = memory_plan.host_free().get("free")
            if host is not None:
                frees.append(host)
            if not frees:
                return ""
            free = min(frees)
        if need > free:
            return (f"not enough {'device ' if self.device == 'cuda' else ''}memory for the float64 run "
                    f"(about {need / 2**30:.1f} GiB needed, {max(free, 0) / 2**30:.1f} GiB free)")
        return ""

    def _perturb(self, k: int, change) -> None:
        """Copy one element of input j of set k over another: a new input, same distribution of values; or, for
        ["fresh", seed], a whole new set from the problem's get_inputs (timing.FRESH_ONE_IN)."""
        if not change:
            return
        if change[0] == "fresh":
            self.sets[k] = []  # the old set is freed first: where memory is short, two sets do not fit
            self.sets[k] = self._make_inputs(int(change[1]))
            return
        j, dst, src = (int(v) for v in change)
        flat = self.sets[k][j].view(-1)
        flat[dst] = flat[src]

    def op_replay(self, msg: dict) -> dict:
        """Trusted roles: apply the perturbations the solution's set k went through, then save the output."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        k = int(msg["set"])
        for change in msg["changes"]:
            self._perturb(k, change)
        inputs = self._set_inputs(k)
        out = self._call(inputs)
        self._sync()
        tensors, _, _ = self._flatten(out, inputs)
        self._save(tensors, msg["file"])
        return {}

    def op_prepare_timing(self, msg: dict) -> dict:
        self.sets = []  # sets made before (none in the usual case) go first: one set at a time may be all that fits
        for s in msg["seeds"]:
            self.sets.append(self._make_inputs(int(s)))
        self.copy_sets = bool(msg.get("copy_sets"))
        self._sync()
        return {"reserved_bytes": self._reserve_heap(int(msg.get("reserve_bytes", 0)))}

    def _reserve_heap(self, nbytes: int) -> int:
        """CPU: fault in nbytes of heap once, poisoned, and free it (heap.py keeps it), so that the outputs a timing
        batch keeps for the checks come from memory the process already holds. Otherwise every timed call's
        harness work page-faults in new memory, which the trusted null call of the clock audit, keeping no
        outputs, never does. In blocks under glibc's mmap threshold, so that they stay in the heap. Not on a GPU,
        where the caching allocator grows the same way (docs/ANTICHEAT.md): a reserve of device memory has not
        been tried there. Where the memory is not there, nothing is reserved: the audit is then less fair, never
        wrong about the outputs."""
        if nbytes <= 0 or self.device != "cpu" or not self.heap_threshold:
            return 0
        torch, blocks, done = self.torch, [], 0
        try:
            while done < nbytes:
                size = min(self.heap_threshold // 2, nbytes - done)
                block = self.empty(size, dtype=torch.uint8)
                block.fill_(0xFF)
                blocks.append(block)
                done += size
        except (RuntimeError, MemoryError):  # over the child's address-space limit
            done = 0
        del blocks
        return done

    def op_memory(self, msg: dict) -> dict:
        """Trusted roles: this process's memory now and at its peak (the memory plan's measure of the reference's
        own footprint, gpu_runner/memory_plan.py); "reset" starts a new peak of the CUDA allocator."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        out: dict = {}
        if msg.get("reset"):
            try:  # the peak resident set starts again from now (proc(5), clear_refs)
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        with open("/proc/self/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in ("VmRSS", "VmHWM", "VmSize"):
                    out[key.lower() + "_bytes"] = int(line.split()[1]) * 1024
        if self.device == "cuda":
            cuda = self.torch.cuda
            cuda.synchronize()
            out["cuda_allocated_bytes"] = int(cuda.memory_allocated())
            out["cuda_peak_bytes"] = int(cuda.max_memory_allocated())
            if msg.get("reset"):
                cuda.reset_peak_memory_stats()
        return out

    def op_footprint(self, msg: dict) -> dict:
        """Trusted roles: the bytes of the problem's inputs and of one call's outputs, worked out on PyTorch's meta
        device (shapes and dtypes, no memory), before anything is allocated; None where the problem's code does
        not run there."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        torch = self.torch

        def nbytes(obj) -> int:
            if self.isinstance(obj, torch.Tensor):
                return obj.numel() * obj.element_size()
            if self.isinstance(obj, (list, tuple)):
                return sum(nbytes(x) for x in obj)
            return 0

        try:
            self.manual_seed(int(msg.get("seed", 0)))
            with torch.device("meta"):
                inputs = list(self.problem.get_inputs())
        except Exception as e:  # noqa: BLE001 - a problem that makes its inputs on a named device, say
            return {"input_bytes": None, "output_bytes": None, "why": f"{type(e).__name__}: {e}"[:300]}
        out_bytes = None
        try:
            params = {name: torch.empty_like(t, device="meta")
                      for name, t in [*self.model.named_parameters(), *self.model.named_buffers()]}
            out_bytes = nbytes(torch.func.functional_call(self.model, params, tuple(inputs)))
        except Exception:  # noqa: BLE001 - an op without a meta kernel: the output's size is known after a trial
            pass
        return {"input_bytes": nbytes(inputs), "output_bytes": out_bytes}

    def op_set_outputs(self, msg: dict) -> dict:
        """Trusted roles: the outputs for every timing input set, one file each."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        for k in range(len(self.sets)):
            inputs = self._set_inputs(k)
            out = self._call(inputs)
            self._sync()
            tensors, problems, _ = self._flatten(out, inputs)
            self._save(tensors, f"{msg['prefix']}{k}.pt")
        return {}

    def op_warmup(self, msg: dict) -> dict:
        """Untimed calls before a side's timing; with msg["tight"], on CUDA with the head start on, then its tight
        loop (_measure_tight), whose median host time in forward comes back as tight_host_us (the child's word)."""
        deadline = self.monotonic() + float(msg.get("max_s", 2.0))
        n = 0
        for i in range(int(msg.get("calls", 3))):
            out = self._call(self._set_inputs(i % len(self.sets)))
            self._sync()
            del out
            n += 1
            if self.monotonic() > deadline:
                break
        tight = None
        if msg.get("tight") and self.device == "cuda" and HEAD_START_MAX_US > 0 and self.spin_cycles_per_us > 0:
            self._measure_tight(self._set_inputs(0))
            tight = _quantile(self.host_tight, 0.5) if self.host_tight else None
        return {"calls": n, "tight_host_us": tight}

    def op_time_batch(self, msg: dict) -> dict:
        """Timed calls on input sets msg["order"]; the parent sends one call per request (timing.py), so that its
        own clock sees each call, and "append" keeps the outputs of the batch's earlier calls for save_batch."""
        if not msg.get("append"):
            self.batch_outputs = []
        times, tails = [], []
        self.head_starts = []
        changes = msg.get("perturb") or [None] * len(msg["order"])
        policy = self.policy
        if msg.get("record") is not None:
            # The parent chose whether the guard's op record runs on these calls (timing.py).
            self.policy = {**policy, "record_ops": bool(msg["record"])}
        try:
            for k, change in zip(msg["order"], changes, strict=True):
                us, tail = self._one_timed_call(int(k), change, bool(msg.get("keep", True)))
                times.append(us)
                tails.append(tail)
        finally:
            self.policy = policy
        return {"times_us": times, "tails_us": tails if self.device == "cuda" else None, "phases_us": self.phases_us,
                "head_start_cycles": self.head_starts if self.device == "cuda" else None,
                "drain_timeouts": self.drain.timeouts() if self.drain is not None else None}

    def _one_timed_call(self, k: int, change, keep: bool, model=None, guards=None,
                        head_cycles: int | None = None) -> tuple[float, float | None]:
        # phases_us: where the harness's time goes around the timed call (a diagnostic the parent reports as the
        # child's word; the parent's own clock is what it checks).
        perf, phases = self.perf, self.phases_us
        t0 = perf()
        self._perturb(k, change)
        inputs = self._set_inputs(k)
        t1 = perf()
        self._poison()
        self._sync()
        t2 = perf()
        # The flush is part of _timed_call: queued right before the start event, as in a plain event timing.
        out, us, tail = self._timed_call(inputs, model, guards, head_cycles)
        t3 = perf()
        if keep:
            # Fingerprinted as soon as the timer stops: an output still being written by a thread left running,
            # or the same memory returned again by a later call, no longer matches when it is saved. What is wrong
            # with the output as an object (an input's memory among them) is read now too, so that the kept
            # output does not hold on to its call's inputs: a later fresh call replaces the set, and each kept
            # output had kept the set it replaced alive (with 100 kept scalar outputs and a 4 GiB input,
            # KernelBench's 100_HingeLoss ran an H100 out of memory on 2026-12-05, 70.9 GiB against a plan of 31).
            tensors, issues, _ = self._flatten(out, inputs)
            self.batch_outputs.append((out, issues, self._prints(tensors)))
            del tensors
        del out
        t4 = perf()
        for name, spent in (("inputs", t1 - t0), ("poison", t2 - t1), ("call", t3 - t2), ("fingerprint", t4 - t3)):
            phases[name] = phases.get(name, 0.0) + spent * 1e6
        return us, tail

    def op_null_call(self, msg: dict) -> dict:
        """Trusted roles: the harness's work around one timed call of the solution, with a forward that does
        nothing (it returns a tensor of the output's size): the same input change, poison, flush, synchronise,
        events, guard and fingerprint. The parent times this request with its own clock: what a solution's call
        took beyond it is the solution's own time, which bounds the time the solution reports (timing.py)."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        # A run of calls (timing.RUN_CALLS), as the solution's request made them; or one ("set", "change").
        sets = msg["sets"] if "sets" in msg else [msg["set"]]
        changes = msg["changes"] if "changes" in msg else [msg.get("change")]
        # On a GPU, each call's head start: the solution's call's, in GPU cycles (the parent passes what that child
        # reported), at most the cap's worth at this process's rate (HEAD_START_CYCLES_SLACK).
        heads = msg.get("head_start_cycles") or [None] * len(sets)
        self.head_starts = []  # (reported by time_batch only: kept from growing in a long-lived trusted process)
        if any(change and change[0] == "fresh" for change in changes):
            # A regenerated set would leave this process's set k other than the one the checks' replays expect
            # (the parent audits no run of regenerated sets: timing._runs keeps them apart).
            raise HarnessError("internal", "a null call does not regenerate a set (a fresh change)")
        most = int(HEAD_START_MAX_US * self.spin_cycles_per_us * HEAD_START_CYCLES_SLACK)
        torch = self.torch
        template = getattr(self, "null_template", None)
        if template is None:
            nbytes = max(1, int(msg.get("output_bytes", 1)))
            template = self.null_template = torch.zeros(nbytes, dtype=torch.uint8, device=self.device)
        if self.null_guards is None:
            self.null_guards = self._null_guards()
        poison, self.poison_bytes = self.poison_bytes, int(msg.get("poison_bytes", 0))
        policy, self.policy = self.policy, {**(msg.get("policy") or {}), "record_ops": False}
        keep = bool(msg.get("keep", True))
        before = dict(self.phases_us)
        times = []
        try:
            self.batch_outputs = []
            for k, change, head in zip(sets, changes, heads, strict=True):
                if change and change[0] != "fresh":
                    # The same one-element copy, onto itself: the cost of the change, and this set stays as the
                    # solution's replays expect it.
                    change = [change[0], change[1], change[1]]
                us, _ = self._one_timed_call(int(k), change, keep, lambda *a: template, self.null_guards or None,
                                             None if head is None else max(0, min(most, int(head))))
                times.append(us)
        finally:
            self.poison_bytes, self.batch_outputs, self.policy = poison, [], policy
        # Where this null call's time went (a trusted process: the clock audit's samples can show it).
        return {"times_us": times, "phases_us": {k: v - before.get(k, 0.0) for k, v in self.phases_us.items()}}

    def op_warm_audit(self, msg: dict) -> dict:
        """Trusted roles: pay the clock audit's one-time costs now, while the solution's child loads, rather than in
        the first null call of the timing. The null call runs under the solution's guard, and the first op under its
        dispatch mode imports torch._dynamo (1.5 s on the development machine, 3.9-5.5 s on the H200 host,
        2026-12-02); the guard itself is set up here too."""
        if self.role == "solution":
            raise HarnessError("internal", "not for the solution")
        t0 = self.perf()
        import torch._dynamo  # noqa: F401

        if self.null_guards is None:
            self.null_guards = self._null_guards()
        return {"seconds": self.perf() - t0, "guards": bool(self.null_guards)}

    def op_tail_calibrate(self, msg: dict) -> dict:
        """CUDA: the tail of _timed_call (the device-wide synchronise after the end event) around a forward that
        launches nothing, msg["calls"] times, in this process as its timed calls run (the solution's inside its
        guard). The parent takes what an honest call's tail costs here from these (timing.tail_allowance)."""
        if self.device != "cuda":
            return {"tails_us": []}
        tails = []
        policy = self.policy
        self.policy = {**policy, "record_ops": False}
        self.head_starts = []
        try:
            calls = max(1, min(1000, int(msg.get("calls", 100))))
            for _ in range(calls):
                self._sync()
                _, _, tail = self._timed_call([], lambda: None, None)
                tails.append(tail)
            drain = self._drain_cost(calls) if self.drain is not None else None
        finally:
            self.policy = policy
        return {"tails_us": tails, "drain": drain}

    def _drain_cost(self, calls: int) -> dict:
        """What the drain adds to a window (WINDOW_DRAIN): windows holding one short kernel, with the drain after it
        and without, each after the cache flush and a spin, as a timed call's (the flush leaves the drain's counter
        out of the L2, and the spin lets the host queue the events and the drain before the GPU reaches them). The
        parent takes the trusted reference's difference of medians off every side's windows."""
        torch = self.torch
        stream = torch.cuda.current_stream()
        spin = self.cuda_spin
        windows: dict[bool, list[float]] = {False: [], True: []}
        for i in range(2 * calls):
            with_drain = bool(i % 2)
            self._sync()
            start, end = self.Event(enable_timing=True), self.Event(enable_timing=True)
            self.flush_buf.zero_()
            if spin is not None:
                spin(DRAIN_CALIBRATION_SPIN_CYCLES)
            start.record(stream)
            if spin is not None:
                spin(DRAIN_CALIBRATION_KERNEL_CYCLES)
            if with_drain:
                self.drain.launch(stream.cuda_stream)
            end.record(stream)
            end.synchronize()
            windows[with_drain].append(start.elapsed_time(end) * 1000.0)
        return {"with_us": windows[True], "without_us": windows[False], "timeouts": self.drain.timeouts()}

    def op_profile(self, msg: dict) -> dict:
        """CUDA Agent's measure (its utils/profiling.py): on one input set (from msg["seed"]), WARMUP calls, then
        the PyTorch profiler's summed device time of every CUDA activity (kernels, copies, sets) over CALLS calls,
        divided by CALLS. No cache flush and no synchronise between the calls, as there. The last call's output
        is saved to msg["file"] for the parent to check against the reference."""
        if self.device != "cuda":
            return {"kernel_time_us": None, "why": "the profiler's device time is measured on CUDA devices only"}
        from torch.profiler import ProfilerActivity, profile

        calls, warmup = max(1, min(100, int(msg.get("calls", 10)))), max(0, min(100, int(msg.get("warmup", 5))))
        drop = bool(msg.get("drop_sets"))
        if drop:
            # The process's last request (the solution's: it is stopped next): its timing sets and kept outputs go
            # first, so that the profiled set takes their place rather than adding to them. Its caching allocator
            # also gives back what it held, for the reference's trial that follows (on an H100, 2026-12-05, a
            # problem with an 8 GiB input peaked here at 42.9 GiB of device memory against a plan of 27).
            self.sets = []
            self.batch_outputs = []
            self._release()
        inputs = self._make_inputs(int(msg["seed"]))
        self._sync()
        policy = self.policy
        self.policy = {**policy, "record_ops": False, "itt_decoy": False}
        try:
            for _ in range(warmup):
                out = self._call(inputs)
                del out
            self._sync()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(calls):
                    out = self._call(inputs)
                self._sync()
        finally:
            self.policy = policy
        total = 0.0
        for event in prof.key_averages():
            value = getattr(event, "self_device_time_total", None)
            if value is None:  # an older torch's name for it
                value = getattr(event, "self_cuda_time_total", 0.0)
            total += float(value or 0.0)
        busy = _device_busy_us(prof)
        tensors, problems, structure = self._flatten(out, inputs)
        if not problems and msg.get("file"):
            self._save(tensors, msg["file"])
        del out, tensors
        if drop:
            del inputs, prof
            self._release()
        return {"kernel_time_us": total / calls, "calls": calls, "warmup": warmup, "problems": problems,
                "structure": structure, "device_busy_us": busy / calls if busy else None}

    def _null_guards(self):
        """The solution's per-call guard, for the null call's cost (its process-wide hooks are not installed in a
        trusted process); False where it cannot run here. The audited calls are those the record skipped."""
        try:
            from gpu_runner import guards
            with guards.forward_guard({"record_ops": False}):
                pass
            return types.SimpleNamespace(forward_guard=guards.forward_guard,
                                         last_call_recorded=guards.last_call_recorded)
        except Exception:  # noqa: BLE001 - the null call then lacks the guard's cost, which only loosens the bound
            return False

    def op_save_batch(self, msg: dict) -> dict:
        saved = {}
        problems: list[str] = []
        for pos in msg["positions"]:
            out, at_call, prints = self.batch_outputs[int(pos)]
            # (Its inputs were checked against at the call: the kept output does not hold them.)
            tensors, issues, _ = self._flatten(out, [])
            issues = list(at_call) + [i for i in issues if i not in at_call]
            if not issues and self._prints(tensors) != prints:
                issues.append("its output changed after forward returned (work still running after the call, or the "
                              "same memory returned again by a later call): finish the output inside forward and "
                              "return a new tensor on every call")
            problems += [f"timed call {pos}: {p}" for p in issues]
            if not issues:
                name = f"{msg['prefix']}{int(pos)}.pt"
                self._save(tensors, name)
                saved[str(pos)] = name
        self.batch_outputs = []
        return {"files": saved, "problems": problems}

    def op_back_to_back(self, msg: dict) -> dict:
        """Calls with no flush and one synchronise at the end; the parent times this with its own clock.

        The op record is off in both loops (the empty one and the real one): it is the harness's own work,
        sampled at random, and costs a millisecond or more on a call it runs on, so a few sampled calls in one
        loop and not the other made the difference the parent reads. The child also reports its host time in
        forward per call (a diagnostic, its own word: the parent decides on its clock alone)."""
        policy = self.policy
        self.policy = {**policy, "record_ops": False}
        try:
            if msg.get("empty"):
                # The same loop around an empty call: the parent subtracts this (guard and protocol overhead).
                for _ in msg["order"]:
                    if self.guards is not None:
                        with self.guards.forward_guard(self.policy):
                            pass
                self._sync()
                return {}
            host = 0.0
            for k in msg["order"]:
                out = self._call(self.sets[int(k)])
                host += self.forward_host_s
                del out
            self._sync()
        finally:
            self.policy = policy
        return {"forward_host_us": host / max(1, len(msg["order"])) * 1e6}

    def op_calibrate(self, msg: dict) -> dict:
        """Copy bandwidth of this device, in bytes per second (read + write), best of several copies."""
        torch = self.torch
        nbytes = int(msg.get("bytes", 256 << 20))
        src = torch.empty(nbytes, dtype=torch.uint8, device=self.device).fill_(1)
        dst = torch.empty_like(src)
        best = float("inf")
        for _ in range(int(msg.get("repeats", 10))):
            self._sync()
            t0 = self.perf()
            dst.copy_(src)
            self._sync()
            best = min(best, self.perf() - t0)
        return {"bytes_per_s": 2 * nbytes / best}

    def op_integrity(self, msg: dict) -> dict:
        findings: list[dict] = self.guards.integrity_report() if self.guards is not None else []
        return {"findings": findings, "guards": self.guards is not None}


if __name__ == "__main__":
    main()
