"""A 226 after a download means the client's kernel holds every byte: ftpd closes the data
connection lingering (as vsftpd does), so the reply never overtakes the data it reports on.
Closing at once used to orphan the socket, and on a lossy satellite path an orphan gives up
retransmitting while the client still waits for the file's tail."""
import hashlib
import re
import select
import socket

from tests.ftp.ftphelp import Ctl

UNREAD_WAIT_S = 1.5


def passive_socket(c: Ctl, rcvbuf: int) -> socket.socket:
    code, text = c.cmd("PASV")
    assert code == 227, text
    nums = [int(x) for x in re.search(r"(\d+,\d+,\d+,\d+,\d+,\d+)", text).group(1).split(",")]
    data = socket.socket()
    # a tiny window: the server's data cannot all be acknowledged until the client reads
    data.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    data.settimeout(10)
    data.connect((".".join(map(str, nums[:4])), nums[4] * 256 + nums[5]))
    return data


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_226_comes_only_after_the_data_is_acknowledged(ftpd, tree):
    root, sums = tree
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    data = passive_socket(c, 4096)
    assert c.cmd("RETR s000.dat")[0] == 150
    readable, _, _ = select.select([c.s], [], [], UNREAD_WAIT_S)
    assert not readable and b"226" not in c.buf, "226 sent while the data was unacknowledged"
    body = read_all(data)
    data.close()
    assert c.reply()[0] == 226
    assert hashlib.sha256(body).hexdigest() == sums["s000.dat"]
    assert c.cmd("QUIT")[0] == 221
    c.close()


def test_a_client_that_keeps_its_data_socket_open_still_gets_226(ftpd, tree):
    """The server waits for its end to be acknowledged, not for the client to close."""
    root, sums = tree
    s = ftpd()
    c = Ctl(s.port)
    c.login()
    data = passive_socket(c, 1 << 20)
    assert c.cmd("RETR s000.dat")[0] == 150
    body = read_all(data)                      # EOF read, socket left open
    assert c.reply()[0] == 226
    assert hashlib.sha256(body).hexdigest() == sums["s000.dat"]
    data.close()
    c.close()
