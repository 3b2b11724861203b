//! The enablement crate and the systemd crate's state: the two files bootprint's root-run
//! steps act on that enable and boot done wrote (the manifest `disable` undoes, the late
//! units the generator defers).

use enablement::{is_startpar, startpar_distrib, Change, Manifest, CREATED_DIRS, CREATED_FILES};
use systemd::late::{check_state, from_state, Pins};

use super::strict;
use crate::{seeds, Target};

/// Whether `c` is a change `bootprint enable` makes: the manifest's parser must accept
/// nothing else, whatever the bytes.
fn enables_own(c: &Change) -> bool {
    match c {
        Change::CreatedDir(p) => CREATED_DIRS.contains(&p.as_str()),
        Change::Created(p) => CREATED_FILES.contains(&p.as_str()),
        Change::Diverted { path, to } => is_startpar(path) && *to == startpar_distrib(path),
        Change::Built { kernel, image } => {
            enablement::manifest::valid_release(kernel) && *image == enablement::image_of(kernel)
        }
    }
}

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "enable_manifest",
            about: "enablement::Manifest::parse (/var/lib/bootprint/enabled, which disable undoes as root): only enable's own changes accepted, to_text reads back",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(m) = Manifest::parse(t, "enabled") {
                        assert!(
                            m.changes.iter().all(enables_own),
                            "a change enable does not make was accepted: {:?}",
                            m.changes
                        );
                        let again = Manifest::parse(&m.to_text(), "again").expect("to_text reads back");
                        assert_eq!(again, m);
                        let _ = enablement::dropin_text(&m);
                    }
                }
            },
            seeds: || seeds::lit(&[MANIFEST]),
            tokens: &[
                "lever ", "record", "initramfs", "default initramfs", "created ", "created-dir ",
                "diverted ", "built ", "/bin/startpar", "/bin/startpar.distrib", "/etc/default/grub.d",
                "/etc/default/grub.d/bootprint.cfg", "/boot/bootprint-initrd.img-", "6.1.0-9-amd64",
                "/../", "..", "/var/lib/bootprint", "\n", " ",
            ],
            structured: None,
        },
        Target {
            name: "systemd_late_state",
            about: "systemd::late::from_state (/var/lib/bootprint/systemd-late, which the generator defers at boot), check_state: no core or login unit is ever deferred",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(st) = from_state(t) {
                        let pins = st.pins.clone();
                        if let Ok(plan) = check_state(&st, st.units, &pins, |n| n.ends_with(".socket")) {
                            for u in &plan.late {
                                assert!(
                                    !systemd::late::core_unit(u) && !systemd::late::login_name(u),
                                    "{u} deferred"
                                );
                            }
                        }
                        let _ = check_state(&st, st.units ^ 1, &Pins::default(), |_| false)
                            .expect_err("another fingerprint defers nothing");
                    }
                }
            },
            seeds: || seeds::lit(&[LATE_STATE]),
            tokens: &[
                "# bootprint systemd late units 2", "units ", "0123456789abcdef", "pins never_late",
                "pins late_units", ".service", "dbus.service", "getty@tty1.service",
                "systemd-journald.service", "# kept ", "\n", " ",
            ],
            structured: None,
        },
    ]
}

const MANIFEST: &str = "# bootprint enable\nlever record\nlever rc\nlever initramfs\ndefault initramfs\ncreated-dir /var/lib/bootprint\ndiverted /bin/startpar /bin/startpar.distrib\ncreated /bin/startpar\nbuilt 6.1.0-9-amd64 /boot/bootprint-initrd.img-6.1.0-9-amd64\ncreated-dir /etc/default/grub.d\ncreated /etc/default/grub.d/bootprint.cfg\n";

const LATE_STATE: &str = "# bootprint systemd late units 2\nunits 00000000deadbeef\npins never_late ssh.service\npins late_units\ncron.service\nexim4.service\ndbus.service\n# kept rsyslog.service: started by syslog.socket on demand\n";
