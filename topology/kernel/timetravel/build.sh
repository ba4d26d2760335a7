#!/usr/bin/env bash
# Builds the time-travel User-Mode Linux kernel of the `uml-virtual` backend from Debian's
# linux-source-6.1 with the configuration kept beside this script (uml-timetravel.config) and the
# patches in patches/ (applied in name order), and caches the binary by a hash of that
# configuration, the patches, the source package's version and this recipe's version: a second
# run with the same inputs builds nothing.
#
#   build.sh                 build if needed; print the binary's path
#   build.sh --print-path    print where the binary for the current inputs lives; exit 1 if absent
#   build.sh --regenerate    rewrite uml-timetravel.config from `make ARCH=um defconfig` plus the
#                            settings in uml-timetravel.options (after changing the options)
#
# Environment: TESTBED_KERNEL_CACHE (default /var/cache/testbed), TESTBED_KERNEL_JOBS (default:
# the number of cores). Needs the packages docker/setup.sh installs (linux-source-6.1, gcc, make,
# flex, bison, bc, xz-utils).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config_file="$here/uml-timetravel.config"
options_file="$here/uml-timetravel.options"
patches_dir="$here/patches"
source_package=linux-source-6.1
tarball=/usr/src/linux-source-6.1.tar.xz
cache=${TESTBED_KERNEL_CACHE:-/var/cache/testbed}
jobs=${TESTBED_KERNEL_JOBS:-$(nproc)}
# Bump when the way the binary is made changes (not the configuration: that is hashed itself).
recipe=2

log() { printf 'kernel: %s\n' "$*" >&2; }
die() { printf 'kernel: BUILD FAILED: %s\n' "$*" >&2; exit 1; }

source_version() {
  local version
  version=$(dpkg-query -W -f='${Version}' "$source_package" 2>/dev/null || true)
  if [ -z "$version" ] || [ ! -f "$tarball" ]; then
    die "Debian's $source_package is not installed ($tarball missing): run 'make setup'"
  fi
  printf '%s\n' "$version"
}

patches() {
  find "$patches_dir" -maxdepth 1 -name '*.patch' 2>/dev/null | LC_ALL=C sort
}

patches_hash() {
  local patch
  for patch in $(patches); do
    printf '%s\n' "$(basename "$patch")"
    cat "$patch"
  done | sha256sum | cut -c1-16
}

cache_key() {
  { printf 'recipe %s\nsource %s %s\npatches %s\n' "$recipe" "$source_package" \
      "$(source_version)" "$(patches_hash)"
    cat "$config_file"; } | sha256sum | cut -c1-16
}

# The source tree, unpacked once per source version.
unpacked_source() {
  local version=$1 dir="$cache/src/$source_package-$1"
  if [ ! -f "$dir/.unpacked" ]; then
    log "unpacking $tarball ($source_package $version)"
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp"
    tar -C "$dir.tmp" -xf "$tarball" --strip-components=1 || die "cannot unpack $tarball"
    touch "$dir.tmp/.unpacked"
    mv "$dir.tmp" "$dir"
  fi
  printf '%s\n' "$dir"
}

# The unpacked source with the patches applied: a tree of hard links to the pristine one, in
# which every file a patch touches is first replaced by a copy, so the pristine tree stays so.
patched_source() {
  local version=$1 pristine dir patch file
  pristine=$(unpacked_source "$version")
  [ -n "$(patches)" ] || { printf '%s\n' "$pristine"; return; }
  dir="$cache/src/$source_package-$version-patched-$(patches_hash)"
  if [ ! -f "$dir/.patched" ]; then
    log "applying $(patches | wc -l) patch(es) from $patches_dir"
    rm -rf "$dir" "$dir.tmp"
    cp -al "$pristine" "$dir.tmp" || die "cannot link $pristine to $dir.tmp"
    rm -f "$dir.tmp/.unpacked"
    for patch in $(patches); do
      # the files a patch changes become copies first: the tree is hard links to the source
      while read -r file; do
        [ -f "$dir.tmp/$file" ] || continue
        if ! { cp "$dir.tmp/$file" "$dir.tmp/$file.copy" &&
               mv "$dir.tmp/$file.copy" "$dir.tmp/$file"; }; then
          die "cannot copy $file"
        fi
      done < <(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$patch")
      patch -d "$dir.tmp" -p1 -s --forward --no-backup-if-mismatch < "$patch" \
        || die "$(basename "$patch") does not apply to $source_package $version"
    done
    touch "$dir.tmp/.patched"
    mv "$dir.tmp" "$dir"
  fi
  printf '%s\n' "$dir"
}

# Every setting the options file asks for must hold in the final configuration.
check_options() {
  local config=$1 action name value bad=0
  while read -r action name value; do
    case "$action" in
      ''|'#'*) continue ;;
      enable)  grep -qx "CONFIG_$name=y" "$config" || { log "not set: $name=y"; bad=1; } ;;
      disable) ! grep -q "^CONFIG_$name=" "$config" || { log "still set: $name"; bad=1; } ;;
      set-val) grep -qx "CONFIG_$name=$value" "$config" || { log "not set: $name=$value"; bad=1; } ;;
      set-str) grep -qx "CONFIG_$name=\"$value\"" "$config" || { log "not set: $name=\"$value\""; bad=1; } ;;
      *) die "unknown action '$action' in $options_file" ;;
    esac
  done < "$options_file"
  return $bad
}

regenerate() {
  local version src out args=() action name value
  version=$(source_version)
  src=$(unpacked_source "$version")
  out=$(mktemp -d)
  trap 'rm -rf "$out"' RETURN
  make -s -C "$src" O="$out" ARCH=um defconfig >/dev/null
  while read -r action name value; do
    case "$action" in
      ''|'#'*) continue ;;
      set-val|set-str) args+=("--$action" "$name" "$value") ;;
      *) args+=("--$action" "$name") ;;
    esac
  done < "$options_file"
  "$src/scripts/config" --file "$out/.config" "${args[@]}"
  make -s -C "$src" O="$out" ARCH=um olddefconfig >/dev/null
  check_options "$out/.config" || die "some settings in $options_file did not take (see above)"
  cp "$out/.config" "$config_file"
  log "wrote $config_file ($source_package $version)"
}

build() {
  local version key dest src out logf
  version=$(source_version)
  key=$(cache_key)
  dest="$cache/kernels/$key"
  if [ -x "$dest/linux.uml" ]; then
    log "time-travel kernel up to date: $dest/linux.uml"
    printf '%s\n' "$dest/linux.uml"
    return
  fi
  mkdir -p "$cache/kernels"
  exec 9> "$cache/kernels/.lock"
  flock 9        # another build of the same kernel may be running: wait for it
  if [ -x "$dest/linux.uml" ]; then
    printf '%s\n' "$dest/linux.uml"
    return
  fi
  for tool in gcc make flex bison bc xz patch; do
    command -v "$tool" >/dev/null || die "'$tool' is missing: run 'make setup'"
  done
  src=$(patched_source "$version")
  out="$cache/build/$key"
  logf="$cache/build/$key.log"
  mkdir -p "$out"
  cp "$config_file" "$out/.config"
  log "building the time-travel kernel ($source_package $version, config $key) with $jobs jobs;"
  log "about 5 minutes on 2 cores; log: $logf"
  local started=$SECONDS
  if ! make -C "$src" O="$out" ARCH=um olddefconfig > "$logf" 2>&1; then
    tail -n 30 "$logf" >&2
    die "'make olddefconfig' failed; full log: $logf"
  fi
  check_options "$out/.config" \
    || die "$config_file no longer gives the settings in $options_file with $source_package $version: run '$0 --regenerate'"
  if ! cmp -s "$config_file" "$out/.config"; then
    log "note: olddefconfig changed settings not in $options_file (source $version differs from the config's):"
    diff "$config_file" "$out/.config" | grep '^[<>] CONFIG' | head -n 20 >&2 || true
  fi
  if ! make -C "$src" O="$out" ARCH=um -j"$jobs" linux >> "$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "compiling the kernel failed; full log: $logf"
  fi
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp"
  strip -o "$dest.tmp/linux.uml" "$out/linux" || die "strip failed"
  "$dest.tmp/linux.uml" --version > "$dest.tmp/release" 2>&1 || true
  cp "$out/.config" "$dest.tmp/config"
  printf '%s %s\n' "$source_package" "$version" > "$dest.tmp/source"
  for patch in $(patches); do
    printf 'patch %s %s\n' "$(basename "$patch")" "$(sha256sum < "$patch" | cut -c1-16)"
  done >> "$dest.tmp/source"
  gcc --version | head -n 1 > "$dest.tmp/compiler"
  xz -c "$logf" > "$dest.tmp/build.log.xz"
  mv "$dest.tmp" "$dest"
  rm -rf "$out" "$logf"
  log "built in $((SECONDS - started)) s: $dest/linux.uml"
  printf '%s\n' "$dest/linux.uml"
}

case "${1:-}" in
  "") build ;;
  --print-path)
    path="$cache/kernels/$(cache_key)/linux.uml"
    printf '%s\n' "$path"
    [ -x "$path" ] ;;
  --regenerate) regenerate ;;
  *) echo "usage: $0 [--print-path | --regenerate]" >&2; exit 2 ;;
esac
