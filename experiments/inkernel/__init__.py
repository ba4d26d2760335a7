"""The harness inside the pinned kernel: a batch of runs on one topology (kernel_batch), batch
after batch in a kept kernel (kernel_serve, answering the host through kernel_inbox's files),
the runs shared between kernels by claims (sharing), and the capture that writes one pcap per
run (run_capture). Started by the host's coordinator (experiments/onhost/) as
`python3 -m experiments.inkernel.kernel_batch` or `kernel_serve`; it imports nothing of the host
side."""
