#!/bin/sh
# `make deb`: bootprint_<version>_<arch>.deb from the tree's release binaries, into
# target/debian/ (with its .buildinfo and .changes), by dpkg-buildpackage and debian/rules
# (docs/packaging.md). Run after `cargo build --release` (`make deb` does both).
set -eu
cd "$(dirname "$0")/.."
dest=target/debian

# The package's version is the workspace's: debian/changelog must say the same.
cargo_version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
deb_version=$(dpkg-parsechangelog -SVersion)
if [ -z "$cargo_version" ] || [ "$cargo_version" != "$deb_version" ]; then
    echo "build-deb: debian/changelog:1: expected version ($cargo_version), the version in Cargo.toml's [workspace.package], found ($deb_version); add a changelog entry (dch -v $cargo_version)" >&2
    exit 1
fi

# The files the package installs from packaging/, named before dpkg-buildpackage's noise.
for f in bootprint.toml startpar-wrapper kernel-postinst kernel-postrm kernel-install grub.d preload-hook preload-lightdm.conf prometheus-rules.yml grafana-dashboard.json; do
    if [ ! -f "packaging/$f" ]; then
        echo "build-deb: packaging/$f: missing (debian/rules installs it; docs/packaging.md lists what each file is)" >&2
        exit 1
    fi
done

arch=$(dpkg --print-architecture)
name="bootprint_${deb_version}_${arch}"
rm -rf "$dest"
mkdir -p "$dest"
# -b: binary only, nothing to upload; -us -uc: unsigned. The .buildinfo and .changes go
# beside the .deb (target/debian/) rather than into the directory above the tree.
dpkg-buildpackage -b -us -uc \
    --buildinfo-file="$dest/$name.buildinfo" --buildinfo-option=-u"$dest" \
    --changes-file="$dest/$name.changes" --changes-option=-u"$dest"
# What the build left in debian/, so the tree is as it was.
dh_clean
ls -l "$dest/$name.deb"
