//! The record crate: `bootprint.toml` and the kernel command line as the boot path reads
//! them, the note the initramfs's replay leaves, and `/dev/kmsg` records.

use std::path::Path;

use record::config::Config;
use record::readahead::InitramfsReplay;

use super::{lossy, strict};
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "record_config",
            about: "record::config::Config::apply_toml (/etc/bootprint/bootprint.toml as Config::load reads it)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let mut c = Config::default();
                    let _ = c.apply_toml(t, "/etc/bootprint/bootprint.toml");
                }
            },
            seeds: || seeds::lit(&[BOOTPRINT_TOML]),
            tokens: RECORD_TOKENS,
            structured: None,
        },
        Target {
            name: "record_cmdline",
            about: "record::config::Config::apply_cmdline (bootprint.* words of /proc/cmdline)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let mut c = Config::default();
                    let _ = c.apply_cmdline(t);
                }
            },
            seeds: || seeds::lit(&[CMDLINE]),
            tokens: RECORD_TOKENS,
            structured: None,
        },
        Target {
            name: "record_initramfs_replay",
            about: "record::readahead::InitramfsReplay::parse (/run/bootprint/readahead-replay)",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(r) = InitramfsReplay::parse(t, Path::new("readahead-replay")) {
                        let back = InitramfsReplay::parse(&r.to_text(), Path::new("x"));
                        let _ = back;
                    }
                }
            },
            seeds: || {
                seeds::lit(&["bootprint-initramfs-replay 1\npid 123\nstarted_ns 456789\nreport /run/bootprint/readahead-replay.stats\nroot_dev 254:1\nread_at_start 4096\n"])
            },
            tokens: &["bootprint-initramfs-replay 1", "pid ", "started_ns ", "report ", "root_dev ", "read_at_start ", "254:1", ":"],
            structured: None,
        },
        Target {
            name: "record_kmsg",
            about: "record::kmsg::format_record (a /dev/kmsg record)",
            run: |d| {
                let _ = record::kmsg::format_record(&lossy(d));
            },
            seeds: || {
                seeds::lit(&[
                    "6,339,5140900,-;NET: Registered PF_INET6 protocol family\n SUBSYSTEM=net\n",
                    "4,1,0,-,caller=T0;Linux version 6.1.0\\x09tab",
                ])
            },
            tokens: &[";", ",", "-", "\\x09", "caller=T1"],
            structured: None,
        },
    ]
}

const BOOTPRINT_TOML: &str = "# /etc/bootprint/bootprint.toml\ninit = \"/sbin/init\"\nrecord = true\nhz = 50\nidle_cpu = 0.25\nidle_disk = 0.1\nsettle = 3\ntimeout = 120\nlog_dir = \"/var/log/bootprint\"\nlogin_names = [\"getty\", \"agetty\"]\ngreeter_names = [\"lightdm-greeter\"]\nreadahead = true\nmodules = true\nrc = false\n\n[readahead]\nbudget_mb = 128\nio_class = \"idle\"\norder = \"auto\"\nmax_age_days = 30\ncompare_every = 10\n\n[budget]\nkernel_s = 1\n";

const CMDLINE: &str = "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet init=/usr/lib/bootprint/bootprint-boot bootprint.init=/sbin/init bootprint.record=1 bootprint.hz=100 bootprint.readahead=0 bootprint.settle=2.5 \"bootprint.log_dir=/var/log/x y\" -- single\n";

const RECORD_TOKENS: &[&str] = &[
    "bootprint.",
    "bootprint.hz=",
    "bootprint.init=",
    "bootprint.record=",
    "bootprint.readahead=",
    "bootprint.timeout=",
    "bootprint.readahead_budget_mb=",
    "hz",
    "timeout",
    "settle",
    "readahead_budget_mb",
    "readahead_max_age_days",
    "readahead_compare_every",
    "readahead_io_class",
    "readahead_order",
    "[readahead]",
    "[modules]",
    "[rc]",
    "[record]",
    " = ",
    "1e300",
    "\"",
    "--",
    "on",
    "off",
    "yes",
    "no",
];
