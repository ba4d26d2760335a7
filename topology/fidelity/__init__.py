"""The link-fidelity benchmark: build `path`, measure what the links really do, compare with
what was configured. `measure` runs inside the kernel; `benchmark` orchestrates from the host."""
