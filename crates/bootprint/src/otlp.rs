//! `bootprint export --otlp URL|FILE`: a boot's OpenTelemetry trace (`render::otlp`) to a
//! collector over OTLP/HTTP (JSON), through a queue on disk, or to a file.
//!
//! The queue (default /var/lib/bootprint/otlp-queue, root's own, 0700) holds one file per
//! boot not yet accepted, named `<unix-ns>-<trace id>.json` so the oldest sorts first. An
//! export first queues its boot (replacing that boot's older entry: a boot is never queued
//! twice), drops the oldest beyond the bound, then sends oldest first under a lock on the
//! queue (two exports never send the same file): an entry is removed once the endpoint said
//! 2xx, removed with a message when it refused it for good (4xx but 408 and 429: sending it
//! again would fail again), and kept, with the rest behind it, on anything else (no
//! connection, 5xx, 408, 429), for the next export or `--flush` to retry.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a flush was left.
#[derive(Debug, Default, PartialEq)]
pub struct Flushed {
    /// Entries the endpoint accepted.
    pub sent: usize,
    /// Entries it refused for good (removed).
    pub refused: usize,
    /// Entries still queued.
    pub queued: usize,
    /// Entries dropped, oldest first, to keep the bound.
    pub dropped: usize,
    /// Why the first queued entry was not sent.
    pub error: Option<String>,
}

/// How to reach the endpoint.
pub struct Endpoint {
    /// `http://` or `https://`, `/v1/traces` added when it names no path.
    pub url: String,
    /// Extra request headers (a collector's auth).
    pub headers: Vec<(String, String)>,
    /// PEM file of the certificate authorities to trust (default: the Mozilla roots built
    /// in).
    pub ca: Option<PathBuf>,
    /// Tries of an entry before it is left queued (1: no retry).
    pub tries: u32,
    /// Time allowed for one request, connecting included.
    pub timeout: Duration,
}

/// Whether `target` is an endpoint (http, https) rather than a file.
pub fn is_url(target: &str) -> bool {
    target.starts_with("http://") || target.starts_with("https://")
}

/// The URL requests go to: the collector's base URL gets OTLP's `/v1/traces` (as
/// OTEL_EXPORTER_OTLP_ENDPOINT does); one naming a path is taken as it is.
pub fn traces_url(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) if rest[i..] != *"/" => url.to_string(),
        _ => format!("{}/v1/traces", url.trim_end_matches('/')),
    }
}

/// A header given as `NAME=VALUE` or `NAME: VALUE`.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| format!("--otlp-header {s:?}: expected NAME=VALUE"))?;
    let k = k.trim();
    if k.is_empty()
        || !k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        return Err(format!("--otlp-header {s:?}: {k:?} is not a header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// The headers of FILE: one `NAME: VALUE` (or `NAME=VALUE`) a line, `#` comments; it must be
/// no one's to read but its owner's (it holds a collector's credentials).
pub fn headers_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let f =
        sys::open_nofollow(path, libc::O_RDONLY).map_err(|e| format!("{}: {e}", path.display()))?;
    let st = sys::fstat(&f).map_err(|e| format!("{}: {e}", path.display()))?;
    if st.mode & 0o077 != 0 {
        return Err(format!(
            "{}: mode {:o}: others can read it; expected 0600 (it holds credentials)",
            path.display(),
            st.mode & 0o777
        ));
    }
    let text = std::io::read_to_string(f).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let h = parse_header(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        out.push(h);
    }
    Ok(out)
}

/// The queue's entry name for a boot's trace id queued at `unix_ns`.
fn entry_name(unix_ns: u128, trace_id: &str) -> OsString {
    OsString::from(format!("{unix_ns:020}-{trace_id}.json"))
}

fn trace_of(name: &OsStr) -> Option<&str> {
    let s = name.to_str()?;
    let stem = s.strip_suffix(".json")?;
    let (t, id) = stem.split_once('-')?;
    (t.len() == 20 && t.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// Opens the queue, creating it (0700) when missing; refuses one another user could change.
fn open_queue(dir: &Path) -> Result<sys::Dir, String> {
    let err = |e: std::io::Error| format!("{}: {e}", dir.display());
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let p = sys::open_dir(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let name = dir
            .file_name()
            .ok_or_else(|| format!("{}: not a directory name", dir.display()))?;
        if p.stat_at(name).map_err(err)?.is_none() {
            match p.mkdir_at(name, 0o700) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(err(e)),
            }
        }
    }
    let q = sys::open_dir(dir).map_err(err)?;
    let st = q.stat().map_err(err)?;
    // The queue is ours when the caller owns it and no one else may write in it: a planted
    // queue could make us send, or delete, what another user chose.
    if st.uid != sys::euid() || st.mode & 0o022 != 0 {
        return Err(format!(
            "{}: owned by uid {} with mode {:o}: expected the caller's own, not group or world writable",
            dir.display(),
            st.uid,
            st.mode & 0o777
        ));
    }
    Ok(q)
}

fn entries(q: &sys::Dir) -> Result<Vec<OsString>, String> {
    let mut names: Vec<OsString> = q
        .names()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|n| trace_of(n).is_some())
        .collect();
    names.sort();
    Ok(names)
}

/// Queues `body` (the boot `trace_id`'s request) in `dir`, replacing that boot's older
/// entry, and drops the oldest beyond `max` entries. Returns how many were dropped.
pub fn enqueue(dir: &Path, trace_id: &str, body: &[u8], max: usize) -> Result<usize, String> {
    let q = open_queue(dir)?;
    q.lock_exclusive()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let old: Vec<OsString> = entries(&q)?
        .into_iter()
        .filter(|n| trace_of(n) == Some(trace_id))
        .collect();
    let name = entry_name(now, trace_id);
    q.write_atomic_at(&name, body, 0o600)
        .map_err(|e| format!("{}: {e}", dir.join(&name).display()))?;
    for n in old {
        let _ = q.unlink_at(&n);
    }
    let all = entries(&q)?;
    let over = all.len().saturating_sub(max.max(1));
    for n in &all[..over] {
        q.unlink_at(n)
            .map_err(|e| format!("{}: {e}", dir.join(n).display()))?;
    }
    q.sync().map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(over)
}

/// What one request came to.
enum Answer {
    Accepted,
    Refused(String),
    Later(String),
}

fn agent(ep: &Endpoint) -> Result<ureq::Agent, String> {
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(ca) = &ep.ca {
        let pem = std::fs::read(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
        let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            return Err(format!("{}: no PEM certificate in it", ca.display()));
        }
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
    }
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(ep.timeout))
        .http_status_as_error(false)
        .tls_config(tls.build())
        .build();
    Ok(config.into())
}

fn post(agent: &ureq::Agent, ep: &Endpoint, url: &str, body: &[u8]) -> Answer {
    let mut req = agent.post(url).header("Content-Type", "application/json");
    for (k, v) in &ep.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    match req.send(body) {
        Ok(resp) => {
            let code = resp.status().as_u16();
            let why = || {
                let mut r = resp;
                let text = r.body_mut().read_to_string().unwrap_or_default();
                format!("{url}: HTTP {code} {}", text.trim())
            };
            match code {
                200..=299 => Answer::Accepted,
                408 | 429 => Answer::Later(why()),
                400..=499 => Answer::Refused(why()),
                _ => Answer::Later(why()),
            }
        }
        Err(e) => Answer::Later(format!("{url}: {e}")),
    }
}

/// Sends what the queue in `dir` holds to the endpoint, oldest first.
pub fn flush(dir: &Path, ep: &Endpoint) -> Result<Flushed, String> {
    let q = open_queue(dir)?;
    q.lock_exclusive()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let agent = agent(ep)?;
    let url = traces_url(&ep.url);
    let names = entries(&q)?;
    let mut out = Flushed::default();
    for (i, name) in names.iter().enumerate() {
        let path = dir.join(name);
        let body = {
            let f = q
                .open_at(name, libc::O_RDONLY)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            std::io::read_to_string(f).map_err(|e| format!("{}: {e}", path.display()))?
        };
        let mut answer = post(&agent, ep, &url, body.as_bytes());
        for attempt in 1..ep.tries.max(1) {
            if !matches!(answer, Answer::Later(_)) {
                break;
            }
            std::thread::sleep(Duration::from_secs(1 << (attempt - 1).min(4)));
            answer = post(&agent, ep, &url, body.as_bytes());
        }
        match answer {
            Answer::Accepted => {
                q.unlink_at(name)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                out.sent += 1;
            }
            Answer::Refused(why) => {
                eprintln!("bootprint: {}: refused, removed: {why}", path.display());
                q.unlink_at(name)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                out.refused += 1;
            }
            Answer::Later(why) => {
                out.queued = names.len() - i;
                out.error = Some(why);
                break;
            }
        }
    }
    q.sync().map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_get_the_traces_path_only_when_they_name_none() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("https://c/otlp/v1/traces"),
            "https://c/otlp/v1/traces"
        );
        assert!(is_url("https://x") && !is_url("/tmp/x.json"));
    }

    #[test]
    fn headers_parse_or_say_what_was_expected() {
        assert_eq!(
            parse_header("Authorization=Bearer a=b").unwrap(),
            ("Authorization".into(), "Bearer a=b".into())
        );
        assert_eq!(
            parse_header("X-Key: v").unwrap(),
            ("X-Key".into(), "v".into())
        );
        assert!(parse_header("novalue").unwrap_err().contains("NAME=VALUE"));
        assert!(parse_header("a b=c")
            .unwrap_err()
            .contains("not a header name"));
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("h");
        std::fs::write(&f, "# auth\nAuthorization: Bearer t\n\nbad line\n").unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let e = headers_file(&f).unwrap_err();
        assert!(
            e.ends_with(":4: --otlp-header \"bad line\": expected NAME=VALUE"),
            "{e}"
        );
        std::fs::write(&f, "Authorization: Bearer t\n").unwrap();
        assert_eq!(headers_file(&f).unwrap().len(), 1);
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert!(headers_file(&f).unwrap_err().contains("expected 0600"));
    }

    #[test]
    fn the_queue_keeps_a_boot_once_and_drops_the_oldest() {
        let tmp = tempfile::tempdir().unwrap();
        let q = tmp.path().join("queue");
        assert_eq!(enqueue(&q, "aa", b"1", 2).unwrap(), 0);
        assert_eq!(enqueue(&q, "bb", b"2", 2).unwrap(), 0);
        // The same boot again replaces its entry.
        assert_eq!(enqueue(&q, "aa", b"3", 2).unwrap(), 0);
        let names = |q: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(q)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".json"))
                .collect();
            v.sort();
            v
        };
        let n = names(&q);
        assert_eq!(n.len(), 2);
        assert!(
            n[0].ends_with("-bb.json") && n[1].ends_with("-aa.json"),
            "{n:?}"
        );
        // Over the bound: the oldest (bb) goes.
        assert_eq!(enqueue(&q, "cc", b"4", 2).unwrap(), 1);
        let n = names(&q);
        assert!(
            n[0].ends_with("-aa.json") && n[1].ends_with("-cc.json"),
            "{n:?}"
        );
        assert_eq!(
            std::fs::read(q.join(&n[0])).unwrap(),
            b"3",
            "the newer request of aa"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&q).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // A queue others may write in is refused.
        std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(enqueue(&q, "dd", b"5", 2)
            .unwrap_err()
            .contains("not group or world writable"));
    }

    #[test]
    fn an_endpoint_down_leaves_the_queue_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let q = tmp.path().join("queue");
        enqueue(&q, "aa", b"{}", 10).unwrap();
        // A port nothing listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let ep = Endpoint {
            url: format!("http://127.0.0.1:{port}"),
            headers: Vec::new(),
            ca: None,
            tries: 1,
            timeout: Duration::from_secs(5),
        };
        let f = flush(&q, &ep).unwrap();
        assert_eq!((f.sent, f.queued), (0, 1));
        assert!(f
            .error
            .unwrap()
            .contains(&format!("127.0.0.1:{port}/v1/traces")));
    }

    #[test]
    fn headers_reach_the_endpoint_and_a_refusal_is_final() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for status in ["200 OK", "400 Bad Request"] {
                let (mut s, _) = listener.accept().unwrap();
                let mut buf = vec![0u8; 65536];
                let mut got = 0;
                // Headers, then the two-byte body.
                while !String::from_utf8_lossy(&buf[..got]).contains("\r\n\r\n{}") {
                    let n = s.read(&mut buf[got..]).unwrap();
                    assert!(n > 0);
                    got += n;
                }
                seen.push(String::from_utf8_lossy(&buf[..got]).to_string());
                write!(
                    s,
                    "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
            }
            seen
        });
        let tmp = tempfile::tempdir().unwrap();
        let q = tmp.path().join("queue");
        enqueue(&q, "aa", b"{}", 10).unwrap();
        enqueue(&q, "bb", b"{}", 10).unwrap();
        let ep = Endpoint {
            url: format!("http://127.0.0.1:{port}/"),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            ca: None,
            tries: 3,
            timeout: Duration::from_secs(5),
        };
        let f = flush(&q, &ep).unwrap();
        assert_eq!((f.sent, f.refused, f.queued), (1, 1, 0));
        let seen = server.join().unwrap();
        assert!(
            seen[0].starts_with("POST /v1/traces HTTP/1.1\r\n"),
            "{}",
            seen[0]
        );
        assert!(seen[0]
            .to_ascii_lowercase()
            .contains("authorization: bearer s3cret\r\n"));
        assert!(seen[0]
            .to_ascii_lowercase()
            .contains("content-type: application/json\r\n"));
        assert_eq!(
            std::fs::read_dir(&q)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(".json")
                })
                .count(),
            0
        );
    }
}
