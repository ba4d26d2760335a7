"""The UDP probe's count of loss runs, which the burst-loss test divides the losses by."""
from topology.fidelity.udp_probe import loss_runs


def test_runs_of_missing_numbers_are_counted_once_each():
    assert loss_runs(set(range(10)), 10) == 0
    assert loss_runs({0, 1, 4, 5, 9}, 10) == 2          # 2-3 and 6-8
    assert loss_runs({1, 2, 3}, 6) == 2                 # 0 at the start, 4-5 at the end
    assert loss_runs(set(), 5) == 1
