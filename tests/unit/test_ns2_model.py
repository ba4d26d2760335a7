"""E3 in ns-2 (experiments/workloads/bulk_flows/ns2.py), without running ns: the experiment
file's `simulator` key and what the model refuses, the Tcl it writes for a run (each link's
own shape, the loss on the bottleneck's data direction only, the study's agent settings), and
its reading of ns-2's traces into the files the workload's analysis reads (in-order delivery
across a hole, a repeated segment, the SYN and SCTP's handshake left out)."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from experiments import spec
from experiments.workloads.bulk_flows import ns2
from experiments.workloads.bulk_flows.workload import Settings, plan_flows

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def variant(tmp_path: Path, edit) -> spec.Experiment:
    """fairness-ns2.toml with `edit` applied to its text, loaded from tmp_path."""
    text = edit((EXPERIMENTS / "fairness-ns2.toml").read_text())
    path = tmp_path / "fairness-ns2.toml"
    path.write_text(text)
    return spec.load(str(path))


def test_the_ns2_file_is_the_kernel_file_s_network_and_flows():
    ours = tomllib.loads((EXPERIMENTS / "fairness-ns2.toml").read_text())
    kernel = tomllib.loads((EXPERIMENTS / "fairness.toml").read_text())
    assert ours["simulator"] == "ns-2"
    for table in ("network", "flows", "repetitions", "seed"):
        assert ours[table] == kernel[table], table
    assert ours["matrix"]["loss"] == kernel["matrix"]["loss"]
    experiment = spec.load("fairness-ns2")
    assert experiment.simulator == "ns-2"
    assert experiment.as_record()["simulator"] == "ns-2"


@pytest.mark.parametrize(("edit", "key", "reason"), [
    (lambda t: t.replace('["tcp-sack-reno"]', '["tcp-linux"]'), "matrix.tcp_profiles",
     "no ns-2 agent"),
    (lambda t: t.replace('simulator = "ns-2"', 'simulator = "ns-3"'), "simulator",
     "only in 'ns-2'"),
    (lambda t: t.replace('queue = "10p"', 'queue = "15KB"', 1), "network", "in packets"),
    (lambda t: t.replace("[matrix]", "[sctp]\nrto_min_ms = 500\n\n[matrix]"), "sctp",
     "do not reach"),
    (lambda t: t.replace("rcvbuf_bytes = 65536", "rcvbuf_bytes = 0"), "flows.rcvbuf_bytes",
     "receiver's window"),
    (lambda t: t.replace("[matrix]", '[matrix]\nstacks = ["linux", "freebsd-4.6"]'),
     "matrix.stacks", "do not reach ns-2"),
    (lambda t: t + '\n[[network.schedule]]\nat = "100s"\nlink = "bottleneck-up"\n'
                   'rate = "1Mbit"\n', "network", "no schedule"),
])
def test_what_the_model_cannot_give_is_refused_with_key_and_reason(tmp_path, edit, key, reason):
    with pytest.raises(spec.SpecError) as refused:
        variant(tmp_path, edit)
    message = str(refused.value)
    assert f": {key}: " in message and reason in message, message


def test_a_workload_without_a_model_is_refused(tmp_path):
    path = tmp_path / "smoke.toml"
    path.write_text('simulator = "ns-2"\n' + (EXPERIMENTS / "smoke.toml").read_text())
    with pytest.raises(spec.SpecError, match=r"simulator: the ftp-mget workload runs only in "
                                             r"a kernel, not 'ns-2'"):
        spec.load(str(path))


def order_for(experiment: spec.Experiment, key: str) -> dict:
    point = next(p for p in experiment.points() if p.key == key)
    network = experiment.network
    topology = network.topology(network.entry(point.network), point.loss)
    return {"id": point.run_id(1), "params": point.as_row(), "links": topology["links"],
            "topology": {k: v for k, v in topology.items() if k != "links"},
            "workload": experiment.kind.order(experiment, point, {})}


def test_the_script_gives_every_link_its_shape_and_the_agents_the_study_s_settings(tmp_path):
    experiment = spec.load("fairness-ns2")
    run = order_for(experiment, "geo-2_loss0.015_2flows_tcp-sack-reno")
    settings = Settings(**run["workload"]["settings"])
    flows = plan_flows(2, settings, run["id"])
    agents = ns2.agent_settings(run["workload"]["settings"], "tcp-sack-reno", 1540)
    files = {"trace": tmp_path / "t.tr", "tcp_cwnd": tmp_path / "c.tr",
             "sctp_cwnd": tmp_path / "s.tr"}
    text = ns2.script(run, flows, agents, files, 7)
    lines = text.splitlines()
    assert "$ns simplex-link $n(left) $n(right) 2000000b 250.000000ms DropTail" in lines
    assert "$ns queue-limit $n(left) $n(right) 10" in lines
    assert "$ns simplex-link $n(s1) $n(left) 100000000b 2.000000ms DropTail" in lines
    # loss on the data direction only, from the run's own generator
    assert [line for line in lines if "lossmodel" in line] == \
        ["$ns lossmodel $em(bottleneck-up) $n(left) $n(right)"]
    assert "$em(bottleneck-up) set rate_ 0.015" in lines and "$rng seed 7" in lines
    # pair 1 is TCP (Sack1, a sink that acknowledges every segment), pair 2 SCTP
    assert "set snd(1) [new Agent/TCP/Sack1]" in lines
    assert "set rcv(1) [new Agent/TCPSink/Sack1]" in lines
    assert "$snd(1) set window_ 44" in lines and "$snd(1) set packetSize_ 1488" in lines
    for end in ("snd", "rcv"):
        for setting in ("fastRtxTrigger_ 4", "useDelayedSacks_ 0", "dataChunkSize_ 1488",
                        "initialRwnd_ 65536", "numOutStreams_ 1", "mtu_ 1540"):
            assert f"${end}(2) set {setting}" in lines, (end, setting)
    starts = [line for line in lines if line.endswith('start"')]
    assert starts == [f'$ns at {ns2.START_AT_S + f["offset_s"]:.6f} "$app({f["pair"]}) start"'
                      for f in flows]


def test_the_loss_seed_is_the_run_s_own():
    assert ns2.run_seed("a_r001", 1) == ns2.run_seed("a_r001", 1)
    assert len({ns2.run_seed(f"a_r{i:03d}", 1) for i in range(1, 50)}) == 49
    assert ns2.run_seed("a_r001", 1) != ns2.run_seed("a_r001", 2)


def trace_line(event: str, t: float, a: int, b: int, kind: str, size: int, flags: str, fid: int,
               number: int, extra: str = "") -> str:
    return f"{event} {t} {a} {b} {kind} {size} {flags} {fid} {a}.0 {b}.0 {number} 9{extra}\n"


def test_the_traces_give_in_order_delivery_and_what_each_sender_put_on_its_link(tmp_path):
    """ns-2 writes its events in time order, both flows' interleaved."""
    flows = [{"pair": 1, "sender": "s1", "receiver": "d1", "proto": "tcp"},
             {"pair": 2, "sender": "s2", "receiver": "d2", "proto": "sctp"}]
    placed = ns2.nodes(2)
    s1, d1, s2, d2, right = (placed[n].index for n in ("s1", "d1", "s2", "d2", "right"))
    tcp, sctp = "-------", "-------D"
    lines = [trace_line("+", 1.00, s1, 0, "tcp", 40, "---A---", 1, 0),     # the SYN
             trace_line("r", 1.01, right, d1, "tcp", 40, "---A---", 1, 0)]
    for n in (1, 2, 3, 4):
        lines.append(trace_line("+", 1.02 + n / 1000, s1, 0, "tcp", 1528, tcp, 1, n))
    lines += [trace_line("r", 1.03, right, d1, "tcp", 1528, tcp, 1, 1),
              trace_line("r", 1.05, right, d1, "tcp", 1528, tcp, 1, 3),      # 2 lost
              trace_line("r", 1.06, right, d1, "tcp", 1528, tcp, 1, 4),
              trace_line("r", 1.25, right, d1, "tcp", 1528, tcp, 1, 2),      # retransmitted
              trace_line("r", 1.26, right, d1, "tcp", 1528, tcp, 1, 3)]      # needlessly
    # SCTP's handshake (flag I) is left out: one chunk a line, the TSN after the chunk count
    lines += [f"r 1.04 {right} {d2} sctp 56 -------I 2 {s2}.0 {d2}.0 1 -1 5 65535 65535\n",
              f"+ 1.07 {s2} 0 sctp 1536 {sctp} 2 {s2}.0 {d2}.0 1 1 6 0 0\n",
              f"+ 1.08 {s2} 0 sctp 1536 {sctp} 2 {s2}.0 {d2}.0 1 2 7 0 1\n",
              f"r 1.15 {right} {d2} sctp 1536 {sctp} 2 {s2}.0 {d2}.0 1 2 7 0 1\n",
              f"r 1.35 {right} {d2} sctp 1536 {sctp} 2 {s2}.0 {d2}.0 1 1 8 0 0\n",
              "r 1.41 0 1 tcp 40 ------- 0 0.0 1.0 0 1\n"]                 # another link
    trace = tmp_path / "links.tr"
    trace.write_text("".join(sorted(lines, key=lambda line: float(line.split()[1]))))
    settings = {"sample_ms": 100, "payload_bytes": 1488}
    delivered, sent = ns2.read_links(trace, flows, settings)
    assert delivered[1][:4] == [(1.0, 0), (1.1, 1), (1.2, 1), (1.3, 4)]
    assert delivered[2][:5] == [(1.0, 0), (1.1, 0), (1.2, 0), (1.3, 0), (1.4, 2)]
    assert sent[1][1] == (1.1, 4) and sent[2][1] == (1.1, 2)
    assert [f["repeated"] for f in flows] == [1, 0]

    ns2.write_receivers(tmp_path, flows, delivered, settings)
    first = [json.loads(line) for line in (tmp_path / "receiver-d1.jsonl").read_text().splitlines()]
    assert first[3] == {"event": "sample", "t": 1.3, "bytes": 4 * 1488}


def test_an_sctp_agent_s_cwnd_trace_is_read_past_stray_bytes_and_other_variables(tmp_path):
    path = tmp_path / "cw.tr"
    path.write_text(
        "time: 0.00000   saddr: 1  sport: 0  daddr: 5  dport: 0  cwnd: 4380 pba: 0 out: 0 "
        "ssthresh: 65536 peerRwnd: 0\n\n"
        "time: 0.00000   saddr: 1  sport: 0  daddr: 5  dport: 0  timeoutCount: 0\n"
        "\x8aJQ\xd9\xa6U\x8aJQtime: 2.23975   saddr: 1  sport: 0  daddr: 5  dport: 0  "
        "cwnd: 5868 pba: 0 out: 4464 ssthresh: 65536 peerRwnd: 61072\n")
    assert ns2.read_sctp_cwnd(path) == [(0.0, 4380.0, 65536.0), (2.23975, 5868.0, 65536.0)]
