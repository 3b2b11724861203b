//! Test support shared by bootprint's test suites (a dev-dependency only; nothing here is
//! built into the programs).
//!
//! It owns one rule, one check the chart tests share ([`check_xml`]), a loop-mounted
//! ext4 image with its cleanup ([`ext4::Ext4Image`], for relocation's tests), a small tmpfs
//! to fill ([`tmpfs::Tmpfs`], for writes that fail for want of space), and a pause
//! of the machine's proactive reclaim for tests that check the page cache
//! ([`reclaim::PauseReclaim`]), and a log directory holding a reboot cycle
//! ([`cycle::log_dir`], for the cycle's views), and a program to run, copied or written
//! ([`copy_program`], [`write_program`]). The rule: a test that cannot run here (it needs
//! root, a tool, a kernel feature) says so and passes on a developer's machine, but **fails under `CI=true`**, where the
//! machine runs as root with every tool installed, so a missing install step cannot hide
//! behind a green run. Each skip is also appended to the file named by
//! `BOOTPRINT_TEST_SKIPS`, so `make unit` can say in its summary how many tests were
//! skipped and why.
//!
//! ```
//! fn needs_root() {
//!     if !testkit::is_root() {
//!         return testkit::skip("needs root");
//!     }
//!     // ... the test
//! }
//! ```

#![deny(missing_docs)]

use std::io::Write;

pub mod cycle;
pub mod ext4;
pub mod reclaim;
pub mod tmpfs;

/// Whether this is a CI run (`CI=true`), where skipping is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    sys::euid() == 0
}

/// Skips the calling test with a reason: prints it and records it, and under `CI=true`
/// fails the test instead.
#[track_caller]
pub fn skip(why: &str) {
    let at = std::panic::Location::caller();
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if in_ci() {
        panic!("{test} ({at}) would be skipped ({why}); under CI=true every test must run");
    }
    eprintln!("skipped: {why}");
    record(why, at);
}

/// Notes that a check of the machine itself does not apply here (a kernel built without
/// modules, say): printed and recorded like [`skip`], but not a failure under `CI=true`,
/// since no install step can change it. Use [`skip`] for everything a machine can be given.
#[track_caller]
pub fn not_here(why: &str) {
    let at = std::panic::Location::caller();
    eprintln!("not applicable here: {why}");
    record(&format!("(not applicable here) {why}"), at);
}

fn record(why: &str, at: &std::panic::Location) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if let Some(file) = std::env::var_os("BOOTPRINT_TEST_SKIPS") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
        {
            let _ = writeln!(f, "{test} ({at}): {why}");
        }
    }
}

/// Copies the program `src` to `dst` (mode `mode`) for a test to run. The copy is written by
/// a `cp` child, never by the test process: a descriptor open for writing in the test
/// process is inherited, for the moment between fork and exec, by every child another test
/// thread starts, and running the program then fails with ETXTBSY ("Text file busy"), one
/// time in many.
#[track_caller]
pub fn copy_program(src: &std::path::Path, dst: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let status = std::process::Command::new("cp")
        .arg("--")
        .arg(src)
        .arg(dst)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp {} {}: {status}",
        src.display(),
        dst.display()
    );
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `cmd` with `stdin` on its standard input (nothing when None) and returns whether it
/// exited 0, and its standard output then its standard error, as text.
#[track_caller]
pub fn run_with_input(cmd: &mut std::process::Command, stdin: Option<&[u8]>) -> (bool, String) {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Writes a program (a script: `text`) to `path`, mode `mode`, for a test to run: written
/// by a `sh` child from a pipe, never through a descriptor of the test process, for the
/// reason [`copy_program`] gives.
#[track_caller]
pub fn write_program(path: &std::path::Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .args(["-c", "cat > \"$1\"", "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "writing {}: {status}", path.display());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Whether `tool` is on the PATH; when it is not, skips (see [`skip`]) and returns false.
#[track_caller]
pub fn have_tool_or_skip(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()));
    if !found {
        skip(&format!("no {tool} on this host"));
    }
    found
}

/// A small XML well-formedness check for the SVG and HTML tests: an XML declaration, one root
/// element, tags nest and match, attribute
/// values quoted and unique, `&` only in known entities, no `<` in text.
pub fn check_xml(s: &str) -> Result<usize, String> {
    fn entity_ok(rest: &str) -> bool {
        let Some(end) = rest.find(';') else {
            return false;
        };
        let e = &rest[1..end];
        matches!(e, "amp" | "lt" | "gt" | "quot" | "apos")
            || (e.starts_with("#x") && e.len() > 2 && e[2..].chars().all(|c| c.is_ascii_hexdigit()))
            || (e.starts_with('#') && e.len() > 1 && e[1..].chars().all(|c| c.is_ascii_digit()))
    }
    fn text_ok(t: &str) -> Result<(), String> {
        for (i, c) in t.char_indices() {
            if c == '<' {
                return Err(format!("'<' in text: {t:?}"));
            }
            if c == '&' && !entity_ok(&t[i..]) {
                return Err(format!("bad entity in {t:?}"));
            }
            if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') {
                return Err(format!("control character in {t:?}"));
            }
        }
        Ok(())
    }
    let mut rest = s.strip_prefix("<?xml").ok_or("no XML declaration")?;
    rest = &rest[rest.find("?>").ok_or("unclosed declaration")? + 2..];
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut elements = 0;
    loop {
        let lt = match rest.find('<') {
            Some(i) => i,
            None => {
                text_ok(rest)?;
                if !rest.trim().is_empty() {
                    return Err("text after the root".into());
                }
                break;
            }
        };
        let text = &rest[..lt];
        text_ok(text)?;
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        rest = &rest[lt..];
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->").ok_or("unclosed comment")? + 3..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("</") {
            let gt = r.find('>').ok_or("unclosed end tag")?;
            let name = r[..gt].trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            rest = &r[gt + 1..];
            continue;
        }
        let r = &rest[1..];
        let name_end = r
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .ok_or("unclosed tag")?;
        let name = &r[..name_end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "-_:.".contains(c))
        {
            return Err(format!("bad element name {name:?}"));
        }
        let mut a = &r[name_end..];
        let mut seen: Vec<&str> = Vec::new();
        let self_closing;
        loop {
            a = a.trim_start();
            if let Some(x) = a.strip_prefix("/>") {
                self_closing = true;
                a = x;
                break;
            }
            if let Some(x) = a.strip_prefix('>') {
                self_closing = false;
                a = x;
                break;
            }
            let eq = a
                .find('=')
                .ok_or(format!("attribute without value in <{name}>"))?;
            let an = a[..eq].trim();
            if an.is_empty() || seen.contains(&an) {
                return Err(format!("bad or repeated attribute {an:?} in <{name}>"));
            }
            seen.push(an);
            let v = &a[eq + 1..];
            let q = v.chars().next().ok_or("cut off")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted attribute {an} in <{name}>"));
            }
            let close = v[1..].find(q).ok_or("unclosed attribute")?;
            text_ok(&v[1..1 + close])?;
            a = &v[close + 2..];
        }
        elements += 1;
        if stack.is_empty() {
            roots += 1;
        }
        if !self_closing {
            stack.push(name.to_string());
        }
        rest = a;
    }
    if !stack.is_empty() {
        return Err(format!("unclosed elements {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(elements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_catches_bad_xml() {
        assert!(check_xml("<?xml version=\"1.0\"?><a><b/></a>").is_ok());
        for bad in [
            "<?xml?><a><b></a>",
            "<?xml?><a x=\"1\" x=\"2\"/>",
            "<?xml?><a>&</a>",
            "<?xml?><a>x</a><b/>",
            "<?xml?><a x=1/>",
            "<?xml?><a>",
            "<?xml?><a>x < y</a>",
            "<?xml?><a>&bogus;</a>",
        ] {
            assert!(check_xml(bad).is_err(), "{bad}");
        }
    }
}
