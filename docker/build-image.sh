#!/usr/bin/env bash
# Builds the container image from docker/Dockerfile with the Docker engine when one answers
# (`docker info`), else with podman, which needs no daemon. `make image` runs this.
#
#   build-image.sh IMAGE BASE_IMAGE [more build options]
#
# CONTAINER_ENGINE=docker or podman chooses instead of the detection (default: auto).
#
# podman is run with runc and explicit limits: the default runtime (crun) refuses hybrid cgroup
# hierarchies, and without explicit limits the runtime's setrlimit is refused on such hosts
# (see ../shared/PLATFORM.md, "Containers"). The build's apt-get reaches the package archive
# through the engine's default build network; the container itself never needs a network.
set -euo pipefail

[ "$#" -ge 2 ] || { echo "usage: $0 IMAGE BASE_IMAGE [build options]" >&2; exit 2; }
image=$1 base=$2
shift 2
cd "$(dirname "${BASH_SOURCE[0]}")/.."

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
engine=${CONTAINER_ENGINE:-auto}
case "$engine" in auto|docker|podman) ;; *)
  echo "image: CONTAINER_ENGINE must be auto, docker or podman, not '$engine'" >&2; exit 2 ;;
esac
if [ "$engine" != podman ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  builder=(docker build)
elif [ "$engine" = docker ]; then
  echo "image: CONTAINER_ENGINE=docker, but no Docker engine answers ('docker info' fails)" >&2
  exit 1
elif command -v podman >/dev/null; then
  builder=(podman)
  if command -v runc >/dev/null; then
    builder+=(--runtime runc)
  fi
  builder+=(build --ulimit nofile=1024:1024 --ulimit nproc=1000:1000)
else
  echo "image: no Docker engine answers and podman is not installed: run 'make setup-test'" >&2
  exit 1
fi

# The project's kernel, when this machine has already built it from the same inputs (source
# package version, configuration, patches, recipe: build.sh's cache key), is handed to the build
# in docker/kernel-seed/: the image's setup.sh then finds it under the key it computes itself
# and compiles nothing. An image whose inputs differ (another linux-source-6.1 in its archive)
# computes another key and builds its own. TESTBED_IMAGE_KERNEL_SEED=0 always builds inside.
seed=docker/kernel-seed
rm -rf "$seed"
mkdir -p "$seed"
trap 'rm -rf "$seed"' EXIT
if [ "${TESTBED_IMAGE_KERNEL_SEED:-1}" != 0 ] &&
   built=$(bash topology/kernel/timetravel/build.sh --print-path 2>/dev/null); then
  cp -a "$(dirname "$built")" "$seed/"
  echo "image: reusing this machine's kernel build $(basename "$(dirname "$built")") (same inputs)" >&2
fi

echo "image: ${builder[*]} -t $image (base $base)" >&2
started=$SECONDS
"${builder[@]}" -f docker/Dockerfile -t "$image" \
  --build-arg BASE_IMAGE="$base" --build-arg TESTBED_COMMIT="$commit" "$@" .
echo "image: built $image in $((SECONDS - started)) s" >&2
