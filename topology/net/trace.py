"""A link trace: a link's rate (and, where given, delay and loss) over time, read from a CSV
file and replayed during a run as a schedule (schedule.py), one change per row.

    # a cellular downlink, 1 s steps
    at,rate,delay
    0s,3Mbit,20ms
    1s,1.2Mbit,35ms
    2.5s,2Mbit,20ms

The header names the columns: `at` first, then any of `rate`, `delay` and `loss`, in the units
of an experiment file ("3Mbit", "20ms", "0.01" or "1%"). Lines starting with `#` and blank lines are
skipped. The instants count from the moment the run's links are set, as a schedule's do, and
must rise from row to row. A row at 0 s replaces the link's shape from the run's first packet.
The file's digest goes into the record, so a result names the trace it ran under."""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..params import LinkShape, ParameterError, parse_loss, parse_rate, parse_time
from .schedule import Change

COLUMNS = {"rate": ("rate_bps", parse_rate), "delay": ("delay_s", parse_time),
           "loss": ("loss", parse_loss)}
# a trace is replayed by one write per row at its instant; past this many rows a run's record
# and its applier's pipe grow without a use a researcher has named
MAX_ROWS = 100_000
MAX_BYTES = 8 << 20    # read whole before the rows are counted: refused first by its size


@dataclass(frozen=True)
class Trace:
    link: str
    file: Path
    sha256: str
    changes: tuple[Change, ...]

    def record(self) -> dict[str, Any]:
        return {"link": self.link, "file": str(self.file), "sha256": self.sha256,
                "rows": len(self.changes), "until_s": self.changes[-1].at_s}


def read(file: Path, link: str) -> Trace:
    """The trace in `file` as changes of `link`; a file that cannot be read, a header without
    `at` or with an unknown column, a value that does not parse, a value no link can have or
    an instant that goes back is refused with the line it stands on."""
    try:
        if file.stat().st_size > MAX_BYTES:
            raise ParameterError(f"{file}: larger than {MAX_BYTES >> 20} MB, no trace")
        text = file.read_text()
    except OSError as error:
        raise ParameterError(f"cannot read the trace {file}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ParameterError(f"{file}: not a text file (UTF-8)") from None
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ParameterError(f"{file}: the trace is empty (a header `at,rate` and one row "
                             "per change)")
    (header_line, header), rows = lines[0], lines[1:]
    columns = [c.strip() for c in next(csv.reader([header]))]
    if columns[:1] != ["at"] or len(columns) < 2:
        raise ParameterError(f"{file}:{header_line}: the header must be `at` and then any of "
                             f"{', '.join(COLUMNS)}, got {header!r}")
    unknown = [c for c in columns[1:] if c not in COLUMNS]
    if unknown or len(set(columns)) != len(columns):
        raise ParameterError(f"{file}:{header_line}: unknown or repeated column "
                             f"{(unknown or columns)[0]!r}: one each of {', '.join(COLUMNS)}")
    if not rows:
        raise ParameterError(f"{file}: the trace has a header and no rows")
    if len(rows) > MAX_ROWS:
        raise ParameterError(f"{file}: {len(rows)} rows, more than {MAX_ROWS}")
    changes: list[Change] = []
    for number, line in rows:
        changes.append(_row(file, number, columns, next(csv.reader([line])), link))
        if len(changes) > 1 and changes[-1].at_s <= changes[-2].at_s:
            raise ParameterError(f"{file}:{number}: at {changes[-1].at_s:g} s does not come "
                                 f"after {changes[-2].at_s:g} s: the rows must rise in time")
    return Trace(link, file, hashlib.sha256(text.encode()).hexdigest(), tuple(changes))


def _row(file: Path, number: int, columns: list[str], cells: list[str], link: str) -> Change:
    if len(cells) != len(columns):
        raise ParameterError(f"{file}:{number}: {len(cells)} values for the "
                             f"{len(columns)} columns {', '.join(columns)}")
    values = dict(zip(columns, (c.strip() for c in cells), strict=True))
    try:
        at = parse_time(values.pop("at"))
        settings = {}
        for column, cell in values.items():
            field, parse = COLUMNS[column]
            settings[field] = parse(cell)
            LinkShape(**{field: settings[field]})
        return Change(at, link, settings)
    except ParameterError as error:
        raise ParameterError(f"{file}:{number}: {error}") from None
