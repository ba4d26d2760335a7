"""The Lua dissector, run by tshark over pcaps the harness just produced: FTP commands and
replies decoded on stream 0 (sctp-ms, sctp-ms-cp) or on the control association (sctp-naive),
data on stream 1 or on data associations, and every SCTP variant labelled as itself."""
from __future__ import annotations

import subprocess

import pytest

from analysis.wireshark import DISSECTOR
from experiments.tshark import fields
from experiments.workloads.ftp_mget.measure import over_sctp

SCTP_VARIANTS = ("sctp-naive", "sctp-ms", "sctp-ms-cp")
FILES = 2


def pcaps(folder, variant):
    return sorted((folder / "pcaps").glob(f"*_{variant}_*.pcap"))


@pytest.mark.parametrize("variant", SCTP_VARIANTS)
def test_commands_and_replies_on_the_right_stream(tiny_results, variant):
    captures = pcaps(tiny_results, variant)
    assert captures
    for pcap in captures:
        lines = over_sctp(pcap, DISSECTOR)
        assert lines, f"nothing decoded in {pcap}"
        control = [line for line in lines if line.role == "control"]
        data = [line for line in lines if line.role == "data"]
        assert all(line.stream == 0 for line in control)
        assert {line.variant for line in lines} == {variant}
        commands = [c for line in control for c in line.commands]
        codes = [c for line in control for c in line.reply_codes]
        assert commands.count("NLST") == 1 and commands.count("RETR") == FILES
        assert "USER" in commands and "QUIT" in commands
        assert codes.count(226) == FILES + 1 and codes.count(150) == FILES + 1
        assert 220 in codes and 221 in codes
        assert data, "no FTP data decoded"
        if variant == "sctp-naive":
            assert "PASV" in commands or "EPSV" in commands
            assert all(line.stream == 0 for line in data)
        else:
            assert "OPTS" in commands and "PASV" not in commands
            assert all(line.stream == 1 for line in data)
        if variant == "sctp-ms-cp":
            assert commands.count("SIZE") == FILES


def test_builtin_ftp_fields_and_data_bytes(tiny_results):
    """Wireshark's own FTP fields are filled through the dissector, and the data it labels as
    FTP data adds up to the files and the listing announced by the 150 replies."""
    pcap = pcaps(tiny_results, "sctp-ms")[0]
    argv = ["tshark", "-2", "-r", str(pcap), "-n", "-X",
            f"lua_script:{DISSECTOR}", "-Y", "ftpsctp", "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=|", "-e", "ftp.request.command",
            "-e", "ftp.response.code", "-e", "ftpsctp.data_length",
            "-e", "ftpsctp.announced_bytes"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    commands, codes, data, announced = [], [], 0, 0
    for line in out.splitlines():
        cmd, code, length, bytes_ = (line.split("\t") + ["", "", "", ""])[:4]
        commands += [c for c in cmd.split("|") if c]
        codes += [c for c in code.split("|") if c]
        data += sum(int(x) for x in length.split("|") if x)
        announced += sum(int(x) for x in bytes_.split("|") if x)
    assert "NLST" in commands and "RETR" in commands and "150" in codes
    assert announced == data and data >= FILES * 10240


def test_tcp_pcaps_decode_with_the_builtin_ftp(tiny_results):
    pcap = pcaps(tiny_results, "tcp")[0]
    rows = fields(pcap, ["ftp.request.command"], "ftp.request",
                  ("-X", f"lua_script:{DISSECTOR}"))
    commands = [r[0] for r in rows]
    assert commands.count("RETR") == FILES and "NLST" in commands
    assert not over_sctp(pcap, DISSECTOR)          # the Lua dissector leaves TCP alone
