"""A scripted FTP server on loopback (TCP, on the host), to drive ftpc through
replies a real server would not send. Each control connection runs `script(ctl)` in a
thread; `Ctl` reads commands and writes raw bytes, and `serve()` is a small honest
server (PASV, NLST, RETR, SIZE, QUIT) whose answers a test can override per command."""
from __future__ import annotations

import socket
import threading
from collections.abc import Callable


class Ctl:
    """One control connection, seen from the server."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.f = conn.makefile("rb")
        self.data_listener: socket.socket | None = None

    def send(self, data: bytes | str) -> None:
        self.conn.sendall(data.encode() if isinstance(data, str) else data)

    def reply(self, text: str) -> None:
        self.send(text + "\r\n")

    def line(self) -> str | None:
        """The next command line without its line end, None when the client closed."""
        raw = self.f.readline(1 << 20)
        if not raw:
            return None
        return raw.rstrip(b"\r\n").decode("latin-1")

    def command(self) -> tuple[str, str]:
        line = self.line()
        if line is None:
            return "", ""
        verb, _, arg = line.partition(" ")
        return verb.upper(), arg

    def login(self) -> None:
        self.reply("220 fake ready")
        for answer in ("331 pw", "230 ok", "200 type I"):
            self.command()
            self.reply(answer)

    def pasv(self, host: str = "127,0,0,1", port: int | None = None) -> None:
        """Open a data listener and announce it (or announce `host`/`port` instead)."""
        self.data_listener = socket.socket()
        self.data_listener.bind(("127.0.0.1", 0))
        self.data_listener.listen(1)
        p = self.data_listener.getsockname()[1] if port is None else port
        self.reply(f"227 Entering Passive Mode ({host},{p >> 8},{p & 255}).")

    def accept(self, timeout: float = 10) -> socket.socket:
        assert self.data_listener is not None
        self.data_listener.settimeout(timeout)
        d, _ = self.data_listener.accept()
        self.data_listener.close()
        self.data_listener = None
        return d

    def send_data(self, payload: bytes, announce: str) -> None:
        """150 `announce`, the payload on the data connection, its end, 226."""
        d = self.accept()
        self.reply(announce)
        d.sendall(payload)
        d.close()
        self.reply("226 Transfer complete.")


Handler = Callable[[Ctl, str], bool]


def serve(ctl: Ctl, files: dict[str, bytes], listing: bytes,
          handlers: dict[str, Handler] | None = None) -> None:
    """An honest server over `files` (NLST answers `listing`); handlers[VERB](ctl, arg)
    may answer a command itself (return True) or leave it to the honest answer."""
    ctl.login()
    while True:
        verb, arg = ctl.command()
        if verb == "":
            return
        h = (handlers or {}).get(verb)
        if h is not None and h(ctl, arg):
            continue
        if verb == "PASV":
            ctl.pasv()
        elif verb == "NLST":
            ctl.send_data(listing, f"150 Here comes the listing ({len(listing)} bytes).")
        elif verb == "RETR" and arg in files:
            body = files[arg]
            ctl.send_data(body, f"150 Opening BINARY mode data connection for {arg} "
                                f"({len(body)} bytes).")
        elif verb == "SIZE" and arg in files:
            ctl.reply(f"213 {len(files[arg])}")
        elif verb == "QUIT":
            ctl.reply("221 Goodbye.")
            return
        elif verb in ("RETR", "SIZE"):
            if ctl.data_listener is not None:
                ctl.data_listener.close()
                ctl.data_listener = None
            ctl.reply("550 Failed to open file.")
        else:
            ctl.reply("502 Not implemented.")


class FakeFtp:
    """Listens on 127.0.0.1 (a free port); every connection runs script(ctl)."""

    def __init__(self, script: Callable[[Ctl], None]) -> None:
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.port: int = self.srv.getsockname()[1]
        self.script = script
        self.errors: list[BaseException] = []
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self.script(Ctl(conn))
        except OSError:
            pass                       # the client went away: what many tests provoke
        except BaseException as e:     # noqa: BLE001 - reported by close()
            self.errors.append(e)

    def close(self) -> None:
        self.srv.close()
        for c in self.conns:
            c.close()
        assert not self.errors, self.errors
