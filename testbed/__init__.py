"""The `testbed` command: one entry point over the three layers (topology, experiments,
analysis). Each layer keeps its own commands next to its code and registers them here."""
