"""The testbed core: kernel backends (kernel/), link parameters (params.py), Mininet
topologies with router-side shaping (net/), and the link-fidelity benchmark (fidelity/)."""
