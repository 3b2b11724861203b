//! The login target learned from the system (`login = ["auto"]` in `[rc]` of
//! bootprint.toml): what a login on this machine needs before the getty or the display manager may start, each part with
//! the file and line that put it there, or why it was left out. The Mandriva seed took a
//! second off by not waiting for the network before the display manager unless logins
//! need it; the rules:
//!
//! - `$local_fs`, `$time` and `rmnologin` always: logins read /etc/passwd and the home
//!   directories, record their time (utmp, wtmp, lastlog), and are refused while
//!   /run/nologin exists.
//! - `$remote_fs` only when /etc/fstab mounts a network file system (or marks one
//!   `_netdev`).
//! - `$network` only then, or when /etc/nsswitch.conf resolves users or groups from the
//!   network (ldap, nis, nisplus, sss, winbind, hesiod), or PAM uses a network module
//!   (pam_ldap, pam_sss, pam_winbind, pam_krb5, pam_radius).
//! - `$syslog` only when the syslog configuration logs the `auth` or `authpriv` facility
//!   (a login logged before the daemon runs is lost); kept when a syslog daemon other than
//!   rsyslog is configured, since its configuration is not read here.
//!
//! Pure reading of files under a root; nothing here runs at boot unless rc.conf asks.

use std::path::Path;

/// One part of the login target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// A script or `$facility`.
    pub name: String,
    /// Whether the login waits for it.
    pub kept: bool,
    /// Why (with the file and line when one decided it).
    pub why: String,
}

/// File systems reached over the network.
const REMOTE_FS: [&str; 15] = [
    "nfs",
    "nfs4",
    "cifs",
    "smbfs",
    "smb3",
    "sshfs",
    "fuse.sshfs",
    "glusterfs",
    "ceph",
    "9p",
    "davfs",
    "fuse.davfs",
    "afs",
    "ncpfs",
    "lustre",
];
/// nsswitch sources that ask the network.
const NETWORK_SOURCES: [&str; 6] = ["ldap", "nis", "nisplus", "sss", "winbind", "hesiod"];
/// PAM modules that ask the network.
const NETWORK_PAM: [&str; 5] = [
    "pam_ldap",
    "pam_sss",
    "pam_winbind",
    "pam_krb5",
    "pam_radius",
];
/// nsswitch databases a login reads.
const LOGIN_DATABASES: [&str; 4] = ["passwd", "group", "shadow", "initgroups"];

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel.trim_start_matches('/'))).ok()
}

/// Lines without comments, numbered from 1.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let l = l.split('#').next().unwrap_or("").trim();
        (!l.is_empty()).then_some((i + 1, l))
    })
}

/// The first remote mount of /etc/fstab: `"/etc/fstab:N: TYPE at MOUNTPOINT"`.
fn remote_mount(root: &Path) -> Option<String> {
    let text = read(root, "/etc/fstab")?;
    let found = lines(&text).find_map(|(n, l)| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (mp, ty) = (f.get(1)?, f.get(2)?);
        let netdev = f
            .get(3)
            .is_some_and(|o| o.split(',').any(|o| o == "_netdev"));
        (REMOTE_FS.contains(ty) || netdev).then(|| format!("/etc/fstab:{n}: {ty} at {mp}"))
    });
    found
}

/// The first network source of a login database in /etc/nsswitch.conf.
fn network_nss(root: &Path) -> Option<String> {
    let text = read(root, "/etc/nsswitch.conf")?;
    let found = lines(&text).find_map(|(n, l)| {
        let (db, sources) = l.split_once(':')?;
        let db = db.trim();
        if !LOGIN_DATABASES.contains(&db) {
            return None;
        }
        sources
            .split_whitespace()
            .map(|s| s.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
            .find(|s| NETWORK_SOURCES.contains(s))
            .map(|s| format!("/etc/nsswitch.conf:{n}: {db} from {s}"))
    });
    found
}

/// The first network PAM module in /etc/pam.d.
fn network_pam(root: &Path) -> Option<String> {
    let dir = root.join("etc/pam.d");
    let mut files: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    files.sort_by_key(|e| e.file_name());
    files.iter().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).ok()?;
        let found = lines(&text).find_map(|(n, l)| {
            l.split_whitespace()
                .find(|w| {
                    let module = w.rsplit('/').next().unwrap_or(w);
                    NETWORK_PAM
                        .iter()
                        .any(|m| module.strip_prefix(m).is_some_and(|r| r.starts_with(".so")))
                })
                .map(|m| format!("/etc/pam.d/{name}:{n}: {m}"))
        });
        found
    })
}

/// Whether one rsyslog/sysklogd selector (`auth,authpriv.*;*.none`) logs auth or authpriv.
fn selector_logs_auth(selector: &str) -> bool {
    let (mut auth, mut authpriv) = (false, false);
    for part in selector.split(';') {
        let Some((facilities, priority)) = part.split_once('.') else {
            continue;
        };
        let on = priority.trim() != "none";
        for f in facilities.split(',').map(str::trim) {
            if f == "*" || f == "auth" || f == "security" {
                auth = on;
            }
            if f == "*" || f == "authpriv" {
                authpriv = on;
            }
        }
    }
    auth || authpriv
}

/// The first line of the rsyslog configuration that logs logins, or why not.
fn syslog_logs_logins(root: &Path) -> Result<String, String> {
    let mut files = vec!["/etc/rsyslog.conf".to_string()];
    if let Ok(dir) = std::fs::read_dir(root.join("etc/rsyslog.d")) {
        let mut more: Vec<String> = dir
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".conf"))
            .map(|n| format!("/etc/rsyslog.d/{n}"))
            .collect();
        more.sort();
        files.extend(more);
    }
    let mut any = false;
    for file in &files {
        let Some(text) = read(root, file) else {
            continue;
        };
        any = true;
        for (n, l) in lines(&text) {
            // Directives ($Module, module(...), templates) are not selectors.
            if l.starts_with('$') || l.contains('(') {
                continue;
            }
            let mut w = l.split_whitespace();
            let (Some(selector), Some(action)) = (w.next(), w.next()) else {
                continue;
            };
            if selector_logs_auth(selector) {
                return Ok(format!("{file}:{n}: {selector} {action}"));
            }
        }
    }
    if any {
        return Err("the syslog configuration logs neither auth nor authpriv".into());
    }
    for other in [
        "/etc/syslog-ng/syslog-ng.conf",
        "/etc/syslog.conf",
        "/etc/busybox-syslog",
    ] {
        if root.join(other.trim_start_matches('/')).exists() {
            return Ok(format!("{other}: a syslog daemon this does not read"));
        }
    }
    Err("no syslog configuration".into())
}

/// The login target of the system under `root`, every part with its reason.
pub fn learn(root: &Path) -> Vec<Need> {
    let need = |name: &str, kept: bool, why: String| Need {
        name: name.into(),
        kept,
        why,
    };
    let remote = remote_mount(root);
    let network = remote
        .clone()
        .or_else(|| network_nss(root))
        .or_else(|| network_pam(root));
    vec![
        need(
            "$local_fs",
            true,
            "logins read /etc/passwd and the home directories".into(),
        ),
        need(
            "$time",
            true,
            "logins record their time (utmp, wtmp, lastlog)".into(),
        ),
        need(
            "rmnologin",
            true,
            "logins are refused while /run/nologin exists".into(),
        ),
        match &remote {
            Some(r) => need("$remote_fs", true, r.clone()),
            None => need(
                "$remote_fs",
                false,
                "no network file system in /etc/fstab".into(),
            ),
        },
        match network {
            Some(r) => need("$network", true, r),
            None => need(
                "$network",
                false,
                "no network file system, no network source in /etc/nsswitch.conf, no network PAM module".into(),
            ),
        },
        match syslog_logs_logins(root) {
            Ok(r) => need("$syslog", true, r),
            Err(r) => need("$syslog", false, r),
        },
    ]
}

/// The kept names of [`learn`].
pub fn target(needs: &[Need]) -> Vec<String> {
    needs
        .iter()
        .filter(|n| n.kept)
        .map(|n| n.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for (rel, text) in files {
            let p = d.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        tmp
    }

    fn kept(needs: &[Need], name: &str) -> (bool, String) {
        let n = needs.iter().find(|n| n.name == name).unwrap();
        (n.kept, n.why.clone())
    }

    /// Debian's defaults: files for users, no remote mount, rsyslog logging auth.
    #[test]
    fn a_debian_default_needs_syslog_but_not_the_network() {
        let r_tmp = root(
            &[
                ("etc/fstab", "# <file system> <mount point>\n/dev/vda / ext4 errors=remount-ro 0 1\n"),
                ("etc/nsswitch.conf", "passwd:         files\ngroup:          files\nhosts:          files dns\n"),
                ("etc/pam.d/common-auth", "auth [success=1 default=ignore] pam_unix.so nullok\n"),
                ("etc/rsyslog.conf", "module(load=\"imuxsock\")\n$FileOwner root\n*.*;auth,authpriv.none\t-/var/log/syslog\nauth,authpriv.*\t\t\t/var/log/auth.log\n"),
            ],
        );
        let r = r_tmp.path();
        let needs = learn(r);
        assert_eq!(
            target(&needs),
            ["$local_fs", "$time", "rmnologin", "$syslog"]
        );
        assert_eq!(
            kept(&needs, "$syslog").1,
            "/etc/rsyslog.conf:4: auth,authpriv.* /var/log/auth.log"
        );
        assert!(!kept(&needs, "$network").0);
        assert!(!kept(&needs, "$remote_fs").0);
    }

    #[test]
    fn network_logins_and_remote_homes_need_the_network() {
        let r_tmp = root(&[
            (
                "etc/nsswitch.conf",
                "passwd: files ldap\nhosts: files dns\n",
            ),
            (
                "etc/rsyslog.conf",
                "*.*;auth,authpriv.none -/var/log/syslog\n",
            ),
        ]);
        let r = r_tmp.path();
        let needs = learn(r);
        assert_eq!(
            kept(&needs, "$network"),
            (true, "/etc/nsswitch.conf:1: passwd from ldap".into())
        );
        assert!(
            !kept(&needs, "$syslog").0,
            "auth excluded everywhere: {:?}",
            kept(&needs, "$syslog")
        );
        let r_tmp = root(&[("etc/fstab", "srv:/home /home nfs defaults 0 0\n")]);
        let r = r_tmp.path();
        let needs = learn(r);
        assert_eq!(
            kept(&needs, "$remote_fs"),
            (true, "/etc/fstab:1: nfs at /home".into())
        );
        assert!(kept(&needs, "$network").0);
        let r_tmp = root(&[(
            "etc/pam.d/common-auth",
            "auth sufficient pam_sss.so use_first_pass\n",
        )]);
        let r = r_tmp.path();
        assert_eq!(
            kept(&learn(r), "$network"),
            (true, "/etc/pam.d/common-auth:1: pam_sss.so".into())
        );
    }

    #[test]
    fn selectors_follow_rsyslog_order() {
        assert!(selector_logs_auth("auth,authpriv.*"));
        assert!(selector_logs_auth("*.info"));
        assert!(!selector_logs_auth("*.*;auth,authpriv.none"));
        assert!(!selector_logs_auth("mail.*"));
        assert!(selector_logs_auth("*.none;authpriv.info"));
    }
}
