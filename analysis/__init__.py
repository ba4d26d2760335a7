"""Figures, speed-up tables and reports drawn from an experiment's result files alone
(results/<experiment>/: summary.csv, runs.csv, meta.json, pcaps/, runs/), never from a live run.

  results.py   reads a result set and compares it with the experiment's full matrix
  speedup.py   ratios of mean transfer times with their confidence, and whether they count
  tshark.py    every tshark call of this package: time-sequence points, FTP lines decoded
  figures.py   the matplotlib figures (transfer time vs loss, counters, time-sequence)
  html.py      the self-contained HTML report
  report.py    writes results/<experiment>/report/ from all of the above
  cli.py       python3 -m analysis ...
  wireshark/   the FTP-over-SCTP Lua dissector and coloring rules"""
