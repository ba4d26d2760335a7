"""Deployment to nodes over SSH with the Ansible playbooks in playbooks/.

`controller` holds the steps the playbooks run on the controller (the router's tc file from the
project's own shaping code, the source and data set archives, the analysis of a fetched run);
`emulated` boots the pinned kernel and runs the playbooks against the emulated nodes, which
`lab_in_kernel` brings up inside it with their management network
(topology/net/management.py). The nodes run the testbed's programs through
experiments/procedure.py, as the harness does."""
