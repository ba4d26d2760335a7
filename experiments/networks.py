"""The [network] section of an experiment file: the named link settings that form the network
axis of the matrix (the paths of `path` and `dualpath`, the bottlenecks of `dumbbell`), read and
checked. Which keys a topology's table has, which directions a run shapes and which of them an
entry names are the topology's own (topology/net/<kind>.py: `network_keys`, `entry_keys`,
`run_links`, `named_link`); this module reads the values.

    path       [network] queue, mtu; [[network.paths]] name, rate, delay, queue (its own,
               in place of [network]'s)
    dualpath   the same; both paths shaped alike, unless [network.path2] rate, delay, queue
               and loss give path 2 a shape of its own for every run (the matrix's entry and
               loss then shape path 1 only)
    dumbbell   [network] access_rate, access_delay, access_queue, mtu, loss_on ("data": the
               bottleneck's data direction only; "both"); [[network.bottlenecks]] name,
               pairs, rate, delay, queue
    any        [network] queue_never_drops = true: the experiment's premise that its queues are
               large enough never to overflow; a run whose queues dropped is flagged
               [network] loss_burst = 4: the matrix's loss comes in bursts of this mean length
               in packets (the Gilbert model) instead of packet by packet (Bernoulli), at the
               same mean
               [network] fade = "100ms": the matrix's loss in fades of this mean length in
               time, every packet dropped during one (topology/net/fades.py)
               [[network.schedule]] at, link, and rate, delay, loss, loss_burst or down: the
               links change during every run, `at` counted from the moment the run's links
               are set, before its programs start (topology/net/schedule.py)
               [[network.trace]] link, file: a link's rate (delay, loss) over time from a
               CSV file beside the experiment file, replayed as changes of the schedule
               (topology/net/trace.py)

Every error names the file, the key and the reason (through the experiment file's reader)."""
from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from topology.net import KINDS, fades, topology_class, trace
from topology.net.base import MTU_RANGE
from topology.net.dumbbell import MAX_PAIRS
from topology.net.schedule import Change, ordered
from topology.params import LinkShape, Queue, parse_queue, parse_rate, parse_time

if TYPE_CHECKING:
    from experiments.spec import Reader

NAME = re.compile(r"[a-z0-9-]+")


@dataclass(frozen=True)
class Entry:
    """One named link setting: a path, or a bottleneck with its number of sender/receiver
    pairs."""

    name: str
    rate_bps: float
    delay_s: float
    queue: Queue
    pairs: int = 1
    own_queue: bool = False          # a path's queue of its own, not [network]'s

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "rate_bps": self.rate_bps,
                               "delay_s": self.delay_s}
        if self.own_queue:
            out["queue"] = {"limit": self.queue.limit, "unit": self.queue.unit}
        if self.pairs != 1:
            out.update(pairs=self.pairs, queue={"limit": self.queue.limit,
                                                "unit": self.queue.unit})
        return out

    def shape(self, loss: float, loss_burst: float | None = None) -> LinkShape:
        return LinkShape(self.rate_bps, self.delay_s, loss, self.queue, loss_burst)


@dataclass(frozen=True)
class Network:
    kind: str
    entries: tuple[Entry, ...]
    queue: Queue | None = None       # path, dualpath: every entry's
    mtu: int | None = None
    access: LinkShape | None = None  # dumbbell's access links
    loss_on: str = "both"
    # the experiment's premise that no queue ever overflows: a run whose queues dropped is
    # flagged
    queue_never_drops: bool = False
    loss_burst: float | None = None  # None: Bernoulli loss
    fade_s: float | None = None      # the loss in fades of this mean length in time
    listed: tuple[Change, ...] = ()  # [[network.schedule]]'s changes
    second: LinkShape | None = None  # dualpath: path 2's own shape
    traces: tuple[trace.Trace, ...] = ()

    @functools.cached_property
    def schedule(self) -> tuple[Change, ...]:
        """Every change of a run in time order: the listed ones and the traces' rows."""
        return tuple(sorted([*self.listed, *(c for t in self.traces for c in t.changes)],
                            key=lambda c: c.at_s))

    @property
    def entry_table(self) -> str:
        return topology_class(self.kind).entry_table

    def entry(self, name: str) -> Entry:
        return next(e for e in self.entries if e.name == name)

    def links(self, entry: Entry, loss: float) -> dict[str, LinkShape]:
        """Every shaped direction for a run at `entry` with this loss ratio (with fades, as it
        is between them: no loss)."""
        return topology_class(self.kind).run_links(
            entry.shape(0.0 if self.fade_s else loss, self.loss_burst), entry.shape(0.0),
            pairs=entry.pairs, access=self.access, loss_on=self.loss_on, second=self.second)

    def lossy_links(self, entry: Entry) -> list[str]:
        """The directions the matrix's loss applies to."""
        shapes = topology_class(self.kind).run_links(
            entry.shape(0.5), entry.shape(0.0), pairs=entry.pairs, access=self.access,
            loss_on=self.loss_on, second=self.second)
        return [d for d, shape in shapes.items() if shape.loss == 0.5]

    def fades(self, entry: Entry, loss: float, seed: str) -> dict[str, Any] | None:
        """What a run's kernel draws its fades from (None without fades or loss)."""
        if not self.fade_s or not loss:
            return None
        return {"links": self.lossy_links(entry), "loss": loss, "fade_s": self.fade_s,
                "seed": seed}

    def topology(self, entry: Entry, loss: float) -> dict[str, Any]:
        """What the kernel builds (topology.net.build); runs whose specs differ only in
        `links` share one build, the links changed in place between them."""
        spec: dict[str, Any] = {"kind": self.kind, "mtu": self.mtu,
                                "links": {d: s.to_dict() for d, s in
                                          self.links(entry, loss).items()}}
        if self.kind == "dumbbell":
            spec["pairs"] = entry.pairs
        return spec

    def link_row(self, links: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The shaped link of a run as runs.csv shows it: the direction its path or bottleneck
        names."""
        shape = links.get(topology_class(self.kind).named_link, {})
        return {"rate_bps": shape.get("rate_bps"), "delay_s": shape.get("delay_s"),
                "queue": shape.get("queue")}

    def queue_row(self, queues: dict[str, dict[str, int]] | None,
                  data: str) -> dict[str, Any]:
        """The run's drops as runs.csv shows them: at the egress of `data`, the data direction
        (the shaped direction its workload's data take), and at every other one together (None
        for runs from before they were counted)."""
        row: dict[str, Any] = {}
        for key in ("queue_drops", "loss_drops"):
            row[f"{key}_data"] = None if queues is None else queues.get(data, {}).get(key, 0)
            row[f"{key}_other"] = None if queues is None else sum(
                c.get(key, 0) for d, c in queues.items() if d != data)
        return row

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topology": self.kind, "mtu": self.mtu,
                               self.entry_table: [e.record() for e in self.entries]}
        if self.queue is not None:
            out["queue"] = {"limit": self.queue.limit, "unit": self.queue.unit}
        if self.access is not None:
            out["access"] = self.access.to_dict()
            out["loss_on"] = self.loss_on
        out["queue_never_drops"] = self.queue_never_drops
        if self.loss_burst is not None:
            out["loss_burst"] = self.loss_burst
        if self.fade_s is not None:
            out["fade_s"] = self.fade_s
        if self.schedule:
            out["schedule"] = [c.to_dict() for c in self.schedule]
        if self.traces:
            out["traces"] = [t.record() for t in self.traces]
        if self.second is not None:
            out["path2"] = self.second.to_dict()
        return out


SCHEMAS = {kind: topology_class(kind).network_keys for kind in KINDS}


def read(reader: Reader, kind: str, table: dict[str, Any]) -> Network:
    """The [network] table of a `kind` topology (its keys already checked)."""
    mtu = table.get("mtu")
    if mtu is not None and not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise reader.fail("network.mtu", f"{mtu} is out of range ({MTU_RANGE[0]} to "
                                         f"{MTU_RANGE[1]} bytes)")
    network = _dumbbell(reader, table, mtu) if kind == "dumbbell" else _paths(reader, kind,
                                                                              table, mtu)
    if "loss_burst" in table:
        burst = table["loss_burst"]
        reader.guard("network.loss_burst", lambda v: LinkShape(loss_burst=v), burst)
        network = replace(network, loss_burst=float(burst))
    if "fade" in table:
        if "loss_burst" in table:
            raise reader.fail("network.fade", "loss comes in fades or in bursts, not both: "
                                              "drop fade or loss_burst")
        fade = reader.guard("network.fade", parse_time, table["fade"])
        reader.guard("network.fade", lambda v: fades.check(v, 0.0), fade)
        network = replace(network, fade_s=fade)
    if "schedule" in table:
        network = replace(network, listed=_schedule(reader, network, table["schedule"]))
        for i, change in enumerate(network.listed):
            _no_loss_under_fades(reader, network, f"network.schedule[{i}]", change)
    if "trace" in table:
        network = replace(network, traces=_traces(reader, network, table["trace"]))
        for i, read_trace in enumerate(network.traces):
            # a trace's rows all set its header's columns: the first row says for all
            _no_loss_under_fades(reader, network, f"network.trace[{i}].file",
                                 read_trace.changes[0])
    return network


def _no_loss_under_fades(reader: Reader, network: Network, key: str, change: Change) -> None:
    if network.fade_s and {"loss", "loss_burst", "down"} & set(change.settings):
        raise reader.fail(key, "with fades the loss is theirs: a change may set rate and "
                               "delay only")


SCHEDULE_KEYS = {"at": str, "link": str, "rate": str, "delay": str, "loss": float,
                 "loss_burst": float, "down": bool}


def _schedule(reader: Reader, network: Network, values: list[Any]) -> tuple[Change, ...]:
    """Every change read, in time order, on a link every entry of the network axis has, and
    possible on each entry's links at every loss (checked once the matrix is read)."""
    changes = []
    for where, value in _tables(reader, values, "schedule", SCHEDULE_KEYS):
        at = reader.guard(f"{where}.at", parse_time, reader.required(value, "at", where))
        settings: dict[str, Any] = {}
        for key, parse, field in (("rate", parse_rate, "rate_bps"),
                                  ("delay", parse_time, "delay_s")):
            if key in value:
                settings[field] = reader.guard(f"{where}.{key}", parse, value[key])
                reader.guard(f"{where}.{key}", lambda v, f=field: LinkShape(**{f: v}),
                             settings[field])
        for key in ("loss", "loss_burst", "down"):
            if key in value:
                settings[key] = float(value[key]) if key != "down" else value[key]
        link = reader.required(value, "link", where)
        changes.append(reader.guard(where, lambda s, at=at, link=link: Change(at, link, s),
                                    settings))
    reader.guard("network.schedule", ordered, changes)
    for i, change in enumerate(changes):
        _check_link(reader, network, f"network.schedule[{i}].link", change.link)
    return tuple(changes)


TRACE_KEYS = {"link": str, "file": str}


def _traces(reader: Reader, network: Network, values: list[Any]) -> tuple[trace.Trace, ...]:
    """Each trace read from its file (relative to the experiment file's folder), on a link
    every entry has, one trace a link."""
    traces: list[trace.Trace] = []
    for where, value in _tables(reader, values, "trace", TRACE_KEYS):
        link = reader.required(value, "link", where)
        _check_link(reader, network, f"{where}.link", link)
        if link in (t.link for t in traces):
            raise reader.fail(f"{where}.link", f"link {link!r} has a trace already: one a link")
        file = reader.file.parent / reader.required(value, "file", where)
        traces.append(reader.guard(f"{where}.file", lambda f, link=link: trace.read(f, link),
                                   file))
    return tuple(traces)


def _check_link(reader: Reader, network: Network, key: str, link: str) -> None:
    for entry in network.entries:
        if link not in network.links(entry, 0.0):
            raise reader.fail(key, f"{network.entry_table} {entry.name!r} has no shaped link "
                                   f"{link!r} (its links: "
                                   f"{', '.join(network.links(entry, 0.0))})")


def _paths(reader: Reader, kind: str, table: dict[str, Any], mtu: int | None) -> Network:
    queue = reader.guard("network.queue", parse_queue, reader.required(table, "queue", "network"))
    entries = _entries(reader, reader.required(table, "paths", "network"), "paths",
                       topology_class(kind).entry_keys,
                       lambda where, entry: _path_entry(reader, where, entry, queue))
    return Network(kind, entries, queue=queue, mtu=mtu,
                   queue_never_drops=table.get("queue_never_drops", False),
                   second=(_second_path(reader, table["path2"], queue) if "path2" in table
                           else None))


def _second_path(reader: Reader, table: dict[str, Any], queue: Queue) -> LinkShape:
    """dualpath's [network.path2] (its keys already checked): path 2's shape for every run;
    its queue is [network]'s unless it names one."""
    rate, delay = _rate_and_delay(reader, "network.path2", table)
    if "queue" in table:
        queue = reader.guard("network.path2.queue", parse_queue, table["queue"])
    loss = float(table.get("loss", 0.0))
    return reader.guard("network.path2.loss", lambda v: LinkShape(rate, delay, v, queue), loss)


def _dumbbell(reader: Reader, table: dict[str, Any], mtu: int | None) -> Network:
    access = LinkShape(
        reader.guard("network.access_rate", parse_rate,
                     reader.required(table, "access_rate", "network")),
        reader.guard("network.access_delay", parse_time,
                     reader.required(table, "access_delay", "network")),
        0.0, reader.guard("network.access_queue", parse_queue,
                          table.get("access_queue", "1000p")))
    loss_on = table.get("loss_on", "both")
    if loss_on not in ("both", "data"):
        raise reader.fail("network.loss_on", f"{loss_on!r}: 'data' (the bottleneck's data "
                                             "direction only) or 'both'")
    entries = _entries(reader, reader.required(table, "bottlenecks", "network"), "bottlenecks",
                       topology_class("dumbbell").entry_keys,
                       lambda where, entry: _bottleneck(reader, where, entry))
    return Network("dumbbell", entries, mtu=mtu, access=access, loss_on=loss_on,
                   queue_never_drops=table.get("queue_never_drops", False))


def _tables(reader: Reader, values: list[Any], table: str,
            keys: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each table of `[[network.<table>]]` with where it stands, its keys checked."""
    for i, value in enumerate(values):
        where = f"network.{table}[{i}]"
        if not isinstance(value, dict):
            raise reader.fail(where, f"must be a table with {', '.join(keys)}")
        reader.check_keys(value, keys, where)
        yield where, value


def _entries(reader: Reader, values: list[Any], table: str, keys: dict[str, Any],
             make) -> tuple[Entry, ...]:
    if not values:
        raise reader.fail(f"network.{table}", "needs at least one entry")
    entries = []
    for where, value in _tables(reader, values, table, keys):
        name = reader.required(value, "name", where)
        if not NAME.fullmatch(name):
            raise reader.fail(f"{where}.name", "lower-case letters, digits and - only")
        entries.append(make(where, value))
    if len({e.name for e in entries}) != len(entries):
        raise reader.fail(f"network.{table}", "names must be unique")
    return tuple(entries)


def _rate_and_delay(reader: Reader, where: str, entry: dict[str, Any]) -> tuple[float, float]:
    rate = reader.guard(f"{where}.rate", parse_rate, reader.required(entry, "rate", where))
    delay = reader.guard(f"{where}.delay", parse_time, reader.required(entry, "delay", where))
    reader.guard(f"{where}.rate", lambda v: LinkShape(rate_bps=v), rate)
    reader.guard(f"{where}.delay", lambda v: LinkShape(delay_s=v), delay)
    return rate, delay


def _path_entry(reader: Reader, where: str, entry: dict[str, Any], queue: Queue) -> Entry:
    rate, delay = _rate_and_delay(reader, where, entry)
    if "queue" not in entry:
        return Entry(entry["name"], rate, delay, queue)
    own = reader.guard(f"{where}.queue", parse_queue, entry["queue"])
    return Entry(entry["name"], rate, delay, own, own_queue=True)


def _bottleneck(reader: Reader, where: str, entry: dict[str, Any]) -> Entry:
    rate, delay = _rate_and_delay(reader, where, entry)
    pairs = reader.required(entry, "pairs", where)
    if not 1 <= pairs <= MAX_PAIRS:
        raise reader.fail(f"{where}.pairs", f"{pairs} is out of range (1 to {MAX_PAIRS})")
    queue = reader.guard(f"{where}.queue", parse_queue, reader.required(entry, "queue", where))
    return Entry(entry["name"], rate, delay, queue, pairs)
