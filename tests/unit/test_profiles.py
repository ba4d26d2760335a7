"""TCP profiles are applied one after another in the same kernel (a batch runs several): each
must set every key any of them sets, or a value would carry over from the run before."""
from experiments.stacks import COMMON_SYSCTLS, TCP_PROFILES, sysctls_for


def test_every_tcp_profile_sets_the_same_keys():
    keys = {name: set(values) for name, values in TCP_PROFILES.items()}
    union = set().union(*keys.values())
    assert all(k == union for k in keys.values()), keys


def test_a_run_after_the_64k_profile_gets_window_scaling_back():
    before = sysctls_for("tcp-reno-64k", {}, "linux")
    after = sysctls_for("tcp-linux", {}, "linux")
    assert before["net.ipv4.tcp_window_scaling"] == "0"
    assert after["net.ipv4.tcp_window_scaling"] == "1"
    assert set(COMMON_SYSCTLS) <= set(after)
