//! The benchmarks: the shared runner (variants in alternation, medians, one results JSON),
//! the figures read from a boot's logs, one file per benchmark that is more than a list of
//! variants, and the registry every benchmark is listed in once. Imports `vm`, never
//! `checks` or `cli`.

pub mod desktop_bench;
pub mod figures;
pub mod irbench;
pub mod modbench;
pub mod modcheck;
pub mod rabench;
pub mod runner;
