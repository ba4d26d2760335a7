"""bulk_probe's arithmetic: steady goodput and per-interval counts from arrival samples."""
from topology.fidelity.bulk_probe import per_interval, steady_goodput


def test_steady_goodput_skips_slow_start_and_counts_bytes_between_arrivals():
    samples = [(10.0, 1000), (10.5, 2000), (12.0, 5000), (13.0, 7000), (14.0, 9000)]
    steady = steady_goodput(samples, omit_s=1.5)
    assert steady == {"bps": 8 * 4000 / 2.0, "bytes": 4000, "seconds": 2.0}
    assert steady_goodput(samples[:1], 0.0) is None
    assert steady_goodput(samples, omit_s=10.0) is None


def test_per_interval_counts_bytes_in_whole_intervals_after_the_first_byte():
    samples = [(5.0, 100), (5.4, 300), (6.2, 600), (7.9, 1000)]
    assert per_interval(samples, 1.0) == [300, 300, 400]
    assert per_interval([], 1.0) == []
