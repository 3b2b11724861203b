#!/bin/sh
# bootprint: /etc/grub.d/42_bootprint, run by grub-mkconfig (update-grub) after Debian's
# 10_linux. Only when `bootprint enable --initramfs` switched bootprint's initramfs on (the
# line `lever initramfs` in /var/lib/bootprint/enabled) it prints one menu entry per kernel
# that has /boot/bootprint-initrd.img-RELEASE: the same kernel, root device and command line
# as 10_linux's normal entry (GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT, which
# carry bootprint's parameters from /etc/default/grub.d/bootprint.cfg), with bootprint's
# initramfs. The newest kernel's entry has the id `bootprint-initramfs`, the others
# `bootprint-initramfs-RELEASE`; it is the default only when `bootprint enable --default`
# set GRUB_DEFAULT to it. The distribution's entries come first and stay as they are.
# Otherwise, or with bootprint removed (this file is a conffile and stays), it prints
# nothing. The conventions are 10_linux's (grub-common), followed, not copied.
# BOOTPRINT_ROOT: the root the files are under (tests run it on a fake tree); unset: /.
# shellcheck disable=SC1091,SC2034,SC2154,SC2268,SC2018,SC2019
# (10_linux's style, kept for comparison: prefix and exec_prefix are read by the library,
# grub_probe is set by it, x-prefixed tests and A-Z ranges as it has them.)
set -e
R="${BOOTPRINT_ROOT:-}"
[ -x "$R/usr/bin/bootprint" ] || exit 0
grep -qx 'lever initramfs' "$R/var/lib/bootprint/enabled" 2>/dev/null || exit 0

prefix="/usr"
exec_prefix="/usr"
datarootdir="/usr/share"
# grub-mkconfig exports pkgdatadir; run by hand, GRUB's default.
[ -n "$pkgdatadir" ] || pkgdatadir="${datarootdir}/grub"
[ -f "$pkgdatadir/grub-mkconfig_lib" ] || exit 0
. "$pkgdatadir/grub-mkconfig_lib"

# The kernels with bootprint's initramfs, as 10_linux names them (vmlinuz-RELEASE).
list=
for i in "$R"/boot/vmlinuz-*; do
	[ -f "$i" ] || continue
	version="${i##*/vmlinuz-}"
	if [ -f "$R/boot/bootprint-initrd.img-$version" ]; then
		list="$list vmlinuz-$version"
	fi
done
[ -n "$list" ] || exit 0

CLASS="--class gnu-linux --class gnu --class os"
if [ "x${GRUB_DISTRIBUTOR}" = "x" ]; then
	OS=GNU/Linux
else
	case ${GRUB_DISTRIBUTOR} in
	Ubuntu | Kubuntu) OS="${GRUB_DISTRIBUTOR}" ;;
	*) OS="${GRUB_DISTRIBUTOR} GNU/Linux" ;;
	esac
	CLASS="--class $(echo "${GRUB_DISTRIBUTOR}" | tr 'A-Z' 'a-z' | cut -d' ' -f1 | LC_ALL=C sed 's,[^[:alnum:]_],_,g') ${CLASS}"
fi

# grub-mkconfig exports the devices; run by hand, ask grub-probe as it does.
[ -n "${GRUB_DEVICE}" ] || GRUB_DEVICE="$("${grub_probe}" --target=device /)"
[ -n "${GRUB_DEVICE_BOOT}" ] || GRUB_DEVICE_BOOT="$("${grub_probe}" --target=device /boot)"
[ -n "${GRUB_DEVICE_UUID}" ] || GRUB_DEVICE_UUID="$("${grub_probe}" --device "${GRUB_DEVICE}" --target=fs_uuid 2>/dev/null || true)"

# The root device as 10_linux passes it: UUID= unless disabled or not found.
GRUB_DISABLE_LINUX_PARTUUID=${GRUB_DISABLE_LINUX_PARTUUID-true}
if { [ "x${GRUB_DEVICE_UUID}" = "x" ] && [ "x${GRUB_DEVICE_PARTUUID}" = "x" ]; } \
	|| { [ "x${GRUB_DISABLE_LINUX_UUID}" = "xtrue" ] \
		&& [ "x${GRUB_DISABLE_LINUX_PARTUUID}" = "xtrue" ]; } \
	|| { ! test -e "$R/dev/disk/by-uuid/${GRUB_DEVICE_UUID}" \
		&& ! test -e "$R/dev/disk/by-partuuid/${GRUB_DEVICE_PARTUUID}"; }; then
	LINUX_ROOT_DEVICE=${GRUB_DEVICE}
elif [ "x${GRUB_DEVICE_UUID}" = "x" ] || [ "x${GRUB_DISABLE_LINUX_UUID}" = "xtrue" ]; then
	LINUX_ROOT_DEVICE=PARTUUID=${GRUB_DEVICE_PARTUUID}
else
	LINUX_ROOT_DEVICE=UUID=${GRUB_DEVICE_UUID}
fi
if [ "x$GRUB_FS" = xbtrfs ]; then
	rootsubvol="$(make_system_path_relative_to_its_root /)"
	rootsubvol="${rootsubvol#/}"
	if [ "x${rootsubvol}" != x ]; then
		GRUB_CMDLINE_LINUX="rootflags=subvol=${rootsubvol} ${GRUB_CMDLINE_LINUX}"
	fi
fi

rel_dirname="$(make_system_path_relative_to_its_root /boot)"
prepare_boot="$(prepare_grub_to_access_device "${GRUB_DEVICE_BOOT}" | grub_add_tab)"
# Newest first, as 10_linux orders its entries: version_sort (GRUB 2.06 and 2.12; 2.12
# warns that version_find_latest is deprecated), oldest first, turned around.
# $list is split into words on purpose (release names have no blanks).
# shellcheck disable=SC2086
sorted=$(echo $list | tr ' ' '\n' | version_sort)
newest_first=
for linux in $sorted; do
	newest_first="$linux $newest_first"
done
first=yes
for linux in $newest_first; do
	version="${linux#vmlinuz-}"
	if [ $first = yes ]; then id=bootprint-initramfs; else id="bootprint-initramfs-$version"; fi
	first=no
	gettext_printf "Found bootprint's initramfs: %s\n" "/boot/bootprint-initrd.img-$version" >&2
	title="$(gettext_printf "%s, with Linux %s" "${OS}" "${version}"), with bootprint's initramfs"
	echo "menuentry '$(echo "$title" | grub_quote)' ${CLASS} \$menuentry_id_option '$id' {"
	save_default_entry | grub_add_tab
	if [ "x$GRUB_GFXPAYLOAD_LINUX" != xtext ]; then
		echo "	load_video"
	fi
	echo "	insmod gzio"
	printf '%s\n' "${prepare_boot}"
	echo "	echo	'$(echo "Loading Linux ${version} ..." | grub_quote)'"
	echo "	linux	${rel_dirname}/${linux} root=${LINUX_ROOT_DEVICE} ro ${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"
	echo "	echo	'$(echo "Loading bootprint's initramfs ..." | grub_quote)'"
	echo "	initrd	${rel_dirname}/bootprint-initrd.img-${version}"
	echo "}"
done
