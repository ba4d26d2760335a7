"""The harness on the host: the coordinator that runs an experiment to completion (rounds of
batches, one pinned kernel per worker), its ledger of finished runs, the analysis of each run's
pcap, the tables, progress, forecasts and the wall-time profile, and the `testbed` commands that
drive them. Nothing here runs inside the kernel: what does is in experiments/inkernel/."""
