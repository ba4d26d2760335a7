"""The workloads an experiment file can name, one package each, registered here once (see
base.py for what a workload tells the harness):

    ftp-mget     an FTP session fetching N files with mget on `path` (E1, E2)
    bulk-flows   long-lived TCP and SCTP bulk flows across the `dumbbell` (E3)
    http-page    a page (a document, then its embedded objects) over HTTP on `path` (E4)
    ping-rtt     the round-trip time of both paths of `dualpath`, by ping

A package holds the workload's definition and run (`workload.py`), what it reads from its pcaps,
and its figures and tables (`report/`). Only the named workload's package is imported, so a
kernel running FTP never loads another, and its report only where a report is drawn: the
`testbed` command hands it to analysis/, which imports no workload."""
from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Workload

PACKAGES = {"ftp-mget": ".ftp_mget", "bulk-flows": ".bulk_flows", "http-page": ".http_page",
            "ping-rtt": ".ping_rtt"}
DEFAULT = "ftp-mget"


class UnknownWorkload(KeyError):
    pass


def _package(kind: str) -> str:
    if kind not in PACKAGES:
        raise UnknownWorkload(f"unknown workload {kind!r} (one of: {', '.join(PACKAGES)})")
    return PACKAGES[kind]


def get(kind: str) -> Workload:
    return import_module(_package(kind), __name__).WORKLOAD


def report_of(kind: str) -> ModuleType | None:
    """The workload's report (`build_figures`, `tables`, `sections`), None for an unknown
    workload or one without a report/ (a report is optional): its result folder still gets
    the common report. A report that fails to import its own imports is not hidden."""
    try:
        package = _package(kind)
    except UnknownWorkload:
        return None
    name = f"{__name__}{package}.report"
    try:
        return import_module(name)
    except ModuleNotFoundError as error:
        if error.name == name:
            return None
        raise
