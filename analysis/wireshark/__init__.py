"""The Wireshark side: ftp_sctp.lua (FTP over SCTP decoded per stream), http_sctp.lua (HTTP
over SCTP followed per stream) and colorfilters."""
from pathlib import Path

DISSECTOR = Path(__file__).with_name("ftp_sctp.lua")
HTTP_DISSECTOR = Path(__file__).with_name("http_sctp.lua")
