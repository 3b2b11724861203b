//! Preload's settings: the `[preload]` section of `/etc/bootprint/bootprint.toml`, read
//! through the file's schema (`trace::config`, where each key's default and meaning are
//! defined once; docs/configuration.md lists them).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::Decay;

/// Preload's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The switch (`enabled`).
    pub enabled: bool,
    /// Where the model and the state live (`dir`).
    pub dir: PathBuf,
    /// Most bytes prefetched per login (`budget_mb`).
    pub budget_bytes: u64,
    /// And at most this share of `MemAvailable` (`mem_share`).
    pub mem_share: f64,
    /// How weights fade (`decay`, `drop_below`).
    pub decay: Decay,
    /// Learning stops this long after it started at the latest (`window_s`).
    pub window: Duration,
    /// Or once no new file was opened for this long (`quiet_s`).
    pub quiet: Duration,
    /// Every this many logins with prefetch, one without (`compare_every`).
    pub compare_every: u32,
    /// Prefetch in the idle I/O class (`io_class = "idle"`).
    pub idle_io: bool,
    /// Prefetch only while the disk is otherwise idle for this long (`yield_ms`; `None`:
    /// 0, read as fast as the disk takes it).
    pub yield_quiet: Option<Duration>,
    /// And only while others used at most this share of all CPUs' time (`yield_cpu_pct`
    /// / 100; `None`: 0, the disk alone decides).
    pub yield_cpu: Option<f64>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            enabled: false,
            dir: PathBuf::from(DEFAULT_DIR),
            budget_bytes: 256 << 20,
            mem_share: 0.25,
            decay: Decay::default(),
            window: Duration::from_secs(60),
            quiet: Duration::from_secs(5),
            compare_every: 5,
            idle_io: true,
            yield_quiet: Some(Duration::from_millis(250)),
            yield_cpu: Some(0.15),
        }
    }
}

/// Where the model and the state live by default.
pub const DEFAULT_DIR: &str = "/var/lib/bootprint/preload";

impl Config {
    /// The defaults overridden by the `[preload]` section of a `bootprint.toml` text. The
    /// whole file is checked: an unknown key or a value of the wrong type in any section is
    /// an error naming the file, the line and what was expected.
    pub fn from_toml(text: &str, source: &str) -> Result<Config, trace::conf::ConfError> {
        let mut c = Config::default();
        for s in trace::config::parse_section(text, source, trace::config::Section::Preload)? {
            let v = &s.value;
            match s.key.name {
                "enabled" => c.enabled = v.bool(),
                "dir" => c.dir = PathBuf::from(v.text()),
                "budget_mb" => c.budget_bytes = (v.num() * 1048576.0) as u64,
                "mem_share" => c.mem_share = v.num(),
                "decay" => c.decay.factor = v.num(),
                "drop_below" => c.decay.drop_below = v.num(),
                "window_s" => c.window = Duration::from_secs_f64(v.num()),
                "quiet_s" => c.quiet = Duration::from_secs_f64(v.num()),
                "compare_every" => c.compare_every = v.int(),
                "io_class" => c.idle_io = v.text() == "idle",
                "yield_ms" => {
                    c.yield_quiet =
                        Some(Duration::from_millis(v.int().into())).filter(|d| !d.is_zero())
                }
                "yield_cpu_pct" => c.yield_cpu = Some(v.num() / 100.0).filter(|&s| s > 0.0),
                // A key of the table with no field here: the test below catches it.
                _ => {}
            }
        }
        Ok(c)
    }

    /// Reads `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Config, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                Config::from_toml(&text, &path.display().to_string()).map_err(|e| e.to_string())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// How a prefetch yields (`yield_ms`, `yield_cpu_pct`); `None`: it does not.
    pub fn yield_to(&self) -> Option<readahead::replay::YieldTo> {
        self.yield_quiet.map(|quiet| readahead::replay::YieldTo {
            quiet,
            cpu_max_share: self.yield_cpu,
            ..Default::default()
        })
    }

    /// The model file.
    pub fn model_path(&self) -> PathBuf {
        self.dir.join("model")
    }

    /// The history and verdict.
    pub fn state_path(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// What the greeter's prefetch decided, for the session's run.
    pub fn pending_path(&self) -> PathBuf {
        self.dir.join("pending")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `[preload]` key of the schema sets its field: the schema's default gives the
    /// default here, another value changes it.
    #[test]
    fn every_preload_key_of_the_schema_sets_its_field() {
        let keys: Vec<_> = trace::config::keys(trace::config::Section::Preload).collect();
        assert_eq!(keys.len(), 12);
        for k in keys {
            let c = Config::from_toml(&format!("[preload]\n{} = {}\n", k.name, k.default), "t");
            assert_eq!(c, Ok(Config::default()), "{}", k.name);
            let other = match k.default {
                "false" => "true".to_string(),
                "\"idle\"" => "\"best-effort\"".into(),
                d if d.starts_with('"') => "\"/elsewhere\"".into(),
                "0.5" | "0.25" => "0.125".into(),
                _ => "7".into(),
            };
            let c = Config::from_toml(&format!("[preload]\n{} = {other}\n", k.name), "t").unwrap();
            assert_ne!(c, Config::default(), "{}", k.name);
        }
    }

    #[test]
    fn bad_values_name_file_and_line() {
        let e =
            Config::from_toml("[preload]\nenabled = true\ndecay = 3\n", "/etc/b.toml").unwrap_err();
        assert!(e.to_string().starts_with("/etc/b.toml:3: expected"), "{e}");
        let e = Config::from_toml("[preload]\nbudget = 3\n", "b.toml").unwrap_err();
        assert!(
            e.to_string().starts_with("b.toml:2: expected one of"),
            "{e}"
        );
    }
}
