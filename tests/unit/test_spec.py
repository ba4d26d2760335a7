"""Experiment files are checked before anything runs: a wrong key, a value out of range, an
unknown variant, topology or workload is refused with the file, the key and the reason."""
import subprocess
from pathlib import Path

import pytest

from experiments import procedure, spec
from experiments.workloads.base import WorkloadError
from experiments.workloads.bulk_flows.workload import WORKLOAD

REPO = Path(__file__).resolve().parents[2]


def points(experiment):
    return experiment.points()


GOOD = """
name = "{name}"
metric = "nlst150-to-last226"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.06]
file_sizes = ["10K"]
files = 3
variants = ["tcp", "sctp-ms"]
tcp_profiles = ["tcp-newreno", "tcp-linux"]
[repetitions]
min = 2
max = 3
"""


def write(tmp_path: Path, text: str, name: str = "trial") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text.format(name=name))
    return path


SHIPPED = sorted(p.stem for p in (REPO / "experiments").glob("*.toml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_experiments_are_valid(name):
    experiment = spec.load(name)
    assert experiment.name == name and points(experiment)


def test_a_file_without_topology_or_workload_is_an_ftp_mget_on_path():
    experiment = spec.load("smoke")
    assert (experiment.topology, experiment.workload) == ("path", "ftp-mget")
    assert experiment.repetitions.metric == "transfer_time_s"


def test_the_published_e1_matrix_is_complete():
    e1 = spec.load("multistream")
    assert [(p.rate_bps, p.delay_s) for p in e1.network.entries] == [
        (3e6, 0.001), (1e6, 0.035), (256e3, 0.125)]
    assert e1.losses == (0.0, 0.01, 0.03, 0.06, 0.10)
    assert e1.settings.file_sizes == tuple(k * 1024 for k in (10, 50, 200, 500, 1024))
    assert e1.settings.files == 100 and len(points(e1)) == 3 * 5 * 5 * 5


def test_tcp_profiles_multiply_only_the_tcp_variant(tmp_path):
    experiment = spec.load(str(write(tmp_path, GOOD)))
    keys = {p.key for p in points(experiment)}
    assert len(keys) == 2 * (2 + 1)  # per loss: tcp x 2 profiles, sctp-ms once
    assert "lan_loss0.06_10Kx3_sctp-ms_sctp_linux" in keys


def test_tcp_profiles_multiply_tcp_pipelined_too(tmp_path):
    experiment = spec.load(str(write(tmp_path, GOOD.replace(
        'variants = ["tcp", "sctp-ms"]', 'variants = ["tcp-pipelined", "sctp-ms"]'))))
    keys = {p.key for p in points(experiment)}
    assert "lan_loss0.06_10Kx3_tcp-pipelined_tcp-linux_linux" in keys
    assert len(keys) == 2 * (2 + 1)


def test_xftp_is_a_point_per_number_of_connections(tmp_path):
    experiment = spec.load(str(write(tmp_path, GOOD.replace(
        'variants = ["tcp", "sctp-ms"]', 'variants = ["tcp", "xftp"]\nparallel = [1, 4, 4, 8]'))))
    found = {p.key: p.as_row() for p in points(experiment)}
    assert len(found) == 2 * 2 * (1 + 3)   # per loss and TCP profile: tcp, xftp x 1, 4, 8
    xftp = found["lan_loss0_10Kx3_xftp4_tcp-linux_linux"]
    assert (xftp["variant"], xftp["parallel"]) == ("xftp", 4)
    assert found["lan_loss0_10Kx3_tcp_tcp-linux_linux"]["parallel"] == 0
    assert experiment.settings.parallel == (1, 4, 8)


@pytest.mark.parametrize("change, key, reason", [
    (("files = 3", "files = 3\nparallel = [2]"), "matrix.parallel", "applies to xftp only"),
    (("variants = [\"tcp\", \"sctp-ms\"]", "variants = [\"tcp\", \"xftp\"]\nparallel = [0]"),
     "matrix.parallel", "1 to 16"),
    (("variants = [\"tcp\", \"sctp-ms\"]", "variants = [\"xftp\"]\nparallel = [4, \"8\"]"),
     "matrix.parallel", "'8'"),
    (("delay = \"1ms\"", "delay = \"1ms\"\ncolour = \"red\""), "network.paths[0].colour",
     "unknown key"),
    (("[matrix]", "[matrix]\nlosses = [0.1]"), "matrix.losses", "unknown key"),
    (("loss = [0.0, 0.06]", "loss = [0.0, 1.5]"), "matrix.loss", "not a loss ratio"),
    (("variants = [\"tcp\", \"sctp-ms\"]", "variants = [\"tcp\", \"quic\"]"), "matrix.variants",
     "unknown variant 'quic'"),
    (("delay = \"1ms\"", "delay = \"-1ms\""), "network.paths[0].delay", "delay must be"),
    (("files = 3", "files = 0"), "matrix.files", "out of range"),
    (("min = 2", "min = 1"), "repetitions", "min"),
    (("tcp_profiles = [\"tcp-newreno\", \"tcp-linux\"]", "tcp_profiles = [\"vegas\"]"),
     "matrix.tcp_profiles", "unknown profile"),
    (("queue = \"500KB\"", "queue = \"lots\""), "network.queue", "cannot read"),
    (("name = \"{name}\"", "name = \"{name}\"\nworkload = \"ftp-put\""), "workload",
     "unknown workload 'ftp-put'"),
    (("name = \"{name}\"", "name = \"{name}\"\ntopology = \"ring\""), "topology",
     "unknown topology 'ring'"),
    (("name = \"{name}\"", "name = \"{name}\"\ntopology = \"dumbbell\""), "topology",
     "the ftp-mget workload runs on path or dualpath, not dumbbell"),
    (("[repetitions]", "[repetitions]\nmetric = \"jain_index\""), "repetitions.metric",
     "unknown metric 'jain_index'"),
    (("[matrix]", "[flows]\nduration_s = 10\n[matrix]"), "flows", "unknown key"),
    (("[matrix]", "[run]\ncapture = \"payload\"\n[matrix]"), "run.capture",
     "one of 'whole', 'headers', not 'payload'"),
    (("[matrix]", "[run]\ncapture = \"headers\"\nsnaplen = 200\n[matrix]"), "run.snaplen",
     'capture = "headers" sets the snaplen itself'),
    (("[matrix]", "[run]\ncapture_at = [\"server\"]\n[matrix]"), "run.capture_at",
     "the client's pcap is the one measured"),
    (("[matrix]", "[run]\ncapture_at = [\"client\", \"router\"]\n[matrix]"), "run.capture_at",
     '["client"] or ["client", "server"]'),
    (("[matrix]", "[run]\ncapture_at = [\"client\", \"client\"]\n[matrix]"), "run.capture_at",
     "not ['client', 'client']"),
    (("queue = \"500KB\"", "queue = \"500KB\"\nloss_burst = 0.5"), "network.loss_burst",
     "between 1 and"),
    (("queue = \"500KB\"", "queue = \"500KB\"\nloss_burst = \"4\""), "network.loss_burst",
     "number"),
])
def test_bad_values_are_refused_with_file_key_and_reason(tmp_path, change, key, reason):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    message = str(refused.value)
    assert str(path) in message and key in message and reason in message


def test_a_run_captures_at_the_client_unless_the_file_adds_the_server(tmp_path):
    assert spec.load(str(write(tmp_path, GOOD))).capture_at == ("client",)
    both = spec.load(str(write(tmp_path, GOOD.replace(
        "[matrix]", '[run]\ncapture_at = ["client", "server"]\n[matrix]'))))
    assert both.capture_at == ("client", "server")
    assert both.as_record()["capture_at"] == ["client", "server"]


def test_name_must_match_the_file(tmp_path):
    path = tmp_path / "trial.toml"
    path.write_text(GOOD.format(name="other"))
    with pytest.raises(spec.SpecError, match="must match the file name"):
        spec.load(str(path))


def test_cli_refuses_before_anything_runs(tmp_path):
    path = write(tmp_path, GOOD.replace("files = 3", "files = 3\nfile = 4"))
    results = tmp_path / "results"
    cli = subprocess.run(["/usr/bin/python3", "-m", "testbed", "run", str(path),
                          "--results", str(results)], cwd=REPO, capture_output=True, text=True)
    assert cli.returncode == 2
    assert "matrix.file: unknown key" in cli.stderr
    assert not results.exists()


BULK = """
name = "{name}"
topology = "dumbbell"
workload = "bulk-flows"
[network]
access_rate = "100Mbit"
access_delay = "2ms"
mtu = 1540
loss_on = "data"
[[network.bottlenecks]]
name = "geo-2"
pairs = 2
rate = "2Mbit"
delay = "250ms"
queue = "10p"
[matrix]
loss = [0.015]
tcp_profiles = ["tcp-sack-reno", "tcp-linux"]
[flows]
duration_s = 60
warmup_s = 10
stagger_s = 1
payload_bytes = 1488
rcvbuf_bytes = 65536
delayed_ack = false
[repetitions]
min = 2
max = 3
metric = "jain_index"
"""


def test_a_bulk_flows_file_names_its_points_by_bottleneck_flows_and_profile(tmp_path):
    experiment = spec.load(str(write(tmp_path, BULK)))
    assert (experiment.topology, experiment.workload) == ("dumbbell", "bulk-flows")
    assert [p.key for p in points(experiment)] == ["geo-2_loss0.015_2flows_tcp-sack-reno",
                                                   "geo-2_loss0.015_2flows_tcp-linux"]
    links = experiment.network.links(experiment.network.entries[0], 0.015)
    assert links["bottleneck-up"].loss == 0.015 and links["bottleneck-down"].loss == 0.0
    assert links["bottleneck-up"].queue.limit == 10 and links["s2-up"].delay_s == 0.002
    record = experiment.as_record()
    assert record["flows"]["tcp_maxseg"] == 1500 and record["flows"]["sctp_maxseg"] == 1488
    assert record["flows"]["stacks"] == ["linux"] and "linux" in record["stacks"]


def test_a_bulk_flows_stack_other_than_today_s_names_its_points_and_sets_their_stack(tmp_path):
    text = BULK.replace('tcp_profiles = ["tcp-sack-reno", "tcp-linux"]',
                        'tcp_profiles = ["tcp-sack-reno"]\nstacks = ["linux", "freebsd-4.6"]')
    experiment = spec.load(str(write(tmp_path, text)))
    found = {p.key: p.stack for p in points(experiment)}
    assert found == {"geo-2_loss0.015_2flows_tcp-sack-reno": "linux",
                     "geo-2_loss0.015_2flows_tcp-sack-reno_freebsd-4.6": "freebsd-4.6"}
    assert [p.get("stack") for p in points(experiment)] == ["linux", "freebsd-4.6"]
    with pytest.raises(spec.SpecError, match="matrix.stacks.*unknown stack profile"):
        spec.load(str(write(tmp_path, text.replace('"freebsd-4.6"', '"freebsd-9"'))))


def test_a_bulk_flows_sctp_stack_axis_names_its_points_and_reaches_the_programs(tmp_path):
    text = BULK.replace('tcp_profiles = ["tcp-sack-reno", "tcp-linux"]',
                        'tcp_profiles = ["tcp-sack-reno"]\nsctp_stacks = ["kernel", "usrsctp"]')
    experiment = spec.load(str(write(tmp_path, text)))
    found = {p.key: p.get("sctp_stack") for p in points(experiment)}
    assert found == {"geo-2_loss0.015_2flows_tcp-sack-reno": "kernel",
                     "geo-2_loss0.015_2flows_tcp-sack-reno_usrsctp": "usrsctp"}
    orders = [WORKLOAD.order(experiment, p, {"bulkflow": "bf"}) for p in points(experiment)]
    assert [o["sctp_stack"] for o in orders] == ["kernel", "usrsctp"]
    assert experiment.as_record()["flows"]["sctp_stacks"] == ["kernel", "usrsctp"]
    assert procedure.sctp_stack_options("usrsctp") == [
        "--sctp-stack", "usrsctp", "--sctp-udp-port", "9899", "--sctp-peer-udp-port", "9899"]
    assert procedure.sctp_stack_options("kernel") == []
    with pytest.raises(WorkloadError, match=r"mtu = 1544 or more .*8 more inside UDP"):
        WORKLOAD.prepare(experiment, tmp_path)


def test_a_usrsctp_stack_with_sysctls_names_its_points_and_sets_them_at_both_ends(tmp_path):
    stack = "usrsctp:sctp_use_cwnd_based_maxburst=0,sctp_max_burst_default=0"
    text = BULK.replace('tcp_profiles = ["tcp-sack-reno", "tcp-linux"]',
                        f'tcp_profiles = ["tcp-sack-reno"]\nsctp_stacks = ["usrsctp", "{stack}"]')
    experiment = spec.load(str(write(tmp_path, text)))
    assert [p.key for p in points(experiment)] == [
        "geo-2_loss0.015_2flows_tcp-sack-reno_usrsctp",
        "geo-2_loss0.015_2flows_tcp-sack-reno_usrsctp+sctp_use_cwnd_based_maxburst-0"
        "+sctp_max_burst_default-0"]
    assert procedure.sctp_stack_options(stack)[-2:] == [
        "--usrsctp-sysctl=sctp_use_cwnd_based_maxburst=0",
        "--usrsctp-sysctl=sctp_max_burst_default=0"]


@pytest.mark.parametrize("change, reason", [
    ('sctp_stacks = ["usrsctp", "freebsd"]', "unknown SCTP stack"),
    ('sctp_stacks = ["usrsctp:sctp_cwnd=3"]', "unknown usrsctp sysctl 'sctp_cwnd'"),
    ('sctp_stacks = ["usrsctp:sctp_initial_cwnd"]', "is not NAME=VALUE"),
    ('sctp_stacks = ["kernel:sctp_initial_cwnd=4"]', "only usrsctp takes sysctls"),
    ('sctp_stacks = ["usrsctp:sctp_initial_cwnd=4,sctp_initial_cwnd=2"]', "twice"),
    ('sctp_stacks = ["usrsctp", "usrsctp"]', "names a stack twice"),
    ('sctp_stacks = []', "non-empty list"),
    ('sctp_stacks = ["usrsctp"]\nstacks = ["linux", "freebsd-4.6"]', "usrsctp does not read"),
])
def test_bad_sctp_stack_axes_are_refused(tmp_path, change, reason):
    text = BULK.replace('tcp_profiles = ["tcp-sack-reno", "tcp-linux"]',
                        'tcp_profiles = ["tcp-sack-reno"]\n' + change)
    path = write(tmp_path, text)
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    assert str(path) in str(refused.value) and "matrix.sctp_stacks" in str(refused.value)
    assert reason in str(refused.value)


@pytest.mark.parametrize("change, key, reason", [
    (("duration_s = 60", "duration_s = 60\nflows = 3"), "flows.flows", "unknown key"),
    (("warmup_s = 10", "warmup_s = 90"), "flows.warmup_s", "shorter than duration_s"),
    (("loss_on = \"data\"", "loss_on = \"ack\""), "network.loss_on", "'data'"),
    (("pairs = 2", "pairs = 0"), "network.bottlenecks[0].pairs", "out of range"),
    (("queue = \"10p\"", ""), "network.bottlenecks[0].queue", "missing"),
    (("[matrix]", "[matrix]\nvariants = [\"tcp\"]"), "matrix.variants", "unknown key"),
    (("metric = \"jain_index\"", "metric = \"transfer_time_s\""), "repetitions.metric",
     "unknown metric"),
    (("workload = \"bulk-flows\"", "workload = \"ftp-mget\""), "topology",
     "runs on path or dualpath, not dumbbell"),
    (("mtu = 1540", "mtu = 100000"), "network.mtu", "out of range"),
    (("[matrix]", "[run]\ncapture_at = [\"client\", \"server\"]\n[matrix]"), "run.capture_at",
     "the bulk-flows workload captures only at its client"),
])
def test_bad_bulk_flows_values_are_refused(tmp_path, change, key, reason):
    assert change[0] in BULK
    path = write(tmp_path, BULK.replace(*change))
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    message = str(refused.value)
    assert str(path) in message and key in message and reason in message


HTTP = """
name = "{name}"
workload = "http-page"
[network]
queue = "50p"
[[network.paths]]
name = "3mbit"
rate = "3Mbit"
delay = "40ms"
[matrix]
loss = [0.0, 0.1]
document_sizes = ["50K", 0]
transports = ["tcp", "sctp"]
tcp_profiles = ["tcp-sack-reno", "tcp-linux"]
[page]
objects = 7
object_size = "4K"
sctp_scheduler = "fcfs"
[repetitions]
min = 2
max = 3
"""


def test_an_http_page_file_names_its_points_by_document_transport_and_profile(tmp_path):
    experiment = spec.load(str(write(tmp_path, HTTP)))
    assert (experiment.topology, experiment.workload) == ("path", "http-page")
    keys = [p.key for p in points(experiment)]
    assert len(keys) == 2 * 2 * 3          # loss x document x (tcp x 2 profiles + sctp)
    assert "3mbit_loss0.1_50K+7x4K_sctp_sctp" in keys
    assert "3mbit_loss0_0+7x4K_tcp_tcp-linux" in keys
    assert experiment.repetitions.metric == "page_time_s"
    assert experiment.as_record()["page"]["sctp_scheduler"] == "fcfs"


@pytest.mark.parametrize("change, key, reason", [
    (('transports = ["tcp", "sctp"]', 'transports = ["udp"]'), "matrix.transports",
     "unknown transport"),
    (('sctp_scheduler = "fcfs"', 'sctp_scheduler = "prio"'), "page.sctp_scheduler",
     "unknown scheduler"),
    (("objects = 7", "objects = 5000"), "page.objects", "0 to 1000"),
    (('document_sizes = ["50K", 0]', 'document_sizes = ["50Q"]'), "matrix.document_sizes",
     "cannot read file size"),
    (('object_size = "4K"', 'object_size = "4K"\nwrites = 3'), "page.writes", "unknown key"),
    (("[matrix]", "[matrix]\nvariants = [\"tcp\"]"), "matrix.variants", "unknown key"),
    (("[matrix]", "[run]\ncapture = \"headers\"\n[matrix]"), "run.capture",
     "the http-page workload reads payloads that a capture of headers cuts"),
])
def test_bad_http_page_values_are_refused(tmp_path, change, key, reason):
    assert change[0] in HTTP
    path = write(tmp_path, HTTP.replace(*change))
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    message = str(refused.value)
    assert str(path) in message and key in message and reason in message


def test_a_loss_burst_too_short_for_the_matrix_loss_is_refused(tmp_path):
    text = GOOD.replace('queue = "500KB"', 'queue = "500KB"\nloss_burst = 1').replace(
        "loss = [0.0, 0.06]", "loss = [0.0, 0.6]")
    with pytest.raises(spec.SpecError, match="network.loss_burst.*raise the burst"):
        spec.load(str(write(tmp_path, text)))


def test_a_loss_burst_shapes_the_lossy_links_and_is_recorded(tmp_path):
    experiment = spec.load(str(write(tmp_path, GOOD.replace(
        'queue = "500KB"', 'queue = "500KB"\nloss_burst = 3'))))
    entry = experiment.network.entries[0]
    links = experiment.network.links(entry, 0.06)
    assert {s.loss_burst for s in links.values() if s.loss} == {3.0}
    assert experiment.as_record()["loss_burst"] == 3.0
    plain = spec.load(str(write(tmp_path, GOOD, "plain")))
    assert "loss_burst" not in plain.as_record()


def test_an_ftp_sctp_stack_axis_multiplies_the_sctp_variants_and_reaches_both_programs(
        tmp_path):
    from experiments.workloads.ftp_mget.workload import WORKLOAD as FTP

    text = GOOD.replace('tcp_profiles = ["tcp-newreno", "tcp-linux"]',
                        'tcp_profiles = ["tcp-newreno"]\nstacks = ["published"]\n'
                        'sctp_stacks = ["kernel", "usrsctp:sctp_max_burst_default=0"]'
                        ).replace("loss = [0.0, 0.06]", "loss = [0.06]")
    experiment = spec.load(str(write(tmp_path, text)))
    found = {p.key: p.get("sctp_stack") for p in points(experiment)}
    assert found == {
        "lan_loss0.06_10Kx3_tcp_tcp-newreno_published": "",
        "lan_loss0.06_10Kx3_sctp-ms_sctp_published": "kernel",
        "lan_loss0.06_10Kx3_sctp-ms_sctp_published_usrsctp+sctp_max_burst_default-0":
            "usrsctp:sctp_max_burst_default=0"}
    prepared = {"data": {10240: type("Data", (), {"root": tmp_path, "digests": {}})()},
                "programs": {}}
    orders = {p.get("sctp_stack"): FTP.order(experiment, p, prepared)
              for p in points(experiment)}
    assert orders[""]["client_options"] == [] and orders["kernel"]["server_options"] == []
    usrsctp = orders["usrsctp:sctp_max_burst_default=0"]
    timers = ["--usrsctp-sysctl=sctp_rto_min_default=1000",
              "--usrsctp-sysctl=sctp_rto_initial_default=3000",
              "--usrsctp-sysctl=sctp_rto_max_default=60000",
              "--usrsctp-sysctl=sctp_max_burst_default=0"]
    assert usrsctp["server_options"] == ["--sctp-stack", "usrsctp", "--sctp-udp-port", "9899",
                                         *timers]
    assert usrsctp["client_options"] == ["--sctp-stack", "usrsctp", "--sctp-udp-port", "9899",
                                         "--sctp-peer-udp-port", "9899", *timers]
    assert usrsctp["socket_options"] == ["--sndbuf", "212992", "--rcvbuf", "212992"]
    record = experiment.as_record()
    assert record["sctp_stacks"] == ["kernel", "usrsctp:sctp_max_burst_default=0"]
    assert record["usrsctp_stack_settings"]["published"]["sctp_rto_initial_default"] == 3000


@pytest.mark.parametrize("change, key, reason", [
    ('sctp_stacks = ["usrsctp"]\nstacks = ["freebsd-4.6"]', "matrix.stacks",
     "net.sctp.fast_rtx_threshold"),
    ('sctp_stacks = ["usrsctp"]\n[sctp]\nrto_min_ms = 200', "sctp", "usrsctp does not read"),
    ('sctp_stacks = ["usrsctp"]\n[[matrix.sctp_settings]]\nname = "a"\nmax_burst = 0',
     "matrix.sctp_settings", "usrsctp does not read"),
    ('sctp_stacks = ["sctp"]', "matrix.sctp_stacks", "unknown SCTP stack"),
])
def test_bad_ftp_sctp_stack_axes_are_refused(tmp_path, change, key, reason):
    text = GOOD.replace('tcp_profiles = ["tcp-newreno", "tcp-linux"]',
                        'tcp_profiles = ["tcp-newreno"]\n' + change)
    path = write(tmp_path, text)
    with pytest.raises(spec.SpecError) as refused:
        spec.load(str(path))
    assert str(path) in str(refused.value) and key in str(refused.value)
    assert reason in str(refused.value)


def test_an_ftp_sctp_stack_axis_needs_an_sctp_variant(tmp_path):
    text = GOOD.replace('variants = ["tcp", "sctp-ms"]', 'variants = ["tcp"]').replace(
        'tcp_profiles = ["tcp-newreno", "tcp-linux"]',
        'tcp_profiles = ["tcp-newreno"]\nsctp_stacks = ["usrsctp"]')
    with pytest.raises(spec.SpecError, match="matrix.sctp_stacks.*SCTP variants"):
        spec.load(str(write(tmp_path, text)))
