"""The FTP tests' builds serve the bulk-flow tests too: one build of every variant a session."""
from tests.ftp.conftest import bindir, built  # noqa: F401 (fixtures shared by name)
