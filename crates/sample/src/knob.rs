//! A kernel setting changed for a while and put back when the guard drops (delay accounting
//! while recording, the root disk's `read_ahead_kb` while learning readahead), so a boot
//! path that fails still leaves the kernel as it was.

use std::fs;
use std::path::{Path, PathBuf};

/// Restores a /sys or /proc/sys file to the value it had before [`KnobGuard::set`].
#[derive(Debug)]
pub struct KnobGuard {
    path: PathBuf,
    old: Option<String>,
}

impl KnobGuard {
    /// Writes `value` to `path`, remembering the old value. A file that cannot be read or
    /// written is left alone, and then the guard restores nothing.
    pub fn set(path: &Path, value: &str) -> KnobGuard {
        let old = fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        let changed = old.as_deref().is_some_and(|o| o != value) && fs::write(path, value).is_ok();
        KnobGuard {
            path: path.to_path_buf(),
            old: if changed { old } else { None },
        }
    }

    /// Whether the guard changed the file (and will restore it).
    pub fn changed(&self) -> bool {
        self.old.is_some()
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            let _ = fs::write(&self.path, old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_on_drop_even_when_unwinding() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let knob = dir.join("read_ahead_kb");
        fs::write(&knob, "8192\n").unwrap();
        {
            let g = KnobGuard::set(&knob, "16");
            assert!(g.changed());
            assert_eq!(fs::read_to_string(&knob).unwrap(), "16");
        }
        assert_eq!(fs::read_to_string(&knob).unwrap(), "8192");
        let k2 = knob.clone();
        let r = std::panic::catch_unwind(move || {
            let _g = KnobGuard::set(&k2, "0");
            panic!("learning failed");
        });
        assert!(r.is_err());
        assert_eq!(fs::read_to_string(&knob).unwrap(), "8192");
        // An equal value is not rewritten, a missing file is left alone.
        assert!(!KnobGuard::set(&knob, "8192").changed());
        assert!(!KnobGuard::set(&dir.join("missing/knob"), "1").changed());
        assert!(!dir.join("missing").exists());
    }
}
