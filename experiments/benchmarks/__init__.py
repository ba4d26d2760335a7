"""Benchmarks: each prints a table of measured numbers and writes results/<name>.json. Speed
and fidelity targets live here, never in timed tests.

    harness_overhead.py   the harness's share of wall time, and two workers against one
    virtual_clock.py      the FTP programs through the harness in real and virtual time
    virtual_links.py      the links alone (ping, goodput, kernel-level transfers) in both clocks
    ftp_programs.py       ftpc/ftpd against iperf3 in the pinned kernel and vsftpd on the host
    http_servers.py       httpd against lighttpd and nginx on loopback under h2load
    sctp_stacks.py        the kernel's SCTP against usrsctp (and tsctp) on E1's shaped paths,
                          with CPU per MB (its job inside the kernel: sctp_stacks_job.py)"""
