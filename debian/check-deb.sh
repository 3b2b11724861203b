#!/bin/sh
# `make deb-check DEB`: checks a built package (docs/packaging.md, "Checks"):
#  1. lintian reports no error and no warning that debian/bootprint.lintian-overrides does
#     not accept;
#  2. its file list, owners, modes, link and conffiles are the expected ones, man pages and
#     completions as `bootprint man` / `bootprint completions` make them;
#  3. installed into a scratch root (dpkg --root, a fresh admin directory, the maintainer
#     scripts run chrooted with a few host tools copied in), then reinstalled (an upgrade),
#     removed with a failing `bootprint disable`, removed, and purged, it leaves exactly
#     what each step should. prerm's `bootprint disable` is a stand-in there (a script that
#     logs its arguments): the real one acts on the host's bootloader and init.
# Needs root (chroot); under a minute, half of it lintian's. Each failure names what was
# expected and what was found.
set -eu

deb=${1:?usage: debian/check-deb.sh PATH/bootprint_VERSION_ARCH.deb}
cd "$(dirname "$0")/.."
bin=target/release/bootprint
work=$(mktemp -d "${TMPDIR:-/tmp}/bootprint-deb-check.XXXXXX")
# DEB_CHECK_KEEP=1 keeps the scratch directory (logs, the scratch root) to look into.
trap '[ -n "${DEB_CHECK_KEEP:-}" ] && echo "deb-check: kept $work" || rm -rf "$work"' EXIT
fail() {
    echo "deb-check: FAIL: $*" >&2
    exit 1
}
step() { echo "deb-check: $*"; }

# 1. lintian. As root it warns that it should not be; nothing else it says is ignored.
step "lintian $deb"
lint_ok=yes
lintian --fail-on error,warning --display-info "$deb" >"$work/lintian.txt" 2>&1 || lint_ok=no
grep -v '^running with root privileges is not recommended!$' "$work/lintian.txt" || true
[ "$lint_ok" = yes ] \
    || fail "lintian reports an error or a warning (above) that debian/bootprint.lintian-overrides does not accept"

# 2. The file list: TYPE MODE OWNER PATH [-> TARGET], sorted.
step "file list, modes, conffiles"
dpkg-deb -c "$deb" | awk '{
    path = $6; sub(/^\.\//, "/", path); sub(/\/$/, "", path);
    if (path == "") next;
    line = substr($1, 1, 1) " " $1 " " $2 " " path;
    if ($7 == "->") line = line " -> " $8;
    print line }' | sort >"$work/have"
# Man pages and completions: what the binary makes now, so a new verb needs no edit here.
mkdir -p "$work/man"
"$bin" man "$work/man"
{
    for m in "$work"/man/*.1; do
        echo "- -rw-r--r-- root/root /usr/share/man/man1/$(basename "$m").gz"
    done
    # dh_compress compresses a doc above 4 KiB.
    for d in README.md docs/*.md; do
        [ "$(wc -c <"$d")" -gt 4096 ] && gz=.gz || gz=
        echo "- -rw-r--r-- root/root /usr/share/doc/bootprint/$d$gz"
    done
    cat <<'EOF'
- -rw-r--r-- root/root /usr/share/doc/bootprint/changelog.gz
- -rw-r--r-- root/root /usr/share/doc/bootprint/copyright
- -rw-r--r-- root/root /etc/bootprint/bootprint.toml
- -rwxr-xr-x root/root /etc/grub.d/42_bootprint
- -rwxr-xr-x root/root /etc/kernel/postinst.d/zz-bootprint
- -rwxr-xr-x root/root /etc/kernel/postrm.d/zz-bootprint
- -rwxr-xr-x root/root /usr/bin/bootprint
- -rwxr-xr-x root/root /usr/lib/bootprint/bootprint-boot
- -rwxr-xr-x root/root /usr/lib/bootprint/startpar-wrapper
- -rwxr-xr-x root/root /usr/lib/bootprint/preload-hook
- -rwxr-xr-x root/root /usr/lib/kernel/install.d/91-bootprint.install
- -rw-r--r-- root/root /usr/share/lightdm/lightdm.conf.d/60-bootprint-preload.conf
- -rw-r--r-- root/root /usr/share/bootprint/prometheus/bootprint.rules.yml
- -rw-r--r-- root/root /usr/share/bootprint/grafana/bootprint-fleet.json
- -rw-r--r-- root/root /usr/share/bash-completion/completions/bootprint
- -rw-r--r-- root/root /usr/share/zsh/vendor-completions/_bootprint
- -rw-r--r-- root/root /usr/share/fish/vendor_completions.d/bootprint.fish
- -rw-r--r-- root/root /usr/share/lintian/overrides/bootprint
l lrwxrwxrwx root/root /usr/lib/systemd/system-generators/bootprint-late-generator -> ../../bootprint/bootprint-boot
l lrwxrwxrwx root/root /usr/lib/systemd/system-shutdown/bootprint-kexec -> ../../bootprint/bootprint-boot
d drwxr-xr-x root/root /var/lib/bootprint
d drwxr-x--- root/root /var/log/bootprint
EOF
} >"$work/files"
# Every directory above those is a plain 0755 one, unless listed above.
awk '{ p = $4; while (sub(/\/[^\/]*$/, "", p) && p != "") print "d drwxr-xr-x root/root " p }' \
    "$work/files" | sort -u >"$work/dirs"
awk 'NR == FNR { seen[$4] = 1; print; next } !($4 in seen) { print }' "$work/files" "$work/dirs" \
    | sort >"$work/want"
if ! diff -u "$work/want" "$work/have" >"$work/diff"; then
    cat "$work/diff" >&2
    fail "the package's files (+) are not the expected ones (-)"
fi
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$work/conffiles"
printf '%s\n' /etc/bootprint/bootprint.toml /etc/grub.d/42_bootprint \
    /etc/kernel/postinst.d/zz-bootprint /etc/kernel/postrm.d/zz-bootprint | sort >"$work/want-conf"
sort "$work/conffiles" | diff -u "$work/want-conf" - >&2 \
    || fail "conffiles (+) are not the expected ones (-)"
# The generated files are what the tree makes now.
dpkg-deb -x "$deb" "$work/pkg"
cmp -s "$work/pkg/etc/bootprint/bootprint.toml" packaging/bootprint.toml \
    || fail "the packaged /etc/bootprint/bootprint.toml is not packaging/bootprint.toml"
for m in "$work"/man/*.1; do
    p=/usr/share/man/man1/$(basename "$m").gz
    zcat "$work/pkg$p" | cmp -s - "$m" || fail "$p is not what \`bootprint man\` writes"
done
for s in bash:/usr/share/bash-completion/completions/bootprint \
    zsh:/usr/share/zsh/vendor-completions/_bootprint \
    fish:/usr/share/fish/vendor_completions.d/bootprint.fish; do
    "$bin" completions "${s%%:*}" | cmp -s - "$work/pkg${s#*:}" \
        || fail "${s#*:} is not \`bootprint completions ${s%%:*}\`"
done

# 3. A scratch root: the tools the maintainer scripts call, with their libraries, and the
#    files a Debian system has (a group adm). Everything else is what the package brings.
step "install, upgrade, remove, purge in a scratch root"
root=$work/root
mkdir -p "$root/etc" "$root/tmp" "$root/boot" "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" \
    "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
mkdir -p "$root/dev"
mknod -m 0666 "$root/dev/null" c 1 3
printf 'root:x:0:\nadm:x:4:\n' >"$root/etc/group"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'passwd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
for tool in sh rm grep getent dpkg-statoverride; do
    path=$(command -v "$tool") || fail "$tool: not found on the host"
    real=$(readlink -f "$path")
    mkdir -p "$root/bin"
    cp "$real" "$root/bin/$tool"
    ldd "$real" | awk '/=>/ { print $3 } /^\t\/.*ld-linux/ { print $1 }' | while read -r lib; do
        [ -n "$lib" ] || continue
        mkdir -p "$root$(dirname "$lib")"
        cp -n "$lib" "$root$lib"
    done
done
# dpkg reads these through the C library's NSS for getent and for its own owner lookups.
for lib in /lib/x86_64-linux-gnu/libnss_files.so.2; do
    [ -e "$lib" ] && cp -n "$lib" "$root$lib" || true
done
mkdir -p "$root/usr/bin" "$root/usr/sbin"
ln -s /bin/sh "$root/usr/bin/sh"
# Things bootprint wrote on an earlier boot that must survive everything except a purge.
snapshot() {
    (cd "$root" && find . -path ./var/lib/dpkg -prune -o -print | sort)
}
snapshot >"$work/before"
dpkg_root() {
    dpkg --root="$root" --force-depends --log=/dev/null "$@"
}
status_of() {
    dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${db:Status-Status}' bootprint 2>/dev/null || echo absent
}
mode_of() { stat -c '%A %U:%G' "$root$1"; }

dpkg_root -i "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "dpkg -i into the scratch root"; }
[ "$(status_of)" = installed ] || fail "after install: expected status installed, found $(status_of)"
[ "$(mode_of /var/log/bootprint)" = "drwxr-x--- root:adm" ] \
    || fail "/var/log/bootprint: expected drwxr-x--- root:adm (postinst's statoverride), found $(mode_of /var/log/bootprint)"
[ "$(mode_of /var/lib/bootprint)" = "drwxr-xr-x root:root" ] \
    || fail "/var/lib/bootprint: expected drwxr-xr-x root:root, found $(mode_of /var/lib/bootprint)"
[ "$(readlink -f "$root/usr/lib/systemd/system-generators/bootprint-late-generator")" = "$root/usr/lib/bootprint/bootprint-boot" ] \
    || fail "the generator link does not lead to bootprint-boot"
[ "$(readlink -f "$root/usr/lib/systemd/system-shutdown/bootprint-kexec")" = "$root/usr/lib/bootprint/bootprint-boot" ] \
    || fail "the shutdown hook's link does not lead to bootprint-boot"
# Installing changes nothing but the package's own files (and dpkg's database): no
# bootloader file, no init, nothing in /boot.
snapshot >"$work/installed"
dpkg-query --admindir="$root/var/lib/dpkg" -L bootprint | sed 's|^/|./|' | sort >"$work/owned"
comm -13 "$work/before" "$work/installed" | comm -23 - "$work/owned" >"$work/extra"
[ ! -s "$work/extra" ] || { cat "$work/extra" >&2; fail "install created files the package does not own (above)"; }

# The stand-in for `bootprint disable`: logs its arguments; `exit 1` when told to fail.
standin() {
    printf '#!/bin/sh\necho "$*" >>/tmp/bootprint-calls\nexit %s\n' "$1" >"$root/usr/bin/bootprint"
    chmod 0755 "$root/usr/bin/bootprint"
}
# What bootprint writes while in use.
mkdir -p "$root/var/log/bootprint/b1"
echo trace >"$root/var/log/bootprint/b1/header"
ln -s b1 "$root/var/log/bootprint/latest"
echo pack >"$root/var/lib/bootprint/readahead.pack"
echo 'login = $syslog' >"$root/etc/bootprint/rc.conf"
echo image >"$root/boot/bootprint-initrd.img-6.1.0-test"
echo '[record]' >>"$root/etc/bootprint/bootprint.toml"

# An upgrade (the same version again: prerm gets `upgrade`) keeps the levers.
standin 0
dpkg_root -i "$deb" >"$work/upgrade.log" 2>&1 || { cat "$work/upgrade.log" >&2; fail "reinstall (upgrade)"; }
[ ! -e "$root/tmp/bootprint-calls" ] \
    || fail "an upgrade ran bootprint $(cat "$root/tmp/bootprint-calls"); expected no call (levers kept)"
cmp -s "$work/pkg/usr/bin/bootprint" "$root/usr/bin/bootprint" || fail "the upgrade did not put the package's bootprint back"
tail -n1 "$root/etc/bootprint/bootprint.toml" | grep -qx '\[record\]' \
    || fail "the upgrade did not keep the edited conffile"

# A failing `bootprint disable` stops the removal: bootprint stays, the boot is unchanged.
standin 1
if dpkg_root --remove bootprint >"$work/remove-fail.log" 2>&1; then
    fail "remove went on although bootprint disable failed"
fi
grep -q "bootprint stays installed" "$work/remove-fail.log" \
    || { cat "$work/remove-fail.log" >&2; fail "prerm did not say why it stopped"; }
[ "$(status_of)" = installed ] || fail "after a failed disable: expected installed, found $(status_of)"
[ -x "$root/usr/lib/bootprint/bootprint-boot" ] || fail "after a failed disable bootprint-boot is gone"
[ "$(cat "$root/tmp/bootprint-calls")" = disable ] || fail "expected one 'bootprint disable', found: $(cat "$root/tmp/bootprint-calls")"
rm "$root/tmp/bootprint-calls"

# Remove: disable runs once; the program goes, the conffiles, state and traces stay.
standin 0
dpkg_root --remove bootprint >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; fail "remove"; }
[ "$(cat "$root/tmp/bootprint-calls")" = disable ] || fail "remove: expected one 'bootprint disable', found: $(cat "$root/tmp/bootprint-calls")"
rm "$root/tmp/bootprint-calls"
[ "$(status_of)" = config-files ] || fail "after remove: expected status config-files, found $(status_of)"
snapshot >"$work/removed"
comm -13 "$work/before" "$work/removed" >"$work/left"
cat >"$work/want-left" <<'EOF'
./boot/bootprint-initrd.img-6.1.0-test
./etc/bootprint
./etc/bootprint/bootprint.toml
./etc/bootprint/rc.conf
./etc/grub.d
./etc/grub.d/42_bootprint
./etc/kernel
./etc/kernel/postinst.d
./etc/kernel/postinst.d/zz-bootprint
./etc/kernel/postrm.d
./etc/kernel/postrm.d/zz-bootprint
./var/lib/bootprint
./var/lib/bootprint/readahead.pack
./var/log
./var/log/bootprint
./var/log/bootprint/b1
./var/log/bootprint/b1/header
./var/log/bootprint/latest
EOF
diff -u "$work/want-left" "$work/left" >&2 || fail "after remove, what is left (+) is not what should be (-)"

# Purge: nothing of bootprint's is left, the statoverride neither.
dpkg_root --purge bootprint >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "purge"; }
[ "$(status_of)" = absent ] || [ "$(status_of)" = not-installed ] || fail "after purge: expected no package, found $(status_of)"
snapshot >"$work/purged"
diff -u "$work/before" "$work/purged" >&2 || fail "after purge the scratch root is not as before install (+: left behind)"
[ ! -s "$root/var/lib/dpkg/statoverride" ] || fail "after purge a statoverride is left: $(cat "$root/var/lib/dpkg/statoverride")"
step "ok: lintian clean, $(wc -l <"$work/have") entries as expected, install/upgrade/remove/purge as they should"
