"""`testbed report`: the report folder, the self-contained HTML (figures embedded,
metadata, link checks, fidelity, pcap links that resolve), a partial result set marked as such,
`make report`, and the page rendered by headless Chromium."""
from __future__ import annotations

import base64
import csv
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.analysis.conftest import REPO, run_python

pytestmark = pytest.mark.host

FIDELITY = {"items": [{"path": "lan", "metric": "rtt_avg", "unit": "ms", "configured": 2.0,
                       "measured": 2.3, "error": 0.3, "error_rel": 0.15,
                       "within_target": False}],
            "metadata": {"backend": "uml", "kernel_release": "6.1.176"}}


def make_report(folder: Path, *extra: str) -> Path:
    proc = run_python("-m", "testbed", "report", str(folder), *extra, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = Path(proc.stdout.strip().splitlines()[-1])
    assert html.is_file()
    return html


def test_report_folder_and_html(results_copy):
    (results_copy.parent / "fidelity.json").write_text(json.dumps(FIDELITY))
    html_file = make_report(results_copy, "--log")
    folder = html_file.parent
    assert folder == results_copy / "report"
    for stem in ("transfer_time_lan", "counters_lan", "timeseq", "phases_lan", "timeline"):
        for ext in ("png", "pdf", "data.csv"):
            assert (folder / f"{stem}.{ext}").stat().st_size > 0, f"{stem}.{ext}"
        assert (folder / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    with (folder / "speedup.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 6
    text = html_file.read_text()
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 5
    # the time-sequences drawn were written beside their runs from the pcaps, before the report
    assert len(list(results_copy.glob("runs/*/time_sequence.json"))) == 4
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert not re.search(r'src="(?!data:)', text)            # nothing loaded from outside
    meta = json.loads((results_copy / "meta.json").read_text())
    for needle in (meta["testbed"]["commit"], meta["kernel_release"], meta["backend"],
                   "net.sctp.rto_min", "rtt_configured_ms", "not significant",
                   "sctp-ms over sctp-naive", "Link fidelity", "rtt_avg", "logarithmic"):
        assert str(needle) in text, needle
    assert "Complete" in text
    # every run's pcap is linked, a failed run's too (it was redone: 2 ok runs per point)
    with (results_copy / "runs.csv").open() as handle:
        runs = list(csv.DictReader(handle))
    failed = [(run["run_id"], run["status"], run["reasons"]) for run in runs
              if run["status"] != "ok"]
    assert len(runs) - len(failed) == 16, failed
    links = re.findall(r'href="([^"]+\.pcap)"', text)
    assert len(links) == sum(bool(run["pcap"]) for run in runs) >= 16
    assert all(not link.startswith("/") and (folder / link).resolve().is_file()
               for link in links)


def test_partial_result_set_is_marked(results_copy):
    summary = results_copy / "summary.csv"
    rows = list(csv.DictReader(summary.open()))
    dropped = rows.pop()                           # a point never reached
    rows[0]["status"] = "incomplete"               # a point interrupted
    with summary.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    proc = run_python("-m", "testbed", "report", str(results_copy), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "partial result set" in proc.stderr
    text = (results_copy / "report" / "report.html").read_text()
    assert "Partial result set: 1 of 8 points missing" in text
    cells = "".join(f"<td[^>]*>{re.escape(dropped[c])}</td>"
                    for c in ("variant", "parallel", "profile", "stack", "sctp_settings",
                              "sctp_stack"))
    assert re.search(rf"<td>{dropped['point']}</td>.*{cells}<td>missing</td>", text)
    assert "<td>incomplete</td>" in text
    # interrupted before any metadata: still a report, from the tables alone
    (results_copy / "meta.json").unlink()
    proc = run_python("-m", "testbed", "report", str(results_copy), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "incomplete" in (results_copy / "report" / "report.html").read_text()


def test_make_report(results_copy):
    proc = subprocess.run(["make", "-s", "report", f"EXP={results_copy}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (results_copy / "report" / "report.html").is_file()


def png_pixels(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct pixel values of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[x] = (line[x] + pred) & 0xFF
        if y % 8 == 0:
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, channels * 8))
        previous = line
    return width, height, colours


def test_report_renders_in_headless_chromium(results_copy, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, (
        "chromium is missing: make setup-test installs it (docker/setup.sh --test-tools)"
    )
    html_file = make_report(results_copy)
    shot = tmp_path / "report.png"
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                           "--enable-logging=stderr", "--log-level=0",
                           f"--screenshot={shot}", "--window-size=1280,2000",
                           html_file.resolve().as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line or "net::ERR" in line]
    assert console == [], console
    width, height, colours = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 2000)
    assert len(colours) > 20, "the screenshot is (nearly) one colour"
    white = bytes([255, 255, 255])
    assert colours != {white}


def test_a_result_folder_of_another_workload_gets_the_common_report(results_copy):
    """A workload this version of the testbed draws nothing for (a newer one's folder, say):
    the report still has its completeness, points, parameters, environment and runs."""
    matrix_file = results_copy / "matrix.json"
    matrix = json.loads(matrix_file.read_text())
    matrix.update(workload="video-stream", point_columns=["path", "loss"], metric="stall_s",
                  metrics={"stall_s": "time the player waited"})
    matrix_file.write_text(json.dumps(matrix))
    proc = run_python("-m", "testbed", "report", str(results_copy), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no figures for the 'video-stream' workload" in proc.stderr
    text = (results_copy / "report" / "report.html").read_text()
    for section in ("Completeness", "Points", "Kernel, stack and tools", "Runs and pcaps"):
        assert re.search(rf"<h2 id=\"s\d+\">{re.escape(section)}</h2>", text), section
    assert "Workload: video-stream" in text and "stall_s" in text
    assert not list((results_copy / "report").glob("*.png"))


def test_a_report_knows_the_runs_and_code_it_was_drawn_from(results_copy):
    """`testbed reproduce` leaves a report drawn from the same runs by the same code as it is;
    a changed table, or a report cut short, is drawn again."""
    from analysis import report, results
    from experiments import workloads

    make_report(results_copy)
    loaded = results.load(results_copy)
    module = workloads.report_of(loaded.workload)
    assert report.is_current(loaded, module)
    assert not report.is_current(loaded, module, results_copy / "elsewhere")
    runs = results_copy / "runs.csv"
    runs.write_text(runs.read_text() + "\n")
    assert not report.is_current(results.load(results_copy), module)
    make_report(results_copy)
    assert report.is_current(results.load(results_copy), module)
    (results_copy / "report" / "report.html").unlink()
    assert not report.is_current(results.load(results_copy), module)
