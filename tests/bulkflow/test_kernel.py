"""bulkflow inside the pinned kernel (SCTP exists only there), one boot running kernel_job.py:
TCP and SCTP over the testbed's dumbbell (2 Mbit/s, 20 ms, 1% loss), judged here from the
event lines and the pcaps: both ends count the same bytes, 1488 bytes of payload per packet,
a SACK per DATA packet without delayed acknowledgement, a congestion window that falls after
a loss, the advertised window SO_RCVBUF 65536 gives; then goodput beside iperf3 on an
unshaped veth. The shaped flows run the UBSan build, the comparison the plain one."""
from __future__ import annotations

import json
import re
import shutil
import statistics
from itertools import pairwise
from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, events, of, one, tshark
from tests.ftp import ftphelp
from tests.ftp.kernel import run_in_kernel

pytestmark = pytest.mark.kernel

JOB = Path(__file__).with_name("kernel_job.py")
SHAPED = ["tcp-nodelack", "sctp-nodelack", "tcp-delack", "sctp-delack", "tcp-routequickack"]
PAYLOAD = 1488


@pytest.fixture(scope="module")
def job(built, tmp_path_factory):
    for tool in ("tshark", "tcpdump", "iperf3"):
        assert shutil.which(tool) or Path(f"/usr/sbin/{tool}").exists(), f"{tool} is required"
    work = tmp_path_factory.mktemp("bulkflow-kernel")
    r = run_in_kernel(["/usr/bin/python3", str(JOB)], timeout=420,
                      env={"SHAPED_BIN": ftphelp.IMPL / "build-ubsan",
                           "COMPARE_BIN": ftphelp.IMPL / "build", "WORK": work})
    report = json.loads((work / "job.json").read_text()) if (work / "job.json").exists() else {}
    assert r.returncode == 0 and "exception" not in report, \
        f"kernel job failed ({r.returncode}): {report.get('exception')}\n{r.stdout}\n{r.stderr}"
    return work, report


def flow_events(work: Path, name: str) -> tuple[list[dict], list[dict]]:
    for side in ("send", "recv"):
        err = (work / f"{name}-{side}.err").read_text()
        assert not any(m in err for m in SANITIZER_MARKS), err
    return (events((work / f"{name}-send.jsonl").read_text()),
            events((work / f"{name}-recv.jsonl").read_text()))


def pcap(work: Path, name: str) -> Path:
    stats = (work / f"{name}.tcpdump").read_text()
    assert "0 packets dropped by kernel" in stats, stats
    return work / f"{name}.pcap"


@pytest.mark.parametrize("name", SHAPED)
def test_receiver_counts_what_the_sender_had_acknowledged(job, name):
    work, report = job
    assert report["flows"][name]["send_rc"] == 0 and report["flows"][name]["recv_rc"] == 0
    sent, got = flow_events(work, name)
    end = one(sent, "end")
    assert end["delivered_confirmed"] is True
    assert end["bytes"] == one(got, "end")["bytes"] > 1_000_000  # 2 Mbit/s for 10 s
    assert 10.0 <= end["duration_s"] < 10.5
    assert set(report["mtu"].values()) == {1540}, report["mtu"]


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_every_data_packet_carries_1488_bytes(job, proto):
    work, report = job
    src = report["addresses"]["s1"]
    sent, got = flow_events(work, f"{proto}-nodelack")
    assert one(sent, "connected")["maxseg"] == PAYLOAD  # TCP: the MSS; SCTP: the frag point
    capture = pcap(work, f"{proto}-nodelack")
    if proto == "tcp":
        sizes = [int(r[0]) for r in tshark(capture, f"ip.src=={src} && tcp.len>0", "tcp.len")]
        syn = tshark(capture, f"ip.src=={src} && tcp.flags.syn==1", "tcp.options.mss_val")
        assert syn == [["1500"]]  # TCP_MAXSEG 1500 minus 12 bytes of timestamps: 1488
    else:
        rows = tshark(capture, f"ip.src=={src} && sctp.chunk_type==0", "sctp.chunk_type",
                      "sctp.chunk_length")
        chunks = [zip(r[0].split(","), r[1].split(","), strict=True) for r in rows]
        sizes = [int(length) - 16 for c in chunks for kind, length in c if kind == "0"]
    print(f"{proto}: {len(sizes)} data packets, payload sizes {sorted(set(sizes))}")
    assert len(sizes) > 1000 and max(sizes) == PAYLOAD
    assert sum(s == PAYLOAD for s in sizes) >= 0.99 * len(sizes)


def sack_ratio(work: Path, report: dict, name: str) -> tuple[float, int, int]:
    """SACK chunks the receiver sent per packet with DATA it received (both in its pcap)."""
    src, dst = report["addresses"]["s1"], report["addresses"]["d1"]
    capture = pcap(work, name)
    data = len(tshark(capture, f"ip.src=={src} && sctp.chunk_type==0", "frame.number"))
    sacks = sum(r[0].split(",").count("3")
                for r in tshark(capture, f"ip.src=={dst} && sctp", "sctp.chunk_type"))
    return sacks / data, sacks, data


def test_sctp_sacks_every_packet_without_delayed_ack(job):
    work, report = job
    on, sacks, data = sack_ratio(work, report, "sctp-nodelack")
    off, *_ = sack_ratio(work, report, "sctp-delack")
    print(f"SCTP SACKs per DATA packet: --no-delayed-ack {on:.3f}, kernel default {off:.3f}")
    assert on >= 0.97 and off <= 0.8 and off < on
    accepted = one(flow_events(work, "sctp-nodelack")[1], "accepted")
    assert accepted["sack_freq"] == 1 and "SCTP_DELAYED_SACK sack_freq=1" in accepted["applied"]
    assert one(flow_events(work, "sctp-delack")[1], "accepted")["sack_freq"] == 2
    end = one(flow_events(work, "sctp-nodelack")[1], "end")  # the kernel's own counts
    assert end["acks_out"] == pytest.approx(sacks, rel=0.03)
    assert end["data_in"] == pytest.approx(data, rel=0.03)


def ack_ratio(work: Path, report: dict, name: str) -> float:
    src, dst = report["addresses"]["s1"], report["addresses"]["d1"]
    capture = pcap(work, name)
    data = len(tshark(capture, f"ip.src=={src} && tcp.len>0", "frame.number"))
    acks = len(tshark(capture, f"ip.src=={dst} && tcp.len==0 && tcp.flags.ack==1",
                      "frame.number"))
    return acks / data


def test_tcp_acks_per_segment(job):
    work, report = job
    quick = ack_ratio(work, report, "tcp-nodelack")
    default = ack_ratio(work, report, "tcp-delack")
    route = ack_ratio(work, report, "tcp-routequickack")
    print(f"TCP ACKs per data segment: TCP_QUICKACK after reads {quick:.3f}, "
          f"kernel default {default:.3f}, route quickack {route:.3f}")
    assert route >= 0.97 and default <= 0.8
    assert quick > default + 0.1


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_cwnd_trace_falls_after_a_loss(job, proto):
    work, _ = job
    samples = of(flow_events(work, f"{proto}-nodelack")[0], "sample")
    sending = [s for s in samples if s["phase"] == "send"]
    assert len(sending) >= 80 and all(s["cwnd"] > 0 for s in samples)
    gaps = sorted(b["t"] - a["t"] for a, b in pairwise(sending))
    assert 0.09 <= gaps[len(gaps) // 2] <= 0.11
    first_loss = next(i for i, s in enumerate(sending) if s["retrans"] > 0)
    after = sending[first_loss:]
    assert any(b["cwnd"] < a["cwnd"] for a, b in pairwise(after))
    if proto == "tcp":
        assert after[-1]["ssthresh"] == after[-1]["ssthresh_segs"] * after[-1]["mss"] > 0
    else:
        assert all(s["ssthresh"] is None and s["srtt_jiffies"] >= 0 for s in samples)


def test_rcvbuf_65536_advertises_64k(job):
    work, report = job
    dst = report["addresses"]["d1"]
    for proto in ("tcp", "sctp"):
        accepted = one(flow_events(work, f"{proto}-nodelack")[1], "accepted")
        assert accepted["rcvbuf"] == 131072  # Linux doubles SO_RCVBUF
    tcp = [int(r[0]) for r in tshark(pcap(work, "tcp-nodelack"), f"ip.src=={dst}",
                                     "tcp.window_size")]
    synack = tshark(pcap(work, "tcp-nodelack"), f"ip.src=={dst} && tcp.flags.syn==1",
                    "tcp.window_size_value", "tcp.options.wscale.shift")
    rows = tshark(pcap(work, "sctp-nodelack"), f"ip.src=={dst}", "sctp.initack_credit",
                  "sctp.sack_a_rwnd")
    initack = [int(r[0]) for r in rows if r[0]]
    sack = [int(v) for r in rows if len(r) > 1 and r[1] for v in r[1].split(",")]
    print(f"TCP SYN-ACK window {synack}, largest window {max(tcp)}; "
          f"SCTP INIT-ACK a_rwnd {initack}, largest SACK a_rwnd {max(sack)}")
    assert synack == [["65472", "1"]]  # 44 x 1488 (Linux rounds to whole MSS), scale 2
    assert 60_000 <= max(tcp) <= 65_536
    # every INIT-ACK (two where the client's INIT was sent again) advertises the 64 KiB
    assert initack and set(initack) == {65536} and max(sack) == 65536


def goodput(work: Path, report: dict, proto: str) -> tuple[float, float]:
    """The median of the repetitions, Mbit/s: (bulkflow, iperf3), each over the bytes its
    receiver counted. The median, not the best: on an idle machine one iperf3 run of three
    reached 11.2 Gbit/s where the others made 2.8 (and bulkflow 2.9 to 4.0)."""
    bulk, iperf = [], []
    for name, res in report["compare"].items():
        if not re.fullmatch(f"bulk-{proto}-\\d+", name):
            continue
        assert res["send_rc"] == 0 and res["recv_rc"] == 0, name
        sent, got = flow_events(work, name)
        end = one(got, "end")
        assert end["bytes"] == one(sent, "end")["bytes"]
        bulk.append(end["bytes"] * 8 / end["duration_s"] / 1e6)
        rep = name.rsplit("-", 1)[1]
        summary = json.loads((work / f"iperf3-{proto}-{rep}.json").read_text())["end"]
        iperf.append(summary["sum_received"]["bits_per_second"] / 1e6)
    assert len(bulk) >= 3
    return statistics.median(bulk), statistics.median(iperf)


# Measured best of 3 against best of 3 on 2 cores shared with other kernels: TCP 0.60-1.01
# (single runs 0.6-1.7, iperf3 itself 2.8-5.6 Gbit/s), SCTP 0.86-1.00; median against median
# alone: TCP 1.16. A program with a
# bottleneck of its own lands far lower: SCTP in 16 KiB messages reached 0.3.
LEAST_SHARE = {"tcp": 0.4, "sctp": 0.5}


@pytest.mark.parametrize("proto", ["tcp", "sctp"])
def test_goodput_beside_iperf3(job, proto):
    work, report = job
    bulk, iperf = goodput(work, report, proto)
    print(f"{proto} on an unshaped veth: bulkflow {bulk:.0f} Mbit/s, iperf3 {iperf:.0f} Mbit/s "
          f"({bulk / iperf:.2f})")
    assert bulk >= LEAST_SHARE[proto] * iperf


def test_sctp_sender_fails_when_the_receiver_dies(job):
    work, report = job
    sent, _ = flow_events(work, "sctp-abort")
    assert report["compare"]["sctp-abort"]["send_rc"] == 1, (report["compare"]["sctp-abort"],
                                                              sent[-3:])
    err = one(sent, "error")
    assert err["bytes"] > 0 and re.search(r"reset|pipe|lost", err["reason"], re.I), err
    assert of(sent, "end") == []
