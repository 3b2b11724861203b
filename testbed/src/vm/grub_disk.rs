//! The package test's disk: the text image as a PC has it, booted by GRUB from its own disk
//! (no `-kernel`), with Debian's kernel from the ABI before the image's and no trace of
//! bootprint, so the test can install the .deb, enable, upgrade the kernel to the image's
//! ABI, disable and purge as a user would (docs/testbed.md, "The package test"). Under the
//! BIOS (`--firmware bios`): an MBR, one root partition, `grub-pc`. Under UEFI (`--firmware
//! uefi`): a GPT with an EFI system partition (FAT, mounted at /boot/efi) and the root
//! partition, `grub-efi-amd64` installed to `\EFI\debian` and the removable path
//! `\EFI\BOOT\BOOTX64.EFI` (OVMF's variables start empty in every boot: no boot entry).
//!
//! Derived from the text image when the test first needs it, and cached (`grub-<key>/`):
//! a copy of the image's root file system, grown, is loop-mounted on the host and changed in
//! a chroot at the host's speed ([`ROOT_SCRIPT`]: dpkg and mkinitramfs take many minutes
//! under emulation), put behind the partition table, and booted once with the kernel installed on it
//! (`-kernel`, `root=` the root partition) to run the layout's setup script: Debian's own grub-install and
//! update-grub, which need the disk. A second boot, through the firmware and GRUB, must run
//! the older kernel before the disk is kept. Only `package` pays for this: `make test`
//! never builds it.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::fsimage::{self, Unmount};
use crate::vm::image::{self, Image};
use crate::vm::qemu::{self, BootOpts, Firmware, Profile};
use crate::vm::util::{io_err, output_logged, run_logged, Error, Fnv, Lock, Paths, Result};

/// Bumped when the derivation changes in a way the hashed texts below do not show.
const DISK_VERSION: &str = "bootprint-testbed grub disk 1";
/// Where the first partition starts (sectors of 512 bytes): 1 MiB, as installers do, which
/// leaves GRUB's core image the gap after the MBR.
const PART_START_SECTOR: u64 = 2048;
/// The UEFI disk's EFI system partition: 64 MiB from [`PART_START_SECTOR`] (FAT16; GRUB's
/// two images take about 8 MB).
const ESP_SECTORS: u64 = 64 * 2048;
/// systemd-boot's: 512 MiB, as systemd recommends, since every kernel, its initramfs and
/// bootprint's are copied onto it (about 30 MB a Debian 13 kernel).
const SDBOOT_ESP_SECTORS: u64 = 512 * 2048;
/// Room for the upgrade: a second kernel, its initramfs and bootprint's, the traces.
const GROW_MB: u64 = 1024;
/// Where the upgrade's kernel .deb waits in the guest.
pub const GUEST_DEBS: &str = "/root/bootprint-testbed/debs";
/// The boot loader the disk boots with (`package --loader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Loader {
    /// Debian's GRUB (grub-pc or grub-efi-amd64)
    Grub,
    /// systemd-boot, its entries written by kernel-install (UEFI only)
    SystemdBoot,
}

impl Loader {
    pub fn name(self) -> &'static str {
        match self {
            Loader::Grub => "grub",
            Loader::SystemdBoot => "systemd-boot",
        }
    }
}

/// What builds the machine's initramfs (`package --generator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Generator {
    /// Debian's initramfs-tools, on the image's sysvinit
    InitramfsTools,
    /// dracut with systemd in the initramfs, on a systemd machine (as Fedora and RHEL)
    Dracut,
}

impl Generator {
    pub fn name(self) -> &'static str {
        match self {
            Generator::InitramfsTools => "initramfs-tools",
            Generator::Dracut => "dracut",
        }
    }
}

/// The root file system (`package --root`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Root {
    /// ext4 on the partition
    Ext4,
    /// btrfs, the root on the subvolume `@` (as Debian's installer and Ubuntu lay it out;
    /// Fedora's is `root`)
    Btrfs,
    /// XFS (RHEL's default)
    Xfs,
    /// ext4 on an LVM logical volume (`vg0/root`), /boot on its own partition, as Debian's
    /// installer lays out "guided, use entire disk and set up LVM"
    Lvm,
    /// ext4 on LUKS2 (`vda2_crypt`), /boot apart, unlocked by a key file the initramfs holds
    Luks,
    /// LVM inside LUKS2, /boot apart: Debian's and Ubuntu's "use entire disk and set up
    /// encrypted LVM"
    LuksLvm,
}

impl Root {
    pub fn name(self) -> &'static str {
        match self {
            Root::Ext4 => "ext4",
            Root::Btrfs => "btrfs",
            Root::Xfs => "xfs",
            Root::Lvm => "lvm",
            Root::Luks => "luks",
            Root::LuksLvm => "luks-lvm",
        }
    }

    /// Whether the root is stacked on a device the host cannot make (device mapper): the
    /// setup boot builds the disk in the guest ([`STACKED_SCRIPT`]).
    pub fn stacked(self) -> bool {
        self.stacked_device().is_some()
    }

    /// The device the guest mounts as its root when the root is stacked.
    pub fn stacked_device(self) -> Option<&'static str> {
        match self {
            Root::Lvm | Root::LuksLvm => Some("/dev/mapper/vg0-root"),
            Root::Luks => Some("/dev/mapper/vda2_crypt"),
            Root::Ext4 | Root::Btrfs | Root::Xfs => None,
        }
    }

    /// Whether the root is encrypted: the host reads nothing of it.
    pub fn encrypted(self) -> bool {
        matches!(self, Root::Luks | Root::LuksLvm)
    }

    /// The file system the root is made as on the host: a stacked root's is ext4 on the
    /// staging disk (and then in the guest).
    pub fn made_as(self) -> Root {
        if self.stacked() {
            Root::Ext4
        } else {
            self
        }
    }

    /// Its tools in the guest (fsck, GRUB's probing, the initramfs hooks), installed in the
    /// chroot with GRUB.
    fn packages(self) -> &'static str {
        match self {
            Root::Ext4 => "",
            Root::Btrfs => "btrfs-progs",
            Root::Xfs => "xfsprogs",
            Root::Lvm => "lvm2 fdisk",
            Root::Luks => "cryptsetup cryptsetup-initramfs fdisk",
            Root::LuksLvm => "lvm2 cryptsetup cryptsetup-initramfs fdisk",
        }
    }

    /// The subvolume the root is on, if any (the kernel's `rootflags=subvol=`).
    pub fn subvolume(self) -> Option<&'static str> {
        (self == Root::Btrfs).then_some("@")
    }

    /// Its /etc/fstab line for device `dev`: ext4 checked at boot (pass 1); btrfs and XFS
    /// not (their fsck programs do nothing at boot: pass 0, as their installers write it).
    fn fstab_line(self, dev: &str) -> String {
        match self.made_as() {
            Root::Ext4 => format!("{dev} / ext4 defaults 0 1\n"),
            Root::Btrfs => format!("{dev} / btrfs defaults,subvol=@ 0 0\n"),
            Root::Xfs => format!("{dev} / xfs defaults 0 0\n"),
            Root::Lvm | Root::Luks | Root::LuksLvm => unreachable!("made as ext4"),
        }
    }
}

/// What the BIOS disk, the UEFI disk and the systemd-boot disk do differently.
struct Layout {
    firmware: Firmware,
    loader: Loader,
    generator: Generator,
    root: Root,
    /// Where the root file system starts on the disk, in sectors.
    root_start: u64,
    /// Debian's GRUB for the firmware (and what its setup needs), installed in the chroot.
    packages: &'static str,
    /// debconf answers given before they are installed.
    preseed: &'static str,
    /// Run in the setup boot, inside [`Layout::setup_script`]: the loader installed on the
    /// disk, its configuration written.
    setup: &'static str,
}

fn layout(firmware: Firmware, loader: Loader, generator: Generator, root: Root) -> Result<Layout> {
    if root.stacked()
        && (firmware, loader, generator)
            != (Firmware::Bios, Loader::Grub, Generator::InitramfsTools)
    {
        return Err(Error::Usage(format!(
            "--root {} is built for --firmware bios --loader grub --generator initramfs-tools only",
            root.name()
        )));
    }
    if loader == Loader::SystemdBoot && root != Root::Ext4 {
        // Its /etc/kernel/cmdline (SETUP_SYSTEMD_BOOT) names an ext4 root without flags.
        return Err(Error::Usage(format!(
            "--root {} is tested with --loader grub only",
            root.name()
        )));
    }
    Ok(match (firmware, loader) {
        (Firmware::Bios, Loader::SystemdBoot) => {
            return Err(Error::Usage(
                "--loader systemd-boot needs --firmware uefi (systemd-boot is a UEFI program)"
                    .into(),
            ))
        }
        (Firmware::Uefi, Loader::SystemdBoot) => Layout {
            firmware,
            loader,
            generator,
            root,
            root_start: PART_START_SECTOR + SDBOOT_ESP_SECTORS,
            packages: "systemd-boot dosfstools",
            preseed: "",
            setup: SETUP_SYSTEMD_BOOT,
        },
        (Firmware::Bios, Loader::Grub) => Layout {
            firmware,
            loader,
            generator,
            root,
            root_start: PART_START_SECTOR,
            packages: "grub-pc",
            preseed: "grub-pc grub-pc/install_devices multiselect\n\
                      grub-pc grub-pc/install_devices_empty boolean true\n",
            setup: SETUP_BIOS,
        },
        (Firmware::Uefi, Loader::Grub) => Layout {
            firmware,
            loader,
            generator,
            root,
            root_start: PART_START_SECTOR + ESP_SECTORS,
            packages: "grub-efi-amd64 dosfstools",
            // As Debian's installer leaves a machine whose firmware may not keep boot entries:
            // every grub-install also writes the removable path, and no NVRAM entry.
            preseed: "grub-efi-amd64 grub2/force_efi_extra_removable boolean true\n\
                      grub-efi-amd64 grub2/update_nvram boolean false\n",
            setup: SETUP_UEFI,
        },
    })
}

impl Layout {
    /// Where the root file system starts on the disk, in bytes.
    fn fs_offset(&self) -> u64 {
        self.root_start * 512
    }

    /// The root partition, as the guest names it: the first, or under UEFI the second,
    /// after the EFI system partition.
    fn root_dev(&self) -> &'static str {
        match self.firmware {
            Firmware::Bios => "/dev/vda1",
            Firmware::Uefi => "/dev/vda2",
        }
    }

    /// The EFI system partition's fstab line, under UEFI.
    fn esp_line(&self) -> Option<&'static str> {
        (self.firmware == Firmware::Uefi).then_some("/dev/vda1 /boot/efi vfat umask=0077 0 2\n")
    }

    /// The machine runs systemd as init (the dracut layouts, as Fedora's): it stops a boot
    /// at the emergency shell when an fstab mount fails, as the ESP's does before the setup
    /// boot formats it (sysvinit's mountall.sh goes on).
    fn systemd_init(&self) -> bool {
        self.generator == Generator::Dracut
    }

    /// The fstab the disk's cache key hashes, and its lines the disk ends with (under
    /// systemd as init the ESP's comes last: [`Layout::fstab_before_setup`]).
    fn fstab(&self) -> String {
        format!(
            "{}{}proc /proc proc defaults 0 0\n",
            self.root.fstab_line(self.root_dev()),
            self.esp_line().unwrap_or_default()
        )
    }

    /// The fstab the setup boot starts from: under systemd as init without the ESP's line,
    /// which the setup script adds once the ESP has its file system (last, after `proc`).
    fn fstab_before_setup(&self) -> String {
        match self.esp_line() {
            Some(esp) if self.systemd_init() => self.fstab().replace(esp, ""),
            _ => self.fstab(),
        }
    }

    /// What the kernel command line needs beyond `root=` to mount the root.
    fn root_flags(&self) -> String {
        self.root
            .subvolume()
            .map(|v| format!("rootflags=subvol={v}"))
            .unwrap_or_default()
    }

    /// The setup boot's script: under UEFI the EFI system partition formatted (the host's
    /// kernel has no FAT) and mounted as the fstab says first, the loader's own [`setup`]
    /// then, and the releases file and the success word last.
    ///
    /// [`setup`]: Layout::setup
    fn setup_script(&self) -> String {
        let esp = match self.esp_line() {
            None => String::new(),
            Some(line) => {
                let add = if self.systemd_init() {
                    format!("printf '{}' >> /etc/fstab\n", line.replace('\n', "\\n"))
                } else {
                    String::new()
                };
                format!("mkfs.fat -n ESP /dev/vda1\nmkdir -p /boot/efi\n{add}mount /boot/efi\n")
            }
        };
        let setup = if self.root.stacked() {
            format!(
                "LUKS={}\nLVM={}\n{STACKED_SCRIPT}",
                self.root.encrypted() as u8,
                matches!(self.root, Root::Lvm | Root::LuksLvm) as u8
            )
        } else {
            self.setup.to_string()
        };
        format!("set -e\n{esp}{setup}cat /root/bootprint-testbed/releases\necho BP\"\"SETUP=ok\n")
    }
}
/// GRUB on the serial console, no menu delay, no other systems; Debian's kernel options.
const GRUB_DEFAULTS: &str =
    "# The bootprint test bed's GRUB: the serial console, no menu delay, no other systems.
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_RECORDFAIL_TIMEOUT=0
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT=\"quiet loglevel=6\"
GRUB_CMDLINE_LINUX=\"console=ttyS0 sysrq_always_enabled\"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND=\"serial --unit=0 --speed=115200\"
GRUB_DISABLE_OS_PROBER=true
";
/// initramfs-tools for the modules this machine needs (as on a machine set up by hand):
/// the upgrade's mkinitramfs in the guest takes far less than with `MODULES=most`.
const INITRAMFS_CONF: &str = "MODULES=dep\n";
/// dracut: the same, host-only, as Fedora configures it (Debian's dracut builds a generic
/// image unless told); the root from the kernel command line, as the loaders give it.
/// Written after the chroot's kernel install (whose image is generic: the host's devices
/// are not the guest's), so the kernel upgrade in the guest builds a host-only one.
const DRACUT_CONF: &str = "hostonly=\"yes\"\nhostonly_cmdline=\"no\"\n";
/// In the chroot before [`ROOT_SCRIPT`], for dracut: systemd as init (it replaces
/// sysvinit-core, which Debian 13 marks essential, with its scripts and startpar) and
/// dracut (it replaces initramfs-tools), so that the previous kernel's install builds its
/// initramfs with dracut, systemd inside.
const DRACUT_SCRIPT: &str = "set -e
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends --allow-remove-essential \\
  systemd-sysv sysvinit-core- dracut zstd
test -x /usr/bin/dracut
test \"$(readlink -f /sbin/init)\" = /usr/lib/systemd/systemd
";
/// In the chroot: what the test bed put in by hand goes (the bootprint binaries, the late
/// generator's link, the startpar wrapper and its diversion, of /bin/startpar on Debian 12,
/// /usr/bin/startpar on 13); the firmware's GRUB (`$GRUB`, with `$PRESEED`: grub-install
/// runs in the guest, on the disk) and the previous kernel come in; the image's kernel goes,
/// its .deb kept for the upgrade.
const ROOT_SCRIPT: &str = "set -e
export DEBIAN_FRONTEND=noninteractive
rm -rf /usr/lib/bootprint /usr/bin/bootprint /var/log/bootprint /var/lib/bootprint /etc/bootprint
rm -f /usr/lib/systemd/system-generators/bootprint-late-generator
for p in /bin/startpar /usr/bin/startpar; do
  if dpkg-divert --list $p | grep -q .; then
    rm -f $p
    dpkg-divert --local --rename --remove $p
  fi
done
printf '%s' \"$PRESEED\" | debconf-set-selections
apt-get update
apt-get install -y --no-install-recommends $GRUB linux-image-$OLD
apt-get purge -y linux-image-amd64 linux-image-$NEW
mkdir -p $DEBS
cd $DEBS
apt-get download linux-image-$NEW
apt-get clean
";
/// The kernel packages `apt-cache search` lists for the previous ABI: Debian 12's
/// `linux-image-6.1.0-50-amd64`, Debian 13's `linux-image-6.12.117+deb13-amd64`.
const KERNEL_PACKAGES: &str = "^linux-image-[0-9.]+(-[0-9]+|[+]deb[0-9]+)-amd64$";
/// BIOS: grub-install on the disk (and remembered, so a grub-pc upgrade installs there
/// too), then grub.cfg from Debian's scripts.
const SETUP_BIOS: &str = r#"echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections
grub-install /dev/vda
update-grub
"#;
/// systemd-boot: on the EFI system partition (mounted as for GRUB), systemd-boot
/// installed on it (no EFI variables: OVMF's are thrown away after every boot; it boots as
/// `\EFI\BOOT\BOOTX64.EFI`), the kernel command line in /etc/kernel/cmdline (the test bed's
/// own, as GRUB's defaults give it), the entry token fixed, and the installed kernel's entry
/// written by kernel-install, as the kernel's package would have.
const SETUP_SYSTEMD_BOOT: &str = r#"echo debian > /etc/kernel/entry-token
echo "root=/dev/vda2 ro console=ttyS0 sysrq_always_enabled quiet loglevel=6" > /etc/kernel/cmdline
SYSTEMD_RELAX_ESP_CHECKS=1 bootctl install --no-variables --esp-path=/boot/efi
printf 'timeout 0\n' > /boot/efi/loader/loader.conf
old=$(sed -n 's/^old //p' /root/bootprint-testbed/releases)
kernel-install add "$old" "/boot/vmlinuz-$old" "/boot/initrd.img-$old"
bootctl is-installed
ls /boot/efi/loader/entries
"#;
/// UEFI: GRUB's EFI image installed where Debian puts it and at the removable path, then
/// grub.cfg.
const SETUP_UEFI: &str = r#"grub-install --target=x86_64-efi --force-extra-removable --no-nvram
update-grub
ls /boot/efi/EFI/BOOT /boot/efi/EFI/debian
"#;

/// A stacked root (`Root::stacked`), in the setup boot of the staging disk (its root the
/// plain ext4 on vda1; `LUKS` and `LVM` set to 0 or 1 before): the real disk is built on
/// the second disk, vdb, as Debian's installer lays out "guided, use entire disk and set up
/// (encrypted) LVM": an MBR, /boot (ext4, 512 MiB) and after it, with `LUKS`, a LUKS2
/// container `vda2_crypt` (PBKDF2 at its minimum iterations: argon2's memory-hard key
/// derivation takes many seconds under emulation) opened by a random key file that
/// cryptsetup-initramfs copies into the initramfs (`KEYFILE_PATTERN`), as a test may
/// (issue 42); with `LVM`, a physical volume holding `vg0/root`; the root's ext4 on top.
/// The system is copied onto it from a bind mount of `/` alone, its fstab naming the root
/// device and /boot by UUID; then in a chroot of it the initramfs is rebuilt (lvm2's and
/// cryptroot's hooks), GRUB installed on vdb (remembered as vda, as the disk boots alone)
/// and grub.cfg written. Prints `fs_offset N` on LVM without LUKS: where the root file
/// system starts on the disk, the volume being one linear segment from the physical
/// volume's first extent (checked), so the host reads and writes it as on a partition.
const STACKED_SCRIPT: &str = r#"T=/dev/vdb
# A retried boot finds the last attempt's devices: gone first.
vgchange -an vg0 >/dev/null 2>&1 || true
cryptsetup close vda2_crypt >/dev/null 2>&1 || true
wipefs -qa ${T}2 ${T}1 $T 2>/dev/null || true
type=83; [ $LVM = 1 ] && [ $LUKS = 0 ] && type=8e
printf 'label: dos\nstart=2048, size=1048576, type=83, bootable\nstart=1050624, type=%s\n' $type | sfdisk --quiet $T
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b ${T}2 ] && break; sleep 1; done
mkfs.ext4 -q -F -L boot ${T}1
dev=${T}2
if [ $LUKS = 1 ]; then
  key=/etc/cryptsetup-keys.d/vda2_crypt.key
  mkdir -p -m 700 /etc/cryptsetup-keys.d
  head -c 64 /dev/urandom > $key
  chmod 600 $key
  cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file $key ${T}2
  cryptsetup open --key-file $key ${T}2 vda2_crypt
  dev=/dev/mapper/vda2_crypt
  echo "vda2_crypt UUID=$(blkid -s UUID -o value ${T}2) $key luks,discard" > /etc/crypttab
  echo 'KEYFILE_PATTERN="/etc/cryptsetup-keys.d/*.key"' >> /etc/cryptsetup-initramfs/conf-hook
  echo UMASK=0077 >> /etc/initramfs-tools/initramfs.conf
  echo dm_crypt >> /etc/initramfs-tools/modules
fi
root=$dev
if [ $LVM = 1 ]; then
  pvcreate -q -ff -y $dev
  vgcreate -q vg0 $dev
  lvcreate -q -y -n root -l 100%FREE vg0
  root=/dev/mapper/vg0-root
  echo "segments $(lvs --noheadings -o seg_pe_ranges vg0/root | tr -d ' ')"
  lvs --noheadings -o seg_pe_ranges vg0/root | grep -q ':0-'
  pe=$(pvs --noheadings --units b --nosuffix -o pe_start $dev | tr -d ' ')
  [ $LUKS = 1 ] || echo "fs_offset $((1050624 * 512 + pe))"
fi
mkfs.ext4 -q -F -L root $root
echo dm_mod >> /etc/initramfs-tools/modules
# The system through a bind mount of / alone (no /proc, /run, ... under it), both mounts
# on /run's tmpfs: cp never meets its destination inside its source.
mkdir /run/target /run/system
mount $root /run/target
mkdir /run/target/boot
mount ${T}1 /run/target/boot
mount --bind / /run/system
cp -a /run/system/. /run/target/
umount /run/system
printf '%s / ext4 errors=remount-ro 0 1\nUUID=%s /boot ext4 defaults 0 2\nproc /proc proc defaults 0 0\n' \
  $root "$(blkid -s UUID -o value ${T}1)" > /run/target/etc/fstab
for f in dev proc sys run; do mount --bind /$f /run/target/$f; done
chroot /run/target sh -e -c "echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections
update-initramfs -u -k all
grub-install $T
update-grub"
grep -m1 -oE '[[:space:]]root=(/|UUID=)[^ ]*' /run/target/boot/grub/grub.cfg
for f in run sys proc dev; do umount /run/target/$f; done
umount /run/target/boot
umount /run/target
vgchange -an vg0 >/dev/null 2>&1 || [ $LVM = 0 ]
[ $LUKS = 0 ] || cryptsetup close vda2_crypt
sync
"#;

/// The GRUB disk and what the test needs to know about it.
pub struct GrubDisk {
    pub disk: PathBuf,
    /// The kernel release the disk boots (`6.1.0-47-amd64`).
    pub old_release: String,
    /// The release of the kernel .deb left in [`GUEST_DEBS`] for the upgrade.
    pub new_release: String,
    /// Where the root file system starts on the disk, in bytes; `None` when the host
    /// cannot read it (LUKS).
    pub fs_offset: Option<u64>,
    /// Its type.
    pub root: Root,
}

/// The cached GRUB disk of `img` (the text image), derived first if missing.
/// Its layout follows the run's firmware (`Paths::firmware`), `loader`, `generator` and
/// `root`.
pub fn ensure(
    paths: &Paths,
    img: &Image,
    loader: Loader,
    generator: Generator,
    root: Root,
) -> Result<GrubDisk> {
    let layout = layout(paths.firmware, loader, generator, root)?;
    let dir = paths.cache.join(format!("grub-{}", key(img, &layout)));
    let _lock = Lock::acquire(&dir.with_extension("lock"))?;
    if !dir.join("ok").is_file() {
        derive(paths, img, &layout, &dir)?;
    }
    let releases =
        fs::read_to_string(dir.join("ok")).map_err(|e| io_err("cannot read", &dir, e))?;
    let (old_release, new_release) = parse_releases(&releases).ok_or_else(|| {
        Error::fail(format!(
            "{}: expected `old RELEASE` and `new RELEASE` lines, found {releases:?}",
            dir.join("ok").display()
        ))
    })?;
    // `none`: encrypted, the host reads nothing of it. Disks derived before the line was
    // written have their root where the layout puts it.
    let fs_offset = match releases
        .lines()
        .find_map(|l| l.trim().strip_prefix("fs_offset "))
    {
        Some("none") => None,
        Some(n) => Some(n.parse().map_err(|_| {
            Error::fail(format!(
                "{}: expected `fs_offset N` or `fs_offset none`, found `fs_offset {n}`",
                dir.join("ok").display()
            ))
        })?),
        None => Some(layout.fs_offset()),
    };
    Ok(GrubDisk {
        disk: dir.join("disk.raw"),
        old_release,
        new_release,
        fs_offset,
        root,
    })
}

/// The cache key: the image directory (itself a hash of the image's inputs) and the
/// derivation. initramfs-tools' disks hash as before dracut's came (their caches stay).
fn key(img: &Image, layout: &Layout) -> String {
    let mut h = Fnv::new();
    if layout.generator == Generator::Dracut {
        for part in [layout.generator.name(), DRACUT_SCRIPT, DRACUT_CONF] {
            h.update(part.as_bytes());
            h.update(b"\0");
        }
    }
    if layout.root != Root::Ext4 {
        for part in [layout.root.name(), layout.root.packages(), CONVERT_VERSION] {
            h.update(part.as_bytes());
            h.update(b"\0");
        }
    }
    if layout.root.stacked() {
        h.update(STACKED_SCRIPT.as_bytes());
    }
    for part in [
        DISK_VERSION,
        &img.dir.file_name().unwrap_or_default().to_string_lossy(),
        &layout.fstab(),
        layout.packages,
        layout.preseed,
        &layout.setup_script(),
        layout.loader.name(),
        GRUB_DEFAULTS,
        INITRAMFS_CONF,
        ROOT_SCRIPT,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    h.update(&PART_START_SECTOR.to_le_bytes());
    h.update(&layout.root_start.to_le_bytes());
    h.update(&GROW_MB.to_le_bytes());
    h.hex()
}

/// `old 6.1.0-47-amd64` and `new 6.1.0-50-amd64` lines (the image build's `releases`).
fn parse_releases(text: &str) -> Option<(String, String)> {
    let field = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(name)?.strip_prefix(' '))
            .map(|r| r.trim().to_string())
            .find(|r| !r.is_empty())
    };
    Some((field("old")?, field("new")?))
}

fn derive(paths: &Paths, img: &Image, layout: &Layout, dir: &Path) -> Result<()> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    let log = dir.join("derive.log");
    eprintln!(
        "grub disk: deriving from {} in {} (log {})",
        img.rootfs.display(),
        dir.display(),
        log.display()
    );
    let root = dir.join("root.ext4");
    {
        let _img_lock = Lock::acquire(&img.lock_path())?;
        run_logged(
            Command::new("cp")
                .arg("--sparse=always")
                .arg(&img.rootfs)
                .arg(&root),
            &log,
        )?;
    }
    grow(&root, &log)?;
    let old_kernel = make_root(&root, dir, layout, &log)?;
    let root = match layout.root.made_as() {
        Root::Ext4 => root,
        other => {
            let converted = convert_root(&root, other, dir, &log)?;
            fs::remove_file(&root).map_err(|e| io_err("cannot remove", &root, e))?;
            converted
        }
    };
    let work = dir.join("disk.tmp");
    write_disk(&work, &root, layout)?;
    // A stacked root's disk is built by the guest on a second, empty disk: /boot's 512 MiB,
    // the system's file system, room for the volume group's metadata.
    let target = dir.join("target.tmp");
    if layout.root.stacked() {
        let root_bytes = fs::metadata(&root)
            .map_err(|e| io_err("cannot stat", &root, e))?
            .len();
        let _ = fs::remove_file(&target);
        fs::File::create(&target)
            .and_then(|f| f.set_len(root_bytes + (544 << 20)))
            .map_err(|e| io_err("cannot create", &target, e))?;
    }
    fs::remove_file(&root).map_err(|e| io_err("cannot remove", &root, e))?;

    eprintln!(
        "grub disk: setup boot (the disk's own kernel, root={}): {}",
        layout.root_dev(),
        match (layout.root.stacked(), layout.loader) {
            (true, _) =>
                "the disk built on vdb (the root's devices, the system copied, \
                          update-initramfs, grub-install, update-grub in a chroot)",
            (false, Loader::Grub) => "grub-install, update-grub",
            (false, Loader::SystemdBoot) => "bootctl install, kernel-install add",
        }
    );
    let mut o = BootOpts::new(Profile::Fast);
    o.root = Some(layout.root_dev().into());
    o.append = layout.root_flags();
    // The disk's own kernel: the image's was purged from it with its modules (vfat, which
    // the EFI system partition's mount needs, among them).
    o.kernel = Some(old_kernel.0.clone());
    o.initrd = Some(old_kernel.1.clone());
    o.disk_from = Some(work.clone());
    o.keep_disk = true;
    o.guest_script = Some(layout.setup_script());
    if layout.root.stacked() {
        o.second_disk = Some(target.clone());
    }
    let r = qemu::boot(paths, img, &o)?;
    let _ = fs::remove_file(&old_kernel.0);
    let _ = fs::remove_file(&old_kernel.1);
    let out = r.guest_output.clone().unwrap_or_default();
    fs::write(dir.join("setup.out"), &out).map_err(|e| io_err("cannot write", dir, e))?;
    let kept = r
        .kept_disk()
        .ok_or_else(|| Error::fail("the setup boot kept no disk"))?;
    let releases = parse_releases(&out);
    let Some((old_release, new_release)) = releases.filter(|_| out.contains("BPSETUP=ok")) else {
        return Err(Error::fail(format!(
            "the GRUB disk's setup failed in the guest (serial log {}); its output:\n{}",
            r.serial_log.display(),
            tail_lines(&out, 30)
        )));
    };
    let fs_offset = if layout.root.stacked() {
        let offset = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("fs_offset ")?.parse::<u64>().ok());
        if offset.is_none() && !layout.root.encrypted() {
            return Err(Error::fail(format!(
                "the setup boot built the {} disk but printed no `fs_offset N` (serial log {})",
                layout.root.name(),
                r.serial_log.display()
            )));
        }
        // The staging disk is done with: the guest's disk is the one it built.
        fs::remove_file(&kept).map_err(|e| io_err("cannot remove", &kept, e))?;
        fs::rename(&target, &work).map_err(|e| io_err("cannot move", &target, e))?;
        offset
    } else {
        fs::rename(&kept, &work).map_err(|e| io_err("cannot move", &kept, e))?;
        Some(layout.fs_offset())
    };
    // apt's downloads and the image's purged kernel left freed blocks in the sparse file;
    // every boot's copy of the disk would carry them. Only room is at stake, so a failure
    // here is said and passed over.
    if let Some(offset) = fs_offset {
        if let Err(e) = fsimage::trim(&work, offset, &dir.join("mnt"), &log) {
            eprintln!("grub disk: free blocks not given back ({e})");
        }
    }

    eprintln!("grub disk: a boot through the firmware and GRUB");
    let mut o = BootOpts::new(Profile::Fast);
    o.firmware = true;
    o.disk_from = Some(work.clone());
    // The kernel says it was started by UEFI when it sees the EFI system table; systemd-boot
    // leaves its LoaderInfo variable.
    o.guest_script = Some(
        "uname -r; cat /proc/cmdline; echo BP\"\"ROOT=$(findmnt -no SOURCE /)\n\
         test -d /sys/firmware/efi && echo BP\"\"UEFI=yes\n\
         ls /sys/firmware/efi/efivars 2>/dev/null | grep -q '^LoaderInfo-' && echo BP\"\"SDBOOT=yes\n"
            .into(),
    );
    let r = qemu::boot(paths, img, &o)?;
    let out = r.guest_output.unwrap_or_default();
    // GRUB puts BOOT_IMAGE= on the command line; systemd-boot sets LoaderInfo.
    let through_loader = match layout.loader {
        Loader::Grub => out.contains("BOOT_IMAGE="),
        Loader::SystemdBoot => out.contains("BPSDBOOT=yes"),
    };
    if !out.lines().any(|l| l.trim() == old_release) || !through_loader {
        return Err(Error::fail(format!(
            "the disk did not boot linux-image-{old_release} through its loader (serial log {}):\n{}",
            r.serial_log.display(),
            tail_lines(&out, 10)
        )));
    }
    if let Some(dev) = layout
        .root
        .stacked_device()
        .filter(|dev| !out.contains(&format!("BPROOT={dev}\n")))
    {
        return Err(Error::fail(format!(
            "the disk booted, but its root is not {dev} (serial log {}):\n{}",
            r.serial_log.display(),
            tail_lines(&out, 10)
        )));
    }
    if out.contains("BPUEFI=yes") != (layout.firmware == Firmware::Uefi) {
        return Err(Error::fail(format!(
            "the GRUB disk booted, but not under the firmware asked for ({}; serial log {})",
            layout.firmware.name(),
            r.serial_log.display()
        )));
    }
    let disk = dir.join("disk.raw");
    fs::rename(&work, &disk).map_err(|e| io_err("cannot move", &work, e))?;
    fs::write(
        dir.join("ok"),
        format!(
            "old {old_release}\nnew {new_release}\nfs_offset {}\n",
            fs_offset.map_or("none".to_string(), |o| o.to_string())
        ),
    )
    .map_err(|e| io_err("cannot write", dir, e))?;
    eprintln!("grub disk: ready, {}", disk.display());
    Ok(())
}

/// Grows the file system image `root` by [`GROW_MB`] (resize2fs wants it checked first).
fn grow(root: &Path, log: &Path) -> Result<()> {
    let bytes = fs::metadata(root)
        .map_err(|e| io_err("cannot stat", root, e))?
        .len();
    qemu::e2fsck(&["-f", "-y"], root, log)?;
    run_logged(
        Command::new("resize2fs")
            .arg(root)
            .arg(format!("{}M", bytes / (1 << 20) + GROW_MB)),
        log,
    )
}

/// Loop-mounts `root` under `dir` and makes it the GRUB disk's root: [`ROOT_SCRIPT`] in a
/// chroot (the mirror from the root's own apt sources, as the image build used), then the
/// fstab, GRUB's defaults, initramfs-tools' setting and the releases file. Returns copies
/// (in `dir`) of the kernel and initramfs it installed, for the setup boot.
fn make_root(root: &Path, dir: &Path, layout: &Layout, log: &Path) -> Result<(PathBuf, PathBuf)> {
    let mnt = dir.join("mnt");
    fs::create_dir_all(&mnt).map_err(|e| io_err("cannot create", &mnt, e))?;
    run_logged(
        Command::new("mount")
            .args(["-o", "loop"])
            .arg(root)
            .arg(&mnt),
        log,
    )?;
    let _mounted = Unmount(mnt.clone());
    let installed = image::kernel_release(&mnt.join("boot"))?;
    let policy = mnt.join("usr/sbin/policy-rc.d");
    image::write(&policy, "#!/bin/sh\nexit 101\n")?;
    image::set_mode(&policy, 0o755)?;
    let proc_mount = image::ProcMount::mount(&mnt.join("proc"), log)?;
    run_logged(&mut image::chroot(&mnt, &["apt-get", "update"]), log)?;
    let listing = output_logged(
        &mut image::chroot(
            &mnt,
            &["apt-cache", "search", "--names-only", KERNEL_PACKAGES],
        ),
        log,
    )?;
    let previous = image::previous_kernel(&listing, &installed).ok_or_else(|| {
        Error::fail(format!(
            "no kernel ABI before {installed} in the mirror (apt-cache search found: {})",
            listing
                .lines()
                .filter_map(|l| l.split(' ').next())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    if layout.generator == Generator::Dracut {
        eprintln!("grub disk: in a chroot: systemd as init, dracut for initramfs-tools");
        run_logged(&mut image::chroot(&mnt, &["sh", "-c", DRACUT_SCRIPT]), log)?;
    }
    eprintln!(
        "grub disk: in a chroot: {}, linux-image-{previous} in, linux-image-{installed} out (its .deb kept for the upgrade)",
        layout.packages
    );
    let mut cmd = image::chroot(&mnt, &["sh", "-c", ROOT_SCRIPT]);
    cmd.env("OLD", &previous)
        .env("NEW", &installed)
        .env("DEBS", GUEST_DEBS)
        .env(
            "GRUB",
            format!("{} {}", layout.packages, layout.root.packages()).trim(),
        )
        .env("PRESEED", layout.preseed);
    run_logged(&mut cmd, log)?;
    drop(proc_mount);
    fs::remove_file(&policy).map_err(|e| io_err("cannot remove", &policy, e))?;
    image::write(&mnt.join("etc/fstab"), &layout.fstab_before_setup())?;
    if layout.loader == Loader::Grub {
        image::write(&mnt.join("etc/default/grub"), GRUB_DEFAULTS)?;
    }
    match layout.generator {
        Generator::InitramfsTools => image::write(
            &mnt.join("etc/initramfs-tools/conf.d/bootprint-testbed"),
            INITRAMFS_CONF,
        )?,
        Generator::Dracut => image::write(
            &mnt.join("etc/dracut.conf.d/bootprint-testbed.conf"),
            DRACUT_CONF,
        )?,
    }
    image::write(
        &mnt.join("root/bootprint-testbed/releases"),
        &format!("old {previous}\nnew {installed}\n"),
    )?;
    let kernel = dir.join("setup-vmlinuz");
    let initrd = dir.join("setup-initrd.img");
    for (from, to) in [
        (format!("boot/vmlinuz-{previous}"), &kernel),
        (format!("boot/initrd.img-{previous}"), &initrd),
    ] {
        let from = mnt.join(from);
        fs::copy(&from, to).map_err(|e| io_err("cannot copy", &from, e))?;
    }
    Ok((kernel, initrd))
}

/// Bumped when [`convert_root`] changes.
const CONVERT_VERSION: &str = "convert 1";

/// A copy of the ext4 image `ext4` as a `kind` file system of the same size (`root.KIND` in
/// `dir`), made on the host: mkfs, both loop-mounted, every file copied with its owner,
/// mode, times, links and extended attributes (`cp -a`); on btrfs into the subvolume the
/// root lives on.
fn convert_root(ext4: &Path, kind: Root, dir: &Path, log: &Path) -> Result<PathBuf> {
    let bytes = fs::metadata(ext4)
        .map_err(|e| io_err("cannot stat", ext4, e))?
        .len();
    let out = dir.join(format!("root.{}", kind.name()));
    let _ = fs::remove_file(&out);
    fs::File::create(&out)
        .and_then(|f| f.set_len(bytes))
        .map_err(|e| io_err("cannot create", &out, e))?;
    eprintln!(
        "grub disk: the root as {} (mkfs, cp -a on the host)",
        kind.name()
    );
    let mkfs = match kind {
        Root::Btrfs => Command::new("mkfs.btrfs")
            .args(["-q", "-L", "root"])
            .arg(&out)
            .status(),
        Root::Xfs => Command::new("mkfs.xfs")
            .args(["-q", "-L", "root"])
            .arg(&out)
            .status(),
        Root::Ext4 | Root::Lvm | Root::Luks | Root::LuksLvm => {
            unreachable!("made as ext4: not converted")
        }
    };
    if !matches!(mkfs, Ok(s) if s.success()) {
        return Err(Error::fail(format!(
            "mkfs.{} {} failed: {mkfs:?}",
            kind.name(),
            out.display()
        )));
    }
    let from = dir.join("from");
    let to = dir.join("to");
    for d in [&from, &to] {
        fs::create_dir_all(d).map_err(|e| io_err("cannot create", d, e))?;
    }
    run_logged(
        Command::new("mount")
            .args(["-o", "loop,ro"])
            .arg(ext4)
            .arg(&from),
        log,
    )?;
    let _from = Unmount(from.clone());
    run_logged(
        Command::new("mount")
            .args(["-o", "loop"])
            .arg(&out)
            .arg(&to),
        log,
    )?;
    let to_mounted = Unmount(to.clone());
    let dest = match kind.subvolume() {
        Some(v) => {
            run_logged(
                Command::new("btrfs")
                    .args(["subvolume", "create"])
                    .arg(to.join(v)),
                log,
            )?;
            to.join(v)
        }
        None => to.clone(),
    };
    run_logged(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", from.display()))
            .arg(&dest),
        log,
    )?;
    drop(to_mounted);
    Ok(out)
}

/// Writes `disk`: the layout's partition table with the file system image `root` in the
/// root partition (and, under UEFI, an empty EFI system partition before it).
fn write_disk(disk: &Path, root: &Path, layout: &Layout) -> Result<()> {
    let root_bytes = fs::metadata(root)
        .map_err(|e| io_err("cannot stat", root, e))?
        .len();
    let root_sectors = root_bytes.div_ceil(512);
    let _ = fs::remove_file(disk);
    run_logged(
        Command::new("dd")
            .arg(format!("if={}", root.display()))
            .arg(format!("of={}", disk.display()))
            .arg(format!("seek={}", layout.root_start))
            .args(["bs=512", "conv=sparse", "status=none"]),
        &disk.with_extension("log"),
    )?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(disk)
        .map_err(|e| io_err("cannot open", disk, e))?;
    let written = match layout.firmware {
        Firmware::Bios => f
            .seek(SeekFrom::Start(0))
            .and_then(|_| f.write_all(&mbr(layout.root_start, root_sectors)))
            .and_then(|_| f.set_len(layout.fs_offset() + root_bytes)),
        Firmware::Uefi => {
            // The backup table takes the disk's last sectors.
            let total = layout.root_start + root_sectors + GPT_TABLE_SECTORS + 1;
            let parts = [
                GptPartition {
                    kind: GPT_ESP,
                    first: PART_START_SECTOR,
                    last: layout.root_start - 1,
                    name: "EFI system partition",
                },
                GptPartition {
                    kind: GPT_LINUX_FS,
                    first: layout.root_start,
                    last: layout.root_start + root_sectors - 1,
                    name: "root",
                },
            ];
            let (primary, backup) = gpt(total, &parts);
            f.set_len(total * 512)
                .and_then(|_| f.seek(SeekFrom::Start(0)))
                .and_then(|_| f.write_all(&primary))
                .and_then(|_| f.seek(SeekFrom::Start((total - 1 - GPT_TABLE_SECTORS) * 512)))
                .and_then(|_| f.write_all(&backup))
        }
    };
    written
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("cannot write the partition table of", disk, e))
}

/// One partition of a GUID partition table.
pub struct GptPartition {
    /// Its type, as the 16 bytes on disk.
    pub kind: [u8; 16],
    /// First and last sector (inclusive).
    pub first: u64,
    pub last: u64,
    pub name: &'static str,
}

/// A GUID as GPT stores it: the first three fields little-endian, the rest as written.
pub const fn guid(a: u32, b: u16, c: u16, d: [u8; 8]) -> [u8; 16] {
    let (a, b, c) = (a.to_le_bytes(), b.to_le_bytes(), c.to_le_bytes());
    [
        a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6],
        d[7],
    ]
}

/// C12A7328-F81F-11D2-BA4B-00A0C93EC93B, the EFI system partition (UEFI 2.10, 5.3.3).
pub const GPT_ESP: [u8; 16] = guid(
    0xC12A_7328,
    0xF81F,
    0x11D2,
    [0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9, 0x3B],
);
/// 0FC63DAF-8483-4772-8E79-3D69D8477DE4, a Linux file system (the Discoverable Partitions
/// Specification's generic type).
pub const GPT_LINUX_FS: [u8; 16] = guid(
    0x0FC6_3DAF,
    0x8483,
    0x4772,
    [0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4],
);
/// The partition entry array: 128 entries of 128 bytes, 32 sectors.
const GPT_ENTRIES: usize = 128;
const GPT_ENTRY_SIZE: usize = 128;
const GPT_TABLE_SECTORS: u64 = (GPT_ENTRIES * GPT_ENTRY_SIZE / 512) as u64;

/// A GUID partition table (UEFI 2.10, chapter 5) for a disk of `total` sectors: the
/// protective MBR, the header and the entry array (sectors 0 to 33), and the backup entry
/// array with the backup header (the disk's last 33 sectors). The disk and partition GUIDs
/// are fixed: a test disk, the same in every derivation.
pub fn gpt(total: u64, parts: &[GptPartition]) -> (Vec<u8>, Vec<u8>) {
    let mut entries = vec![0u8; GPT_ENTRIES * GPT_ENTRY_SIZE];
    for (i, p) in parts.iter().enumerate() {
        let e = &mut entries[i * GPT_ENTRY_SIZE..(i + 1) * GPT_ENTRY_SIZE];
        e[..16].copy_from_slice(&p.kind);
        e[16..32].copy_from_slice(&guid(
            0x6270_7474,
            0x6470,
            0x4000 | i as u16,
            [0x80, 0, 0, 0, 0, 0, 0, i as u8 + 1],
        ));
        e[32..40].copy_from_slice(&p.first.to_le_bytes());
        e[40..48].copy_from_slice(&p.last.to_le_bytes());
        for (k, unit) in p.name.encode_utf16().take(36).enumerate() {
            e[56 + 2 * k..58 + 2 * k].copy_from_slice(&unit.to_le_bytes());
        }
    }
    let entries_crc = readahead::pack::crc32(&entries);
    let header = |mine: u64, other: u64, entries_at: u64| {
        let mut h = [0u8; 512];
        h[..8].copy_from_slice(b"EFI PART");
        h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&mine.to_le_bytes());
        h[32..40].copy_from_slice(&other.to_le_bytes());
        h[40..48].copy_from_slice(&(2 + GPT_TABLE_SECTORS).to_le_bytes());
        h[48..56].copy_from_slice(&(total - 2 - GPT_TABLE_SECTORS).to_le_bytes());
        h[56..72].copy_from_slice(&guid(
            0x6270_7474,
            0x6469,
            0x4000,
            [0x80, 0x62, 0x6f, 0x6f, 0x74, 0x70, 0x72, 0x74],
        ));
        h[72..80].copy_from_slice(&entries_at.to_le_bytes());
        h[80..84].copy_from_slice(&(GPT_ENTRIES as u32).to_le_bytes());
        h[84..88].copy_from_slice(&(GPT_ENTRY_SIZE as u32).to_le_bytes());
        h[88..92].copy_from_slice(&entries_crc.to_le_bytes());
        let crc = readahead::pack::crc32(&h[..92]);
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        h
    };
    // The protective MBR: one partition of type 0xEE over the whole disk (at most 2 TiB).
    let mut mbr = [0u8; 512];
    let e = &mut mbr[446..462];
    e[1..4].copy_from_slice(&[0x00, 0x02, 0x00]);
    e[4] = 0xee;
    e[5..8].copy_from_slice(&[0xff, 0xff, 0xff]);
    e[8..12].copy_from_slice(&1u32.to_le_bytes());
    e[12..16].copy_from_slice(&((total - 1).min(u32::MAX as u64) as u32).to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    let mut primary = mbr.to_vec();
    primary.extend_from_slice(&header(1, total - 1, 2));
    primary.extend_from_slice(&entries);
    let mut backup = entries;
    backup.extend_from_slice(&header(total - 1, 1, total - 1 - GPT_TABLE_SECTORS));
    (primary, backup)
}

/// A classic MBR (no boot code: grub-install writes it) with one bootable partition of type
/// 0x83 (Linux) from sector `start` for `sectors` sectors; CHS fields saturated, as for any
/// partition past cylinder 1023 (firmware and GRUB use the LBA fields).
pub fn mbr(start: u64, sectors: u64) -> [u8; 512] {
    let mut m = [0u8; 512];
    // A disk signature, so the partition has a PARTUUID.
    m[440..444].copy_from_slice(&0x6270_7474u32.to_le_bytes());
    let e = &mut m[446..462];
    e[0] = 0x80; // bootable
    e[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]);
    e[4] = 0x83;
    e[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
    e[8..12].copy_from_slice(&(start as u32).to_le_bytes());
    e[12..16].copy_from_slice(&(sectors as u32).to_le_bytes());
    m[510] = 0x55;
    m[511] = 0xaa;
    m
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbr_has_one_bootable_linux_partition() {
        let m = mbr(2048, 6_291_456);
        assert_eq!(&m[510..], &[0x55, 0xaa]);
        assert_eq!(m[446], 0x80);
        assert_eq!(m[450], 0x83);
        assert_eq!(u32::from_le_bytes(m[454..458].try_into().unwrap()), 2048);
        assert_eq!(
            u32::from_le_bytes(m[458..462].try_into().unwrap()),
            6_291_456
        );
        // The other three entries are empty, and no boot code is written.
        assert!(m[462..510].iter().all(|&b| b == 0));
        assert!(m[..440].iter().all(|&b| b == 0));
    }

    /// The table as util-linux's sfdisk reads it (it checks both headers' and the entry
    /// arrays' CRCs, the usable range and the overlaps: `--verify`).
    #[test]
    fn gpt_as_sfdisk_reads_it() {
        if !testkit::have_tool_or_skip("sfdisk") {
            return;
        }
        let total = 4 * 2048 + 200_000 + GPT_TABLE_SECTORS + 1;
        let parts = [
            GptPartition {
                kind: GPT_ESP,
                first: 2048,
                last: 2048 + 4 * 2048 - 1,
                name: "EFI system partition",
            },
            GptPartition {
                kind: GPT_LINUX_FS,
                first: 2048 + 4 * 2048,
                last: 2048 + 4 * 2048 + 190_000 - 1,
                name: "root",
            },
        ];
        let (primary, backup) = gpt(total, &parts);
        assert_eq!(primary.len() as u64, 2 * 512 + GPT_TABLE_SECTORS * 512);
        assert_eq!(backup.len() as u64, (GPT_TABLE_SECTORS + 1) * 512);
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("disk.raw");
        let mut bytes = vec![0u8; (total * 512) as usize];
        bytes[..primary.len()].copy_from_slice(&primary);
        let at = bytes.len() - backup.len();
        bytes[at..].copy_from_slice(&backup);
        fs::write(&disk, &bytes).unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("sfdisk")
                .args(args)
                .arg(&disk)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            (out.status.success(), text)
        };
        let (ok, text) = run(&["--verify"]);
        assert!(
            ok && text.contains("No errors detected") && !text.contains("corrupt"),
            "{text}"
        );
        let (ok, dump) = run(&["--dump"]);
        assert!(ok, "{dump}");
        assert!(dump.contains("label: gpt"), "{dump}");
        assert!(
            dump.contains(&format!("last-lba: {}", total - 2 - GPT_TABLE_SECTORS)),
            "{dump}"
        );
        assert!(
            dump.contains(
                "start=        2048, size=        8192, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
            ),
            "{dump}"
        );
        assert!(
            dump.contains(
                "start=       10240, size=      190000, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4"
            ),
            "{dump}"
        );
        assert!(dump.contains("name=\"EFI system partition\""), "{dump}");
        // A damaged entry array is found by its CRC, and the backup (written apart, at the
        // disk's end) stands in.
        bytes[2 * 512 + 60] ^= 1;
        fs::write(&disk, &bytes).unwrap();
        let (_, text) = run(&["--verify"]);
        assert!(
            text.contains("primary GPT table is corrupt, but the backup appears OK"),
            "{text}"
        );
    }

    /// Each setup script as the setup boot runs it: `set -e`, the ESP's mount under UEFI
    /// (before anything writes to /boot/efi), the loader's steps, the releases and the word.
    /// The root's fstab line and kernel flags per file system; ext4's fstab as before the
    /// other roots came (the cached disks' keys hash it).
    #[test]
    fn roots() {
        let l = |root, fw| layout(fw, Loader::Grub, Generator::InitramfsTools, root).unwrap();
        assert_eq!(
            l(Root::Ext4, Firmware::Bios).fstab(),
            "/dev/vda1 / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n"
        );
        assert_eq!(
            l(Root::Ext4, Firmware::Uefi).fstab(),
            "/dev/vda2 / ext4 defaults 0 1\n/dev/vda1 /boot/efi vfat umask=0077 0 2\n\
             proc /proc proc defaults 0 0\n"
        );
        let b = l(Root::Btrfs, Firmware::Uefi);
        assert!(b
            .fstab()
            .starts_with("/dev/vda2 / btrfs defaults,subvol=@ 0 0\n"));
        assert_eq!(b.root_flags(), "rootflags=subvol=@");
        let x = l(Root::Xfs, Firmware::Bios);
        assert!(x.fstab().starts_with("/dev/vda1 / xfs defaults 0 0\n"));
        assert_eq!(x.root_flags(), "");
        assert!(layout(
            Firmware::Uefi,
            Loader::SystemdBoot,
            Generator::InitramfsTools,
            Root::Btrfs
        )
        .is_err());
        // LVM: made as ext4 on the staging disk's vda1, then built on vdb by the setup boot;
        // on the BIOS, GRUB and initramfs-tools only.
        let v = l(Root::Lvm, Firmware::Bios);
        let img = crate::vm::image::Image::at(PathBuf::from("image-12-0a1b"));
        assert_eq!(v.fstab(), l(Root::Ext4, Firmware::Bios).fstab());
        let setup = v.setup_script();
        assert!(
            setup.starts_with("set -e\nLUKS=0\nLVM=1\nT=/dev/vdb\n"),
            "{setup}"
        );
        for (root, vars, dev) in [
            (Root::Luks, "LUKS=1\nLVM=0\n", "/dev/mapper/vda2_crypt"),
            (Root::LuksLvm, "LUKS=1\nLVM=1\n", "/dev/mapper/vg0-root"),
        ] {
            let s = l(root, Firmware::Bios).setup_script();
            assert!(s.starts_with(&format!("set -e\n{vars}T=/dev/vdb\n")), "{s}");
            assert!(root.encrypted() && root.stacked_device() == Some(dev));
        }
        assert!(!Root::Lvm.encrypted() && Root::Ext4.stacked_device().is_none());
        assert!(setup.contains("chroot /run/target sh -e -c"), "{setup}");
        assert!(
            setup.ends_with("sync\ncat /root/bootprint-testbed/releases\necho BP\"\"SETUP=ok\n")
        );
        assert!(key(&img, &v) != key(&img, &l(Root::Ext4, Firmware::Bios)));
        for (fw, loader, generator) in [
            (Firmware::Uefi, Loader::Grub, Generator::InitramfsTools),
            (Firmware::Bios, Loader::Grub, Generator::Dracut),
            (
                Firmware::Uefi,
                Loader::SystemdBoot,
                Generator::InitramfsTools,
            ),
        ] {
            assert!(layout(fw, loader, generator, Root::Lvm).is_err());
        }
    }

    #[test]
    fn setup_scripts_are_whole() {
        let bios = layout(
            Firmware::Bios,
            Loader::Grub,
            Generator::InitramfsTools,
            Root::Ext4,
        )
        .unwrap()
        .setup_script();
        assert!(bios.starts_with("set -e\necho 'grub-pc grub-pc/install_devices"));
        assert!(!bios.contains("mkfs.fat"));
        for loader in [Loader::Grub, Loader::SystemdBoot] {
            let l = layout(
                Firmware::Uefi,
                loader,
                Generator::InitramfsTools,
                Root::Ext4,
            )
            .unwrap();
            let s = l.setup_script();
            assert!(
                s.starts_with(
                    "set -e\nmkfs.fat -n ESP /dev/vda1\nmkdir -p /boot/efi\nmount /boot/efi\n"
                ),
                "{s}"
            );
            assert!(s.contains(l.setup), "{s}");
            assert!(l.fstab().contains("/dev/vda1 /boot/efi vfat"));
            assert_eq!(l.root_dev(), "/dev/vda2");
        }
        for s in [
            bios,
            layout(
                Firmware::Uefi,
                Loader::SystemdBoot,
                Generator::Dracut,
                Root::Ext4,
            )
            .unwrap()
            .setup_script(),
        ] {
            assert!(
                s.ends_with("\ncat /root/bootprint-testbed/releases\necho BP\"\"SETUP=ok\n"),
                "{s}"
            );
        }
        assert!(layout(
            Firmware::Bios,
            Loader::SystemdBoot,
            Generator::Dracut,
            Root::Btrfs
        )
        .is_err());
    }

    /// Under systemd as init the setup boot starts without the ESP's fstab line (an fstab
    /// mount of the unformatted ESP stopped it at the emergency shell, 2026-11-29) and the
    /// setup script adds it after `mkfs.fat`, before mounting; sysvinit's layouts keep the
    /// line from the start (their cached disks' keys unchanged).
    #[test]
    fn the_esp_joins_the_fstab_once_formatted_under_systemd() {
        let sd = layout(
            Firmware::Uefi,
            Loader::SystemdBoot,
            Generator::Dracut,
            Root::Ext4,
        )
        .unwrap();
        assert_eq!(
            sd.fstab_before_setup(),
            "/dev/vda2 / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n"
        );
        assert!(sd.setup_script().starts_with(
            "set -e\nmkfs.fat -n ESP /dev/vda1\nmkdir -p /boot/efi\n\
             printf '/dev/vda1 /boot/efi vfat umask=0077 0 2\\n' >> /etc/fstab\nmount /boot/efi\n"
        ));
        assert!(sd.fstab().contains("/dev/vda1 /boot/efi vfat"));
        let sysv = layout(
            Firmware::Uefi,
            Loader::SystemdBoot,
            Generator::InitramfsTools,
            Root::Ext4,
        )
        .unwrap();
        assert_eq!(sysv.fstab_before_setup(), sysv.fstab());
        let bios = layout(Firmware::Bios, Loader::Grub, Generator::Dracut, Root::Ext4).unwrap();
        assert_eq!(bios.fstab_before_setup(), bios.fstab());
    }

    #[test]
    fn releases_file() {
        assert_eq!(
            parse_releases("old 6.1.0-47-amd64\nnew 6.1.0-50-amd64\n"),
            Some(("6.1.0-47-amd64".into(), "6.1.0-50-amd64".into()))
        );
        // In a guest's output, among other lines; a missing or empty field is no answer.
        assert_eq!(
            parse_releases("Generating grub configuration file ...\nnew 6.1.0-50-amd64\nold 6.1.0-47-amd64\nBPSETUP=ok\n"),
            Some(("6.1.0-47-amd64".into(), "6.1.0-50-amd64".into()))
        );
        assert_eq!(parse_releases("old 6.1.0-47-amd64\n"), None);
        assert_eq!(parse_releases("old \nnew 6.1.0-50-amd64\n"), None);
        assert_eq!(parse_releases("older 6.1.0-47-amd64\nnew x\n"), None);
    }
}
