"""Whether Debian's prebuilt User-Mode Linux can run on this host's CPU.

User-Mode Linux keeps each process's floating-point state in a fixed area and hands it back to
the host with PTRACE_SETREGSET, which takes only the host's whole XSAVE area. Debian's 6.1
build keeps 2696 bytes (x87 to PKRU, AVX-512 included); a CPU with AMX has 11008, and there
that build dies at its first process ("userspace - ptrace set fp regs failed, errno = 14").
The project's build (timetravel/patches/0002-...) writes through a buffer of the host's size.
The size is read the way User-Mode Linux reads it: PTRACE_GETREGSET on a stopped child."""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import signal

DEBIAN_UML_XSTATE_BYTES = 2696
PTRACE_TRACEME = 0
PTRACE_GETREGSET = 0x4204
NT_X86_XSTATE = 0x202
PROBE_BYTES = 64 * 1024


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


@functools.cache
def xstate_bytes() -> int | None:
    """The size of this host's XSAVE area as ptrace hands it out; None where it cannot be
    read (not x86-64, ptrace refused): then nothing is assumed about it."""
    if platform.machine() != "x86_64":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    child = os.fork()
    if child == 0:
        try:
            libc.ptrace(PTRACE_TRACEME, 0, None, None)
            os.kill(os.getpid(), signal.SIGSTOP)
        finally:
            os._exit(0)
    try:
        _, status = os.waitpid(child, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            return None
        buffer = ctypes.create_string_buffer(PROBE_BYTES)
        iov = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), PROBE_BYTES)
        if libc.ptrace(PTRACE_GETREGSET, child, ctypes.c_void_p(NT_X86_XSTATE),
                       ctypes.byref(iov)) != 0:
            return None
        return int(iov.length)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def debian_uml_runs_here() -> bool:
    size = xstate_bytes()
    return size is None or size <= DEBIAN_UML_XSTATE_BYTES


def why_not() -> str:
    return (f"this CPU's XSAVE area is {xstate_bytes()} bytes and Debian's User-Mode Linux 6.1 "
            f"handles {DEBIAN_UML_XSTATE_BYTES} (it dies at its first process)")
