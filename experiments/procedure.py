"""The run procedure: how the programs of a run are started on a node, waited for, captured and
stopped. Every place that runs the testbed's programs uses it: the harness inside the pinned
kernel (on Mininet nodes), the playbooks on a lab's nodes (Ansible copies this file and runs it
as a script), the tests and the benchmarks. A workload (experiments/workloads/) says which
programs start on which node and in which order; this module says how.

Standard library only, so that it runs alone on a node.

Library (a `launch` turns an argv into a process on the node: Mininet's `node.popen`, or
`subprocess.Popen` on a host):

    start(launch, argv, log, ready)        start a program, return once it printed `ready`
    start_capture(launch, iface, pcap)     tcpdump, return once it captures
    run(launch, argv, stdout, stderr, timeout_s)   a program to its end, within a limit
    stop(process) / stop_capture(process)

Command line, for a node without the testbed (the playbooks): a started program or capture
runs on in the background with its pid in DIR/NAME.pid until `stop`. A program's output goes
to DIR/NAME.out (`run`: stdout there, stderr to DIR/NAME.err), tcpdump's to DIR/NAME.tcpdump.
`--fresh` (every step but `stop`) empties DIR first: a half-finished attempt counts for nothing.

    python3 procedure.py start NAME --dir DIR [--ready TEXT] [--timeout S] -- ARGV...
    python3 procedure.py capture NAME --dir DIR --iface IF --pcap FILE [--snaplen N]
    python3 procedure.py run NAME --dir DIR --timeout S -- ARGV...
    python3 procedure.py stop NAME --dir DIR [--settle S]

and the FTP programs with the command lines below (what the harness runs), so that a node
builds them with the same code:

    python3 procedure.py ftp-server NAME --dir DIR --ftpd BIN --root DIR --address A
                                     --timeout S [--port P] [--open-timeout S]
                                     (start; its log: NAME.log)
    python3 procedure.py ftp-client NAME --dir DIR --ftpc BIN --variant V --server A
                                     --out DIR --timeout S [--bind A] [--port P]
                                     [--open-timeout S] [-- COMMANDS]
                                     (run within S + RUN_GRACE_S; its events: NAME.jsonl)

The programs themselves (ftpd, ftpc, bulkflow) and their command lines: `ftp_server_argv`,
`ftp_client_argv`, `bulk_receiver_argv`, `bulk_sender_argv`."""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Launch = Callable[..., "subprocess.Popen[bytes]"]
STARTUP_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
# tcpdump's ring (-B, in KB). Immediate mode gives it one 2 KB frame per packet (the nodes'
# interfaces have no offloads), and each page of the ring costs its start inside the pinned
# kernel: 8 MB took 0.6 to 0.9 s until tcpdump listened, 2 MB 0.37 to 0.41 s (on a node, real
# time). So a capture of a rate-limited path gets a ring sized to it (capture_buffer_kb); one
# of an unlimited or unknown rate keeps 8 MB, since a veth carries Gbit/s. A capture that still
# falls behind says so, and its run is redone (capture_shortfall).
CAPTURE_BUFFER_KB = 8192
CAPTURE_BUFFER_MIN_KB = 2048
FRAME_KB = 2
# A capture of headers ([run] capture = "headers"): every frame to this many bytes, the most
# that Ethernet, an IPv4 header without options and the largest TCP header (60 bytes, options
# included) take: 94. An SCTP packet of one chunk keeps its chunk's header, TSN and stream
# (62). The packets the workload's filter names are kept whole (WHOLE_SNAPLEN: any frame a
# link's MTU allows), by the same capture (run_capture.py).
HEADERS_SNAPLEN = 96
WHOLE_SNAPLEN = 65535
# A capture in block mode (capture_argv) is handed its last packets when the kernel retires
# their block: tcpdump's timeout is 1 s, and the kernel retires a block on the second timer tick
# that finds it unchanged, so within 2 s. Asked every CAPTURE_DRAIN_POLL_S.
CAPTURE_DRAIN_LIMIT_S = 5.0
CAPTURE_DRAIN_POLL_S = 0.1
# After the client's end, how long its connections and associations may take to close on the
# wire (FIN or SHUTDOWN exchange: a round trip, more after a loss) before the capture stops
# anyway. In virtual time the wait costs next to no wall time, and a capture in block mode
# needs the wire quiet before it is drained (packets that come after are lost), so there the
# limit is long enough for a close that waits out backed-off retransmission timers.
TEARDOWN_LIMIT_S = 3.0
VIRTUAL_TEARDOWN_LIMIT_S = 120.0
# TCP states (include/net/tcp_states.h, as /proc/net/tcp writes them) that send nothing more of
# their own: TIME_WAIT, CLOSE, LISTEN
_TCP_QUIET_STATES = {"06", "07", "0A"}
# What a program run to its end may take beyond its own limit (ftpc's --timeout is a stall
# limit, not the whole session's).
RUN_GRACE_S = 30.0
POLL_S = 0.05
# The programs print this line on stdout once they listen (ftpd: on TCP and SCTP both).
READY = "ready"
FTP_PORT = 21
HTTP_PORT = 80
SCTP_UDP_PORT = 9899   # SCTP over UDP (RFC 6951), where usrsctp listens and sends to


class RunFailure(Exception):
    """A run that cannot count: the message is the reason recorded with it."""


def host_launch(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Launch on this host (a lab node, or a test outside any namespace)."""
    return subprocess.Popen(list(argv), **kwargs)


def netns_launch(namespace: str) -> Launch:
    """Launch inside a named network namespace (`ip netns add NAME`)."""
    def launch(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["ip", "netns", "exec", namespace, *argv], **kwargs)
    return launch


# -- steps ----------------------------------------------------------------------------------------
def start(launch: Launch, argv: Sequence[str], log: Path, ready: str = READY,
          timeout_s: float = STARTUP_TIMEOUT_S, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a program with stdout and stderr into `log`; return once a line of the log is
    `ready` (or contains it, for JSON event lines), fail if it exits or the limit runs out."""
    process = launch_logged(launch, argv, log, **kwargs)
    await_ready(process, argv, log, ready, timeout_s)
    return process


def launch_logged(launch: Launch, argv: Sequence[str], log: Path,
                  **kwargs: Any) -> subprocess.Popen[bytes]:
    """`start` without the wait, for programs started side by side: `await_ready` each."""
    with open(log, "wb") as out:
        return launch(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                      stderr=subprocess.STDOUT, **kwargs)


def await_ready(process: subprocess.Popen[bytes], argv: Sequence[str], log: Path,
                ready: str = READY, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _printed(log, ready):
            return
        if process.poll() is not None:
            raise RunFailure(f"{Path(argv[0]).name} exited ({process.returncode}) before it "
                             f"was ready: {_tail(log)}")
        time.sleep(POLL_S)
    stop(process, signal.SIGKILL)
    raise RunFailure(f"{Path(argv[0]).name} was not ready within {timeout_s:.0f} s: {_tail(log)}")


def _printed(log: Path, ready: str) -> bool:
    try:
        text = log.read_text(errors="replace")
    except FileNotFoundError:
        return False
    return any(line == ready or f'"{ready}"' in line for line in text.splitlines())


def _tail(path: Path, limit: int = 300) -> str:
    try:
        return path.read_text(errors="replace").strip()[-limit:]
    except FileNotFoundError:
        return ""


def start_capture(launch: Launch, iface: str, pcap: Path, snaplen: int = 0,
                  capture_filter: str = "", timeout_s: float = STARTUP_TIMEOUT_S,
                  **kwargs: Any) -> subprocess.Popen[bytes]:
    """tcpdump on `iface` into `pcap`, returned once it captures."""
    capture = launch_capture(launch, iface, pcap, snaplen, capture_filter, **kwargs)
    await_capture(capture, iface, timeout_s)
    return capture


def launch_capture(launch: Launch, iface: str, pcap: Path, snaplen: int = 0,
                   capture_filter: str = "", buffer_kb: int = CAPTURE_BUFFER_KB,
                   immediate: bool = True, **kwargs: Any) -> subprocess.Popen[bytes]:
    """`start_capture` without the wait: `await_capture` it."""
    return launch(capture_argv(iface, pcap, snaplen, capture_filter, buffer_kb, immediate),
                  stdin=subprocess.DEVNULL,
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)


def await_capture(capture: subprocess.Popen[bytes], iface: str,
                  timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Return once tcpdump says it listens. Its stderr is read without blocking past the
    limit; after this, the same pipe holds its closing statistics (read it once stopped)."""
    assert capture.stderr is not None
    stream = capture.stderr.fileno()
    deadline = time.monotonic() + timeout_s
    said = b""
    while (remaining := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([stream], [], [], remaining)
        if not readable:
            break
        chunk = os.read(stream, 4096)
        if not chunk:  # tcpdump exited
            break
        said += chunk
        if b"listening on" in said:
            return
    stop(capture, signal.SIGKILL)
    raise RunFailure(f"tcpdump on {iface} did not start capturing: "
                     f"{said.decode(errors='replace').strip()[-300:]}")


def capture_buffer_kb(rates_bps: Sequence[int | None]) -> int:
    """The ring for a capture of links at these rates (None: not rate-limited): one second of
    the fastest one's full-size packets with their acknowledgements (half as many), in 2 KB
    frames; at least CAPTURE_BUFFER_MIN_KB, at most CAPTURE_BUFFER_KB, which is also what an
    unlimited or unknown rate gets."""
    limited = [rate for rate in rates_bps if rate is not None]
    if not limited or len(limited) < len(rates_bps):
        return CAPTURE_BUFFER_KB
    frames_per_s = max(limited) / (8 * 1500) * 1.5
    return int(min(CAPTURE_BUFFER_KB, max(CAPTURE_BUFFER_MIN_KB, frames_per_s * FRAME_KB)))


def capture_argv(iface: str, pcap: Path, snaplen: int = 0, capture_filter: str = "",
                 buffer_kb: int = CAPTURE_BUFFER_KB, immediate: bool = True) -> list[str]:
    """tcpdump with a ring of `buffer_kb` (CAPTURE_BUFFER_KB). In immediate mode it is woken
    for every packet and writes each at once, so the pcap is complete the moment the wire is
    quiet. In block mode (not `immediate`) the kernel hands it blocks of packets, a block once
    full or once it has aged (within 2 s: CAPTURE_DRAIN_LIMIT_S), so tcpdump wakes a few times
    a second instead of per packet. Inside a virtual-time kernel those wake-ups are much of a
    transfer's wall time, but in block mode the last packets wait in the ring: such a capture
    is drained before it stops (`stop_capture`), or they are lost."""
    argv = ["tcpdump", "-i", iface, "-n", *(["--immediate-mode", "-U"] if immediate else []),
            "-B", str(buffer_kb), "-s", str(snaplen), "-w", str(pcap)]
    return argv + [capture_filter] if capture_filter else argv


def run(launch: Launch, argv: Sequence[str], stdout: Path, stderr: Path, timeout_s: float,
        **kwargs: Any) -> int:
    """A program run to its end; its exit status. Past the limit it is killed and the run
    fails."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        process = launch(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, **kwargs)
        try:
            return wait_exit(process, timeout_s)
        except subprocess.TimeoutExpired:
            stop(process, signal.SIGKILL)
            raise RunFailure(f"{Path(argv[0]).name} ran past {timeout_s:.0f} s") from None


def wait_exit(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """`process.wait(timeout)` in one blocking wait on a pidfd. Popen polls every 50 ms (of the
    kernel's clock) instead, and in virtual time each of those wake-ups costs real time for
    every simulated second a transfer lasts: 4 minutes of a satellite run are 4,800 of them."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # before Python 3.9 or Linux 5.3; or already reaped
        return process.wait(timeout=timeout_s)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout_s * 1000))):
            raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(pidfd)
    return process.wait()


def wait_all(processes: dict[str, subprocess.Popen[bytes]], timeout_s: float) -> dict[str, int]:
    """Exit statuses of programs started side by side, once all have ended; past the limit
    the ones still running are killed and the run fails."""
    deadline = time.monotonic() + timeout_s
    statuses: dict[str, int] = {}
    for name, process in processes.items():
        try:
            statuses[name] = wait_exit(process, max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes.values():
                stop(other, signal.SIGKILL)
            raise RunFailure(f"{name} ran past {timeout_s:.0f} s") from None
    return statuses


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM,
         grace_s: float = STOP_GRACE_S) -> int:
    """Signal a program and wait for it; killed if it outlives the grace period."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def open_sessions(pid: int) -> int:
    """TCP connections and SCTP associations still open in the network namespace of process
    `pid`, read from its /proc/PID/net (no program started): listeners and TIME_WAIT aside."""
    count = 0
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        count += sum(len(fields) > 3 and fields[3] not in _TCP_QUIET_STATES
                     for fields in (line.split() for line in lines))
    with contextlib.suppress(OSError):
        count += len(Path(f"/proc/{pid}/net/sctp/assocs").read_text().splitlines()[1:])
    return count


def await_sessions_closed(pids: Sequence[int], limit_s: float = TEARDOWN_LIMIT_S
                          ) -> float | None:
    """Wait until the namespaces of processes `pids` (both ends of a path) have no open
    connection or association: their closing exchanges are then on the wire, and in a capture
    stopped after this. Both ends, because the one that closes first is done before the other
    has its last ACK or SHUTDOWN COMPLETE. The seconds waited, or None if the limit came
    first."""
    started, pause = time.monotonic(), POLL_S / 5
    while any(open_sessions(pid) for pid in pids):
        if time.monotonic() - started >= limit_s:
            return None
        time.sleep(pause)
        # a close that waits for a retransmission timer is asked less often as it goes on
        pause = min(pause * 1.5, 5 * POLL_S)
    return time.monotonic() - started


def stop_capture(capture: subprocess.Popen[bytes]) -> dict[str, int]:
    """Stop tcpdump once it has written all it was handed (`drain_captures`); its closing
    counts (`capture_counts`), with how long the drain took (`drain_ms`, -1 if the limit came
    first). In block mode the last block waits in the ring until the kernel retires it; in
    immediate mode, tcpdump inside a one-CPU kernel may not have been scheduled since the last
    packets came: either way, on SIGINT it leaves what it has not read, and the run would be
    redone for nothing. (Not for a capture on loopback, where it discards half of them.)
    The drain comes after the run's sessions have closed, so what the kernel hands tcpdump
    after it is not the run's (a neighbour probe, a stray retransmission of a closed
    connection's FIN): `after_drain` counts it, and unread it is no shortfall."""
    return stop_captures([capture])[0]


def stop_captures(captures: Sequence[subprocess.Popen[bytes]]) -> list[dict[str, int]]:
    """`stop_capture` for captures side by side, drained together: one wait for the kernel
    to retire their last blocks instead of one each."""
    drained = drain_captures(captures)
    out = []
    for capture, drain in zip(captures, drained, strict=True):
        stop(capture, signal.SIGINT)
        said = capture.stderr.read() if capture.stderr is not None else b""
        counts = capture_counts(said.decode(errors="replace"))
        counts["drain_ms"] = -1 if drain is None else round(drain[0] * 1000)
        if drain is not None and "received" in counts:
            counts["after_drain"] = max(0, counts["received"] - drain[1])
        out.append(counts)
    return out


def drain_captures(captures: Sequence[subprocess.Popen[bytes]],
                   limit_s: float = CAPTURE_DRAIN_LIMIT_S) -> list[tuple[float, int] | None]:
    """Wait until each tcpdump has written every packet the kernel handed it (not for a
    capture on loopback, where it discards half of them): asked with SIGUSR1, on which it
    prints its counts and goes on. Per capture, the seconds waited and the packets it had
    written by then, or None if the limit came first."""
    said = [""] * len(captures)
    drained: list[tuple[float, int] | None] = [None] * len(captures)
    pending = set(range(len(captures)))
    started = time.monotonic()
    while pending and time.monotonic() - started < limit_s:
        for i in sorted(pending):
            capture = captures[i]
            assert capture.stderr is not None
            if capture.poll() is not None:
                pending.discard(i)
                continue
            capture.send_signal(signal.SIGUSR1)
            said[i] += read_line(capture.stderr.fileno(), limit_s)
            counts = capture_counts(said[i])
            if counts.get("captured", -1) >= counts.get("received", 0):
                drained[i] = (time.monotonic() - started, counts["captured"])
                pending.discard(i)
        if pending:
            time.sleep(CAPTURE_DRAIN_POLL_S)
    return drained


def read_line(stream: int, timeout_s: float) -> str:
    """What a pipe says up to the end of its next line (or its end, or the time limit)."""
    said, deadline = b"", time.monotonic() + timeout_s
    while not said.endswith(b"\n") and (remaining := deadline - time.monotonic()) > 0:
        if not select.select([stream], [], [], remaining)[0]:
            break
        chunk = os.read(stream, 4096)
        if not chunk:
            break
        said += chunk
    return said.decode(errors="replace")


def capture_counts(said: str) -> dict[str, int]:
    """tcpdump's closing lines: packets captured (written), received by filter (the kernel
    handed them to it) and dropped by kernel (its buffer was full); the ones it printed, the
    last of each where it printed them more than once (SIGUSR1)."""
    counts = {}
    for key, words in (("captured", "packets? captured"), ("received", "packets? received by "
                                                           "filter"),
                       ("dropped", "packets? dropped by kernel")):
        found = re.findall(rf"(\d+) {words}", said)
        if found:
            counts[key] = int(found[-1])
    return counts


def capture_shortfall(counts: dict[str, int]) -> str | None:
    """Why a capture misses packets the interface carried, or None: the run's pcap is then
    not the run, and it is redone rather than measured. (Not for loopback, where libpcap
    itself discards the outgoing copy of each packet it was handed.)"""
    if counts.get("dropped"):
        return f"the capture dropped {counts['dropped']} packets (tcpdump's buffer was full)"
    if "captured" in counts and (counts["captured"] < counts.get("received", 0)
                                 - counts.get("after_drain", 0)):
        return (f"the capture wrote {counts['captured']} of the {counts['received']} packets "
                "it was handed: tcpdump stopped before reading the last ones")
    return None


def _settle(path: Path, settle_s: float, limit_s: float = 10.0) -> None:
    """Until the capture file has not grown for `settle_s` (at most `limit_s`): for a detached
    capture (`stop --settle`), whose counts this command cannot ask for."""
    deadline, last = time.monotonic() + limit_s, -1
    while time.monotonic() < deadline:
        size = path.stat().st_size if path.exists() else 0
        if size == last:
            return
        last = size
        time.sleep(settle_s)


# -- the programs ---------------------------------------------------------------------------------
def ftp_server_argv(ftpd: str, root: str, address: str, log: str, timeout_s: float,
                    port: int = FTP_PORT, options: Sequence[str] = (),
                    open_timeout_s: int | None = None) -> list[str]:
    """ftpd serving `root` over TCP and SCTP on one address. Its own stall limits (60 s for
    data) are shorter than a lossy satellite path's backed-off retransmission timers: the
    run's limit governs instead. Not so the wait for a data connection to open, which never
    ends on its own when the handshake's last ACK is lost until the server's half-open end
    expires: `open_timeout_s` (ftpd's --open-timeout; None: its default), which the harness
    computes from the run's stack (experiments/stacks.py, open_limits). `options`: more of
    ftpd's options (socket knobs, uploads)."""
    opening = [] if open_timeout_s is None else ["--open-timeout", str(int(open_timeout_s))]
    return [ftpd, "--root", root, "--tcp", f"{address}:{port}", "--sctp", f"{address}:{port}",
            "--log", log, "--data-timeout", str(int(timeout_s)),
            "--idle-timeout", str(int(timeout_s)), *opening, *server_user(root), *options]


def server_user(root: str) -> list[str]:
    """A server started as root (ftpd, httpd) serves as `nobody` (ftp-impl/TRUST.md) when that
    user can reach the tree: the data sets are world-readable, but a results root inside a
    private folder (a test's 0700 temporary folder) hides them, and uploads need a folder that
    user owns.
    There, and only there, root is kept on purpose (`--run-as root`), so the run still
    measures instead of failing on a permission; the log says which it was."""
    path = Path(root).resolve()
    readable = all(os.stat(folder).st_mode & 0o001 for folder in [path, *path.parents])
    return [] if readable and os.stat(path).st_mode & 0o004 else ["--run-as", "root"]


def ftp_client_argv(ftpc: str, variant: str, server: str, out: str, timeout_s: float,
                    bind: str | None = None, port: int = FTP_PORT,
                    commands: Sequence[str] = ("mget", "*"),
                    options: Sequence[str] = (),
                    open_timeout_s: int | None = None) -> list[str]:
    """ftpc's session with the server; `open_timeout_s`: its --open-timeout (the wait for a
    transfer's 1xx before it retries on a new data connection; None: its default);
    `options`: more of ftpc's options (`--active`, socket knobs), which go before the
    server's address as ftpc reads them."""
    argv = [ftpc, "--variant", variant, "--out", out, "--timeout", str(int(timeout_s))]
    if open_timeout_s is not None:
        argv += ["--open-timeout", str(int(open_timeout_s))]
    if bind:
        argv += ["--bind", bind]
    return argv + [*options, f"{server}:{port}", *commands]


def bulk_receiver_argv(bulkflow: str, proto: str, address: str, port: int,
                       options: Sequence[str] = ()) -> list[str]:
    return [bulkflow, "recv", "--proto", proto, "--listen", f"{address}:{port}", *options]


def bulk_sender_argv(bulkflow: str, proto: str, address: str, port: int, duration_s: float,
                     start_at: float, options: Sequence[str] = ()) -> list[str]:
    return [bulkflow, "send", "--proto", proto, "--to", f"{address}:{port}",
            "--duration", f"{duration_s:g}", "--start-at", f"{start_at:.6f}", *options]


def sctp_stack_options(sctp_stack: str, peer: bool = True,
                       sysctls: Sequence[tuple[str, int]] = ()) -> list[str]:
    """A program's options for its SCTP stack. usrsctp speaks SCTP inside UDP on RFC 6951's
    port 9899 at both ends (every node has its own network namespace, so one port serves
    all), which tshark decodes as SCTP without being told; the kernel's SCTP does not listen
    on UDP there (its net.sctp.udp_port stays 0), so it cannot answer those packets.
    "usrsctp:NAME=VALUE,..." sets those of usrsctp's sysctls at both ends, after `sysctls`
    (a stack profile's), so that the experiment's own win. `peer`: the program names the
    peer's UDP port (ftpd does not: it answers each association on the port it came from)."""
    if sctp_stack == "kernel":
        return []
    port = str(SCTP_UDP_PORT)
    base, _, settings = sctp_stack.partition(":")
    items = [f"{name}={value}" for name, value in sysctls] + [i for i in settings.split(",") if i]
    return ["--sctp-stack", base, "--sctp-udp-port", port,
            *(["--sctp-peer-udp-port", port] if peer else []),
            *(f"--usrsctp-sysctl={item}" for item in items)]


def http_server_argv(httpd: str, root: str, address: str, log: str, timeout_s: float,
                     port: int = HTTP_PORT, options: Sequence[str] = ()) -> list[str]:
    """httpd serving `root` over TCP and SCTP on one address, its idle and I/O limits the
    run's (a lossy slow path's backed-off timers outlast its defaults)."""
    return [httpd, "--root", root, "--listen", f"{address}:{port}",
            "--listen-sctp", f"{address}:{port}", "--log", log,
            "--idle-timeout", str(int(timeout_s)), "--header-timeout", str(int(timeout_s)),
            "--io-timeout", str(int(timeout_s)), *server_user(root), *options]


def http_client_argv(httpc: str, proto: str, server: str, out: str, timeout_s: float,
                     paths: Sequence[str], port: int = HTTP_PORT,
                     options: Sequence[str] = ()) -> list[str]:
    """httpc fetching `paths` (the document, then its objects) over `proto`."""
    return [httpc, "--proto", proto, "--server", f"{server}:{port}", "--out", out,
            "--timeout", str(int(timeout_s)), *options, *paths]


# -- command line ---------------------------------------------------------------------------------
def _pid_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.pid"


def _detached(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Outlives this command: its own session, so the caller's end does not end it."""
    return subprocess.Popen(list(argv), start_new_session=True, **kwargs)


def _cli_start(args: argparse.Namespace) -> int:
    process = start(_detached, args.argv, args.dir / f"{args.name}.out", args.ready,
                    args.timeout)
    _pid_file(args.dir, args.name).write_text(f"{process.pid}\n")
    return 0


def _cli_capture(args: argparse.Namespace) -> int:
    """The pid file also names the pcap, for `stop --settle`."""
    with open(args.dir / f"{args.name}.tcpdump", "wb") as errors:
        process = _detached(capture_argv(args.iface, args.pcap, args.snaplen),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if "listening on" in _tail(args.dir / f"{args.name}.tcpdump", 4000):
            _pid_file(args.dir, args.name).write_text(f"{process.pid}\n{args.pcap.resolve()}\n")
            return 0
        if process.poll() is not None:
            break
        time.sleep(POLL_S)
    process.kill()
    print(f"tcpdump on {args.iface} did not start capturing: "
          f"{_tail(args.dir / f'{args.name}.tcpdump')}", file=sys.stderr)
    return 1


def _exit_status(status: int) -> int:
    """A program's status as a shell reports it: 128 + N when signal N ended it."""
    return status if status >= 0 else 128 - status


def _cli_run(args: argparse.Namespace) -> int:
    return _exit_status(run(host_launch, args.argv, args.dir / f"{args.name}.out",
                            args.dir / f"{args.name}.err", args.timeout))


def _cli_ftp_server(args: argparse.Namespace) -> int:
    args.argv = ftp_server_argv(args.ftpd, args.root, args.address,
                                str(args.dir / f"{args.name}.log"), args.timeout, args.port,
                                open_timeout_s=args.open_timeout)
    args.ready, args.timeout = READY, STARTUP_TIMEOUT_S
    return _cli_start(args)


def _cli_ftp_client(args: argparse.Namespace) -> int:
    if not os.path.exists(args.out):
        os.makedirs(args.out)
    argv = ftp_client_argv(args.ftpc, args.variant, args.server, args.out, args.timeout,
                           args.bind, args.port, args.argv or ("mget", "*"),
                           open_timeout_s=args.open_timeout)
    return _exit_status(run(host_launch, argv, args.dir / f"{args.name}.jsonl",
                            args.dir / f"{args.name}.err", args.timeout + RUN_GRACE_S))


def _cli_stop(args: argparse.Namespace) -> int:
    """Stop a program `start` or `capture` left running (not our child: waited for by pid)."""
    pid_file = _pid_file(args.dir, args.name)
    if not pid_file.exists():
        print(f"nothing started as {args.name} in {args.dir}", file=sys.stderr)
        return 1
    pid_line, *pcap_line = pid_file.read_text().splitlines()
    pid = int(pid_line)
    if args.settle > 0 and pcap_line:
        _settle(Path(pcap_line[0]), args.settle)
    for sig in (signal.SIGINT if args.signal == "INT" else signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(POLL_S)
        if not _alive(pid):
            break
    pid_file.unlink()
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of a process that was our child counts as ended; the process may also be reaped
    # between the open and the read of its stat file (ESRCH from the read)
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="procedure.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def step(name: str, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text)
        command.add_argument("name", help="what to call it in DIR (NAME.pid, NAME.out, ...)")
        command.add_argument("--dir", type=Path, required=True, help="the run's directory")
        if name != "stop":
            command.add_argument("--fresh", action="store_true",
                                 help="empty DIR first (the run's first step)")
        return command

    started = step("start", "start a program in the background, return once it is ready")
    started.add_argument("--ready", default=READY, help="the line it prints when ready")
    started.add_argument("--timeout", type=float, default=STARTUP_TIMEOUT_S)
    capture = step("capture", "start tcpdump in the background, return once it captures")
    capture.add_argument("--iface", required=True)
    capture.add_argument("--pcap", type=Path, required=True)
    capture.add_argument("--snaplen", type=int, default=0)
    ran = step("run", "run a program to its end; exit with its status")
    ran.add_argument("--timeout", type=float, required=True)
    stopped = step("stop", "stop what start or capture left running")
    stopped.add_argument("--signal", choices=("TERM", "INT"), default="TERM")
    stopped.add_argument("--settle", type=float, default=0.0,
                         help="a capture: first wait until its pcap stops growing for this long")
    server = step("ftp-server", "start ftpd (ftp_server_argv) as `start` does")
    server.add_argument("--ftpd", required=True, help="the program")
    server.add_argument("--root", required=True, help="the folder it serves")
    server.add_argument("--address", required=True, help="its one address, TCP and SCTP")
    server.add_argument("--port", type=int, default=FTP_PORT)
    server.add_argument("--timeout", type=float, required=True,
                        help="its data and idle limits, seconds")
    server.add_argument("--open-timeout", type=int,
                        help="its limit on a data connection's opening (default: ftpd's)")
    client = step("ftp-client", "run an ftpc session (ftp_client_argv) as `run` does; "
                                "the commands after -- (default: mget *)")
    client.add_argument("--ftpc", required=True, help="the program")
    client.add_argument("--variant", required=True)
    client.add_argument("--server", required=True, help="the server's address")
    client.add_argument("--port", type=int, default=FTP_PORT)
    client.add_argument("--out", required=True, help="where downloads go (made if missing)")
    client.add_argument("--bind", help="the client's local address")
    client.add_argument("--timeout", type=float, required=True,
                        help="ftpc's stall limit; the session's is this plus RUN_GRACE_S")
    client.add_argument("--open-timeout", type=int,
                        help="its wait for a transfer's 1xx before a retry (default: ftpc's)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    program: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, program = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    args.argv = program
    if args.command in ("start", "run") and not program:
        print(f"{args.command} needs the program after --", file=sys.stderr)
        return 2
    if getattr(args, "fresh", False):
        shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True, exist_ok=True)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "start": _cli_start, "capture": _cli_capture, "run": _cli_run, "stop": _cli_stop,
        "ftp-server": _cli_ftp_server, "ftp-client": _cli_ftp_client}
    try:
        return commands[args.command](args)
    except RunFailure as failure:
        print(str(failure), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
