"""TCP's initial retransmission timeout, set per program through a cgroup BPF sock_ops program.

Linux (6.1) starts every TCP connection with a retransmission timeout of 1 s (TCP_TIMEOUT_INIT:
the SYN, and the first data before any RTT sample). Some stacks start at 3 s (FreeBSD's
TCPTV_RTOBASE, RFC 2988). The only way to change it is a sock_ops program answering
BPF_SOCK_OPS_TIMEOUT_INIT with the timeout in jiffies (include/net/tcp.h, tcp_timeout_init).

**Enters:** the timeout in milliseconds, and the programs (argv) that should get it. **Leaves:**
for the time of the `with` block, a cgroup (v2) of its own with the program attached; `wrap`
turns an argv into one that joins that cgroup and then execs it, so only the programs of a run
are affected. On exit the program is detached and the cgroup removed (its remaining processes
moved to the parent first); cgroup2 stays mounted on /sys/fs/cgroup if it was mounted there for
this. Needs root, the BPF system call and cgroup BPF (CONFIG_BPF_SYSCALL, CONFIG_CGROUP_BPF):
both kernels of the testbed have them. Loaded with bpf(2) through ctypes
from six raw instructions; no BPF toolchain.

    with InitialRto(3000) as rto:
        subprocess.run(rto.wrap(["ip", "netns", "exec", "client", "ftpc", ...]))

Wrap the outermost command: `ip netns exec` mounts a sysfs of its own, which hides the cgroup
hierarchy from the commands it runs (Mininet's `node.popen` does not). The timer fires up to 8
jiffies late, as the kernel's own 1 s does (timer wheel granularity at HZ 100): a 3 s timeout
retransmits the SYN 3.00-3.08 s after it.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import gzip
import itertools
import os
import re
import struct
import subprocess
import time
from pathlib import Path
from types import TracebackType

# From the 6.1 uapi header (linux/bpf.h) and the x86_64 system call table.
NR_BPF = 321
BPF_PROG_LOAD, BPF_PROG_ATTACH, BPF_PROG_DETACH = 5, 8, 9
BPF_PROG_TYPE_SOCK_OPS = 13
BPF_CGROUP_SOCK_OPS = 3              # enum bpf_attach_type
BPF_F_ALLOW_MULTI = 1 << 1
BPF_SOCK_OPS_TIMEOUT_INIT = 1        # enum: BPF_SOCK_OPS_VOID, BPF_SOCK_OPS_TIMEOUT_INIT, ...
SOCK_OPS_OP, SOCK_OPS_REPLY = 0, 4   # offsets in struct bpf_sock_ops
TCP_RTO_MAX_S = 120                  # the kernel caps the reply at 120 s

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP2_MAGIC = 0x63677270
STANDARD_HZ = (100, 250, 300, 1000)
_counter = itertools.count()


class InitialRtoError(RuntimeError):
    """The initial RTO cannot be set on this kernel; the message says what to do."""


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    """One struct bpf_insn: opcode, dst_reg (low nibble) and src_reg, offset, immediate."""
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(jiffies: int) -> bytes:
    """The sock_ops program: reply `jiffies` to BPF_SOCK_OPS_TIMEOUT_INIT, leave the rest."""
    return b"".join((
        _insn(0x61, dst=2, src=1, off=SOCK_OPS_OP),            # r2 = ctx->op (u32)
        _insn(0x55, dst=2, off=2, imm=BPF_SOCK_OPS_TIMEOUT_INIT),  # if r2 != TIMEOUT_INIT: +2
        _insn(0xB7, dst=3, imm=jiffies),                        # r3 = jiffies
        _insn(0x63, dst=1, src=3, off=SOCK_OPS_REPLY),          # ctx->reply = r3 (u32)
        _insn(0xB7, dst=0, imm=1),                              # r0 = 1: reply is used
        _insn(0x95),                                            # exit
    ))


def _bpf(cmd: int, attr: bytes) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(attr, len(attr))
    result = libc.syscall(ctypes.c_long(NR_BPF), ctypes.c_int(cmd), buf,
                          ctypes.c_uint(len(attr)))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _kernel_config() -> str | None:
    try:
        return gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return None


def configured_hz() -> int | None:
    """CONFIG_HZ from /proc/config.gz, where the kernel offers it (the time-travel kernel does;
    Debian's UML kernel builds it as a module that is usually not loaded)."""
    try:
        config = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return None
    found = re.search(r"^CONFIG_HZ=(\d+)$", config, re.M)
    return int(found.group(1)) if found else None


def measured_hz(window_s: float = 0.5) -> int:
    """HZ measured: the jiffies counter in /proc/timer_list against the kernel's own clock (its
    "now at N nsecs") over `window_s`, rounded to the nearest standard value."""
    def sample() -> tuple[int, int]:
        text = Path("/proc/timer_list").read_text()
        now = re.search(r"^now at (\d+) nsecs", text, re.M)
        jiffies = re.search(r"^jiffies: (\d+)", text, re.M)
        if not (now and jiffies):
            raise InitialRtoError("cannot find the kernel's HZ: no CONFIG_HZ in /proc/config.gz "
                                  "and no jiffies in /proc/timer_list")
        return int(now.group(1)), int(jiffies.group(1))

    ns0, j0 = sample()
    time.sleep(window_s)
    ns1, j1 = sample()
    measured = (j1 - j0) * 1e9 / (ns1 - ns0)
    return min(STANDARD_HZ, key=lambda hz: abs(hz - measured))


@functools.cache
def kernel_hz() -> int:
    """The kernel's HZ (jiffies per second), which the sock_ops reply is counted in. Asked once
    per process: it is fixed at the kernel's build, and measuring it costs half a second,
    which a batch would otherwise pay on every TCP run of the published stack."""
    return configured_hz() or measured_hz()


def _fs_magic(path: Path) -> int:
    """f_type of statfs(2) (os.statvfs does not give it); -1 if path cannot be read."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(128)          # struct statfs: f_type first (long)
    if libc.statfs(str(path).encode(), buf) != 0:
        return -1
    return struct.unpack_from("<q", buf)[0]


def _is_mount_point(path: Path) -> bool:
    return any(line.split()[4] == str(path)
               for line in Path("/proc/self/mountinfo").read_text().splitlines())


class InitialRto:
    """Programs wrapped by `wrap` start TCP connections with an initial RTO of `ms`."""

    def __init__(self, ms: int, parent: Path = CGROUP_ROOT) -> None:
        if not 0 < ms <= TCP_RTO_MAX_S * 1000:
            raise ValueError(f"initial RTO {ms} ms: must be in (0, {TCP_RTO_MAX_S * 1000}]")
        self.ms = ms
        self.parent = parent
        self.hz = 0
        self.jiffies = 0
        self.cgroup = parent / f"testbed-rto-{os.getpid()}-{next(_counter)}"
        self._prog_fd: int | None = None
        self._cgroup_fd: int | None = None
        self._attached = False

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run from inside this cgroup: a shell joins it, then execs argv (and its
        children stay in it). A Mininet node (and `ip netns exec`) has a mount namespace of
        its own with a fresh /sys and no cgroup2 there: the shell mounts the one hierarchy
        where the node lacks it, inside the node's namespace only."""
        if self._cgroup_fd is None:
            raise RuntimeError("InitialRto.wrap outside its `with` block")
        script = ('[ -e "$2" ] || mount -t cgroup2 cgroup2 "$1" || exit 97; '
                  'echo $$ > "$2" && shift 2 && exec "$@"')
        return ["sh", "-c", script, "initial-rto", str(self.parent),
                str(self.cgroup / "cgroup.procs"), *argv]

    def __enter__(self) -> InitialRto:
        try:
            self._mount()
            self.hz = kernel_hz()
            self.jiffies = max(1, round(self.ms * self.hz / 1000))
            self.cgroup.mkdir()
            self._cgroup_fd = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY)
            self._prog_fd = self._load()
            self._attach()
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._cleanup()

    # --- steps

    def _mount(self) -> None:
        if _fs_magic(self.parent) == CGROUP2_MAGIC:
            return
        if self.parent != CGROUP_ROOT or _is_mount_point(CGROUP_ROOT):
            raise InitialRtoError(
                f"{self.parent} is not a cgroup v2 hierarchy (a v1 or hybrid layout is mounted "
                f"there): pass InitialRto(parent=...) a directory of the cgroup2 hierarchy")
        mount = subprocess.run(["mount", "-t", "cgroup2", "cgroup2", str(CGROUP_ROOT)],
                               capture_output=True, text=True)
        if mount.returncode != 0:
            raise InitialRtoError(f"cannot mount cgroup2 on {CGROUP_ROOT} "
                                  f"({mount.stderr.strip()}): the kernel needs CONFIG_CGROUPS, "
                                  f"and this must run as root")

    def _load(self) -> int:
        insns = program(self.jiffies)
        license_ = ctypes.create_string_buffer(b"GPL")
        code = ctypes.create_string_buffer(insns, len(insns))
        log = ctypes.create_string_buffer(4096)
        # prog_type, insn_cnt, insns, license, log_level, log_size, log_buf
        attr = struct.pack("<IIQQIIQ", BPF_PROG_TYPE_SOCK_OPS, len(insns) // 8,
                           ctypes.addressof(code), ctypes.addressof(license_), 1,
                           len(log), ctypes.addressof(log)).ljust(128, b"\0")
        try:
            return _bpf(BPF_PROG_LOAD, attr)
        except OSError as error:
            if error.errno == errno.ENOSYS:
                raise InitialRtoError(
                    "this kernel has no BPF system call (CONFIG_BPF_SYSCALL): boot one that has "
                    "(the `uml` backend's Debian kernel, or `uml-virtual` rebuilt with "
                    "topology/kernel/timetravel/build.sh)") from None
            if error.errno == errno.EPERM:
                raise InitialRtoError("loading a BPF program needs root (CAP_BPF and "
                                      "CAP_NET_ADMIN)") from None
            raise InitialRtoError(f"the kernel refused the sock_ops program ({error}): "
                                  f"{log.value.decode(errors='replace')}") from None

    def _attach(self) -> None:
        attr = struct.pack("<IIII", self._cgroup_fd, self._prog_fd, BPF_CGROUP_SOCK_OPS,
                           BPF_F_ALLOW_MULTI).ljust(128, b"\0")
        try:
            _bpf(BPF_PROG_ATTACH, attr)
        except OSError as error:
            raise InitialRtoError(
                f"cannot attach the sock_ops program to {self.cgroup} ({error}): the kernel "
                f"needs CONFIG_CGROUP_BPF (the testbed's kernels have it; rebuild the "
                f"time-travel kernel with topology/kernel/timetravel/build.sh)") from None
        self._attached = True

    def _cleanup(self) -> None:
        if self._attached:
            attr = struct.pack("<IIII", self._cgroup_fd, self._prog_fd, BPF_CGROUP_SOCK_OPS,
                               0).ljust(128, b"\0")
            _bpf(BPF_PROG_DETACH, attr)
            self._attached = False
        for fd in (self._prog_fd, self._cgroup_fd):
            if fd is not None:
                os.close(fd)
        self._prog_fd = self._cgroup_fd = None
        if self.cgroup.is_dir():
            for pid in (self.cgroup / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):   # it ended meanwhile
                    (self.parent / "cgroup.procs").write_text(pid)
            self.cgroup.rmdir()
