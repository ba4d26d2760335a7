"""The Wireshark side: ftp_sctp.lua (FTP over SCTP decoded per stream) and colorfilters."""
from pathlib import Path

DISSECTOR = Path(__file__).with_name("ftp_sctp.lua")
