#!/usr/bin/env bash
# Installs what building and testing bootprint needs on a Debian 12 machine, idempotently:
# Debian packages for the test bed (QEMU, debootstrap, e2fsprogs) and a Rust toolchain.
# Fast when everything is already there: it only asks apt when a package is missing.
set -euo pipefail

# libkmod-dev + pkg-config: the modules crate links libkmod; insserv: the rc tests compare
# our dependency graph with Debian's own tool.
# chromium: the HTML report test renders the report in a real headless browser.
# grub-common: grub-script-check reads the GRUB entries packaging/grub.d prints, and that
# script sources grub-common's grub-mkconfig_lib (crates/bootprint/tests/enable.rs).
# shellcheck: the packaging scripts' test (crates/bootprint/tests/enable.rs) checks them.
# cpio, xz-utils, zstd, lz4: the initramfs tests compare with the reference cpio reader and
# measure every compressor.
# dpkg-dev, debhelper, lintian: `make deb` and `make deb-check` (docs/packaging.md).
# ovmf: the test bed's UEFI boots (--firmware uefi); fdisk: sfdisk checks the GPT the test
# bed writes for its UEFI disk. btrfs-progs, xfsprogs: relocation's refusals are tested on
# loop-mounted btrfs and XFS.
# prometheus, prometheus-node-exporter: promtool checks the textfile export and the rules
# (crates/render/tests), and the fleet check runs both for real (docs/testbed.md, `fleet`).
# time: GNU time gives `bench fleet-view` the peak RSS; openssl: the otlp check makes its CA;
# systemd-journal-remote: crates/bootprint/tests/journal_cli.rs writes a real journal with it.
packages=(qemu-system-x86 qemu-utils debootstrap e2fsprogs ovmf fdisk btrfs-progs xfsprogs ca-certificates gcc make pkg-config libkmod-dev insserv chromium grub-common cpio xz-utils zstd lz4 dpkg-dev debhelper lintian shellcheck prometheus prometheus-node-exporter time openssl systemd-journal-remote)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Rust: rustup's toolchain when present (it is on our machines), else Debian's.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "install-deps: no cargo found; installing Debian's rustc and cargo"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        rustup component add rustfmt clippy >/dev/null 2>&1 || true
    fi
fi
echo "install-deps: ok ($(cargo --version))"
