"""Figures, tables and reports drawn from an experiment's result files alone
(results/<experiment>/: summary.csv, runs.csv, matrix.json, meta.json, pcaps/, runs/), never
from a live run or the experiment file.

  results.py     reads a result set and compares it with the experiment's full matrix
  report.py      writes results/<experiment>/report/: the common sections, and the workload's
  html.py        the self-contained HTML page
  ftp_mget/      the ftp-mget workload's figures and speed-ups (E1, E2)
  bulk_flows/    the bulk-flows workload's tables and figures (E3)
  cli.py         the report, speedup and decode commands of `testbed`
  wireshark/     the FTP-over-SCTP Lua dissector and coloring rules"""
