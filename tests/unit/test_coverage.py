"""A stream's received byte ranges (experiments/workloads/ftp_mget/flows.py, Coverage): each
addition says how many of its bytes were new, whether it extends the last range, opens a gap,
fills one or repeats what came before."""
from __future__ import annotations

from experiments.workloads.ftp_mget.flows import Coverage


def test_each_addition_counts_only_its_new_bytes():
    coverage = Coverage()
    steps = [((0, 100), 100),      # the first bytes
             ((100, 200), 100),    # in order, right after
             ((300, 400), 100),    # a gap before it
             ((150, 250), 50),     # half repeated, half into the gap
             ((250, 300), 50),     # fills the gap
             ((0, 400), 0),        # all of it again
             ((400, 400), 0),      # nothing
             ((390, 450), 50)]     # overlaps the end
    for (start, end), new in steps:
        assert coverage.add(start, end) == new, (start, end)
    assert (coverage.starts, coverage.ends) == ([0], [450])


def test_ranges_stay_disjoint_and_sorted():
    coverage = Coverage()
    for start, end in [(500, 600), (0, 100), (200, 300), (90, 210)]:
        coverage.add(start, end)
    assert (coverage.starts, coverage.ends) == ([0, 500], [300, 600])
