# Entry points of the testbed: the `testbed` command (installed by `setup` into .venv) and the
# C programs. Every target that needs system packages runs `setup` first, which installs only
# what is missing (Debian packages, the pinned kernel's modules, the testbed command).
KERNEL ?= uml
PYTHON := /usr/bin/python3
TESTBED := $(CURDIR)/.venv/bin/testbed
export KERNEL

# The experiment `make experiment` runs: a name in experiments/ or a .toml file.
EXP ?= demo
WORKERS ?=
# Where experiments write (default: results/ in the repository); the container image sets it to
# its volume.
RESULTS ?=
# Options for docker/setup.sh: the container image may be built with --no-virtual-kernel.
SETUP_FLAGS ?=
# The container image `make image` builds, and the base it starts from (debian:bookworm from a
# registry, or the local one `make image-base` bootstraps where no registry is reachable).
IMAGE ?= localhost/testbed
BASE_IMAGE ?= debian:bookworm
RESULTS_OPTION = $(if $(RESULTS),--results $(RESULTS))
# Where `make experiment` runs the rounds: `local` (pinned kernels on this machine) or `slurm`
# (each round one job array on the cluster SLURM_CONF names; RESULTS on a shared file system).
SCHEDULER ?= local
ifeq ($(filter $(SCHEDULER),local slurm),)
$(error SCHEDULER=$(SCHEDULER): choose local or slurm)
endif

.PHONY: all setup setup-test setup-kernel kernel build test test-fast test-host test-kernel lint test-core test-ftp test-virtual \
        test-harness test-slurm fidelity bench-virtual bench-virtual-links bench-harness bench-ftp bench-http bench-sctp-stacks \
        experiment smoke tables report reproduce bench-reproduce ablation clean image image-base fanout \
        deploy-emulated fuzz

all: build

# Only the kernels booted from the project's own build need it (uml-virtual, uml-built): for
# Debian's `uml`, the default, setup skips that build and its source package, so a fresh
# machine's first `make experiment` does not wait 5 minutes for a kernel it does not boot;
# for those two it builds it (once), even where SETUP_FLAGS (the image's) left it out.
SETUP_FLAGS_WITH_KERNEL = $(filter-out --no-virtual-kernel,$(SETUP_FLAGS))
SETUP_OPTIONS = $(if $(filter uml-virtual uml-built,$(KERNEL)),,--no-virtual-kernel) \
                $(SETUP_FLAGS_WITH_KERNEL)

setup:
	bash docker/setup.sh $(SETUP_OPTIONS)

# setup, plus what only the tests use: Ansible and sshd, podman, debootstrap, the linters.
setup-test:
	bash docker/setup.sh --test-tools

# setup with the kernel build, whatever KERNEL and SETUP_FLAGS say (for the targets whose tests
# boot it).
setup-kernel:
	bash docker/setup.sh $(SETUP_FLAGS_WITH_KERNEL)

# The time-travel kernel of KERNEL=uml-virtual (and uml-built). This builds it (about 5 minutes
# on 2 cores, once: it is cached by a hash of its configuration and source version), whatever
# KERNEL and SETUP_FLAGS say; then prints its path and the wall-cpu clock's wake-up latency
# table (calibrated once per machine, about 70 s). `setup-test` and `setup` with KERNEL set to
# one of the two build it too.
kernel: setup-kernel
	bash topology/kernel/timetravel/build.sh
	$(TESTBED) wake-latency

build: setup
	$(MAKE) -C ftp-impl

# The whole suite, as CI runs it. Tests boot the pinned kernel themselves. Most of the suite
# waits (on links, timers, kernels' boots) rather than computes, so its files run
# TEST_WORKERS at a time (pytest-xdist, a file to a worker); those marked `serial` (they
# measure time, rates or load) then run alone. The sanitizer builds are made first, once.
TEST_WORKERS ?= 2
test: setup-test build
	$(MAKE) -C ftp-impl -s sanitize sanitize-ub
	$(PYTHON) -m pytest tests -m "not serial" -n $(TEST_WORKERS) --dist loadfile --durations=30
	$(PYTHON) -m pytest tests -m serial --durations=30

# The edit-test loop: every test marked `unit` (no pinned kernel, no build), the linters and
# the docs check among them: under a minute. `test-host` adds the programs on this machine's
# kernel; `test-kernel` is the rest. Kinds: tests/README.md.
test-fast:
	$(PYTHON) -m pytest -m unit tests

test-host: setup-test build
	$(PYTHON) -m pytest -m host tests

test-kernel: setup-test build
	$(PYTHON) -m pytest -m kernel tests

# ruff, shellcheck and clang-format, as configured in the repository (part of test-fast).
lint: setup-test
	$(PYTHON) -m pytest tests/unit/test_lint.py

test-core: setup-kernel
	$(PYTHON) -m pytest tests/core

test-ftp: setup build
	$(PYTHON) -m pytest tests/ftp

test-harness: setup-kernel build
	$(PYTHON) -m pytest tests/harness

test-slurm: setup-test build
	$(PYTHON) -m pytest tests/slurm tests/unit/test_slurm_settings.py

test-virtual: kernel
	$(PYTHON) -m pytest tests/virtual

# Link fidelity of the E1 paths: prints a table, writes results/fidelity.json.
fidelity: setup
	$(TESTBED) fidelity --kernel $(KERNEL)

# Virtual time against real time: the FTP programs on the E1 paths through the harness, in real
# time, wall-cpu and inf-cpu virtual time, in alternating batches (BATCHES, default 3; about 30
# minutes); E1=1 adds one timed repetition of the full E1 matrix in virtual time. Real time boots
# the same kernel build (REAL_KERNEL=uml: Debian's User-Mode Linux instead).
# Prints tables, writes results/bench-virtual.json.
bench-virtual: kernel build
	$(TESTBED) bench virtual-clock $(if $(E1),--e1) $(if $(WORKERS),--workers $(WORKERS)) \
		$(if $(BATCHES),--batches $(BATCHES)) $(if $(REAL_KERNEL),--real-kernel $(REAL_KERNEL))

# The links alone in both clocks (ping RTT, TCP and SCTP goodput, kernel-level transfers):
# writes results/bench-virtual-links.json.
bench-virtual-links: kernel
	$(TESTBED) bench virtual-links

# The main job: run (or resume) an experiment; results in results/$(EXP)/ (or $(RESULTS)/$(EXP)/).
experiment: setup build
	$(TESTBED) run $(EXP) --kernel $(KERNEL) $(if $(WORKERS),--workers $(WORKERS)) $(RESULTS_OPTION) \
		$(if $(filter slurm,$(SCHEDULER)),--slurm)

smoke:
	$(MAKE) experiment EXP=smoke

# ftpc/ftpd against iperf3 and vsftpd: prints a table, writes results/bench-ftp.json.
bench-ftp: setup build
	$(TESTBED) bench ftp

# httpd against lighttpd and nginx (h2load, loopback): prints a table, writes
# results/bench-http.json.
bench-http: setup-test build
	$(TESTBED) bench http

# The kernel's SCTP against usrsctp on E1's paths (loss 0 and 3%, virtual time): bulk goodput
# beside tsctp's, per-file time by SCTP variant, and CPU per MB on a real-time kernel; prints a
# table, writes results/bench-sctp-stacks.json.
bench-sctp-stacks: kernel build
	$(TESTBED) bench sctp-stacks

# Harness overhead and parallel speed-up: prints a table, writes results/bench-harness.json.
bench-harness: setup build
	$(TESTBED) bench harness

# The libFuzzer targets of the FTP programs (ftp-impl/fuzz/README.md), one after the other,
# FUZZ_SECONDS each (default 60): a line per target (executions, coverage, crashes); non-zero
# exit on any crash, leak or sanitizer report. FUZZ_MERGE=1 keeps what was found in the corpus.
fuzz: setup-test
	$(MAKE) -C ftp-impl fuzz $(if $(FUZZ_SECONDS),FUZZ_SECONDS=$(FUZZ_SECONDS)) \
		$(if $(FUZZ_MERGE),FUZZ_MERGE=$(FUZZ_MERGE)) $(if $(FUZZ_TARGETS),FUZZ_TARGETS="$(FUZZ_TARGETS)")

# Fan an experiment's pending points out over the `workers` of an Ansible inventory, run them
# there and merge every host's runs into results/$(EXP)/ (or $(RESULTS)/$(EXP)/); the same
# command resumes. See playbooks/README.md, "Fan-out".
FANOUT_INVENTORY = $(or $(INVENTORY),playbooks/inventories/workers.yml)
fanout:
	@test -f $(FANOUT_INVENTORY) || { echo "no inventory $(FANOUT_INVENTORY): copy playbooks/inventories/workers.example.yml there and list your workers, or give INVENTORY=FILE" >&2; exit 2; }
	@command -v ansible-playbook >/dev/null || { echo "ansible-playbook is missing: run make setup-test (or apt-get install ansible-core)" >&2; exit 2; }
	ansible-playbook -i $(FANOUT_INVENTORY) playbooks/fanout.yml -e experiment=$(EXP) -e fanout_kernel=$(KERNEL) \
		$(if $(RESULTS),-e fanout_results=$(abspath $(RESULTS)))

# Ansible over SSH into the emulated nodes (inside the pinned kernel): deploy the FTP programs and
# a data set, shape the router, run one point (VARIANT=tcp|sctp-naive|sctp-ms|sctp-ms-cp) and
# fetch its pcap and logs: results/ansible/emulated/ (or $(RESULTS)/ansible/emulated/). See
# playbooks/README.md.
deploy-emulated: setup-test
	$(TESTBED) deploy-emulated $(if $(VARIANT),--variant $(VARIANT)) \
		$(if $(RESULTS),--out $(abspath $(RESULTS))/ansible/emulated)

# Rebuild runs.csv, summary.csv, matrix.json and meta.json from the finished runs.
tables: setup
	$(TESTBED) tables $(EXP) $(RESULTS_OPTION)

# Figures (PNG, PDF), the workload's tables and a self-contained report.html from the result
# files of an experiment: results/$(EXP)/report/. LOG=1 draws the time axes logarithmic.
# The verdict on the studies' published findings (experiments/claims/): runs the points the
# claims need (finished runs count; interrupted, the same command resumes), then writes
# results/reproduce/scorecard.csv, .json and .html. QUICK=1: a reduced copy of each experiment
# that still judges every claim (results/reproduce/quick/); STUDIES=E1,E3: those only. In
# virtual time unless KERNEL is given.
REPRODUCE_OPTIONS = $(if $(QUICK),--quick) $(if $(STUDIES),--studies $(STUDIES)) \
                    $(if $(WORKERS),--workers $(WORKERS)) $(RESULTS_OPTION) \
                    --kernel $(if $(filter command line environment,$(origin KERNEL)),$(KERNEL),uml-virtual)
reproduce: setup-kernel build
	$(TESTBED) reproduce $(REPRODUCE_OPTIONS)

# Every claim at its study's repetition policy: prints the time per study and the verdict
# counts, writes results/bench-reproduce.json.
bench-reproduce: setup-kernel build
	$(TESTBED) reproduce $(REPRODUCE_OPTIONS) --bench $(or $(RESULTS),results)/bench-reproduce.json

# Which of the era stack's mechanisms moves each of a study's findings (STUDY=E1): its
# ablation experiment from today's stack to the era's, one mechanism at a time, judged as the
# scorecard judges; results/ablation-e1/ablation/. In virtual time unless KERNEL is given.
ablation: setup-kernel build
	$(TESTBED) ablation $(or $(STUDY),E1) $(if $(WORKERS),--workers $(WORKERS)) $(RESULTS_OPTION) \
	  --kernel $(if $(filter command line environment,$(origin KERNEL)),$(KERNEL),uml-virtual)

report: setup
	$(TESTBED) report $(EXP) $(if $(LOG),--log) $(RESULTS_OPTION)

# The container image (docker/Dockerfile, see docker/README.md) with the Docker engine, or
# with podman where there is none. IMAGE_ARGS adds build options, e.g.
# IMAGE_ARGS='--build-arg SETUP_FLAGS=--no-virtual-kernel'.
image:
	bash docker/build-image.sh $(IMAGE) $(BASE_IMAGE) $(IMAGE_ARGS)

# A debian:bookworm base made locally (debootstrap from this machine's apt mirror), for machines
# that reach no registry: `make image-base image BASE_IMAGE=localhost/bookworm-base`.
image-base:
	bash docker/base-image.sh localhost/bookworm-base

clean:
	rm -rf results/fidelity.json
	-$(MAKE) -C ftp-impl clean
