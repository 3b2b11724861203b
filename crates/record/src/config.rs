//! The boot path's settings: defaults, then `/etc/bootprint/bootprint.toml`, then the kernel
//! command line (`bootprint.*=`), the last one winning.
//!
//! The file is read with a small TOML subset parser (sections, `key = value` with integers,
//! floats, booleans, strings and arrays of strings, `#` comments) so the boot path needs no
//! TOML crate. Errors name the file, the line and what was expected; at boot a bad file is
//! reported in the trace and the defaults are used.

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything the boot path can be told.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The real init to exec (`bootprint.init=`).
    pub init: PathBuf,
    /// Whether to record this boot (`bootprint.record=`).
    pub record: bool,
    /// Sampling rate in Hz (`bootprint.hz=`).
    pub hz: u32,
    /// CPU busy share of all CPUs below which the system counts as idle.
    pub idle_cpu: f64,
    /// Disk utilisation (share of time busy) below which the disk counts as idle.
    pub idle_disk: f64,
    /// How long CPU and disk must stay idle after the login milestone for boot to be done, s.
    pub settle_s: f64,
    /// Hard limit: recording stops at this uptime whatever happens, s.
    pub timeout_s: f64,
    /// Where traces go (`<dir>/<boot id>/`).
    pub log_dir: PathBuf,
    /// Process names whose start marks the text login.
    pub login_names: Vec<String>,
    /// Process names whose start marks the graphical login (a display manager's greeter).
    pub greeter_names: Vec<String>,
    /// Readahead (`bootprint.readahead=`): replay the pack at boot, or learn one when there is
    /// no valid pack. Off by default until the test-bed benchmark shows where it helps.
    pub readahead: bool,
    /// Where the readahead pack lives.
    pub readahead_pack: PathBuf,
    /// Parallel module loading before init (`bootprint.modules=`). Off by default until the
    /// test bed shows where it helps.
    pub modules: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            init: PathBuf::from("/sbin/init"),
            record: true,
            hz: 50,
            idle_cpu: 0.25,
            idle_disk: 0.10,
            settle_s: 3.0,
            timeout_s: 240.0,
            log_dir: PathBuf::from("/var/log/bootprint"),
            login_names: ["getty", "agetty", "mingetty", "mgetty", "fbgetty", "login"]
                .map(String::from)
                .to_vec(),
            greeter_names: [
                "lightdm-gtk-gre",
                "lightdm-greeter",
                "gdm-greeter",
                "sddm-greeter",
                "slick-greeter",
                "xdm",
            ]
            .map(String::from)
            .to_vec(),
            readahead: false,
            readahead_pack: PathBuf::from("/var/lib/bootprint/readahead.pack"),
            modules: false,
        }
    }
}

/// Default location of the configuration file.
pub const CONFIG_FILE: &str = "/etc/bootprint/bootprint.toml";

/// A configuration error: where, and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The file (or `kernel command line`).
    pub source: String,
    /// 1-based line (0 for the command line).
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: expected {}", self.source, self.expected)
        } else {
            write!(
                f,
                "{}:{}: expected {}",
                self.source, self.line, self.expected
            )
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Num(f64),
    Bool(bool),
    List(Vec<String>),
}

impl Config {
    /// Applies a `bootprint.toml` text. `source` names the file in errors.
    pub fn apply_toml(&mut self, text: &str, source: &str) -> Result<(), ConfigError> {
        let mut section = String::new();
        for (index, raw) in text.lines().enumerate() {
            let err = |expected: String| ConfigError {
                source: source.to_string(),
                line: index + 1,
                expected,
            };
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[') {
                section = name
                    .strip_suffix(']')
                    .ok_or_else(|| err("']' to close the section name".into()))?
                    .trim()
                    .to_string();
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| err("`key = value` or `[section]`".into()))?;
            let value = parse_value(value.trim()).map_err(err)?;
            let key = key.trim();
            // Sections other than [record]/[boot] belong to other parts; unknown keys in
            // ours are errors so a typo does not silently do nothing.
            if section == "readahead" {
                let key = match key {
                    "enabled" => "readahead",
                    "pack" => "readahead_pack",
                    other => other,
                };
                self.set(key, value).map_err(err)?;
            } else if section == "record" || section == "boot" || section.is_empty() {
                self.set(key, value).map_err(err)?;
            }
        }
        Ok(())
    }

    /// Applies the `bootprint.*` parameters of a kernel command line.
    /// Each bad parameter is left out alone (and returned); the good ones apply.
    pub fn apply_cmdline(&mut self, cmdline: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for word in cmdline.split_whitespace() {
            let Some(param) = word.strip_prefix("bootprint.") else {
                continue;
            };
            let (key, raw) = param.split_once('=').unwrap_or((param, "1"));
            let value = match raw.parse::<f64>() {
                Ok(n) => Value::Num(n),
                Err(_) => match raw {
                    "on" | "yes" | "true" => Value::Bool(true),
                    "off" | "no" | "false" => Value::Bool(false),
                    s => Value::Str(s.to_string()),
                },
            };
            if let Err(expected) = self.set(key, value) {
                errors.push(ConfigError {
                    source: "kernel command line".into(),
                    line: 0,
                    expected: format!("{expected} (in {word:?})"),
                });
            }
        }
        errors
    }

    /// Defaults, then the file at `file` (if it exists), then `cmdline`. Errors are returned
    /// beside the configuration built from everything that did parse.
    pub fn load(file: &Path, cmdline: &str) -> (Config, Vec<ConfigError>) {
        let mut config = Config::default();
        let mut errors = Vec::new();
        if let Ok(text) = std::fs::read_to_string(file) {
            let mut trial = config.clone();
            match trial.apply_toml(&text, &file.display().to_string()) {
                Ok(()) => config = trial,
                Err(e) => errors.push(e),
            }
        }
        errors.extend(config.apply_cmdline(cmdline));
        (config, errors)
    }

    fn set(&mut self, key: &str, value: Value) -> Result<(), String> {
        let key = key.replace('-', "_");
        match key.as_str() {
            "init" => self.init = PathBuf::from(want_str(value)?),
            "record" => self.record = want_bool(value)?,
            "hz" => self.hz = want_num(value, 1.0, 1000.0)? as u32,
            "idle_cpu" => self.idle_cpu = want_num(value, 0.0, 1.0)?,
            "idle_disk" => self.idle_disk = want_num(value, 0.0, 1.0)?,
            "settle" | "settle_s" => self.settle_s = want_num(value, 0.0, 600.0)?,
            "timeout" | "timeout_s" => self.timeout_s = want_num(value, 1.0, 3600.0)?,
            "log_dir" => self.log_dir = PathBuf::from(want_str(value)?),
            "login_names" => self.login_names = want_list(value)?,
            "greeter_names" => self.greeter_names = want_list(value)?,
            "readahead" => self.readahead = want_bool(value)?,
            "modules" => self.modules = want_bool(value)?,
            "readahead_pack" => self.readahead_pack = PathBuf::from(want_str(value)?),
            _ => {
                return Err(format!(
                    "one of init, record, hz, idle_cpu, idle_disk, settle_s, timeout_s, \
                     log_dir, login_names, greeter_names, readahead, readahead_pack, modules; found {key:?}"
                ))
            }
        }
        Ok(())
    }
}

fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

fn parse_value(v: &str) -> Result<Value, String> {
    if let Some(inner) = v.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("']' to close the array (arrays must be on one line)")?;
        let mut items = Vec::new();
        for item in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse_value(item)? {
                Value::Str(s) => items.push(s),
                _ => return Err(format!("a quoted string in the array, found {item}")),
            }
        }
        return Ok(Value::List(items));
    }
    if let Some(inner) = v.strip_prefix('"') {
        let s = inner.strip_suffix('"').ok_or("a closing '\"'")?;
        return Ok(Value::Str(s.to_string()));
    }
    match v {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    v.replace('_', "")
        .parse::<f64>()
        .map(Value::Num)
        .map_err(|_| format!("a number, true/false, a \"string\" or [\"list\"], found {v}"))
}

fn want_str(v: Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(format!("a string, found {other:?}")),
    }
}

fn want_bool(v: Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(b),
        Value::Num(n) if n == 0.0 || n == 1.0 => Ok(n == 1.0),
        other => Err(format!("true/false or 0/1, found {other:?}")),
    }
}

fn want_num(v: Value, min: f64, max: f64) -> Result<f64, String> {
    match v {
        Value::Num(n) if (min..=max).contains(&n) => Ok(n),
        other => Err(format!("a number from {min} to {max}, found {other:?}")),
    }
}

fn want_list(v: Value) -> Result<Vec<String>, String> {
    match v {
        Value::List(l) => Ok(l),
        Value::Str(s) => Ok(s.split(',').map(String::from).collect()),
        other => Err(format!("a list of strings, found {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_cmdline_last_wins() {
        let mut c = Config::default();
        c.apply_toml(
            "# comment\n[record]\nhz = 25\nsettle_s = 5.5 # trailing\nlogin_names = [\"getty\", \"my-login\"]\n[readahead]\nenabled = true\n[rc]\nanything = 1\n",
            "test.toml",
        )
        .unwrap();
        assert_eq!(c.hz, 25);
        assert_eq!(c.settle_s, 5.5);
        assert_eq!(c.login_names, vec!["getty", "my-login"]);
        assert!(c.readahead);
        let errors = c.apply_cmdline(
            "console=ttyS0 bootprint.hz=100 bootprint.init=/lib/systemd/systemd bootprint.record=off quiet",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.hz, 100);
        assert_eq!(c.init, PathBuf::from("/lib/systemd/systemd"));
        assert!(!c.record);
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let mut c = Config::default();
        let e = c
            .apply_toml("[record]\n\nhz = fast\n", "/etc/bootprint/bootprint.toml")
            .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("/etc/bootprint/bootprint.toml:3: expected a number"),
            "{e}"
        );
        let e = c.apply_toml("[record]\nhz = 5000\n", "f").unwrap_err();
        assert!(e.expected.contains("from 1 to 1000"), "{e}");
        let e = c.apply_toml("[record]\nhx = 5\n", "f").unwrap_err();
        assert!(e.expected.contains("\"hx\""), "{e}");
        let errors = c.apply_cmdline("bootprint.hz=0 bootprint.settle=7");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("kernel command line"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].to_string().contains("bootprint.hz=0"),
            "{}",
            errors[0]
        );
        assert_eq!(c.settle_s, 7.0, "the good parameter applies");
    }

    #[test]
    fn load_keeps_what_parsed_when_the_file_is_bad() {
        let dir = std::env::temp_dir().join(format!("bp-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bootprint.toml");
        std::fs::write(&file, "[record]\nhz = 20\nsettle_s = x\n").unwrap();
        let (c, errors) = Config::load(&file, "bootprint.timeout=60");
        assert_eq!(errors.len(), 1);
        assert_eq!(c.hz, 50, "a bad file is ignored whole");
        assert_eq!(c.timeout_s, 60.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
