"""`uml-built`: the kernel `uml-virtual` boots (the project's build of Debian's linux-source-6.1,
everything built in: timetravel/build.sh, `make kernel`), booted without time-travel, in real
time. The TCP and SCTP code is then the same in both clocks, so a real-against-virtual
comparison changes the clock alone; `uml`, Debian's prebuilt User-Mode Linux, is another patch
level of the same 6.1 series."""
from __future__ import annotations

from pathlib import Path

from .uml import UmlBackend
from .uml_virtual import build_release, virtual_kernel


class BuiltUmlBackend(UmlBackend):
    """Runs jobs inside the project's kernel build, in real time."""

    name = "uml-built"

    def __init__(self, *args, **kwargs) -> None:
        self.binary = str(virtual_kernel())
        super().__init__(*args, **kwargs)

    def _release(self) -> str:
        return build_release(Path(self.binary))

    def boot_args(self, instance: str, scratch: Path) -> list[str]:
        return super().boot_args(instance, scratch) + ["TESTBED_MODULES=none"]
