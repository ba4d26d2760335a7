"""The workloads an experiment file can name, one module each (see base.py for what a workload
tells the harness):

    ftp-mget     an FTP session fetching N files with mget on `path` (E1, E2)
    bulk-flows   long-lived TCP and SCTP bulk flows across the `dumbbell` (E3)
    http-page    a page (a document, then its embedded objects) over HTTP on `path` (E4)

Only the named workload's module is imported, so a kernel running FTP never loads another."""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Workload

MODULES = {"ftp-mget": ".ftp_mget", "bulk-flows": ".bulk_flows", "http-page": ".http_page"}
DEFAULT = "ftp-mget"


class UnknownWorkload(KeyError):
    pass


def get(kind: str) -> Workload:
    if kind not in MODULES:
        raise UnknownWorkload(f"unknown workload {kind!r} (one of: {', '.join(MODULES)})")
    return import_module(MODULES[kind], __name__).WORKLOAD
