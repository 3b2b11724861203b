//! The pass/fail list of a real-boot test (`smoke`, `late`, `parity`): each check printed as
//! `ok` or `FAIL` with what it saw, a count at the end, and the test failing when any check
//! did.

use crate::vm::util::{Error, Result};

/// The part of a guest state script (`late`, `parity`) that both inits share: `== name`
/// sections of sorted lines, compared between a boot and its reference.
pub const COMMON_STATE: &str = r#"echo "== daemons"
ps --ppid 2 -p 2 --deselect -o comm= | sort -u
echo "== mounts"
awk '{print $1, $2, $3}' /proc/mounts | sort
echo "== modules"
awk '{print $1}' /proc/modules | sort
echo "== hostname"
hostname
"#;

/// Checks so far.
pub struct Checks {
    pub passed: usize,
    pub failed: usize,
}

impl Checks {
    /// Records and prints one check; returns `ok`.
    pub fn check(&mut self, ok: bool, what: &str) -> bool {
        if ok {
            self.passed += 1;
            println!("ok    {what}");
        } else {
            self.failed += 1;
            println!("FAIL  {what}");
        }
        ok
    }
}

/// Runs `test`, counting an error it returns as one more failed check; fails with
/// "`name` test failed" when any check failed.
pub fn run(name: &str, test: impl FnOnce(&mut Checks) -> Result<()>) -> Result<()> {
    let mut c = Checks {
        passed: 0,
        failed: 0,
    };
    if let Err(e) = test(&mut c) {
        c.failed += 1;
        println!("FAIL  {e}");
    }
    println!("{} passed, {} failed", c.passed, c.failed);
    if c.failed > 0 {
        return Err(Error::fail(format!("{name} test failed")));
    }
    Ok(())
}
