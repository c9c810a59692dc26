"""The channel between the trusted parent and a child: length-prefixed JSON over a socketpair.

Not stdout: a solution may print anything. Tensors do not travel here; they go through files in the child's
directory, which the parent reads with `load_tensors` (no pickle code runs). Everything a child sends is
untrusted: the parent checks sizes and types before it uses a value.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from pathlib import Path
from typing import Any

MAX_MESSAGE_BYTES = 8 << 20
_HEADER = struct.Struct(">I")


class ChannelClosed(Exception):
    """The other side went away (a child that crashed or exited)."""


class ChannelTimeout(Exception):
    """No answer before the deadline."""


class ProtocolError(Exception):
    """The other side sent something malformed."""


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setblocking(True)

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, allow_nan=True).encode()
        if len(data) > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_MESSAGE_BYTES} byte limit")
        try:
            self.sock.sendall(_HEADER.pack(len(data)) + data)
        except OSError as e:
            raise ChannelClosed(str(e)) from None

    def _recv_exact(self, n: int, deadline: float | None) -> bytes:
        chunks = []
        while n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelTimeout()
                ready, _, _ = select.select([self.sock], [], [], left)
                if not ready:
                    raise ChannelTimeout()
            try:
                chunk = self.sock.recv(min(n, 1 << 20))
            except OSError as e:
                raise ChannelClosed(str(e)) from None
            if not chunk:
                raise ChannelClosed("the other side closed the channel")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    # File descriptors (a capability slot's, ipc.py) travel after a message as one byte with SCM_RIGHTS: the reader
    # reads messages to their exact length, so that byte is never swallowed by a message's read, and the op the
    # message asked for takes it with recv_fds before the next message.
    FD_BYTE = b"F"
    MAX_FDS = 4

    def send_fds(self, fds: list[int]) -> None:
        try:
            socket.send_fds(self.sock, [self.FD_BYTE], fds)
        except OSError as e:
            raise ChannelClosed(str(e)) from None

    def recv_fds(self, deadline: float | None = None) -> list[int]:
        if deadline is not None:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ChannelTimeout()
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.sock, 1, self.MAX_FDS)
        except OSError as e:
            raise ChannelClosed(str(e)) from None
        if data != self.FD_BYTE:
            for fd in fds:
                os.close(fd)
            raise ProtocolError("descriptors were expected on the channel, something else came")
        return list(fds)

    def spin_until_readable(self, until: float) -> bool:
        """Poll, never sleeping, until a message is waiting or time.monotonic() passes `until`; True if one is.
        A child between timed calls waits this way: a thread that sleeps in recv wakes, when the next call's
        request comes, on a core that has gone idle, and its first microseconds of work run slower."""
        while time.monotonic() < until:
            ready, _, _ = select.select([self.sock], [], [], 0)
            if ready:
                return True
        return False

    def recv(self, deadline: float | None = None) -> dict[str, Any]:
        (size,) = _HEADER.unpack(self._recv_exact(_HEADER.size, deadline))
        if size > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"announced message of {size} bytes is over the limit")
        try:
            message = json.loads(self._recv_exact(size, deadline))
        except ValueError:
            raise ProtocolError("message is not JSON") from None
        if not isinstance(message, dict):
            raise ProtocolError("message is not a JSON object")
        return message

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def load_tensors(directory: Path, name: Any, *, max_bytes: int, mmap_over: int | None = None) -> list[Any]:
    """Read a list of tensors a child saved as `directory/name`, safely.

    The name must be a plain file name inside the directory (no path tricks, no links), under max_bytes; the
    content is read with torch.load(weights_only=True), which refuses anything but tensors and plain containers.
    mmap_over: a file over this many bytes is mapped, not copied into this process's memory (its tensors are the
    file's pages: page cache on a disk). Only for a trusted writer's files: a file cut short under a mapping
    kills the reader with SIGBUS.
    """
    import torch

    if not isinstance(name, str) or not name or "/" in name or name.startswith(".") or "\x00" in name:
        raise ProtocolError(f"bad output file name {name!r:.80}")
    path = directory / name
    try:
        st = os.lstat(path)
    except OSError:
        raise ProtocolError(f"output file {name} is missing") from None
    import stat as stat_mod

    if not stat_mod.S_ISREG(st.st_mode):
        raise ProtocolError(f"output file {name} is not a regular file")
    if st.st_size > max_bytes:
        raise ProtocolError(f"output file {name} is {st.st_size} bytes, over the {max_bytes} byte limit")
    # Without blocking, and the opened file checked again: a FIFO swapped in after the lstat above would otherwise
    # block this read for good.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise ProtocolError(f"output file {name} could not be opened") from None
    st = os.fstat(fd)
    if not stat_mod.S_ISREG(st.st_mode) or st.st_size > max_bytes:
        os.close(fd)
        raise ProtocolError(f"output file {name} is not a regular file under the {max_bytes} byte limit")
    if mmap_over is not None and st.st_size > mmap_over:
        try:
            # Through the open descriptor: the file that was checked above, whatever the name points to now.
            value = torch.load(f"/proc/self/fd/{fd}", map_location="cpu", weights_only=True, mmap=True)
        except Exception as e:  # noqa: BLE001
            raise ProtocolError(f"output file {name} could not be read: {type(e).__name__}") from None
        finally:
            os.close(fd)
        if not isinstance(value, list) or not all(isinstance(t, torch.Tensor) or t is None for t in value):
            raise ProtocolError(f"output file {name} does not hold a list of tensors")
        return value
    with os.fdopen(fd, "rb") as f:
        try:
            value = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any failure to parse untrusted bytes is a protocol error
            raise ProtocolError(f"output file {name} could not be read: {type(e).__name__}") from None
    if not isinstance(value, list) or not all(isinstance(t, torch.Tensor) or t is None for t in value):
        raise ProtocolError(f"output file {name} does not hold a list of tensors")
    return value
