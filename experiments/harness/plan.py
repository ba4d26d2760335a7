"""Expands an experiment into points (one per cell of the matrix) and runs (one FTP session at
one point, numbered by repetition), each named by its parameters."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .profiles import profile_for
from .spec import Experiment, size_label


@dataclass(frozen=True)
class Point:
    path: str
    loss: float
    file_size: int
    files: int
    variant: str
    profile: str

    @property
    def key(self) -> str:
        return (f"{self.path}_loss{self.loss:g}_{size_label(self.file_size)}x{self.files}_"
                f"{self.variant}_{self.profile}")

    def run_id(self, rep: int) -> str:
        return f"{self.key}_r{rep:03d}"

    def as_row(self) -> dict[str, Any]:
        return {"path": self.path, "loss": self.loss, "file_size": self.file_size,
                "files": self.files, "variant": self.variant, "profile": self.profile}


def points(experiment: Experiment) -> list[Point]:
    seen: dict[str, Point] = {}
    for path in experiment.paths:
        for loss in experiment.losses:
            for size in experiment.file_sizes:
                for variant in experiment.variants:
                    for tcp_profile in experiment.tcp_profiles:
                        point = Point(path.name, loss, size, experiment.files, variant,
                                      profile_for(variant, tcp_profile))
                        seen.setdefault(point.key, point)
    return list(seen.values())


def estimated_seconds(experiment: Experiment, point: Point) -> float:
    """A rough duration of one run, for ordering and the first ETA: the bytes at the path's
    goodput, stretched by loss, plus a few round trips per file and fixed start-up costs."""
    path = experiment.path(point.path)
    transfer = point.files * point.file_size * 8 / (0.95 * path.rate_bps)
    round_trips = point.files * (2 if point.variant.startswith("sctp-ms") else 4)
    stretch = 1 + 8 * point.loss
    return 4.0 + stretch * (transfer + round_trips * 2 * path.delay_s)
