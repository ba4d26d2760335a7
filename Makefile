# Entry points of the testbed. Every target that needs system packages runs `setup` first,
# which installs only what is missing (Debian packages, the pinned kernel's modules).
KERNEL ?= uml
PYTHON := /usr/bin/python3
export KERNEL
export PYTHONPATH := $(CURDIR)
# Mininet imports distutils; the standard library's is fast, setuptools' shim is not.
export SETUPTOOLS_USE_DISTUTILS := stdlib

# The experiment `make experiment` runs: a name in experiments/ or a .toml file.
EXP ?= demo
WORKERS ?=

.PHONY: all setup setup-test kernel build test test-core test-ftp test-virtual test-harness fidelity \
        bench-virtual bench-harness bench-ftp experiment smoke tables report clean

all: build

setup:
	bash docker/setup.sh

# setup, plus what only the tests use: Ansible and sshd, podman and debootstrap.
setup-test:
	bash docker/setup.sh --test-tools

# The time-travel kernel of KERNEL=uml-virtual. `setup` builds it (about 5 minutes on 2 cores,
# once: it is cached by a hash of its configuration and source version); this prints its path.
kernel: setup
	bash topology/kernel/timetravel/build.sh

build: setup
	$(MAKE) -C ftp-impl

# The whole suite, as CI runs it. Tests boot the pinned kernel themselves.
test: setup-test build
	$(PYTHON) -m pytest tests

test-core: setup
	$(PYTHON) -m pytest tests/core

test-ftp: setup build
	$(PYTHON) -m pytest tests/ftp

test-harness: setup build
	$(PYTHON) -m pytest tests/harness

test-virtual: kernel
	$(PYTHON) -m pytest tests/virtual

# Link fidelity of the E1 paths: prints a table, writes results/fidelity.json.
fidelity: setup
	$(PYTHON) -m topology fidelity --kernel $(KERNEL)

# Virtual time against real time on the E1 paths: prints a table, writes results/bench-virtual.json.
bench-virtual: kernel
	$(PYTHON) -m topology.fidelity.virtual_bench

# The main job: run (or resume) an experiment; results in results/$(EXP)/.
experiment: setup build
	$(PYTHON) -m experiments.harness run $(EXP) --kernel $(KERNEL) $(if $(WORKERS),--workers $(WORKERS))

smoke:
	$(MAKE) experiment EXP=smoke

# ftpc/ftpd against iperf3 and vsftpd: prints a table, writes results/bench-ftp.json.
bench-ftp: setup build
	$(MAKE) -C ftp-impl bench

# Harness overhead and parallel speed-up: prints a table, writes results/bench-harness.json.
bench-harness: setup build
	$(PYTHON) -m experiments.harness.bench

# Rebuild runs.csv, summary.csv and meta.json from the finished runs.
tables:
	$(PYTHON) -m experiments.harness tables $(EXP)

# Figures (PNG, PDF), speed-up tables and a self-contained report.html from the result files
# of an experiment: results/$(EXP)/report/. LOG=1 draws the time axes logarithmic.
report:
	$(PYTHON) -m analysis report $(EXP) $(if $(LOG),--log)

clean:
	rm -rf results/fidelity.json
	-$(MAKE) -C ftp-impl clean
