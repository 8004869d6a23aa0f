#!/bin/sh
# Installs the `stateous` binary small, its debug information in a file beside it.
#
#   scripts/install.sh [--root DIR]     # DIR/bin/stateous and DIR/bin/stateous.debug
#
# It runs `cargo install --path .` (DIR: $CARGO_INSTALL_ROOT, else $CARGO_HOME,
# else ~/.cargo, as cargo's; an `install.root` in a cargo config is not read),
# then moves the binary's debug information (its line tables) into
# `stateous.debug` and leaves a `.gnu_debuglink` to it: the binary drops from
# 57 MB to 28 MB. A panic's backtrace (RUST_BACKTRACE=1), gdb and addr2line find
# `stateous.debug` beside the binary and print file:line; without it, a backtrace
# still names the functions. Needs `objcopy` (binutils; another one, such as
# llvm-objcopy, in $OBJCOPY).
set -eu

root="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || { echo "error: --root needs a folder" >&2; exit 1; }
                root="$2"; shift 2 ;;
        --root=*) root="${1#--root=}"; shift ;;
        -h|--help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1' (only --root DIR)" >&2; exit 1 ;;
    esac
done

objcopy="${OBJCOPY:-objcopy}"
command -v "$objcopy" >/dev/null 2>&1 || {
    echo "error: $objcopy is not installed; install binutils, or use \`cargo install --path .\` for one larger binary" >&2
    exit 1
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
# --force: cargo leaves an installed binary of the same version alone otherwise,
# and that one has already given its debug information away.
cargo install --path "$repo" --root "$root" --force

bin="$root/bin/stateous"
"$objcopy" --only-keep-debug "$bin" "$bin.debug"
chmod 0644 "$bin.debug"
# The link records the debug file's name and checksum. The stripped copy replaces
# the binary by a rename: writing over a running executable would fail.
"$objcopy" --strip-debug --add-gnu-debuglink="$bin.debug" "$bin" "$bin.new"
mv "$bin.new" "$bin"
echo "installed $bin ($(du -h "$bin" | cut -f1)) and its debug information, $bin.debug ($(du -h "$bin.debug" | cut -f1))" >&2
