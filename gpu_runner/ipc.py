"""The solution's outputs moved to the evaluator on the GPU, through CUDA IPC, instead of through files (issue 13).

A file costs a 6 GiB output two copies across the bus and two through host memory: 12.6-16.9 s a transfer on the
H200 host, where CUDA IPC from a child started by the evaluator's own sandbox took 3 ms
(benchmarks/output_transfer.py, docs/BENCHMARKS.md). So where outputs are that large, the evaluator lends the
solution's child a slot: device memory it allocates itself (cuMemAlloc, outside torch's caching allocator, so that the
handle it hands out reaches this slot and nothing else of the evaluator's), exported with cuIpcGetMemHandle.
The child maps it once; when it saves outputs it copies them into the slot and writes, in place of the tensor
file, a small marker (MAGIC, then JSON: each tensor's shape, dtype, offset and size). The evaluator reads the
marker, copies each tensor out of the slot into a tensor of its own, and compares that one.

Why this way round (the evaluator's memory mapped in the child, not the child's in the evaluator): a legacy CUDA
IPC handle is not a capability; whoever has its 64 bytes, or forges them, can open the allocation. A handle the
evaluator opened could name any exported allocation. For the same reason only the solution gets a slot: a slot
of the trusted reference's would hold expected outputs the solution could read or overwrite (a kernel of its
own left running can watch memory), so the reference's outputs still come through files. Not closed yet: on a
host that runs several evaluations at once (one per GPU), a solution that forged another evaluation's handle could
write into that evaluation's slot. Handles that are capabilities (cuMemCreate with POSIX file descriptors passed
over the channel) would close it; not built.

What the child writes there is its output, as a file's bytes were; the slot is filled with 0xFF bytes (NaN in every
float format; -1 or 255 in integer ones) before each request that saves into it, so an output the child leaves out
does not read as an earlier call's output.

Where the child cannot map the slot (no IPC on the host), the files serve, the result says why
(checks.output_transfer), and the slot is freed once the child is gone.

Capability slots (`CapabilitySlot`, KERNELHUB_OUTPUT_IPC=capability): device memory made with cuMemCreate and
exported as a POSIX file descriptor, which the evaluator passes to its child alone, over the child's own channel
(SCM_RIGHTS; protocol.Channel.send_fds). Only a process holding that descriptor can map the memory: no bytes to
forge, nothing another evaluation's child could name. So a capability slot may hold the trusted reference's
outputs too, which then come back in milliseconds instead of through a file, and a host's evaluations cannot
reach each other's slots. Not yet run on a GPU: off unless asked for.
"""

from __future__ import annotations

import base64
import ctypes
import json
from typing import Any

MAGIC = b"KHIPC1\n"
HANDLE_BYTES = 64  # CUipcMemHandle
ALIGN = 512  # each tensor's offset in a slot
MAX_ENTRIES = 256
MAX_MARKER_BYTES = 1 << 20
MAX_DIMS = 16
GRANULE = 2 << 20  # a slot's size is a multiple of this (IPC shares whole allocations of this granularity)
LAZY_ENABLE_PEER_ACCESS = 1
# The dtypes a marker may name (as str(torch.dtype) spells them).
DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")


class IpcError(RuntimeError):
    pass


class Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


class _Driver:
    """The few CUDA driver calls this needs, through ctypes (the driver's newest versioned entry points)."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise IpcError(f"no CUDA driver library ({e})") from None

    # The calls whose current entry point is the _v2 symbol with the same arguments (cuda.h's #defines). Only
    # these: some other _v2 symbols take other arguments (cuMemPrefetchAsync_v2, cuMemAdvise_v2).
    V2 = frozenset({"cuMemAlloc", "cuMemFree", "cuMemsetD8", "cuMemcpyDtoD", "cuIpcOpenMemHandle",
                    "cuMemGetAddressRange"})

    def fn(self, name: str) -> Any:
        f = getattr(self.lib, name + ("_v2" if name in self.V2 else ""), None)
        if f is None:
            raise IpcError(f"the CUDA driver has no {name}")
        return f

    def call(self, name: str, *args: Any) -> None:
        rc = self.fn(name)(*args)
        if rc != 0:
            raise IpcError(f"{name} failed (CUDA driver error {rc})")


_driver: _Driver | None = None


def driver() -> _Driver:
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def _bind_context() -> None:
    """Make the device's primary context (torch's) current on this thread, for the driver calls that follow."""
    import torch

    torch.cuda.synchronize()


def layout(sizes: list[int]) -> list[int]:
    """Offsets for tensors of these byte sizes, one after another, each at a multiple of ALIGN."""
    offsets, at = [], 0
    for n in sizes:
        offsets.append(at)
        at += -(-n // ALIGN) * ALIGN
    return offsets


def slot_bytes_needed(sizes: list[int]) -> int:
    return layout(sizes + [0])[-1]


class Slot:
    """The evaluator's side: device memory lent to one child."""

    def __init__(self, nbytes: int) -> None:
        if nbytes <= 0:
            raise IpcError("an empty slot")
        _bind_context()
        d = driver()
        self.nbytes = -(-int(nbytes) // GRANULE) * GRANULE
        ptr = ctypes.c_uint64()
        d.call("cuMemAlloc", ctypes.byref(ptr), ctypes.c_size_t(self.nbytes))
        self.ptr = ptr.value
        try:
            handle = Handle()
            d.call("cuIpcGetMemHandle", ctypes.byref(handle), ctypes.c_uint64(self.ptr))
            self.handle = ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES)
        except IpcError:
            self.free()
            raise

    def offer(self) -> dict[str, Any]:
        """What the child needs to map the slot (child.op_ipc_slot)."""
        return {"handle": base64.b64encode(self.handle).decode(), "nbytes": self.nbytes}

    def poison(self) -> None:
        """0xFF bytes over the whole slot: NaN in every float format."""
        if not self.ptr:
            return
        _bind_context()
        driver().call("cuMemsetD8", ctypes.c_uint64(self.ptr), ctypes.c_ubyte(0xFF), ctypes.c_size_t(self.nbytes))
        import torch

        torch.cuda.synchronize()

    def read(self, entries: Any) -> list[Any]:
        """Copies of the tensors a marker names, in tensors of this process's own (IpcError where the marker is
        malformed or names bytes outside the slot)."""
        import torch

        specs = _validate(entries, self.nbytes)
        _bind_context()
        out = []
        for shape, dtype, offset, nbytes in specs:
            t = torch.empty(shape, dtype=dtype, device="cuda")
            if nbytes:
                driver().call("cuMemcpyDtoD", ctypes.c_uint64(t.data_ptr()), ctypes.c_uint64(self.ptr + offset),
                              ctypes.c_size_t(nbytes))
            out.append(t)
        torch.cuda.synchronize()
        return out

    def free(self) -> None:
        if self.ptr:
            try:
                _bind_context()
                driver().call("cuMemFree", ctypes.c_uint64(self.ptr))
            except Exception:  # noqa: BLE001 - a context already torn down frees it with the process
                pass
            self.ptr = 0


# cuMemCreate's types (cuda.h): a pinned device allocation, exported as a POSIX file descriptor, read and written
# by the device it lives on.
_ALLOCATION_PINNED = 1
_HANDLE_POSIX_FD = 1
_LOCATION_DEVICE = 1
_ACCESS_READ_WRITE = 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


def _device_ordinal() -> int:
    import torch

    return int(torch.cuda.current_device())


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = _ALLOCATION_PINNED
    prop.requestedHandleTypes = _HANDLE_POSIX_FD
    prop.location = _Location(_LOCATION_DEVICE, device)
    return prop


def _map(d: _Driver, handle: int, nbytes: int, device: int) -> int:
    """Reserve an address range, map the allocation there and open it to this device; returns the address."""
    ptr = ctypes.c_uint64()
    d.call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(nbytes), ctypes.c_size_t(0), ctypes.c_uint64(0),
           ctypes.c_ulonglong(0))
    try:
        d.call("cuMemMap", ctypes.c_uint64(ptr.value), ctypes.c_size_t(nbytes), ctypes.c_size_t(0),
               ctypes.c_ulonglong(handle), ctypes.c_ulonglong(0))
        try:
            access = _AccessDesc(_Location(_LOCATION_DEVICE, device), _ACCESS_READ_WRITE)
            d.call("cuMemSetAccess", ctypes.c_uint64(ptr.value), ctypes.c_size_t(nbytes), ctypes.byref(access),
                   ctypes.c_size_t(1))
        except IpcError:
            d.call("cuMemUnmap", ctypes.c_uint64(ptr.value), ctypes.c_size_t(nbytes))
            raise
    except IpcError:
        d.call("cuMemAddressFree", ctypes.c_uint64(ptr.value), ctypes.c_size_t(nbytes))
        raise
    return ptr.value


def _unmap(d: _Driver, ptr: int, nbytes: int) -> None:
    for name in ("cuMemUnmap", "cuMemAddressFree"):
        try:
            d.call(name, ctypes.c_uint64(ptr), ctypes.c_size_t(nbytes))
        except IpcError:
            pass


class CapabilitySlot(Slot):
    """A slot whose only key is a file descriptor (cuMemCreate, exported as POSIX_FILE_DESCRIPTOR): `fd`, passed to
    the one child it is lent to over that child's channel, and closed here once sent."""

    kind = "fd"

    def __init__(self, nbytes: int) -> None:  # noqa: D107 - Slot's, with another allocation
        if nbytes <= 0:
            raise IpcError("an empty slot")
        _bind_context()
        d = driver()
        self.device = _device_ordinal()
        prop = _prop(self.device)
        granularity = ctypes.c_size_t()
        d.call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), ctypes.c_int(0))
        grain = max(int(granularity.value), 1)
        self.nbytes = -(-int(nbytes) // max(grain, GRANULE)) * max(grain, GRANULE)
        self.ptr, self.fd, self.handle_value = 0, -1, 0
        handle = ctypes.c_ulonglong()
        d.call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(self.nbytes), ctypes.byref(prop),
               ctypes.c_ulonglong(0))
        self.handle_value = handle.value
        try:
            self.ptr = _map(d, handle.value, self.nbytes, self.device)
            fd = ctypes.c_int(-1)
            d.call("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_ulonglong(handle.value),
                   ctypes.c_int(_HANDLE_POSIX_FD), ctypes.c_ulonglong(0))
            self.fd = fd.value
            self.handle = b""
            self.poison()  # the mapping's first touch, here where a failure still falls back to files
        except IpcError:
            self.free()
            raise

    def offer(self) -> dict[str, Any]:
        """The child's ipc_slot request; the descriptor itself follows the request on the channel (send_fds)."""
        return {"kind": self.kind, "nbytes": self.nbytes}

    def close_fd(self) -> None:
        """The descriptor, once passed on: the child holds its own copy, this process the mapping."""
        if self.fd >= 0:
            import os

            os.close(self.fd)
            self.fd = -1

    def free(self) -> None:
        d = driver()
        self.close_fd()
        if self.ptr:
            try:
                _bind_context()
            except Exception:  # noqa: BLE001 - a context already torn down frees it with the process
                pass
            _unmap(d, self.ptr, self.nbytes)
            self.ptr = 0
        if self.handle_value:
            try:
                d.call("cuMemRelease", ctypes.c_ulonglong(self.handle_value))
            except IpcError:
                pass
            self.handle_value = 0


def _validate(entries: Any, slot_nbytes: int) -> list[tuple[list[int], Any, int, int]]:
    import torch

    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise IpcError("the marker does not hold a list of tensors")
    specs = []
    end = 0  # the entries lie one after another, none overlapping: together at most the slot's bytes
    for e in entries:
        if not isinstance(e, dict):
            raise IpcError("the marker holds something other than a tensor entry")
        shape, dtype_name, offset, nbytes = e.get("shape"), e.get("dtype"), e.get("offset"), e.get("nbytes")
        if (not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(type(s) is int and 0 <= s < (1 << 40) for s in shape)):
            raise IpcError(f"the marker names an impossible shape {shape!r:.100}")
        if dtype_name not in DTYPES:
            raise IpcError(f"the marker names an unknown dtype {dtype_name!r:.40}")
        dtype = getattr(torch, dtype_name)
        numel = 1
        for s in shape:
            numel *= s
        if type(offset) is not int or type(nbytes) is not int or offset < 0 or offset % ALIGN:
            raise IpcError("the marker names an impossible place in the slot")
        if nbytes != numel * torch.empty((), dtype=dtype).element_size() or offset + nbytes > slot_nbytes:
            raise IpcError(f"the marker names {nbytes} bytes at {offset}, which do not fit its shape and dtype or "
                           f"the slot's {slot_nbytes} bytes")
        if offset < end:
            raise IpcError("the marker's tensors overlap or are out of order")
        end = offset + nbytes
        specs.append((shape, dtype, offset, nbytes))
    return specs


def read_marker(raw: bytes) -> Any:
    """A marker file's entries (raw: the file's bytes; ValueError where it is not a marker)."""
    if not raw.startswith(MAGIC):
        raise ValueError("not a marker")
    try:
        return json.loads(raw[len(MAGIC):].decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise IpcError("the marker is not valid JSON") from None


class Mapped:
    """The child's side: the slot the evaluator lent, mapped into this process (child.op_ipc_slot; in the
    solution's child after its load, like every op the harness serves there)."""

    def __init__(self, offer: dict[str, Any], fd: int | None = None) -> None:
        """offer: the ipc_slot request; fd: the descriptor of a capability slot (offer["kind"] "fd"), which the
        harness received after the request (protocol.Channel.recv_fds) and which this closes, whatever happens."""
        try:
            self._open(offer, fd)
        finally:
            if fd is not None:
                import os

                os.close(fd)

    def _open(self, offer: dict[str, Any], fd: int | None) -> None:
        self.nbytes = int(offer["nbytes"])
        self.cursor = 0  # where the next save of the current request goes (reset by the harness per request)
        _bind_context()
        self.d = driver()
        self.copy = self.d.fn("cuMemcpyDtoD")
        if offer.get("kind") == CapabilitySlot.kind:
            if fd is None:
                raise IpcError("a capability slot came without its descriptor")
            handle = ctypes.c_ulonglong()
            self.d.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                        ctypes.c_int(_HANDLE_POSIX_FD))
            try:
                self.ptr = _map(self.d, handle.value, self.nbytes, _device_ordinal())
            finally:
                # Each import is paired with a release; the mapping keeps the memory.
                self.d.call("cuMemRelease", ctypes.c_ulonglong(handle.value))
            # The mapping's first touch, here, where a failure still means files (op_ipc_slot: mapped False).
            self.d.call("cuMemsetD8", ctypes.c_uint64(self.ptr), ctypes.c_ubyte(0xFF), ctypes.c_size_t(ALIGN))
            import torch

            torch.cuda.synchronize()
            return
        raw = base64.b64decode(str(offer["handle"]))
        if len(raw) != HANDLE_BYTES:
            raise IpcError("a handle of the wrong size")
        handle_ = Handle.from_buffer_copy(raw)
        ptr = ctypes.c_uint64()
        self.d.call("cuIpcOpenMemHandle", ctypes.byref(ptr), handle_, ctypes.c_uint(LAZY_ENABLE_PEER_ACCESS))
        self.ptr = ptr.value

    def put(self, tensors: list[Any]) -> bytes | None:
        """Copy these CUDA tensors into the slot after what this request saved before; the marker's bytes, or None
        where they do not fit (the caller saves a file instead)."""
        import torch

        # Only what the evaluator's marker check accepts; anything else goes to a file, as before.
        if (not tensors or len(tensors) > MAX_ENTRIES
                or not all(isinstance(t, torch.Tensor) and t.is_cuda and t.dim() <= MAX_DIMS
                           and str(t.dtype).removeprefix("torch.") in DTYPES for t in tensors)):
            return None
        sizes = [t.numel() * t.element_size() for t in tensors]
        offsets = [self.cursor + o for o in layout(sizes)]
        end = self.cursor + slot_bytes_needed(sizes)
        if end > self.nbytes:
            return None
        flat = [t.detach().contiguous() for t in tensors]
        torch.cuda.synchronize()
        for t, off, n in zip(flat, offsets, sizes, strict=True):
            if n:
                rc = self.copy(ctypes.c_uint64(self.ptr + off), ctypes.c_uint64(t.data_ptr()), ctypes.c_size_t(n))
                if rc != 0:
                    raise IpcError(f"cuMemcpyDtoD into the slot failed (CUDA driver error {rc})")
        torch.cuda.synchronize()
        self.cursor = end
        entries = [{"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "offset": off, "nbytes": n}
                   for t, off, n in zip(flat, offsets, sizes, strict=True)]
        return MAGIC + json.dumps(entries).encode()
