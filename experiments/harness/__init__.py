"""The experiment harness: experiment file -> expanded runs -> runs inside the kernel (pcaps,
client events, verified files) -> per-run table from the pcaps -> per-point summary.

Each stage reads only what the previous one wrote, so any stage can be rerun alone."""
