//! The machine under test: building the Debian image (and its aged, desktop and GRUB-booted
//! forms), booting it under QEMU, its drives (throttled, seek-modelling) and its serial
//! console, and the helpers every layer shares (errors, paths, logged commands, locks).
//! Imports nothing of `bench`, `checks` or `cli`.

pub mod age;
pub mod cpuscale;
pub mod cycle;
pub mod deps;
pub mod desktop_session;
pub mod fsimage;
pub mod grub_disk;
pub mod hang;
pub mod hostload;
pub mod image;
pub mod initramfs;
pub mod qemu;
pub mod seekdisk;
pub mod seekmodel;
pub mod serial;
pub mod util;
