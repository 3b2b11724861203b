//! What the checks that boot nothing (`fleet`, `otlp`) share to run real servers on the
//! host: child processes killed on every way out, loopback ports, a command's status and
//! output, and a plain HTTP GET (a tool on PATH is `vm::util::on_path`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

pub use crate::vm::util::on_path;
use crate::vm::util::{io_err, Error, Result};

/// Child processes killed when dropped (on every way out of a check).
#[derive(Default)]
pub struct Children(pub Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `n` different loopback ports no one listens on now (all held until all are chosen: a
/// port let go can be handed out again at once).
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::fail(format!("no free port: {e}")))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::fail(format!("no free port: {e}")))
}

/// Runs `cmd`: whether it exited 0, and what it printed (standard output, then error).
pub fn command(cmd: &mut Command) -> Result<(bool, String)> {
    let out = cmd
        .output()
        .map_err(|e| Error::fail(format!("{cmd:?}: {e}")))?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// `GET path` of the server on the loopback `port`: the status code and body (HTTP/1.0,
/// so the answer ends with the connection and is never chunked).
pub fn http_get(port: u16, path: &str) -> Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| Error::fail(format!("port {port}: {e}")))?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .map_err(|e| Error::fail(format!("port {port}: {e}")))?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .map_err(|e| Error::fail(format!("port {port}: {e}")))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_string()))
}

/// The real test-bed trace the host-side checks copy (crates/analyze/tests/data/
/// testbed-sysvinit.tgz), unpacked into `dest` (created).
pub fn unpack_testbed_trace(repo: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest).map_err(|e| io_err("cannot create", dest, e))?;
    let tgz = repo.join("crates/analyze/tests/data/testbed-sysvinit.tgz");
    let (ok, said) = command(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(dest),
    )?;
    if !ok {
        return Err(Error::fail(format!("tar -xzf {}: {said}", tgz.display())));
    }
    Ok(())
}

/// A file's text, or an error naming it.
pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| io_err("cannot read", path, e))
}

/// Writes a file, or an error naming it.
pub fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| io_err("cannot write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_differ_and_tools_are_looked_up() {
        let p = free_ports(3).unwrap();
        assert!(p[0] != p[1] && p[1] != p[2] && p[0] != p[2]);
        assert!(on_path("sh"));
        assert!(!on_path("no-such-tool-anywhere"));
        let (ok, said) =
            command(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert!(!ok);
        assert_eq!(said, "out\nerr\n");
    }
}
