"""Which points a compared claim sets side by side (analysis/scorecard/card.py): a TCP point,
whose SCTP settings cell is empty, pairs with the SCTP point of every setting, and each
setting is judged as a group of its own; two SCTP variants pair only under the same setting;
the TCP profile is ignored as before. Hand-made columns, as a results table gives them."""
from __future__ import annotations

from pathlib import Path

from analysis.scorecard.card import _pairs, group_of
from experiments.claims import Claim


def claim(a: str, b: str) -> Claim:
    return Claim(id="X.1", study="X", file=Path("X.toml"), section="", words="", kind="direction",
                 experiment="failover", metric="transfer_time_s", compare=("variant",),
                 a={"variant": a}, b={"variant": b})


def point(variant: str, settings: str | float, profile: str, stack: str = "linux") -> dict:
    return {"key": f"{variant}-{settings}-{profile}", "variant": variant, "loss": 0.0,
            "sctp_settings": settings, "profile": profile, "stack": stack}


POINTS = [point("tcp", "", "tcp-newreno"), point("tcp", float("nan"), "tcp-linux"),
          point("sctp-ms", "linux-pf", "sctp"), point("sctp-ms", "rfc4960-pmr1", "sctp"),
          point("sctp-naive", "linux-pf", "sctp"), point("sctp-naive", "rfc4960-pmr1", "sctp")]


def names(pairs) -> set[tuple[str, str]]:
    return {(a["key"], b["key"]) for a, b in pairs}


def test_a_tcp_point_pairs_with_every_sctp_setting():
    pairs = _pairs(claim("tcp", "sctp-ms"), POINTS)
    assert names(pairs) == {(t, f"sctp-ms-{s}-sctp")
                            for t in ("tcp--tcp-newreno", "tcp-nan-tcp-linux")
                            for s in ("linux-pf", "rfc4960-pmr1")}
    groups = {group_of([a, b], by_profile=True) for a, b in pairs}
    assert groups == {"linux / linux-pf / tcp-newreno", "linux / rfc4960-pmr1 / tcp-newreno",
                      "linux / linux-pf / tcp-linux", "linux / rfc4960-pmr1 / tcp-linux"}


def test_two_sctp_variants_pair_only_under_one_setting():
    pairs = _pairs(claim("sctp-ms", "sctp-naive"), POINTS)
    assert names(pairs) == {("sctp-ms-linux-pf-sctp", "sctp-naive-linux-pf-sctp"),
                            ("sctp-ms-rfc4960-pmr1-sctp", "sctp-naive-rfc4960-pmr1-sctp")}


def test_points_of_two_stacks_never_pair():
    other = [point("sctp-ms", "linux-pf", "sctp", stack="published")]
    assert _pairs(claim("tcp", "sctp-ms"), [POINTS[0], *other]) == []


def test_points_on_usrsctp_are_a_group_of_their_own():
    kernel = {"key": "geo-2", "bottleneck": "geo-2", "profile": "tcp-sack-reno", "stack": "linux",
              "sctp_stack": "kernel"}
    usrsctp = {**kernel, "key": "geo-2_usrsctp", "sctp_stack": "usrsctp"}
    assert group_of([kernel], by_profile=True) == "linux / tcp-sack-reno"
    assert group_of([usrsctp], by_profile=True) == "linux / usrsctp / tcp-sack-reno"


def ftp_point(variant: str, sctp_stack: str) -> dict:
    """An ftp-mget point: a TCP variant's SCTP stack cell is empty."""
    return {"key": f"{variant}-{sctp_stack}", "variant": variant, "loss": 0.03,
            "stack": "published", "sctp_settings": "", "sctp_stack": sctp_stack,
            "profile": "tcp-newreno" if variant == "tcp" else "sctp"}


FTP_POINTS = [ftp_point("tcp", ""), ftp_point("sctp-naive", "kernel"),
              ftp_point("sctp-naive", "usrsctp"), ftp_point("sctp-ms", "kernel"),
              ftp_point("sctp-ms", "usrsctp")]


def test_a_tcp_point_pairs_with_the_sctp_point_of_each_sctp_stack_each_its_own_group():
    pairs = _pairs(claim("sctp-naive", "tcp"), FTP_POINTS)
    assert names(pairs) == {("sctp-naive-kernel", "tcp-"), ("sctp-naive-usrsctp", "tcp-")}
    assert {group_of([a, b], by_profile=True) for a, b in pairs} == {
        "published / tcp-newreno", "published / usrsctp / tcp-newreno"}


def test_two_sctp_variants_pair_only_on_one_sctp_stack():
    pairs = _pairs(claim("sctp-ms", "sctp-naive"), FTP_POINTS)
    assert names(pairs) == {("sctp-ms-kernel", "sctp-naive-kernel"),
                            ("sctp-ms-usrsctp", "sctp-naive-usrsctp")}
