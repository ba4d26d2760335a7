"""The harness across hosts: a round as a Slurm job array (slurm), an experiment fanned out over
the worker hosts of an Ansible inventory (fanout), and finished runs merged between result
sets (merge). Each host or task runs the same batches as a local worker (experiments/onhost/)."""
