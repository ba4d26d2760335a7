"""httpc over TCP: a page fetched byte-exact from httpd and from the stock servers lighttpd
and nginx, its objects' requests pipelined (all sent before the first object's answer
arrived), and what a failing server does to it."""
from __future__ import annotations

import pytest

from tests.web.httphelp import page_paths, run_httpc, stock_server, wait_gone


def check_page(events: list[dict], out, site_files: dict[str, bytes]) -> None:
    complete = {e["object"]: e for e in events if e["event"] == "complete"}
    assert sorted(complete) == list(range(8))
    assert all(e["status"] == 200 for e in complete.values())
    for path in page_paths():
        name = path.lstrip("/")
        assert (out / name).read_bytes() == site_files[name]
    assert not list(out.glob("*.part"))


def pipelined(events: list[dict]) -> bool:
    """Every object's request went out before the first object's answer began."""
    requests = [e["t"] for e in events if e["event"] == "request" and e["object"] > 0]
    first = min(e["t"] for e in events if e["event"] == "first_byte" and e["object"] > 0)
    return len(requests) == 7 and max(requests) < first


def test_httpc_fetches_the_page_from_httpd(bindir, httpd, site, tmp_path):
    s = httpd()
    out = tmp_path / "out"
    out.mkdir()
    rc, events, err = run_httpc(bindir, "--proto", "tcp", "--server", f"127.0.0.1:{s.port}",
                                "--out", str(out), *page_paths())
    assert rc == 0, err
    check_page(events, out, site[1])
    assert pipelined(events)
    page = [e for e in events if e["event"] == "page"]
    assert page and page[0]["objects"] == 8 and page[0]["bytes"] == 51200 + 7 * 4096


@pytest.mark.parametrize("kind", ["lighttpd", "nginx"])
def test_httpc_pipelines_against_a_stock_server(bindir, site, tmp_path, kind):
    proc, port = stock_server(kind, site[0], tmp_path / kind)
    try:
        out = tmp_path / "out"
        out.mkdir()
        rc, events, err = run_httpc(bindir, "--proto", "tcp", "--server", f"127.0.0.1:{port}",
                                    "--out", str(out), *page_paths())
        assert rc == 0, err
        check_page(events, out, site[1])
        assert pipelined(events)
    finally:
        wait_gone(proc)


def test_a_missing_object_fails_the_page_and_keeps_no_partial_file(bindir, httpd, tmp_path):
    s = httpd()
    out = tmp_path / "out"
    out.mkdir()
    rc, events, err = run_httpc(bindir, "--proto", "tcp", "--server", f"127.0.0.1:{s.port}",
                                "--out", str(out), "/page.html", "/o1.png", "/gone.png")
    assert rc == 1 and "/gone.png: status 404" in err
    assert not (out / "gone.png").exists() and not list(out.glob("*.part"))


def test_a_server_that_closes_early_is_reported(bindir, httpd, tmp_path):
    s = httpd("--max-requests", "2")
    rc, events, err = run_httpc(bindir, "--proto", "tcp", "--server", f"127.0.0.1:{s.port}",
                                *page_paths())
    assert rc == 1 and "closed the connection" in err


def test_bad_command_lines_exit_2(bindir):
    for args in (["--proto", "udp", "--server", "127.0.0.1:1", "/a"],
                 ["--proto", "tcp", "--server", "127.0.0.1:1"],
                 ["--proto", "tcp", "--server", "127.0.0.1:1", "relative"],
                 ["--proto", "tcp", "--server", "127.0.0.1:1", "/a/x", "/b/x"]):
        rc, _, err = run_httpc(bindir, *args)
        assert rc == 2 and "usage:" in err, args
