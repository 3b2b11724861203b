//! The benchmarks: the shared runner (variants in alternation, medians, one results JSON),
//! the figures read from a boot's logs, one file per benchmark, and the registry that lists
//! each benchmark once (name, what it measures, how it runs). Imports `vm`, never `checks`
//! or `cli`.

pub mod builtins;
pub mod desktop_bench;
pub mod figures;
pub mod fleet_view;
pub mod irbench;
pub mod modbench;
pub mod modcheck;
pub mod profiles;
pub mod rabench;
pub mod rapages;
pub mod rc;
pub mod reboot;
pub mod record;
pub mod recorder_cost;
pub mod registry;
pub mod runner;
pub mod whole;
