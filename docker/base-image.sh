#!/usr/bin/env bash
# Makes a Debian bookworm base image locally, for machines that reach the Debian package archive
# but no container registry (CI): debootstrap into a folder, then import the folder as an image.
# The archive is the one this machine's own apt sources name; the image gets the same bookworm
# entries (main, updates, security) so that apt inside it sees what apt here sees.
#
#   base-image.sh [IMAGE]          default IMAGE: localhost/bookworm-base
#   base-image.sh --print-sources  print the apt entries the image would get, and stop
#
# APT_ETC (default /etc/apt) is where this machine's apt sources are read from.
# Cached: does nothing when IMAGE already exists in local podman storage (remove it with
# `podman rmi IMAGE` to make it again). Needs root, podman, runc and debootstrap
# (`make setup-test` installs them).
set -euo pipefail

print_only=0
image=localhost/bookworm-base
for arg in "$@"; do
  case "$arg" in
    --print-sources) print_only=1 ;;
    -*) echo "usage: $0 [--print-sources] [IMAGE]" >&2; exit 2 ;;
    *) image=$arg ;;
  esac
done
suite=bookworm
apt_etc=${APT_ETC:-/etc/apt}
podman=(podman --runtime runc)

log() { printf 'base-image: %s\n' "$*" >&2; }
die() { printf 'base-image: %s\n' "$*" >&2; exit 1; }

# The enabled Debian entries of this machine's apt sources for $suite and its -updates and
# -security suites, as one deb822 file; the first URI is the archive debootstrap fetches from.
# Both apt formats are read: one-line /etc/apt/sources.list and deb822 *.sources files.
apt_entries() {
  /usr/bin/python3 - "$suite" "$apt_etc" <<'PY'
import glob
import sys

suite, apt_etc = sys.argv[1], sys.argv[2]
wanted = {suite, f"{suite}-updates", f"{suite}-security"}


def deb822_stanzas(text: str) -> list[dict[str, str]]:
    stanzas, fields, key = [], {}, None
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, key = {}, None
        elif line[0].isspace() and key:
            fields[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
    return stanzas


def one_line_entries(text: str) -> list[dict[str, str]]:
    entries = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 3 or words[0] != "deb":
            continue
        options = ""
        if words[1].startswith("["):
            end = next(i for i, w in enumerate(words) if w.endswith("]"))
            options, words = " ".join(words[1:end + 1]).strip("[]"), [words[0], *words[end + 1:]]
        entry = {"types": "deb", "uris": words[1], "suites": words[2],
                 "components": " ".join(words[3:])}
        for option in options.split():
            name, _, value = option.partition("=")
            if name == "signed-by":
                entry["signed-by"] = value
        entries.append(entry)
    return entries


entries = []
for path in [f"{apt_etc}/sources.list"]:
    try:
        entries += one_line_entries(open(path).read())
    except FileNotFoundError:
        pass
for path in sorted(glob.glob(f"{apt_etc}/sources.list.d/*.sources")):
    entries += deb822_stanzas(open(path).read())
for path in sorted(glob.glob(f"{apt_etc}/sources.list.d/*.list")):
    entries += one_line_entries(open(path).read())

kept = []
for entry in entries:
    if entry.get("enabled", "yes").lower() == "no" or "deb" not in entry.get("types", "").split():
        continue
    suites = [s for s in entry.get("suites", "").split() if s in wanted]
    if not suites:
        continue
    lines = ["Types: deb", f"URIs: {entry['uris'].split()[0]}", f"Suites: {' '.join(suites)}",
             f"Components: {entry.get('components') or 'main'}"]
    if entry.get("signed-by"):
        lines.append(f"Signed-By: {entry['signed-by']}")
    kept.append((suite in suites, "\n".join(lines)))
if not any(main for main, _ in kept):
    sys.exit(f"no enabled 'deb' entry for {suite} in {apt_etc}/sources.list or "
             f"{apt_etc}/sources.list.d/: cannot tell which Debian archive to use")
# the entry carrying the suite itself first: its URI is the archive to bootstrap from
kept.sort(key=lambda item: not item[0])
print("\n\n".join(text for _, text in kept))
PY
}

sources=$(apt_entries) || die "cannot read this machine's apt sources"
if [ "$print_only" -eq 1 ]; then
  printf '%s\n' "$sources"
  exit 0
fi

for tool in podman debootstrap runc; do
  command -v "$tool" >/dev/null || die "'$tool' is missing: run 'make setup-test'"
done
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap creates device nodes and owners)"
if "${podman[@]}" image exists "$image"; then
  log "$image already exists; nothing to do"
  exit 0
fi

mirror=$(printf '%s\n' "$sources" | sed -n 's/^URIs: //p' | head -n 1)
log "bootstrapping $suite from $mirror (this machine's apt sources)"

rootfs=$(mktemp -d /var/tmp/bookworm-rootfs.XXXXXX)
# A debootstrap that failed part-way may leave /proc or /sys mounted inside the folder: unmount
# before removing, and never let the removal cross into another filesystem.
remove_rootfs() {
  findmnt -rn -o TARGET | grep -F "$rootfs/" | sort -r | xargs -r -n 1 umount -l || true
  rm -rf --one-file-system "$rootfs"
}
trap remove_rootfs EXIT
started=$SECONDS
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >&2 \
  || die "debootstrap failed (log: $rootfs/debootstrap/debootstrap.log)"
rm -f "$rootfs/etc/apt/sources.list"
printf '%s\n' "$sources" > "$rootfs/etc/apt/sources.list.d/debian.sources"
# the package lists of the bootstrap only take room: every build runs apt-get update anyway
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
tar -C "$rootfs" -c . | "${podman[@]}" import --quiet - "$image" >/dev/null
log "made $image in $((SECONDS - started)) s"
