//! A kernel setting changed for the recording and put back when the guard drops.

use std::fs;
use std::path::{Path, PathBuf};

/// Restores a /proc/sys or /sys file to the value it had before [`KnobGuard::set`].
#[derive(Debug)]
pub struct KnobGuard {
    path: PathBuf,
    old: Option<String>,
}

impl KnobGuard {
    /// Writes `value` to `path`, remembering the old value. A knob that cannot be read or
    /// written is left alone (the guard then restores nothing).
    pub fn set(path: &Path, value: &str) -> KnobGuard {
        let old = fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        let changed = old.as_deref() != Some(value) && fs::write(path, value).is_ok();
        KnobGuard {
            path: path.to_path_buf(),
            old: if changed { old } else { None },
        }
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
    fn restores_on_drop_and_leaves_equal_values_alone() {
        let dir = std::env::temp_dir().join(format!("bp-knob-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let knob = dir.join("task_delayacct");
        fs::write(&knob, "0\n").unwrap();
        {
            let _g = KnobGuard::set(&knob, "1");
            assert_eq!(fs::read_to_string(&knob).unwrap(), "1");
        }
        assert_eq!(fs::read_to_string(&knob).unwrap(), "0");
        fs::write(&knob, "1").unwrap();
        {
            let _g = KnobGuard::set(&knob, "1");
        }
        assert_eq!(fs::read_to_string(&knob).unwrap(), "1");
        let _g = KnobGuard::set(&dir.join("missing/knob"), "1");
        fs::remove_dir_all(&dir).unwrap();
    }
}
