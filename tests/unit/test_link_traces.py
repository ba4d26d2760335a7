"""Link traces in experiment files: a CSV of a link's rate (delay, loss) over time, read beside
the experiment file into schedule changes in time order, with the explicit schedule's changes
among them, and its digest recorded; a file that is missing, malformed or out of order, or a
trace on a link the topology lacks or past the run's limit, refused with file, key and
reason."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from experiments import spec
from tests.unit.test_schedule_in_files import load as load_schedule
from topology.net import trace

TRACE = """# a downlink that fades and comes back
at,rate,delay
0s,3Mbit,10ms
1.5s,1Mbit,25ms
3s,2Mbit,10ms
"""
USES = """
[[network.trace]]
link = "down"
file = "down.csv"
"""
WITH_A_CHANGE = USES + """
[[network.schedule]]
at = "2s"
link = "up"
loss = 0.01
"""


def load(tmp_path: Path, network: str, trace: str = TRACE) -> spec.Experiment:
    (tmp_path / "down.csv").write_text(trace)
    return load_schedule(tmp_path, network)


def test_a_trace_becomes_changes_among_the_schedule_s_and_is_recorded(tmp_path):
    experiment = load(tmp_path, WITH_A_CHANGE)
    changes = experiment.network.schedule
    assert [(c.at_s, c.link) for c in changes] == [(0.0, "down"), (1.5, "down"), (2.0, "up"),
                                                   (3.0, "down")]
    assert changes[1].settings == {"rate_bps": 1e6, "delay_s": pytest.approx(0.025)}
    record = experiment.as_record()
    (traced,) = record["traces"]
    assert traced == {"link": "down", "file": str(tmp_path / "down.csv"), "rows": 3,
                      "until_s": 3.0, "sha256": hashlib.sha256(TRACE.encode()).hexdigest()}
    assert len(record["schedule"]) == 4


def test_loss_in_a_trace_reads_as_a_ratio_or_a_percentage(tmp_path):
    experiment = load(tmp_path, USES, "at,loss\n0s,1%\n1s,0.02\n")
    assert [c.settings["loss"] for c in experiment.network.schedule] == \
        [pytest.approx(0.01), pytest.approx(0.02)]


@pytest.mark.parametrize("network, trace, key, reason", [
    (USES, "at,rate\n0s,3Mbit\n2s,1Mbit\n1s,2Mbit\n", "network.trace[0].file",
     "down.csv:4: at 1 s does not come after 2 s"),
    (USES, "rate,at\n3Mbit,0s\n", "network.trace[0].file", "down.csv:1: the header must be"),
    (USES, "at,colour\n0s,red\n", "network.trace[0].file", "unknown or repeated column 'colour'"),
    (USES, "at,rate\n0s,3Mbit,10ms\n", "network.trace[0].file", "down.csv:2: 3 values for the 2"),
    (USES, "at,rate\n0s,fast\n", "network.trace[0].file", "down.csv:2:"),
    (USES, "at,rate\n0s,100Gbit\n", "network.trace[0].file", "rate must be between"),
    (USES, "# nothing\n", "network.trace[0].file", "the trace is empty"),
    (USES, "at,rate\n", "network.trace[0].file", "a header and no rows"),
    (USES, "at,rate\n0s,3Mbit\n90s,1Mbit\n", "network.trace[0].file",
     "its last row, at 90 s, is past the run's limit"),
    (USES.replace('"down.csv"', '"absent.csv"'), TRACE, "network.trace[0].file",
     "cannot read the trace"),
    (USES.replace('"down"', '"sideways"'), TRACE, "network.trace[0].link",
     "has no shaped link 'sideways'"),
    (USES + USES, TRACE, "network.trace[1].link", "has a trace already"),
    (USES.replace('file = "down.csv"\n', ''), TRACE, "network.trace[0].file", "missing"),
    (USES + 'speed = 2\n', TRACE, "network.trace[0].speed", "unknown key"),
    ('fade = "100ms"\n' + USES, "at,loss\n0s,0.1\n", "network.trace[0].file",
     "with fades the loss is theirs"),
])
def test_a_bad_trace_is_refused_with_file_key_and_reason(tmp_path, network, trace, key, reason):
    with pytest.raises(spec.SpecError) as refused:
        load(tmp_path, network, trace)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'trial.toml'}: {key}: "), message
    assert reason in message, message


def test_a_trace_that_is_not_text_or_too_large_is_refused(tmp_path, monkeypatch):
    (tmp_path / "down.csv").write_bytes(b"at,rate\n0s,\xff\xfe\n")
    with pytest.raises(spec.SpecError, match="network.trace.0..file: .*not a text file"):
        load_schedule(tmp_path, USES)
    monkeypatch.setattr(trace, "MAX_BYTES", 8)
    (tmp_path / "down.csv").write_text(TRACE)
    with pytest.raises(spec.SpecError, match="larger than"):
        load_schedule(tmp_path, USES)
