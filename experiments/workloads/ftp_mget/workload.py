"""ftp-mget: one FTP session fetches N files of one size with `mget *` across `path` (E1, E2),
or across path 1 of `dualpath`, where the SCTP variants' associations are multihomed over both
paths (each end binds its path-2 address too, and ftpc names the server's: --sctp-also-bind,
--sctp-also-peer) and TCP crosses path 1 alone.

    ftpd on the server, a capture of whole packets on the client's interfaces, then
    `ftpc --variant V mget '*'` on the client; every downloaded file checked against the data
    set's SHA-256 digests. Both programs' limits on a data connection's opening
    (--open-timeout) come from the point's stack (stacks.open_limits); the run records them
    as `open_limits`.

Its keys: `metric` (top level: which interval the studies measured), and in [matrix]
`file_sizes`, `files`, `variants`, `parallel` (xftp's data connections per transfer, default
[4]), `stacks` (the windows and timers of both transports: stacks.STACKS; "linux" when
absent; "linux..freebsd-4.6" is that ablation's steps, stacks.expand_stacks),
`sctp_settings` (a list of tables, each a `name` and SCTP knobs of stacks.SCTP_KNOBS over
[sctp]'s: failover thresholds, say; they multiply the SCTP variants
only), `sctp_stacks` (whose SCTP both programs run: the kernel's, usrsctp inside UDP;
base.read_sctp_stacks; the SCTP variants only). Points: path x loss x size x variant (xftp
once per `parallel`) x TCP profile (the profiles multiply the TCP variants only) x stack x SCTP
settings x SCTP stack. Metrics: the transfer time
read from the client's pcap (the deciding one), with the same interval from the client's own
clock as a cross-check
(a disagreement beyond 1 ms flags the run), and per-run counters from the pcap."""
from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments import procedure
from experiments.networks import NAME
from experiments.procedure import RunFailure
from experiments.stacks import (
    DEFAULT_STACK,
    SCTP_KNOBS,
    SCTP_PROFILE,
    STACKS,
    open_limits,
    sysctls_for,
)
from experiments.tshark import Host
from experiments.workloads import dataset, usrsctp_axis
from experiments.workloads.base import (
    KERNEL_SCTP,
    Metric,
    Point,
    WorkloadError,
    read_events,
    read_sctp_stacks,
    read_stacks,
    require_programs,
    sctp_stack_key_suffix,
    stack_records,
)
from experiments.workloads.client_server import (
    require_intact,
    run_client,
    server_and_capture,
    under_initial_rto,
)
from experiments.workloads.ftp_mget import paths as path_columns
from experiments.workloads.ftp_mget.measure import WHOLE_IN_A_CAPTURE_OF_HEADERS
from topology.net import topology_class
from topology.params import ParameterError

if TYPE_CHECKING:
    from experiments.spec import Experiment, Reader
    from experiments.workloads.ftp_mget.measure import ControlChannel
    from topology.net.base import Topology

KIND = "ftp-mget"
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp", "tcp-pipelined", "xftp")
TCP_VARIANTS = ("tcp", "tcp-pipelined", "xftp")
# one data stream for the whole session and the commands pipelined: fewer round trips per file
PIPELINED_VARIANTS = ("sctp-ms", "sctp-ms-cp", "tcp-pipelined")
# a file striped over N parallel data connections (MODE E), opened by the server
STRIPED_VARIANTS = ("xftp",)
DEFAULT_PARALLEL = 4
MAX_PARALLEL = 16      # ftpd's default --max-parallel
# The variants with a data connection per file, which a stack's PORT mode applies to (ftpc
# --active; sctp-ms and sctp-ms-cp have none, tcp-pipelined keeps one, xftp always listens)
ACTIVE_VARIANTS = ("tcp", "sctp-naive")
# block mode (tcp-pipelined): ftpd's blocks carry its default --chunk (65536) less the header
BLOCK_MODE_PAYLOAD = {"tcp-pipelined": 65536 - 3}
INTERVALS = {
    "nlst150-to-last226": "the client's receipt of the 150 reply to NLST to its receipt of the "
                          "last 226, or of the last file's last byte if that came later (E1)",
    "first-packet-to-last226": "the first packet the client sends for mget to its receipt of "
                               "the last 226, or of the last file's last byte if that came "
                               "later (E2)",
}
MAX_FILES = 10_000
MAX_FILE_SIZE = 1 << 30
AGREEMENT_S = 0.001
DOWNLOADS = "/run/testbed-downloads"   # the kernel's tmpfs
LINUX_SCTP_RTO_MIN_MS = 1000
LINUX_TCP_RTO_MIN_S = 0.2
FULL_PACKET_BITS = 1514 * 8
FULL_PACKET_PAYLOAD = 1448   # a TCP segment's (SCTP DATA's is a little less) on the veth MTU
PCAP_RECORD = 16             # a pcap record's header


@dataclass(frozen=True)
class Settings:
    interval: str                      # one of INTERVALS
    file_sizes: tuple[int, ...]
    files: int
    variants: tuple[str, ...]
    stacks: tuple[str, ...] = (DEFAULT_STACK,)
    parallel: tuple[int, ...] = (DEFAULT_PARALLEL,)
    # (name, knobs) of each entry of [[matrix.sctp_settings]]; none: one unnamed, no knobs
    sctp_settings: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    sctp_stacks: tuple[str, ...] = (KERNEL_SCTP,)


def parse_size(text: str | int) -> int:
    """'10K' -> 10240 bytes, '1M' -> 1048576 (K and M are binary, as ls -h prints them)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ParameterError(f"cannot read file size {text!r}: use e.g. 10K, 200K, 1M")
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[
        match.group(2).upper()]


def size_label(size: int) -> str:
    for unit, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def multihoming(topology: str, transport: str) -> dict[str, Any] | None:
    """The programs' multihoming options on a topology whose end hosts have further addresses
    (dualpath): each SCTP end binds them all, and the client names the server's; None where
    there are none, or for TCP."""
    kind = topology_class(topology)
    if transport != "sctp" or not (kind.client_also or kind.server_also):
        return None
    server = [o for a in kind.server_also for o in ("--sctp-also-bind", a)]
    client = [*(o for a in kind.client_also for o in ("--sctp-also-bind", a)),
              *(o for a in kind.server_also for o in ("--sctp-also-peer", a))]
    return {"server": server, "client": client, "bind": kind.client_ip}


def transport_of(variant: str) -> str:
    return "tcp" if variant in TCP_VARIANTS else "sctp"


def profile_for(variant: str, tcp_profile: str) -> str:
    """TCP profiles apply to the TCP variants; SCTP variants run with the SCTP knobs."""
    return tcp_profile if variant in TCP_VARIANTS else SCTP_PROFILE


# -- the client's events and the intervals --------------------------------------------------------
def client_events(run_dir: Path) -> list[dict[str, Any]]:
    return read_events(run_dir / "client.jsonl")


def client_interval(events: list[dict[str, Any]], interval: str) -> float | None:
    from experiments.workloads.ftp_mget.measure import DATA_SETUP_COMMANDS

    end = next((e["t"] for e in reversed(events) if e.get("event") == "last_226"), None)
    # over SCTP streams a 226 on stream 0 can overtake its file's bytes on stream 1: the
    # session ends when both are in
    last_byte = max((e["t"] for e in events if e.get("event") == "file_last_byte"),
                    default=None)
    if end is not None and last_byte is not None:
        end = max(end, last_byte)
    if interval == "nlst150-to-last226":
        start = next((e["t"] for e in events if e.get("event") == "nlst_150"), None)
    else:
        start = next((e["t"] for e in events if e.get("event") == "command"
                      and e.get("cmd") in DATA_SETUP_COMMANDS), None)
    return None if start is None or end is None else end - start


def interval_bounds(channel: ControlChannel, interval: str) -> tuple[float, float] | None:
    """The interval's start and end in the capture's clock; None when a reply it needs never
    became whole in the capture: no measurement, never a number."""
    from experiments.workloads.ftp_mget.measure import DATA_SETUP_COMMANDS

    end = channel.last_reply(226)
    if interval == "nlst150-to-last226":
        start = channel.first_reply(150)
    else:
        start = channel.first_command(DATA_SETUP_COMMANDS)
    if start is None or end is None or not math.isfinite(end - start):
        return None
    return start, end


PHASE_METRICS = (
    Metric("phase_listing_s", "the listing's slice of the session (150 of NLST to its 226 for "
                              "E1), divided by the files, seconds"),
    Metric("phase_gap_s", "per file: the previous transfer's end to the file's first command"),
    Metric("phase_retry_s", "per file: its failed attempts (a data connection that did not "
                            "open: the server's 425, or no 150 within the client's open "
                            "limit), from its first command to its last attempt's"),
    Metric("phase_request_s", "per file: its commands and replies up to its first data byte, "
                              "less the data connection's set-up"),
    Metric("phase_setup_s", "per file: the data connection's handshake (SYN to the ACK of the "
                            "SYN-ACK; INIT to COOKIE ACK)"),
    Metric("phase_data_s", "per file: its first data byte to its last"),
    Metric("phase_close_s", "per file: its last data byte to the data connection's last "
                            "packet (FIN exchange; SHUTDOWN, SHUTDOWN-ACK, SHUTDOWN-COMPLETE)"),
    Metric("phase_reply_s", "per file: from there to its 226"),
    Metric("retries", "transfers retried on a new data connection in the session"),
    Metric("stalls_per_file", "waits of over one round trip with no new data, per file"),
    Metric("stall_s_per_file", "the time in those waits, per file, seconds"),
    Metric("phases_total_s", "the sum of the session's slices (the transfer time, unless the "
                             "last file's last byte came after the last 226), seconds"),
)


# what report_data writes per run and the report reads
TIME_SEQUENCE_FILE = "time_sequence.json"

class FtpMget:
    kind = KIND
    topologies = ("path", "dualpath")
    # downloads: server to client (on dualpath, over its primary path)
    data_direction = {"path": "down", "dualpath": "path1-down"}
    top_keys = {"metric": str}
    matrix_keys = {"file_sizes": list, "files": int, "variants": list, "stacks": list,
                   "parallel": list, "sctp_settings": list, "sctp_stacks": list}
    table = None
    table_keys: dict[str, Any] = {}
    # what a capture of headers keeps whole: the control channel and SCTP bundles
    whole_in_a_capture_of_headers = WHOLE_IN_A_CAPTURE_OF_HEADERS
    captures_the_server = True   # run.capture_at may add the server's end
    metrics = (
        Metric("transfer_time_s", "the session's interval (the experiment's metric) read from "
                                  "the client's pcap, seconds"),
        Metric("client_time_s", "the same interval from the client's own clock, seconds"),
        Metric("retransmissions", "retransmitted segments or DATA chunks, both directions"),
        Metric("timeouts", "retransmissions driven by a timer"),
        *PHASE_METRICS,
    )
    default_metric = "transfer_time_s"
    point_columns = ("path", "loss", "file_size", "files", "variant", "parallel", "profile",
                     "stack", "sctp_settings", "sctp_stack")
    run_columns = ("transfer_time_s", "client_time_s", "pcap_client_diff_ms", "flagged",
                   "last_byte_after_226_s", "connections", "handshakes", "retransmissions",
                   "timeouts", *path_columns.COLUMNS, "client_gave_up_s")
    summary_aliases = {"mean_s": "transfer_time_s_mean", "sd_s": "transfer_time_s_sd",
                       "ci90_half_s": "transfer_time_s_ci90_half",
                       "ci90_rel": "transfer_time_s_ci90_rel",
                       "ci_half_s": "transfer_time_s_ci_half"}
    analysis_version = 11  # 11: on dualpath, each path's data and the failover (paths.py);
    # 10: a transfer's retried attempts in one slice (phase_retry_s,
    # retries), replies paired with their commands; 9: SCTP captures cut short read by the
    # header reader; 8: SCTP retransmissions counted from TSNs relative to the first

    # -- the experiment file -------------------------------------------------------------------
    def read(self, reader: Reader, data: dict[str, Any]) -> Settings:
        interval = data.get("metric", "nlst150-to-last226")
        reader.choice("metric", interval, INTERVALS, "metric")
        matrix = data["matrix"]
        sizes = reader.required(matrix, "file_sizes", "matrix")
        if not sizes:
            raise reader.fail("matrix.file_sizes", "needs at least one size")
        sizes = tuple(reader.guard("matrix.file_sizes", parse_size, v) for v in sizes)
        for size in sizes:
            if not 1 <= size <= MAX_FILE_SIZE:
                raise reader.fail("matrix.file_sizes",
                                  f"{size} bytes is out of range (1 B to 1 GiB)")
        files = reader.required(matrix, "files", "matrix")
        if not 1 <= files <= MAX_FILES:
            raise reader.fail("matrix.files", f"{files} is out of range (1 to {MAX_FILES})")
        variants = reader.required(matrix, "variants", "matrix")
        if not variants:
            raise reader.fail("matrix.variants", "needs at least one variant")
        for variant in variants:
            reader.choice("matrix.variants", variant, VARIANTS, "variant")
        parallel = self._parallel(reader, matrix, variants)
        stacks = read_stacks(reader, matrix)
        settings = Settings(interval, sizes, files, tuple(variants), tuple(stacks), parallel,
                            self._sctp_settings(reader, matrix, variants),
                            read_sctp_stacks(reader, matrix))
        if settings.sctp_stacks != (KERNEL_SCTP,):
            self._check_usrsctp(reader, data, settings)
        return settings

    @staticmethod
    def _check_usrsctp(reader: Reader, data: dict[str, Any], settings: Settings) -> None:
        """What an experiment with usrsctp among its SCTP stacks may not ask: the kernel's
        SCTP knobs ([sctp], sctp_settings), which usrsctp does not read; a second path, whose
        multihoming the programs do not give usrsctp; a stack that sets what usrsctp has no
        counterpart for (stacks.Stack.usrsctp_refusal)."""
        if all(transport_of(v) == "tcp" for v in settings.variants):
            raise reader.fail("matrix.sctp_stacks", "apply to the SCTP variants, which "
                                                    "matrix.variants does not name")
        if settings.sctp_settings:
            raise reader.fail("matrix.sctp_settings", "are the kernel's SCTP sysctls, which "
                                                      "usrsctp does not read: run usrsctp in "
                                                      "an experiment of its own")
        usrsctp_axis.refuse(reader, data, settings.stacks)

    @staticmethod
    def _sctp_settings(reader: Reader, matrix: dict[str, Any], variants: list[str]
                       ) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
        if "sctp_settings" not in matrix:
            return ()
        where = "matrix.sctp_settings"
        if all(transport_of(v) == "tcp" for v in variants):
            raise reader.fail(where, "apply to the SCTP variants, which matrix.variants does "
                                     "not name")
        entries = matrix["sctp_settings"]
        if not entries:
            raise reader.fail(where, "needs at least one entry")
        out = []
        for i, entry in enumerate(entries):
            at = f"{where}[{i}]"
            if not isinstance(entry, dict):
                raise reader.fail(at, "must be a table: a name and SCTP knobs")
            reader.check_keys(entry, {"name": str, **{k: int for k in SCTP_KNOBS}}, at)
            name = reader.required(entry, "name", at)
            if not NAME.fullmatch(name):
                raise reader.fail(f"{at}.name", "lower-case letters, digits and - only")
            knobs = reader.sctp({k: v for k, v in entry.items() if k != "name"}, at)
            out.append((name, tuple(knobs.items())))
        if len({name for name, _ in out}) != len(out):
            raise reader.fail(where, "names must be unique")
        return tuple(out)

    @staticmethod
    def _parallel(reader: Reader, matrix: dict[str, Any], variants: list[str]
                  ) -> tuple[int, ...]:
        if "parallel" not in matrix:
            return (DEFAULT_PARALLEL,)
        if not any(v in STRIPED_VARIANTS for v in variants):
            raise reader.fail("matrix.parallel", "applies to xftp only, which matrix.variants "
                                                 "does not name")
        values = matrix["parallel"]
        if not values:
            raise reader.fail("matrix.parallel", "needs at least one number of connections")
        for n in values:
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PARALLEL:
                raise reader.fail("matrix.parallel", f"{n!r}: connections per transfer are "
                                                     f"1 to {MAX_PARALLEL}")
        return tuple(dict.fromkeys(values))

    def record(self, settings: Settings) -> dict[str, Any]:
        return {"metric": settings.interval, "metric_definition": INTERVALS[settings.interval],
                "file_sizes": list(settings.file_sizes), "files": settings.files,
                "variants": list(settings.variants), "parallel": list(settings.parallel),
                "sctp_settings": {name: dict(knobs) for name, knobs in settings.sctp_settings},
                **usrsctp_axis.record(settings.sctp_stacks, settings.stacks),
                "stacks": stack_records(settings.stacks)}

    # -- the matrix ----------------------------------------------------------------------------
    def points(self, experiment: Experiment) -> list[Point]:
        settings: Settings = experiment.settings
        seen: dict[str, Point] = {}
        for path in experiment.network.entries:
            for loss in experiment.losses:
                for size in settings.file_sizes:
                    for variant, n in self._variants(settings):
                        for tcp_profile in experiment.tcp_profiles:
                            for stack in settings.stacks:
                                for name, knobs in self._settings_of(settings, variant):
                                    for sctp_stack in self._sctp_stacks_of(settings, variant):
                                        profile = profile_for(variant, tcp_profile)
                                        label = f"{variant}{n}" if n else variant
                                        key = (f"{path.name}_loss{loss:g}_{size_label(size)}x"
                                               f"{settings.files}_{label}_{profile}_{stack}"
                                               + (f"_{name}" if name else "")
                                               + sctp_stack_key_suffix(sctp_stack or KERNEL_SCTP))
                                        seen.setdefault(key, Point(
                                            key, path.name, loss, profile, (
                                                ("path", path.name), ("loss", loss),
                                                ("file_size", size), ("files", settings.files),
                                                ("variant", variant), ("parallel", n),
                                                ("profile", profile), ("stack", stack),
                                                ("sctp_settings", name),
                                                ("sctp_stack", sctp_stack)), stack, knobs))
        return list(seen.values())

    @staticmethod
    def _sctp_stacks_of(settings: Settings, variant: str) -> tuple[str, ...]:
        """The SCTP stacks a variant's points multiply by: all for SCTP, none ("") for TCP."""
        return ("",) if transport_of(variant) == "tcp" else settings.sctp_stacks

    @staticmethod
    def _settings_of(settings: Settings, variant: str
                     ) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
        """The SCTP settings a variant's points multiply by: all for SCTP, none for TCP."""
        if not settings.sctp_settings or transport_of(variant) == "tcp":
            return (("", ()),)
        return settings.sctp_settings

    @staticmethod
    def _variants(settings: Settings) -> list[tuple[str, int]]:
        """(variant, data connections per transfer): xftp once per `parallel`, the others
        with 0 (their connections are the variant's design, not a setting)."""
        return [(variant, n) for variant in settings.variants
                for n in (settings.parallel if variant in STRIPED_VARIANTS else (0,))]

    def estimate_s(self, experiment: Experiment, point: Point) -> float:
        """A rough duration of one run, for ordering and the first ETA: the bytes at the path's
        goodput, stretched by loss, plus a few round trips per file and fixed start-up
        costs."""
        path = experiment.network.entry(point.network)
        files, size = point.get("files"), point.get("file_size")
        transfer = files * size * 8 / (0.95 * path.rate_bps)
        round_trips = files * (2 if point.get("variant") in PIPELINED_VARIANTS else 4)
        stretch = 1 + 8 * point.loss
        return 4.0 + stretch * (transfer + round_trips * 2 * path.delay_s)

    def capture_bytes(self, experiment: Experiment, point: Point) -> float:
        """What a run's capture weighs, at most: whole packets are about 1.13 times the files'
        bytes (headers, acknowledgements and retransmissions; measured at 10% loss), a snaplen
        (or a capture of headers) keeps that much of each data packet and of an
        acknowledgement for every other one."""
        payload = point.get("files") * point.get("file_size")
        if experiment.capture == "headers":
            # and each file's commands and replies whole, a few packets of at most a few
            # hundred bytes
            return (payload / FULL_PACKET_PAYLOAD * 1.5
                    * (procedure.HEADERS_SNAPLEN + PCAP_RECORD) + 4096 * point.get("files"))
        if not experiment.snaplen:
            return 1.2 * payload
        return payload / FULL_PACKET_PAYLOAD * 1.5 * (experiment.snaplen + PCAP_RECORD)

    # -- before the runs -----------------------------------------------------------------------
    def prepare(self, experiment: Experiment, data_root: Path) -> dict[str, Any]:
        programs = require_programs("ftpd", "ftpc", "runcapture")
        settings: Settings = experiment.settings
        data = {}
        for size in settings.file_sizes:
            made = dataset.ensure(data_root, size, settings.files, experiment.seed)
            problems = made.check()
            if problems:
                raise WorkloadError("data set is not as made: " + "; ".join(problems[:3]))
            data[size] = made
        return {"programs": programs, "data": data}

    def order(self, experiment: Experiment, point: Point, prepared: dict[str, Any]
              ) -> dict[str, Any]:
        data = prepared["data"][point.get("file_size")]
        stack = STACKS[point.stack]
        transport = transport_of(point.get("variant"))
        limits = open_limits(transport, sysctls_for(point.profile,
                                                    point.sctp_over(experiment.sctp),
                                                    point.stack), stack.tcp_initial_rto_ms)
        return {"variant": point.get("variant"), "parallel": point.get("parallel"),
                "open_limits": limits.record(),
                "multihoming": multihoming(experiment.network.kind, transport),
                "data": str(data.root),
                "expected": data.digests, "scratch": DOWNLOADS, **prepared["programs"],
                "socket_options": stack.buffers(transport).program_options(),
                "sctp_stack": point.get("sctp_stack") or None,
                "server_options": (["--reply-on-close"] if stack.ftpd_reply_on_close else [])
                + usrsctp_axis.program_options(point, stack, peer=False),
                "client_options": (["--active"] if stack.ftp_active
                                   and point.get("variant") in ACTIVE_VARIANTS else [])
                + usrsctp_axis.program_options(point, stack, peer=True),
                "tcp_initial_rto_ms": stack.tcp_initial_rto_ms if transport == "tcp" else None}

    # -- inside the kernel ---------------------------------------------------------------------
    def execute(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None]) -> None:
        """The session; where the stack wants TCP's initial RTO other than Linux's, ftpd and
        ftpc run in a cgroup whose sock_ops program answers it."""
        under_initial_rto(run["workload"].get("tcp_initial_rto_ms"), record,
                          lambda wrap: self.session(net, run, run_dir, record, mark, wrap))

    def session(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None],
                wrap: Callable[[list[str]], list[str]]) -> None:
        order = run["workload"]
        missing = [n for n in order["expected"] if not (Path(order["data"]) / n).is_file()]
        if missing:
            raise RunFailure(f"data set incomplete on the server side: {missing[:3]}")
        download = Path(order["scratch"]) / run["id"]
        shutil.rmtree(download, ignore_errors=True)
        download.mkdir(parents=True)
        timeout_s = run["timeout_s"]
        client_options = [*order["socket_options"], *order.get("client_options", [])]
        record["programs"] = {"ftpd": order.get("server_options", []),
                              "ftpc": order.get("client_options", [])}
        if order.get("sctp_stack"):
            record["sctp_stack"] = order["sctp_stack"]
        if order.get("parallel"):
            client_options += ["--parallel", str(order["parallel"])]
        # a data connection's opening is bounded by the stack's handshake, not the run's limit
        limits = order.get("open_limits") or {}
        record["open_limits"] = limits
        homes = order.get("multihoming") or {"server": [], "client": [], "bind": None}
        ftpd_argv = wrap(procedure.ftp_server_argv(order["ftpd"], order["data"], net.server_ip,
                                                   str(run_dir / "ftpd.log"), timeout_s,
                                                   options=[*order["socket_options"],
                                                            *order.get("server_options", []),
                                                            *homes["server"]],
                                                   open_timeout_s=limits.get(
                                                       "ftpd_open_timeout_s")))
        try:
            with server_and_capture(net, run, record, mark, ftpd_argv, run_dir / "ftpd.out",
                                    self.whole_in_a_capture_of_headers):
                run_client(net, wrap(procedure.ftp_client_argv(
                    order["ftpc"], order["variant"], net.server_ip, str(download), timeout_s,
                    bind=homes["bind"], options=[*client_options, *homes["client"]],
                    open_timeout_s=limits.get("ftpc_open_timeout_s"))),
                    run_dir, timeout_s, record, mark)
                require_intact(download, order["expected"], "files", mark)
        finally:
            shutil.rmtree(download, ignore_errors=True)

    # -- on the host ---------------------------------------------------------------------------
    def analyse(self, experiment: Experiment, run_dir: Path, record: dict[str, Any],
                capture: Path | None) -> dict[str, Any]:
        settings: Settings = experiment.settings
        params = record["params"]
        rto_floor_s = (experiment.sctp.get("rto_min_ms", LINUX_SCTP_RTO_MIN_MS) / 1000
                       if transport_of(params["variant"]) == "sctp" else LINUX_TCP_RTO_MIN_S)
        path = experiment.network.entry(params["path"])
        phases = PhaseSettings(2 * path.delay_s + 2 * FULL_PACKET_BITS / path.rate_bps,
                               params["files"], experiment.snaplen == 0)
        kind = topology_class(experiment.network.kind)
        row = measure(run_dir, capture, params["variant"], settings.interval, rto_floor_s,
                      frozenset((kind.client_ip, *kind.client_also)), phases)
        if record["status"] == "ok" and row["transfer_time_s"] is None:
            row["notes"].append("the measured instants are not in the pcap")
        if experiment.network.kind == "dualpath":
            row.update(over_two_paths(run_dir, capture, params["variant"], record,
                                      phases.stall_s))
        return row

    def report_data(self, root: Path, run_ids: list[str]) -> list[str]:
        """Before a report draws these runs: each one's time-sequence from its pcap into
        runs/<id>/time_sequence.json (once: kept until the pcap changes), so the report reads
        result files only. Returns what could not be written, a line each."""
        from experiments.tshark import TsharkError
        from experiments.tshark.transport import TimeSequence, time_sequence

        problems = []
        for run_id in run_ids:
            run_dir, pcap = root / "runs" / run_id, root / "pcaps" / f"{run_id}.pcap"
            target = run_dir / TIME_SEQUENCE_FILE
            try:
                record = json.loads((run_dir / "result.json").read_text())
                variant = record["params"]["variant"]
                if not _current(target, pcap, TimeSequence.load):
                    time_sequence(pcap, transport_of(variant)).save(target)
                if record.get("capture_interfaces") and not _current(
                        run_dir / path_columns.TRACE_FILE, pcap, path_columns.load_trace):
                    _save_paths_trace(pcap, variant, record, run_dir)
            except (OSError, KeyError, ValueError, TsharkError) as error:
                problems.append(f"time-sequence of {run_id}: {error}")
        return problems


def primary_changes(record: dict[str, Any]) -> tuple[float | None, float | None]:
    """When path 1 went down and when it came back in the run, in the capture's clock (the
    applied instants of its schedule's `down` changes), or None."""
    schedule = record.get("schedule") or {}
    start = schedule.get("start_epoch")
    failed = restored = None
    for change in schedule.get("applied") or []:
        if start is None or not str(change.get("link", "")).startswith("path1-"):
            continue
        at = start + change["applied_s"]
        if change.get("down") is True and failed is None:
            failed = at
        elif change.get("down") is False and failed is not None and restored is None:
            restored = at
    return failed, restored


def read_two_paths(pcap: Path, variant: str) -> path_columns.PathReading:
    """The server's data in a dualpath run's pcap, each piece with its path."""
    from topology.net.dualpath import DualPath, path_of

    return path_columns.read(pcap, transport_of(variant),
                             frozenset((DualPath.server_ip, *DualPath.server_also)), path_of)


def over_two_paths(run_dir: Path, capture: Path | None, variant: str,
                   record: dict[str, Any], wait_s: float) -> dict[str, Any]:
    """A dualpath run's columns of paths.py, and how long after path 1 failed the client gave
    up (its `error` event, in the same monotonic clock as the schedule's start)."""
    row: dict[str, Any] = {}
    failed, restored = primary_changes(record)
    if capture is not None:
        row.update(path_columns.summary(read_two_paths(capture, variant), failed, restored,
                                        wait_s))
    schedule = record.get("schedule") or {}
    gave_up = next((e["t"] for e in client_events(run_dir) if e.get("event") == "error"), None)
    if failed is not None and gave_up is not None and "start_monotonic" in schedule:
        after = gave_up - (schedule["start_monotonic"] + failed - schedule["start_epoch"])
        row["client_gave_up_s"] = after if after >= 0 else None
    return row


def _save_paths_trace(pcap: Path, variant: str, record: dict[str, Any], run_dir: Path) -> None:
    """A two-path run's delivery per path (paths.TRACE_FILE), for the report."""
    path_columns.save_trace(read_two_paths(pcap, variant), *primary_changes(record),
                            run_dir / path_columns.TRACE_FILE)


def _current(saved: Path, pcap: Path, load: Callable[[Path], Any]) -> bool:
    """Whether a file read from the pcap is there, newer than the pcap and of this reading's
    version (`load` refuses another)."""
    if not (saved.exists() and pcap.exists()
            and saved.stat().st_mtime_ns >= pcap.stat().st_mtime_ns):
        return False
    try:
        load(saved)
    except (OSError, ValueError, KeyError):
        return False
    return True


@dataclass(frozen=True)
class PhaseSettings:
    """What the phase breakdown needs beyond the capture: the wait that counts as a stall
    (the path's round trip and two full packets' serialization), the files in the session,
    and whether the capture holds whole packets."""

    stall_s: float
    files: int
    whole_packets: bool = True


def measure(run_dir: Path, capture: Path | None, variant: str, interval: str,
            rto_floor_s: float, client_ip: Host, phases: PhaseSettings | None = None
            ) -> dict[str, Any]:
    """What a session measured: the interval from the client's pcap and from its own clock
    (flagged when they disagree by over 1 ms), the pcap's counters and, given `phases`, where
    the time went (runs/<id>/phases.csv and stalls.csv, and their means per file). The harness
    and the playbooks' analysis of a fetched run both read a run this way."""
    from experiments.tshark import transport
    from experiments.workloads.ftp_mget.measure import control_channel

    kind = transport_of(variant)
    row: dict[str, Any] = {"transfer_time_s": None, "pcap_client_diff_ms": None,
                           "flagged": False, "notes": []}
    row["client_time_s"] = client_interval(client_events(run_dir), interval)
    if capture is not None:
        channel = control_channel(capture, kind)
        bounds = interval_bounds(channel, interval)
        row.update(vars(transport.counters(capture, kind, client_ip, rto_floor_s)))
        if bounds is not None and variant in STRIPED_VARIANTS:
            # the phases read one data flow (or stream) per transfer; a file striped over N
            # flows is not cut into phases yet
            row["last_byte_after_226_s"] = 0.0
            row["transfer_time_s"] = bounds[1] - bounds[0]
        elif bounds is not None:
            settings = phases or PhaseSettings(math.inf, 0)
            summary, end = _phases(run_dir, capture, channel, kind, bounds, rto_floor_s,
                                   client_ip, settings, row["notes"],
                                   BLOCK_MODE_PAYLOAD.get(variant))
            row["last_byte_after_226_s"] = max(0.0, end - bounds[1])
            row["transfer_time_s"] = max(end, bounds[1]) - bounds[0]
            if phases is not None:
                row.update(summary)
    if row["transfer_time_s"] is not None and row["client_time_s"] is not None:
        diff = row["transfer_time_s"] - row["client_time_s"]
        row["pcap_client_diff_ms"] = 1000 * diff
        if abs(diff) > AGREEMENT_S:
            row["flagged"] = True
            row["notes"].append(f"pcap and client disagree by {1000 * diff:+.2f} ms")
    return row


def _phases(run_dir: Path, capture: Path, channel: ControlChannel, kind: str,
            bounds: tuple[float, float], rto_floor_s: float, client_ip: Host,
            settings: PhaseSettings, notes: list[str], block_payload: int | None
            ) -> tuple[dict[str, Any], float]:
    """The per-file phases' summary and the session's end: its last 226, or its last file's
    last byte where that came later."""
    from experiments.workloads.ftp_mget.phases import (
        run_summary,
        session_phases,
        write_csvs,
    )

    slices = session_phases(capture, channel, kind, client_ip, bounds[0], settings.stall_s,
                            rto_floor_s, settings.whole_packets, block_payload)
    write_csvs(run_dir, slices, bounds[0])
    end = max([bounds[1], *(s.end_s for s in slices)])
    if settings.files and len(slices) != settings.files + 1:
        notes.append(f"phases: {len(slices)} transfers found in the pcap, "
                     f"{settings.files + 1} expected")
        return {}, end
    if not settings.files:
        return {}, end
    summary = run_summary(slices, settings.files)
    if abs(summary["phases_total_s"] - (end - bounds[0])) > AGREEMENT_S:
        notes.append("phases do not add up to the transfer time")
    return summary, end


WORKLOAD = FtpMget()
