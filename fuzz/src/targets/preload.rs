//! The preload crate: the model file and the `[preload]` section of bootprint.toml.

use preload::config::Config;
use preload::model::{Decay, Model};

use super::strict;
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "preload_model",
            about: "preload::model::Model::parse (/var/lib/bootprint/preload/model), to_text, bytes, prefetch_list, update",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(mut m) = Model::parse(t, "model") {
                        let _ = m.bytes();
                        for budget in [0, 4095, 1 << 20, u64::MAX] {
                            let _ = m.prefetch_list(budget, 4096);
                        }
                        let again = Model::parse(&m.to_text(), "again").expect("to_text reads back");
                        assert_eq!(again.files.len(), m.files.len());
                        let read: Vec<_> = m.files.iter().take(3).map(|f| f.entry.clone()).collect();
                        m.update(&read, &Decay::default(), 1);
                        let _ = m.to_text();
                    }
                }
            },
            seeds: || seeds::lit(&[MODEL]),
            tokens: &["version 1", "logins ", " updated ", "file ", "1.5 ", "0+4096", ",8192+4096", ".000000001 ", " /usr/bin/x"],
            structured: None,
        },
        Target {
            name: "preload_config",
            about: "preload::config::Config::from_toml ([preload] of bootprint.toml)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let _ = Config::from_toml(t, "bootprint.toml");
                }
            },
            seeds: || seeds::lit(&[CONFIG]),
            tokens: &["[preload]", "enabled = ", "budget_mb = ", "decay = ", "io_class = \"idle\"", "true", "0.5"],
            structured: None,
        },
    ]
}

const MODEL: &str = "# bootprint preload model (docs/preload.md)\nversion 1\nlogins 4 updated 1795000000\nfile 1.875 2049 131074 1048576 1795000000.123456789 0+65536,131072+8192 /usr/bin/xfce4-panel\nfile 0.5 2049 7 10 -3.000000000 0+4096 /opt/My App/run me\n";

const CONFIG: &str = "[preload]\nenabled = true\nbudget_mb = 128\nmem_share = 0.2\ndecay = 0.5\ndrop_below = 0.3\nwindow_s = 30\nquiet_s = 4\ncompare_every = 5\nio_class = \"best-effort\"\n";
