"""http-page: a browser's page fetch across `path` (E4): a document, then its embedded objects.

    httpd on the server (TCP and SCTP on port 80), a capture of whole packets on the client's
    interface, then `httpc --proto P` on the client: the document, and once it is whole, the
    objects' requests - pipelined on the one TCP connection, or each on the first free stream
    of the one SCTP association. Every object checked against the page's SHA-256 digests.

Its keys: [page] (objects, object_size, write_size, sctp_streams, sctp_scheduler), and in
[matrix] `document_sizes`, `transports` (tcp, sctp) and `stacks` (the hosts' windows and
timers, stacks.STACKS: their socket buffers go to httpd and httpc, their initial TCP RTO
through sock_ops; "linux" when absent) and `sctp_stacks` (whose SCTP httpd and httpc run: the
kernel's, usrsctp inside UDP; base.read_sctp_stacks; SCTP points only). With objects = 0 the
run is the study's single-file test. Points: path x loss x document size x transport x TCP
profile (the profiles multiply TCP only) x stack x SCTP stack. Metrics, from the client's pcap:
the page time (the document's request leaving the client to the last object's last byte
deliverable; the deciding one), the document's time, the objects' time (their first request
to the last one's last byte); the same page time from httpc's own clock as a cross-check
(beyond 10 ms and 2% the run is flagged); the pcap's retransmission counters. Each run's
objects.csv holds every object's request, first byte and completion, from the pcap and from
httpc."""
from __future__ import annotations

import csv
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments import procedure
from experiments.stacks import DEFAULT_STACK, SCTP_PROFILE, STACKS
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
    stack_key_suffix,
    stack_records,
)
from experiments.workloads.client_server import (
    require_intact,
    run_client,
    server_and_capture,
    under_initial_rto,
)
from experiments.workloads.ftp_mget.workload import parse_size, size_label
from topology.net.path import CLIENT_IP, SERVER_IP

if TYPE_CHECKING:
    from experiments.spec import Experiment, Reader
    from experiments.workloads.http_page.measure import ObjectTimes
    from topology.net.base import Topology

KIND = "http-page"
TRANSPORTS = ("tcp", "sctp")
DOWNLOADS = "/run/testbed-downloads"   # the kernel's tmpfs
# httpc's clock runs later than the pcap's by its own work: it stamps a request before its
# send and an object after the reads that brought its last byte. When a hole fills, every
# message behind it is deliverable at once and httpc reads them one receive and one file write
# each; the pinned kernel's virtual clock charges that work at the host's speed (wall-cpu), so
# it grows with the host's load: 2.3 ms for 4 messages on an idle host, 8 ms for a 50 KB
# document while both cores analysed pcaps. The check is for gross disagreement (an instant
# taken from the wrong packet is a round trip off): beyond 10 ms and 2% of the page time, the
# run is flagged.
AGREEMENT_S = 0.010
AGREEMENT_SHARE = 0.02
MAX_DOCUMENT = 64 << 20
MAX_OBJECTS = 1000
SCHEDULERS = ("rr", "fcfs")
OBJECT_COLUMNS = ("object", "target", "stream", "status", "body_bytes", "request_s",
                  "first_byte_s", "complete_s", "client_request_s", "client_complete_s")


@dataclass(frozen=True)
class Settings:
    document_sizes: tuple[int, ...]
    transports: tuple[str, ...]
    objects: int = 7
    object_size: int = 4096
    write_size: int = 1024
    sctp_streams: int = 10
    sctp_scheduler: str = "rr"
    stacks: tuple[str, ...] = (DEFAULT_STACK,)
    sctp_stacks: tuple[str, ...] = (KERNEL_SCTP,)


class HttpPage:
    kind = KIND
    topologies = ("path",)
    data_direction = {"path": "down"}    # answers: server to client
    captures_the_server = True   # run.capture_at may add the server's end
    top_keys: dict[str, Any] = {}
    matrix_keys = {"document_sizes": list, "transports": list, "stacks": list,
                   "sctp_stacks": list}
    table = "page"
    table_keys = {"objects": int, "object_size": (int, str), "write_size": int,
                  "sctp_streams": int, "sctp_scheduler": str}
    metrics = (
        Metric("page_time_s", "the document's request leaving the client to the last object's "
                              "last byte deliverable to it, from the client's pcap, seconds"),
        Metric("client_page_time_s", "the same interval from httpc's own clock, seconds"),
        Metric("document_time_s", "the document's request to its last byte, seconds"),
        Metric("objects_time_s", "the first object's request to the last object's last byte, "
                                 "seconds"),
        Metric("retransmissions", "retransmitted segments or DATA chunks, both directions"),
        Metric("timeouts", "retransmissions driven by a timer"),
        Metric("server_data_packets", "packets the server sent that carry data (TCP segments "
                                      "with payload, SCTP packets with a DATA chunk), from "
                                      "the client's pcap"),
    )
    default_metric = "page_time_s"
    point_columns = ("path", "loss", "document_size", "objects", "object_size", "transport",
                     "profile", "stack", "sctp_stack")
    run_columns = ("page_time_s", "client_page_time_s", "pcap_client_diff_ms", "flagged",
                   "document_time_s", "objects_time_s", "connections", "handshakes",
                   "retransmissions", "timeouts", "server_data_packets")
    summary_aliases = {"mean_s": "page_time_s_mean", "sd_s": "page_time_s_sd",
                       "ci90_half_s": "page_time_s_ci90_half",
                       "ci90_rel": "page_time_s_ci90_rel",
                       "ci_half_s": "page_time_s_ci_half"}
    analysis_version = 5   # 5: the server's data packets (4: SCTP retransmissions from TSNs)

    # -- the experiment file -------------------------------------------------------------------
    def read(self, reader: Reader, data: dict[str, Any]) -> Settings:
        matrix = data["matrix"]
        sizes = reader.required(matrix, "document_sizes", "matrix")
        if not sizes:
            raise reader.fail("matrix.document_sizes", "needs at least one size")
        sizes = tuple(reader.guard("matrix.document_sizes", parse_size, v) for v in sizes)
        if any(not 0 <= s <= MAX_DOCUMENT for s in sizes):
            raise reader.fail("matrix.document_sizes", "sizes are 0 B to 64 MiB")
        transports = reader.required(matrix, "transports", "matrix")
        if not transports:
            raise reader.fail("matrix.transports", "needs tcp, sctp or both")
        for transport in transports:
            reader.choice("matrix.transports", transport, TRANSPORTS, "transport")
        page = data.get("page", {})
        settings = Settings(
            tuple(dict.fromkeys(sizes)), tuple(dict.fromkeys(transports)),
            objects=page.get("objects", 7),
            object_size=reader.guard("page.object_size", parse_size,
                                     page.get("object_size", 4096)),
            write_size=page.get("write_size", 1024),
            sctp_streams=page.get("sctp_streams", 10),
            sctp_scheduler=page.get("sctp_scheduler", "rr"),
            stacks=read_stacks(reader, matrix), sctp_stacks=read_sctp_stacks(reader, matrix))
        if not 0 <= settings.objects <= MAX_OBJECTS:
            raise reader.fail("page.objects", f"0 to {MAX_OBJECTS} embedded objects")
        if not 0 <= settings.object_size <= MAX_DOCUMENT:
            raise reader.fail("page.object_size", "0 B to 64 MiB")
        if not 1 <= settings.write_size <= 1 << 20:
            raise reader.fail("page.write_size", "1 B to 1 MiB per write")
        if not 1 <= settings.sctp_streams <= 65535:
            raise reader.fail("page.sctp_streams", "1 to 65535 streams")
        reader.choice("page.sctp_scheduler", settings.sctp_scheduler, SCHEDULERS, "scheduler")
        if settings.sctp_stacks != (KERNEL_SCTP,):
            if "sctp" not in settings.transports:
                raise reader.fail("matrix.sctp_stacks", "apply to SCTP, which "
                                                        "matrix.transports does not name")
            usrsctp_axis.refuse(reader, data, settings.stacks)
        return settings

    def record(self, settings: Settings) -> dict[str, Any]:
        return {"stacks": stack_records(settings.stacks),
                "page": {**vars(settings), "document_sizes": list(settings.document_sizes),
                         "transports": list(settings.transports),
                         "stacks": list(settings.stacks),
                         **usrsctp_axis.record(settings.sctp_stacks, settings.stacks),
                         "mapping": "TCP: one persistent connection, the objects' requests "
                                    "pipelined; SCTP: one association, each request on the "
                                    "first free stream and its answer on that stream",
                         "metric_source": "the client's pcap: a byte counts once deliverable "
                                          "in order (its connection's, or its stream's)"}}

    # -- the matrix ----------------------------------------------------------------------------
    def points(self, experiment: Experiment) -> list[Point]:
        settings: Settings = experiment.settings
        seen: dict[str, Point] = {}
        for path in experiment.network.entries:
            for loss in experiment.losses:
                for size in settings.document_sizes:
                    for transport in settings.transports:
                        for tcp_profile in experiment.tcp_profiles:
                            for stack in settings.stacks:
                                # the SCTP stacks multiply SCTP only ("": TCP's point)
                                for sctp_stack in (settings.sctp_stacks if transport == "sctp"
                                                   else ("",)):
                                    point = self._point(settings, path.name, loss, size,
                                                        transport, tcp_profile, stack,
                                                        sctp_stack)
                                    seen.setdefault(point.key, point)
        return list(seen.values())

    @staticmethod
    def _point(settings: Settings, path: str, loss: float, size: int, transport: str,
               tcp_profile: str, stack: str, sctp_stack: str) -> Point:
        profile = tcp_profile if transport == "tcp" else SCTP_PROFILE
        key = (f"{path}_loss{loss:g}_{size_label(size) if size else 0}"
               f"+{settings.objects}x{size_label(settings.object_size)}_{transport}_{profile}"
               + stack_key_suffix(stack) + sctp_stack_key_suffix(sctp_stack or KERNEL_SCTP))
        return Point(key, path, loss, profile, (
            ("path", path), ("loss", loss), ("document_size", size),
            ("objects", settings.objects), ("object_size", settings.object_size),
            ("transport", transport), ("profile", profile), ("stack", stack),
            ("sctp_stack", sctp_stack)), stack)

    def estimate_s(self, experiment: Experiment, point: Point) -> float:
        path = experiment.network.entry(point.network)
        settings: Settings = experiment.settings
        total = point.get("document_size") + settings.objects * settings.object_size
        return 4.0 + (1 + 8 * point.loss) * (total * 8 / (0.95 * path.rate_bps)
                                             + 6 * 2 * path.delay_s)

    # -- before the runs -----------------------------------------------------------------------
    def prepare(self, experiment: Experiment, data_root: Path) -> dict[str, Any]:
        if experiment.snaplen:
            raise WorkloadError(f"{experiment.file}: the HTTP reading needs whole packets: "
                                f"drop [run] snaplen (it is {experiment.snaplen})")
        programs = require_programs("httpd", "httpc", "runcapture")
        settings: Settings = experiment.settings
        pages = {}
        for size in settings.document_sizes:
            page = dataset.ensure_page(data_root, size, settings.objects,
                                       settings.object_size, experiment.seed)
            problems = page.check()
            if problems:
                raise WorkloadError("page is not as made: " + "; ".join(problems[:3]))
            pages[size] = page
        return {"programs": programs, "pages": pages}

    def order(self, experiment: Experiment, point: Point, prepared: dict[str, Any]
              ) -> dict[str, Any]:
        settings: Settings = experiment.settings
        page = prepared["pages"][point.get("document_size")]
        stack = STACKS[point.stack]
        transport = point.get("transport")
        return {"transport": transport, "root": str(page.root),
                "socket_options": stack.buffers(transport).program_options(),
                "tcp_initial_rto_ms": stack.tcp_initial_rto_ms if transport == "tcp" else None,
                "paths": page.paths(), "expected": page.digests, "scratch": DOWNLOADS,
                "write_size": settings.write_size, "streams": settings.sctp_streams,
                "scheduler": settings.sctp_scheduler,
                "sctp_stack": point.get("sctp_stack"),
                "server_options": usrsctp_axis.program_options(point, stack, peer=False),
                "client_options": usrsctp_axis.program_options(point, stack, peer=True),
                **prepared["programs"]}

    # -- inside the kernel ---------------------------------------------------------------------
    def execute(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None]) -> None:
        """The page fetch; where the stack wants TCP's initial RTO other than Linux's, httpd
        and httpc run in a cgroup whose sock_ops program answers it."""
        under_initial_rto(run["workload"].get("tcp_initial_rto_ms"), record,
                          lambda wrap: self.session(net, run, run_dir, record, mark, wrap))

    def session(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None],
                wrap: Callable[[list[str]], list[str]]) -> None:
        order = run["workload"]
        download = Path(order["scratch"]) / run["id"]
        shutil.rmtree(download, ignore_errors=True)
        download.mkdir(parents=True)
        timeout_s = run["timeout_s"]
        buffers = order.get("socket_options", [])
        record["programs"] = {"httpd": order.get("server_options", []),
                              "httpc": order.get("client_options", [])}
        if order.get("sctp_stack"):
            record["sctp_stack"] = order["sctp_stack"]
        httpd_argv = wrap(procedure.http_server_argv(
            order["httpd"], order["root"], SERVER_IP, str(run_dir / "httpd.log"), timeout_s,
            options=["--write-size", str(order["write_size"]), "--sctp-scheduler",
                     order["scheduler"], "--max-sessions", "1", *buffers,
                     *order.get("server_options", [])]))
        try:
            with server_and_capture(net, run, record, mark, httpd_argv,
                                    run_dir / "httpd.out"):
                run_client(net, wrap(procedure.http_client_argv(
                    order["httpc"], order["transport"], SERVER_IP, str(download), timeout_s,
                    order["paths"], options=["--streams", str(order["streams"]), *buffers,
                                             *order.get("client_options", [])])),
                    run_dir, timeout_s, record, mark)
                require_intact(download, order["expected"], "objects", mark)
        finally:
            shutil.rmtree(download, ignore_errors=True)

    # -- on the host ---------------------------------------------------------------------------
    def analyse(self, experiment: Experiment, run_dir: Path, record: dict[str, Any],
                capture: Path | None) -> dict[str, Any]:
        transport = record["params"]["transport"]
        stack = STACKS[record["params"].get("stack", DEFAULT_STACK)]
        rto_floor_s = stack.tcp_rto_min_ms / 1000 if transport == "tcp" else \
            experiment.sctp.get("rto_min_ms", stack.sctp_rto_ms[0]) / 1000
        return measure(run_dir, capture, transport, rto_floor_s)


def client_objects(events: list[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """httpc's own times per object: its request and its completion."""
    out: dict[int, dict[str, float]] = {}
    for e in events:
        if e.get("event") in ("request", "complete"):
            out.setdefault(e["object"], {})[e["event"]] = e["t"]
    return out


def page_times(objects: list[tuple[float | None, float | None]]
               ) -> tuple[float | None, float | None, float | None]:
    """(page, document, objects) intervals from each object's (request, completion): None
    where an instant is missing."""
    if not objects or any(r is None or c is None for r, c in objects):
        return None, None, None
    requests = [r for r, _ in objects]
    ends = [c for _, c in objects]
    page = max(ends) - requests[0]                          # type: ignore[operator]
    document = ends[0] - requests[0]                        # type: ignore[operator]
    rest = (max(ends[1:]) - min(requests[1:])) if len(objects) > 1 else None  # type: ignore
    return page, document, rest


def measure(run_dir: Path, capture: Path | None, transport: str, rto_floor_s: float
            ) -> dict[str, Any]:
    """What a page fetch measured: its intervals from the client's pcap and from httpc's clock
    (flagged beyond 1 ms apart), the pcap's counters, and objects.csv."""
    from experiments.tshark import transport as transport_counters
    from experiments.workloads.http_page.measure import data_packets, page_objects

    row: dict[str, Any] = {"page_time_s": None, "pcap_client_diff_ms": None, "flagged": False,
                           "notes": []}
    mine = client_objects(read_events(run_dir / "client.jsonl"))
    ordered = [mine[i] for i in sorted(mine)]
    row["client_page_time_s"] = page_times([(o.get("request"), o.get("complete"))
                                            for o in ordered])[0]
    seen: list[ObjectTimes] = []
    if capture is not None:
        seen = page_objects(capture, transport, CLIENT_IP, SERVER_IP)
        row.update(vars(transport_counters.counters(capture, transport, CLIENT_IP,
                                                     rto_floor_s)))
        row["server_data_packets"] = data_packets(capture, transport, SERVER_IP)
        page, document, rest = page_times([(o.request_s, o.complete_s) for o in seen])
        row.update(page_time_s=page, document_time_s=document, objects_time_s=rest)
        if len(seen) != len(mine):
            row["notes"].append(f"{len(seen)} objects in the pcap, {len(mine)} in httpc's "
                                "events")
    write_objects(run_dir, seen, ordered)
    if row["page_time_s"] is not None and row["client_page_time_s"] is not None:
        diff = row["page_time_s"] - row["client_page_time_s"]
        row["pcap_client_diff_ms"] = 1000 * diff
        if abs(diff) > max(AGREEMENT_S, AGREEMENT_SHARE * row["page_time_s"]):
            row["flagged"] = True
            row["notes"].append(f"pcap and client disagree by {1000 * diff:+.2f} ms")
    return row


def write_objects(run_dir: Path, seen: list[ObjectTimes], client: list[dict[str, float]]
                  ) -> None:
    """objects.csv: every object's instants, relative to the document's request (the pcap's
    and httpc's each on their own clock)."""
    t0 = seen[0].request_s if seen else 0.0
    c0 = client[0].get("request", 0.0) if client else 0.0
    with open(run_dir / "objects.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, OBJECT_COLUMNS)
        writer.writeheader()
        for i in range(max(len(seen), len(client))):
            o = seen[i] if i < len(seen) else None
            c = client[i] if i < len(client) else {}
            writer.writerow({
                "object": i, "target": o.target if o else "", "stream": o.stream if o else "",
                "status": o.status if o else "", "body_bytes": o.body_bytes if o else "",
                "request_s": _rel(o.request_s if o else None, t0),
                "first_byte_s": _rel(o.first_byte_s if o else None, t0),
                "complete_s": _rel(o.complete_s if o else None, t0),
                "client_request_s": _rel(c.get("request"), c0),
                "client_complete_s": _rel(c.get("complete"), c0)})


def _rel(t: float | None, t0: float) -> str:
    return "" if t is None else f"{t - t0:.6f}"


WORKLOAD = HttpPage()
