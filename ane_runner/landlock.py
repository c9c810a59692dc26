"""Landlock confinement for a solution's Python builder, on top of gpu_runner's sandbox.

gpu_runner.sandbox starts the child (fresh session, allowlisted environment, rlimits, wall clock, and where
permitted new network/mount/PID namespaces with a read-only file system). It does not stop reads, and a
builder receives the problem's weights only: nothing else on the host is its business. So the harness
(`_builder_child.py`) also confines itself with Landlock (unprivileged, Linux >= 5.13) before it reads the
solution: reads only of the interpreter, its packages, system libraries and its own directory; writes only
to its own directory; no TCP bind or connect (ABI >= 4); no abstract unix sockets or signals outside itself
(ABI >= 6); no ptrace or /proc/<pid>/environ of other processes (Landlock's scoping). What was in force is
recorded in the validation report. Not covered by Landlock: connecting to a pathname unix socket.
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
from pathlib import Path

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV


class SandboxUnavailable(RuntimeError):
    pass


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none (other OS, old kernel, disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    r = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(r), 0)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def read_only_roots() -> list[Path]:
    """What the interpreter, torch and coremltools need to import and run."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(Path(sysconfig.get_paths()[key]))
    roots |= {Path(p) for p in ("/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime",
                                  "/proc/cpuinfo", "/proc/meminfo", "/sys/devices/system/cpu")}
    roots.add(Path(sys.executable).resolve().parent)
    return sorted(r for r in roots if r.exists())


def confine_self(*, write_dir: Path, read_dirs: list[Path]) -> None:
    """Confine the calling process for good (children inherit it). Raises SandboxUnavailable."""
    abi = landlock_abi()
    if abi < 1:
        raise SandboxUnavailable("Landlock is not available on this kernel: the builder cannot be confined")
    libc = _libc()
    fs = _fs_rights(abi)
    attr = _RulesetAttr(fs=fs, net=(0b11 if abi >= 4 else 0), scoped=(0b11 if abi >= 6 else 0))
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise SandboxUnavailable(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")

    def allow(path: Path, rights: int) -> None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                rights &= _FILE_ONLY
            rule = _PathBeneath(allowed=rights & fs, fd=pfd)
            if libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                raise SandboxUnavailable(f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(pfd)

    for p in read_dirs:
        allow(p, _EXECUTE | _READ_FILE | _READ_DIR)
    allow(Path("/proc/self"), _READ_FILE | _READ_DIR)
    allow(Path("/dev/null"), _READ_FILE | _WRITE_FILE)
    allow(Path("/dev/urandom"), _READ_FILE)
    allow(write_dir, fs)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SandboxUnavailable("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(_SYS_RESTRICT_SELF, fd, ctypes.c_uint32(0)) != 0:
        raise SandboxUnavailable(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    os.close(fd)
