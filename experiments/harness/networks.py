"""The [network] section of an experiment file, per topology: the named link settings that form
the network axis of the matrix (the paths of `path`, the bottlenecks of `dumbbell`), how a run
at one of them and one loss ratio shapes each direction, and what a kernel builds for it.

    path       [network] queue, mtu; [[network.paths]] name, rate, delay, queue (its own,
               in place of [network]'s)
    dualpath   the same; both paths shaped alike
    dumbbell   [network] access_rate, access_delay, access_queue, mtu, loss_on ("data": the
               bottleneck's data direction only; "both"); [[network.bottlenecks]] name,
               pairs, rate, delay, queue
    any        [network] queue_never_drops = true: the experiment's premise that its queues are
               large enough never to overflow; a run whose queues dropped is flagged

Every error names the file, the key and the reason (through the experiment file's reader)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topology.net.addresses import DATA_DIRECTION
from topology.params import LinkShape, Queue, parse_queue, parse_rate, parse_time

if TYPE_CHECKING:
    from .spec import Reader

MTU_RANGE = (576, 9000)
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

    def shape(self, loss: float) -> LinkShape:
        return LinkShape(self.rate_bps, self.delay_s, loss, self.queue)


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

    @property
    def entry_table(self) -> str:
        return "bottlenecks" if self.kind == "dumbbell" else "paths"

    def entry(self, name: str) -> Entry:
        return next(e for e in self.entries if e.name == name)

    def links(self, entry: Entry, loss: float) -> dict[str, LinkShape]:
        """Every shaped direction for a run at `entry` with this loss ratio."""
        lossy, clean = entry.shape(loss), entry.shape(0.0)
        if self.kind == "path":
            return {"up": lossy, "down": lossy}
        if self.kind == "dualpath":
            return {f"path{k}-{d}": lossy for k in (1, 2) for d in ("up", "down")}
        assert self.access is not None
        links = {"bottleneck-up": lossy,
                 "bottleneck-down": lossy if self.loss_on == "both" else clean}
        for i in range(1, entry.pairs + 1):
            for host in (f"s{i}", f"d{i}"):
                links.update({f"{host}-up": self.access, f"{host}-down": self.access})
        return links

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
        """The shaped link of a run as runs.csv shows it: the data direction of the path or
        bottleneck."""
        shape = links.get(DATA_DIRECTION[self.kind], {})
        return {"rate_bps": shape.get("rate_bps"), "delay_s": shape.get("delay_s"),
                "queue": shape.get("queue")}

    def queue_row(self, queues: dict[str, dict[str, int]] | None,
                  data: str) -> dict[str, Any]:
        """The run's drops as runs.csv shows them: at the egress of `data`, the direction its
        workload sends its data in, and at every other one together (None for runs from
        before they were counted)."""
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
        return out


PATH_SCHEMA = {"queue": str, "paths": list, "mtu": int, "queue_never_drops": bool}
PATH_KEYS = {"name": str, "rate": str, "delay": str, "queue": str}
DUMBBELL_SCHEMA = {"access_rate": str, "access_delay": str, "access_queue": str, "mtu": int,
                   "loss_on": str, "bottlenecks": list, "queue_never_drops": bool}
BOTTLENECK_KEYS = {"name": str, "pairs": int, "rate": str, "delay": str, "queue": str}
SCHEMAS = {"path": PATH_SCHEMA, "dualpath": PATH_SCHEMA, "dumbbell": DUMBBELL_SCHEMA}
MAX_PAIRS = 50


def read(reader: Reader, kind: str, table: dict[str, Any]) -> Network:
    """The [network] table of a `kind` topology (its keys already checked)."""
    mtu = table.get("mtu")
    if mtu is not None and not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise reader.fail("network.mtu", f"{mtu} is out of range ({MTU_RANGE[0]} to "
                                         f"{MTU_RANGE[1]} bytes)")
    if kind == "dumbbell":
        return _dumbbell(reader, table, mtu)
    queue = reader.guard("network.queue", parse_queue, reader.required(table, "queue", "network"))
    entries = _entries(reader, reader.required(table, "paths", "network"), "paths", PATH_KEYS,
                       lambda where, entry: _path_entry(reader, where, entry, queue))
    return Network(kind, entries, queue=queue, mtu=mtu,
                   queue_never_drops=table.get("queue_never_drops", False))


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
                       BOTTLENECK_KEYS, lambda where, entry: _bottleneck(reader, where, entry))
    return Network("dumbbell", entries, mtu=mtu, access=access, loss_on=loss_on,
                   queue_never_drops=table.get("queue_never_drops", False))


def _entries(reader: Reader, values: list[Any], table: str, keys: dict[str, Any],
             make) -> tuple[Entry, ...]:
    if not values:
        raise reader.fail(f"network.{table}", "needs at least one entry")
    entries = []
    for i, value in enumerate(values):
        where = f"network.{table}[{i}]"
        if not isinstance(value, dict):
            raise reader.fail(where, f"must be a table with {', '.join(keys)}")
        reader.check_keys(value, keys, where)
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
