//! `bench profiles`: the drive profiles against each other.

use crate::bench::registry::Request;
use crate::bench::runner::{self, no_extra, Benchmark, Variant};
use crate::vm::qemu::{BootOpts, Profile};
use crate::vm::util::{Paths, Result};

/// The drive profiles against each other (`--profile` is ignored: it is the variable).
pub fn benchmark() -> Benchmark {
    Benchmark {
        seasoned_by: None,
        season_each: false,
        name: "profiles",
        about: "the drive profiles: fast against sd and hdd throttling",
        variants: [
            ("fast", Profile::Fast),
            ("sd", Profile::Sd),
            ("hdd", Profile::Hdd),
        ]
        .into_iter()
        .map(|(name, p)| Variant {
            name,
            opts: BootOpts::new(p),
            extra: no_extra,
            image: None,
        })
        .collect(),
    }
}

/// `bench profiles` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    runner::run_on_flavor(paths, req, benchmark(), "profiles-desktop")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_its_own_profile() {
        let p = benchmark();
        let profiles: Vec<Profile> = p.variants.iter().map(|v| v.opts.profile).collect();
        assert_eq!(profiles, [Profile::Fast, Profile::Sd, Profile::Hdd]);
    }
}
