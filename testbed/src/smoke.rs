//! smoke
use crate::util::{Error, Paths, Result};
pub fn run(_p: &Paths) -> Result<()> { Err(Error::fail("todo")) }
