//! The real-boot tests: each boots the image and passes or fails (smoke, faults, soak, the
//! package, the desktop session, late units, parity, a reboot cycle, the initramfs, the module set, the
//! kernel stall, a lever's verdict, a lever made to cost switching itself off), and `fleet` and `otlp`, which boot nothing: a planted fleet's
//! boots in a real Prometheus, boots' traces in a real Jaeger. Imports `vm` and, for result files and figures,
//! `bench`'s runner; never `cli`.

pub mod checklist;
pub mod desktop_test;
pub mod faults;
pub mod fleet;
pub mod host;
pub mod initramfs_test;
pub mod late_test;
pub mod otlp;
pub mod package_dracut;
pub mod package_sdboot;
pub mod package_stacked;
pub mod package_test;
pub mod parity;
pub mod reboot;
pub mod selfoff;
pub mod smoke;
pub mod soak;
pub mod stall_repro;
pub mod timeouts_test;
pub mod verdict;
