"""Runs INSIDE the pinned kernel, on the client node (sctp_job.py): one control association
to ftpd over SCTP and the replies to MODE B there - after login, and again after OPTS
MSTREAM ON - as one JSON object {"replies": [[COMMAND, CODE], ...]} on stdout.

    python3 tests/ftp/mode_probe.py HOST PORT"""
from __future__ import annotations

import json
import socket
import sys

COMMANDS = ("USER anonymous", "PASS probe@", "TYPE I", "MODE B", "OPTS MSTREAM ON", "MODE B",
            "MODE E", "MODE S", "QUIT")


class Lines:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def reply_code(self) -> int:
        """The code of the next complete reply (multi-line replies read to their end)."""
        first = None
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed by server")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            code = line[:3]
            if first is None:
                first = code
            if code == first and line[3:4] == b" ":
                return int(code)


def main(host: str, port: str) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
    sock.settimeout(30)
    sock.connect((host, int(port)))
    lines = Lines(sock)
    replies: list[tuple[str, int]] = [("", lines.reply_code())]
    for command in COMMANDS:
        sock.sendall(command.encode() + b"\r\n")
        replies.append((command, lines.reply_code()))
    sock.close()
    print(json.dumps({"replies": replies}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
