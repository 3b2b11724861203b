//! bench
use crate::util::{Error, Paths, Result};
pub fn run(_p: &Paths, _n: &str, _r: usize, _pr: crate::qemu::Profile, _j: bool) -> Result<()> { Err(Error::fail("todo")) }
