//! `boot`: one boot under QEMU.
use crate::image::Image;
use crate::util::{Args, Error, Paths, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Profile { Fast, Sd, Hdd }
impl Profile {
    pub fn parse(s: &str) -> Result<Profile> {
        match s { "fast" => Ok(Profile::Fast), "sd" => Ok(Profile::Sd), "hdd" => Ok(Profile::Hdd),
            _ => Err(Error::Usage(format!("unknown profile {s:?}"))) }
    }
}
pub struct BootOpts;
impl BootOpts { pub fn parse(_a: &mut Args) -> Result<BootOpts> { Ok(BootOpts) } }
pub struct BootResult;
impl BootResult { pub fn to_json(&self) -> String { String::new() } pub fn print_text(&self) {} }
pub fn boot(_p: &Paths, _i: &Image, _b: &BootOpts) -> Result<BootResult> { Err(Error::fail("todo")) }
