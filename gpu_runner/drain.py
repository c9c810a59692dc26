"""The timed window's end marker on a GPU (KERNELHUB_WINDOW_DRAIN): the end event waits for every stream's work.

The end event is recorded on the stream forward was called on. Work that forward left running on another stream
(a `torch.cuda.Stream`, a CuPy stream, a stream a CUDA extension made) is not ordered before it, so it runs past
the end event; the device-wide synchronise after the window (the tail) catches it, but only what exceeds the tail's
allowance, and that allowance (the 90th percentile of empty calls' tails plus 2 us) is as large as a short kernel
(docs/EVALUATOR.md, "The timed window": with the head start on, a side-stream ReLU of 4.7 us read 2.59 us).

The drain closes that on the GPU's own clock. Right after forward returns, the harness launches one kernel on a
stream of the drain's own, and the timed stream waits for it before the end event. One block per SM, each asking
for all the shared memory a block may have, so that no other block fits beside it (every block holds the driver's
reserved share too). Each block counts itself in a device-wide counter and waits until every block of the launch
has arrived. When the last one arrives, every SM holds one of these blocks and nothing else, so every block any
stream had started before has ended; the block scheduler starts an earlier kernel's blocks before a later one's of
the same or lower priority, and the drain runs at the lowest priority. So the end event, which waits for the
drain, comes after all of forward's kernels, on every stream.

Why a stream of its own: on the timed stream the drain began only once forward's last kernel there had ended, and
paid its launch and its meeting after it (about 3 us on an H100), which the parent took off every window; a kernel
that forward left on another stream did not hold the drain back, so the drain ran beside it and the exploit saved
those 3 us a call (on an H100 on 2026-12-06: a side-stream ReLU read 6.2 us against the honest one's 9.0). On its own
stream (not the legacy stream's implicit order: non-blocking) the drain starts beside whatever forward queued, on
any stream, once that kernel's blocks have all been dispatched, takes each SM as it comes free, and meets as the
last of forward's blocks ends: the same microsecond or so after forward's work on every stream (1.3 us on an H100,
against 3.0 on the timed stream). That needs one hardware queue per context (CUDA_DEVICE_MAX_CONNECTIONS=1, as every
child of the evaluator has, sandbox.CUDA_CONNECTIONS_VAR), which keeps launch order across streams: with the
driver's default 8 the drain's own stream has a queue of its own and met before a side stream's kernel had begun
(a raw test on an H100: 1.3 us against 17.2). Where the process has more queues, the drain goes on the timed
stream, as before, and orders less: it met after the first of ten dependent kernels on another stream (95 us
against 925, an H100, 2026-12-06). Every child of the evaluator has one queue. What it does not order: copies on another stream (the copy engines), and work whose launch
waits on the host (a host function, a stream waiting on a value the host writes later). The tail still counts
those, as before.

What it costs every side alike (eager, torch.compile, the solution, the clock audit's null call): the meeting after
forward's last block, and the event the timed stream waits on. The trusted reference measures it
(child._drain_cost, in its tail calibration) and the parent takes it off every window (timing.py). A block waits at
most `timeout_ns` for the others (no SM is ever free: another process's context, a partitioned GPU; or a kernel of
forward's that holds some SMs longer than that, since the blocks that find an SM free wait beside it); then it
gives up and says so (`timeouts`), and that call is measured as without the drain.

The kernel (PTX below, compiled from this CUDA with `nvcc -arch=compute_75 -ptx`, its `.version` lowered to 6.4 so
that a driver from CUDA 10.1 on can load it; ptxas accepts it for sm_75 and sm_90, tests/evaluator/test_drain.py):

    extern "C" __global__ void kh_drain(unsigned long long *count, unsigned long long target,
                                        unsigned long long timeout_ns, unsigned int *timed_out) {
        if (threadIdx.x != 0) return;
        unsigned long long t0, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        atomicAdd(count, 1ULL);
        while (*(volatile unsigned long long *)count < target) {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (now - t0 > timeout_ns) {
                atomicExch(timed_out, 1u);
                return;
            }
        }
    }
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from . import ipc

PTX = r"""
.version 6.4
.target sm_75
.address_size 64

.visible .entry kh_drain(
	.param .u64 kh_drain_param_0,
	.param .u64 kh_drain_param_1,
	.param .u64 kh_drain_param_2,
	.param .u64 kh_drain_param_3
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<13>;

	ld.param.u64 	%rd7, [kh_drain_param_0];
	ld.param.u64 	%rd4, [kh_drain_param_1];
	ld.param.u64 	%rd5, [kh_drain_param_2];
	ld.param.u64 	%rd6, [kh_drain_param_3];
	cvta.to.global.u64 	%rd1, %rd7;
	mov.u32 	%r1, %tid.x;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_5;

	mov.u64 %rd8, %globaltimer;
	atom.global.add.u64 	%rd9, [%rd1], 1;
	cvta.to.global.u64 	%rd3, %rd6;

$L__BB0_2:
	ld.volatile.global.u64 	%rd10, [%rd1];
	setp.ge.u64 	%p2, %rd10, %rd4;
	@%p2 bra 	$L__BB0_5;

	mov.u64 %rd11, %globaltimer;
	sub.s64 	%rd12, %rd11, %rd8;
	setp.le.u64 	%p3, %rd12, %rd5;
	@%p3 bra 	$L__BB0_2;

	atom.global.exch.b32 	%r2, [%rd3], 1;

$L__BB0_5:
	ret;

}
"""
ENTRY = b"kh_drain"
THREADS = 32  # one warp a block; only its first thread works
TIMEOUT_US = 1_000_000.0  # a block gives up waiting for the others after this (it may wait beside a kernel of forward's)
# The CUDA driver's enums (cuda.h).
_SM_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
_SMEM_PER_SM = 81  # CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
_SMEM_OPTIN = 97  # CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
_SMEM_RESERVED = 111  # CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
_MAX_DYNAMIC_SMEM = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_STREAM_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING
_EVENT_DISABLE_TIMING = 2  # CU_EVENT_DISABLE_TIMING


class DrainError(RuntimeError):
    pass


def block_shared_bytes(per_sm: int, optin: int, reserved: int) -> int:
    """The dynamic shared memory a drain block asks for so that no other block fits on its SM beside it: every
    block holds `reserved` bytes besides its own, so the SM's `per_sm` must be short of this block's and one more
    block's. Raises DrainError where the device lets no block take that much."""
    want = per_sm - reserved
    size = min(optin, want)
    if size <= 0 or size + 2 * reserved <= per_sm:
        raise DrainError(f"a block may take {optin} of the SM's {per_sm} bytes of shared memory ({reserved} reserved "
                         "per block): another block would fit beside it, so it cannot hold an SM alone")
    return size


class Drain:
    """The drain kernel, loaded in this process's CUDA context (torch's), launched by `launch(stream)`."""

    def __init__(self, torch: Any, timeout_us: float = TIMEOUT_US) -> None:
        try:
            d = ipc.driver()
        except ipc.IpcError as e:
            raise DrainError(str(e)) from None
        torch.cuda.init()
        torch.cuda.synchronize()  # the device's primary context current on this thread
        ordinal = torch.cuda.current_device()
        device = ctypes.c_int()
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        stream, event = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            d.call("cuDeviceGet", ctypes.byref(device), ctypes.c_int(ordinal))

            def attribute(which: int) -> int:
                value = ctypes.c_int()
                d.call("cuDeviceGetAttribute", ctypes.byref(value), ctypes.c_int(which), device)
                return value.value

            self.grid = attribute(_SM_COUNT)
            self.shared_bytes = block_shared_bytes(attribute(_SMEM_PER_SM), attribute(_SMEM_OPTIN),
                                                   attribute(_SMEM_RESERVED))
            d.call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(PTX.encode()))
            d.call("cuModuleGetFunction", ctypes.byref(fn), module, ctypes.c_char_p(ENTRY))
            d.call("cuFuncSetAttribute", fn, ctypes.c_int(_MAX_DYNAMIC_SMEM), ctypes.c_int(self.shared_bytes))
            # The drain's own stream, at the lowest priority, and the event the timed stream waits on.
            least, greatest = ctypes.c_int(), ctypes.c_int()
            d.call("cuCtxGetStreamPriorityRange", ctypes.byref(least), ctypes.byref(greatest))
            d.call("cuStreamCreateWithPriority", ctypes.byref(stream), ctypes.c_uint(_STREAM_NON_BLOCKING), least)
            d.call("cuEventCreate", ctypes.byref(event), ctypes.c_uint(_EVENT_DISABLE_TIMING))
        except ipc.IpcError as e:
            raise DrainError(f"the drain kernel could not be loaded: {e}") from None
        if self.grid < 1:
            raise DrainError("the device reports no multiprocessors")
        self.module, self.fn, self.event = module, fn, event
        # Its own stream only where launch order holds across streams (above); else the timed stream (launch()).
        self.stream = stream if os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1" else None
        # [the blocks' count, the timeout flag]: the count only grows, by `grid` a launch.
        self.state = torch.zeros(2, dtype=torch.int64, device="cuda")
        self.launches = 0
        self._count = ctypes.c_uint64(self.state.data_ptr())
        self._target = ctypes.c_uint64(0)
        self._timeout = ctypes.c_uint64(int(timeout_us * 1000))
        self._flag = ctypes.c_uint64(self.state.data_ptr() + 8)
        self._args = (ctypes.c_void_p * 4)(*(ctypes.addressof(a) for a in
                                              (self._count, self._target, self._timeout, self._flag)))
        launch = d.fn("cuLaunchKernel")
        launch.restype = ctypes.c_int
        launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p,
                                                                     ctypes.c_void_p]
        self._launch = launch
        # Looked up now, with the launch: inside forward's guard a lookup is refused (tests/exploits/test_guard_drain.py).
        record, wait = d.fn("cuEventRecord"), d.fn("cuStreamWaitEvent")
        record.restype = wait.restype = ctypes.c_int
        record.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        wait.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        self._record, self._wait = record, wait

    def launch(self, stream: int) -> None:
        """Queue the drain on its own stream and make `stream` (a CUstream handle, torch's `cuda_stream`, the timed
        stream) wait for it, or (more than one hardware queue) queue it on `stream`: either way the end event,
        recorded on `stream` next, follows the drain."""
        self.launches += 1
        self._target.value = self.launches * self.grid
        own = self.stream is not None
        rc = self._launch(self.fn, self.grid, 1, 1, THREADS, 1, 1, self.shared_bytes, self.stream if own else stream,
                          self._args, None)
        if rc != 0:
            self.launches -= 1
            raise DrainError(f"cuLaunchKernel of the drain failed (CUDA driver error {rc})")
        if not own:
            return
        rc = self._record(self.event, self.stream)
        if rc == 0:
            rc = self._wait(stream, self.event, 0)
        if rc != 0:
            raise DrainError(f"ordering the timed stream after the drain failed (CUDA driver error {rc})")

    def timeouts(self) -> int:
        """Whether any launch so far gave up waiting (1) or not (0); resets the flag. Synchronises the device."""
        flag = int(self.state[1].item())
        if flag:
            self.state[1].zero_()
        return flag

    def arrived(self) -> int:
        """The blocks counted so far (a test's check that every launch met in full)."""
        return int(self.state[0].item())
