# Entry points of the testbed. Every target that needs system packages runs `setup` first,
# which installs only what is missing (Debian packages, the pinned kernel's modules).
KERNEL ?= uml
PYTHON := /usr/bin/python3
export KERNEL
export PYTHONPATH := $(CURDIR)
# Mininet imports distutils; the standard library's is fast, setuptools' shim is not.
export SETUPTOOLS_USE_DISTUTILS := stdlib

.PHONY: all setup build test test-core test-ftp fidelity experiment clean

all: build

setup:
	bash docker/setup.sh

build: setup
	$(MAKE) -C ftp-impl

# The whole suite, as CI runs it. Tests boot the pinned kernel themselves.
test: setup build
	$(PYTHON) -m pytest tests

test-core: setup
	$(PYTHON) -m pytest tests/core

test-ftp: setup build
	$(PYTHON) -m pytest tests/ftp

# Link fidelity of the E1 paths: prints a table, writes results/fidelity.json.
fidelity: setup
	$(PYTHON) -m topology fidelity --kernel $(KERNEL)

# The main job. Until the experiment harness lands it is the fidelity benchmark.
experiment: fidelity

clean:
	rm -rf results/fidelity.json
	-$(MAKE) -C ftp-impl clean
