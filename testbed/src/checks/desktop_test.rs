//! `bootprint-testbed desktop`: the desktop image's session comes up, both ways a user logs
//! in (issue 18, part 1): LightDM's autologin, and the password typed into the greeter
//! after a wait. Each boot checks, in the guest, that the test user's session runs every
//! program it should (`desktop_session`), and how long after the kernel's start each began.

use crate::checks::checklist::{self, Checks};
use crate::vm::desktop_session::{
    guest_script, section, LOGIN_WORD, PRELOAD_WORD, PROGRAMS, RECORD_LIMIT_S,
};
use crate::vm::image::{self, Flavor, Image};
use crate::vm::qemu::{self, BootOpts, BootResult, Profile};
use crate::vm::util::{Paths, Result};

pub fn run(
    paths: &Paths,
    systemd: bool,
    greeter_wait_s: u32,
    only: Option<&str>,
    cargo: bool,
) -> Result<()> {
    checklist::run("desktop", |c| {
        desktop(paths, systemd, greeter_wait_s, only, cargo, c)
    })
}

fn desktop(
    paths: &Paths,
    systemd: bool,
    greeter_wait_s: u32,
    only: Option<&str>,
    cargo: bool,
    c: &mut Checks,
) -> Result<()> {
    let flavor = if systemd {
        Flavor::DesktopSystemd
    } else {
        Flavor::Desktop
    };
    let img = image::ensure_flavor(paths, cargo, flavor)?;
    let logins = ["auto".to_string(), format!("greeter:{greeter_wait_s}")];
    for login in logins
        .into_iter()
        .filter(|l| only.is_none_or(|o| l.starts_with(o)))
    {
        let r = login_boot(paths, &img, &login)?;
        let events = r
            .trace_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join("events.log")).ok())
            .unwrap_or_default();
        let out = r.guest_output.clone().unwrap_or_default();
        check_session(c, &r, &login, flavor, &events, &out);
        check_preload(c, &login, &events, &out);
    }
    Ok(())
}

/// One boot of the desktop image logging in by `login` (`auto`, `greeter:SECONDS`),
/// recorded, with the session's check script.
fn login_boot(paths: &Paths, img: &Image, login: &str) -> Result<BootResult> {
    let mut o = BootOpts::new(Profile::Fast);
    // The boot's own limit (240 s of uptime) and the session's (300 s) would end the
    // recording before a session under emulation is ready (Firefox's first start alone
    // kept the guest busy for minutes).
    o.append = format!(
        "{LOGIN_WORD}={login} {PRELOAD_WORD}=learn bootprint.timeout_s={RECORD_LIMIT_S} \
         bootprint.desktop_timeout_s={RECORD_LIMIT_S}"
    );
    o.record = true;
    o.trace_wait_s = RECORD_LIMIT_S;
    o.guest_script = Some(guest_script());
    qemu::boot(paths, img, &o)
}

/// The first line of the trace's `events` with `pattern`.
fn said(events: &str, pattern: &str) -> Option<String> {
    events
        .lines()
        .find(|l| l.contains(pattern))
        .map(str::to_string)
}

/// The session came up: its start and desktop ready in the trace, every program running,
/// and through the greeter the typed password.
fn check_session(
    c: &mut Checks,
    r: &BootResult,
    login: &str,
    flavor: Flavor,
    events: &str,
    out: &str,
) {
    let session = said(events, " milestone name=session_start ");
    let ready = said(events, " desktop_ready ");
    c.check(
        session.is_some() && ready.as_deref().is_some_and(|l| l.contains("reason=idle")),
        &format!(
            "login {login}: the trace has the session's start and its desktop ready: \
             {session:?}, {ready:?} ({})",
            r.trace_dir
                .as_ref()
                .map_or("no trace".into(), |d| d.display().to_string())
        ),
    );
    let running: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| out.lines().any(|l| l == format!("running {p}")))
        .collect();
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| !running.contains(p))
        .collect();
    c.check(
        missing.is_empty(),
        &format!(
            "{} image, login {login}: the session runs {} (missing: {missing:?}); serial log {}",
            flavor.name(),
            running.join(" "),
            r.serial_log.display()
        ),
    );
    if login.starts_with("greeter") {
        let typed = section(out, "login-log");
        c.check(
            typed.iter().any(|l| l.starts_with("typed (")) && typed.contains(&"session started"),
            &format!(
                "login {login}: the password typed into the greeter started the session: {typed:?}"
            ),
        );
    }
}

/// What preload did in the session: learned it through the greeter, nothing after an
/// autologin; its log's lines and the programs' start times printed.
fn check_preload(c: &mut Checks, login: &str, events: &str, out: &str) {
    // Preload, on in these boots by the test bed's word. Through the greeter: LightDM's
    // hook ran it at the session's start, it learned the session into a model, and the
    // recorder gave the login its desktop time. After an autologin it does nothing (no
    // greeter waited: docs/preload.md, "Who starts it"), and the time goes to no login.
    let autologin = login == "auto";
    let preload = said(events, " preload_login ");
    let expected = if autologin {
        "result=no_login"
    } else {
        "result=recorded"
    };
    c.check(
        preload.as_deref().is_some_and(|l| l.contains(expected)),
        &format!("login {login}: the recorder's desktop time for preload, {expected}: {preload:?}"),
    );
    let log = section(out, "preload-log");
    let status = section(out, "preload-status");
    if autologin {
        c.check(
            log.iter().any(|l| l.starts_with("preload: an autologin")),
            &format!("login {login}: preload did nothing after the autologin: log {log:?}"),
        );
    } else {
        // The model's line: "N files, X MB, from N logins, last TIME".
        let learned = status
            .iter()
            .any(|l| l.contains(" files, ") && l.contains(" logins, last "));
        c.check(
            learned,
            &format!(
                "login {login}: preload learned the session into a model: status {status:?}, log {log:?}"
            ),
        );
        // The guests' kernel (6.1) has no filemap access tracepoints: preload learns the
        // session's cache misses ("learned: N files opened, M with pages (X MB, added), ...").
        let learned_line = log.iter().find(|l| l.starts_with("learned:"));
        c.check(
            learned_line.is_some_and(|l| l.contains(" MB, added)")),
            &format!(
                "login {login}: preload learned from the session's cache misses: {learned_line:?}"
            ),
        );
    }
    for l in log
        .iter()
        .filter(|l| l.starts_with("learned:") || l.starts_with("model:"))
    {
        println!("      preload {l}");
    }
    for l in section(out, "started") {
        println!("      {l}");
    }
}
