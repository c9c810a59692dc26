"""How a large output gets from a sandboxed child to the trusted parent, and what each way costs (issue 13).

Today every checked output goes through a file: the child copies it to the host and saves it in its work
directory, the parent reads the file and, on a GPU, copies it back to the device to compare it there. For a
6 GiB output that is two whole copies across the bus and two through host memory per check, and a 6 GiB level-1
problem's evaluation spends minutes on it (docs/GPU_RUNS.md, 2026-12-04 14:04). The alternative the issue names is
CUDA IPC: the child hands over a handle to its device memory, the parent maps it and copies the output into a
buffer of its own on the device (a copy the child cannot reach), and compares there.

This starts a child exactly as the evaluator does (gpu_runner.sandbox.spawn: the lockdown, a fresh PID and mount
namespace, on a root host another uid), makes a tensor of --gib GiB from a seed in it, and moves it to the parent
both ways, timing each step by the parent's clock; the parent makes the same tensor from the same seed and checks
that what arrived is equal, bit for bit. On a host without CUDA only the file way runs (a rehearsal).

    python benchmarks/output_transfer.py --gib 6 --out results.json
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_runner import ipc  # noqa: E402 - the driver calls the evaluator uses


def _make(torch: Any, device: str, numel: int, seed: int) -> Any:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return torch.rand(numel, device=device, generator=gen)


# ----- the child (python -m benchmarks.output_transfer child <fd>, under the evaluator's sandbox) -----

def child_main() -> None:
    fd = int(sys.argv[2])
    lockdown: dict[str, Any] = {}
    if os.environ.get("KERNELHUB_LOCKDOWN"):
        from gpu_runner.sandbox import lockdown as lock

        lockdown = lock(os.environ["KERNELHUB_LOCKDOWN"])
    from gpu_runner.protocol import Channel

    channel = Channel(socket.socket(fileno=fd))
    import torch

    held: dict[str, Any] = {}
    while True:
        msg = channel.recv()
        op = msg["op"]
        try:
            if op == "make":
                t0 = time.perf_counter()
                held["t"] = _make(torch, msg["device"], msg["numel"], msg["seed"])
                if msg["device"] == "cuda":
                    torch.cuda.synchronize()
                reply: dict[str, Any] = {"ok": True, "make_s": time.perf_counter() - t0, "lockdown": lockdown,
                                         "uid": os.getuid(), "pid_in_namespace": os.getpid()}
            elif op == "save":
                t0 = time.perf_counter()
                host = held["t"].detach().cpu().contiguous()
                t1 = time.perf_counter()
                torch.save([host], msg["file"])
                del host
                reply = {"ok": True, "to_host_s": t1 - t0, "save_s": time.perf_counter() - t1}
            elif op == "ipc_handle":
                reply = _child_handle(torch, held["t"])
            elif op == "exit":
                channel.send({"ok": True})
                return
            else:
                reply = {"ok": False, "error": f"unknown op {op}"}
        except Exception as e:  # noqa: BLE001 - reported to the parent, which writes it down
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:1000]}
        channel.send(reply)


def _child_handle(torch: Any, t: Any) -> dict[str, Any]:
    d = ipc.driver()
    ptr = t.data_ptr()
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = d.fn("cuMemGetAddressRange")(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if rc != 0:
        return {"ok": False, "error": f"cuMemGetAddressRange returned {rc}"}
    handle = ipc.Handle()
    t0 = time.perf_counter()
    rc = d.fn("cuIpcGetMemHandle")(ctypes.byref(handle), ctypes.c_uint64(base.value))
    if rc != 0:
        return {"ok": False, "error": f"cuIpcGetMemHandle returned {rc}"}
    # The whole struct: its char array read as a field stops at the first zero byte.
    raw = ctypes.string_at(ctypes.addressof(handle), ipc.HANDLE_BYTES)
    return {"ok": True, "handle": base64.b64encode(raw).decode(), "offset": ptr - base.value,
            "allocation_bytes": size.value, "get_handle_s": time.perf_counter() - t0}


# ----- the parent -----

def _file_way(torch: Any, child: Any, channel: Any, device: str, expected: Any) -> dict[str, Any]:
    from gpu_runner.protocol import load_tensors

    t0 = time.perf_counter()
    channel.send({"op": "save", "file": "out.pt"})
    reply = channel.recv(deadline=time.monotonic() + 600)
    child_s = time.perf_counter() - t0
    if not reply.get("ok"):
        return {"ok": False, "error": reply.get("error")}
    t1 = time.perf_counter()
    got = load_tensors(child.workdir, "out.pt", max_bytes=1 << 40)[0]  # read whole, as for an untrusted child
    t2 = time.perf_counter()
    if device == "cuda":
        got = got.to("cuda")
        torch.cuda.synchronize()
    t3 = time.perf_counter()
    equal = bool(torch.equal(got, expected))
    (child.workdir / "out.pt").unlink(missing_ok=True)
    return {"ok": True, "equal": equal, "child_request_s": round(child_s, 3),
            "child_to_host_s": round(reply["to_host_s"], 3), "child_save_s": round(reply["save_s"], 3),
            "parent_read_s": round(t2 - t1, 3), "parent_to_device_s": round(t3 - t2, 3),
            "total_s": round(t3 - t0, 3)}


def _ipc_way(torch: Any, channel: Any, expected: Any) -> dict[str, Any]:
    d = ipc.driver()
    t0 = time.perf_counter()
    channel.send({"op": "ipc_handle"})
    reply = channel.recv(deadline=time.monotonic() + 60)
    t1 = time.perf_counter()
    if not reply.get("ok"):
        return {"ok": False, "step": "child's handle", "error": reply.get("error")}
    raw = base64.b64decode(reply["handle"])
    if len(raw) != ipc.HANDLE_BYTES:
        return {"ok": False, "step": "handle", "error": f"{len(raw)} bytes"}
    handle = ipc.Handle.from_buffer_copy(raw)
    mapped = ctypes.c_uint64()
    rc = d.fn("cuIpcOpenMemHandle")(ctypes.byref(mapped), handle, ipc.LAZY_ENABLE_PEER_ACCESS)
    t2 = time.perf_counter()
    if rc != 0:
        return {"ok": False, "step": "cuIpcOpenMemHandle", "error": f"returned {rc}",
                "handle_request_s": round(t1 - t0, 4)}
    try:
        # Into a buffer of the parent's own: what is compared is out of the child's reach.
        own = torch.empty_like(expected)
        nbytes = own.numel() * own.element_size()
        rc = d.fn("cuMemcpyDtoD")(ctypes.c_uint64(own.data_ptr()), ctypes.c_uint64(mapped.value +
                                                                                          reply["offset"]),
                                          ctypes.c_size_t(nbytes))
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        if rc != 0:
            return {"ok": False, "step": "cuMemcpyDtoD", "error": f"returned {rc}"}
        equal = bool(torch.equal(own, expected))
        t4 = time.perf_counter()
    finally:
        close_rc = d.fn("cuIpcCloseMemHandle")(ctypes.c_uint64(mapped.value))
    return {"ok": True, "equal": equal, "handle_request_s": round(t1 - t0, 4), "open_s": round(t2 - t1, 4),
            "copy_s": round(t3 - t2, 4), "compare_s": round(t4 - t3, 4), "close_rc": close_rc,
            "total_s": round(t3 - t0, 4)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child_main()
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=1.0, help="the output's size (float32)")
    ap.add_argument("--repeat", type=int, default=2, help="each way this many times")
    ap.add_argument("--out", type=Path, help="the figures as JSON")
    args = ap.parse_args()
    import torch

    from gpu_runner import sandbox

    device = "cuda" if torch.cuda.is_available() else "cpu"
    numel = int(args.gib * (1 << 30)) // 4
    seed = 1234
    workdir = sandbox.new_workdir("transfer-")
    limits = sandbox.Limits(wall_s=900, cpu_s=900, memory_bytes=None, file_bytes=1 << 40)
    child = sandbox.spawn(["-m", "benchmarks.output_transfer", "child"], workdir=workdir, limits=limits)
    record: dict[str, Any] = {"benchmark": "output_transfer", "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                   time.gmtime()),
                              "host": platform.node(), "device": device, "gib": args.gib, "runs": [],
                              "isolation": child.isolation}
    if device == "cuda":
        record["gpu"] = torch.cuda.get_device_name()
    try:
        child.channel.send({"op": "make", "device": device, "numel": numel, "seed": seed})
        made = child.channel.recv(deadline=time.monotonic() + 300)
        record["child"] = made
        if not made.get("ok"):
            raise SystemExit(f"the child could not make the tensor: {made}")
        expected = _make(torch, device, numel, seed)
        for i in range(args.repeat):
            run: dict[str, Any] = {"file": _file_way(torch, child, child.channel, device, expected)}
            if device == "cuda":
                run["ipc"] = _ipc_way(torch, child.channel, expected)
            record["runs"].append(run)
            print(json.dumps({"run": i, **run}), flush=True)
        child.channel.send({"op": "exit"})
    finally:
        sandbox.kill(child)
        if args.out:
            args.out.write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
