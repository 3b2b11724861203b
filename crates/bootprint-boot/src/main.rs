//! `bootprint-boot`: the boot path. As PID 1 (`init=/usr/lib/bootprint/bootprint-boot`) it
//! forks the recorder and execs the real init; otherwise it takes a verb. Logic lives in the
//! `record`, `rc`, `initramfs` and `systemd` crates; this file dispatches, with the command
//! line defined once in [`args`] (its table gives the parser and the usage text).

use std::path::PathBuf;
use std::process::ExitCode;

use record::recorder::{self, Paths, Start};
use record::Config;

mod args;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // PID 1 with /bootprint/plan present: the initramfs's /init (docs/initramfs.md).
    if initramfs::is_initramfs_init() {
        initramfs::boot::run(args, record::readahead::start_in_initramfs);
    }
    if record::handoff::is_pid1() {
        record::handoff::boot(args);
    }
    let argv0 = args.first().map(std::path::Path::new);
    if argv0.and_then(|p| p.file_name()) == Some("bootprint-late-generator".as_ref()) {
        late_generator(&args[1..]);
        return ExitCode::SUCCESS; // a generator never fails the boot
    }
    if argv0.and_then(|p| p.file_name()) == Some(KEXEC_HOOK.as_ref()) {
        kexec_hook(args.get(1).and_then(|a| a.to_str()));
        return ExitCode::SUCCESS; // a shutdown hook never holds up the reboot
    }
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // `VERB --help` asks for the usage as the bare `--help` does: not a usage error. (The
    // runner's startpar form never passes it: startpar has no such option.)
    let verb_help = matches!(
        words.first().map(String::as_str),
        Some("record" | "rc" | "late-start" | "shutdown" | "kexec-prepare")
    ) && words[1..].iter().any(|w| w == "--help" || w == "-h");
    if verb_help {
        println!("{}", args::usage());
        return ExitCode::SUCCESS;
    }
    match words.first().map(String::as_str) {
        Some("record") => record_now(&words[1..]),
        Some("rc") => rc_verb(&words[1..]),
        Some("rc-builtin") => rc_builtin(&words[1..]),
        Some("late-start") if words.len() == 1 => late_start(),
        Some("kexec-prepare") if words.len() == 1 => kexec_prepare(),
        Some("shutdown") => shutdown(&words[1..]),
        Some("--version") => {
            println!("bootprint-boot {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--help") | Some("-h") | Some("help") => {
            println!("{}", args::usage());
            ExitCode::SUCCESS
        }
        _ => usage_error("expected a verb"),
    }
}

/// `rc --enabled [--cmdline FILE] [--config FILE] [--levers FILE]`: exit 0 when bootprint's
/// configuration (the file, then the kernel command line: `bootprint.rc=1`,
/// `bootprint.all=1`, `rc` or `all` in bootprint.toml) turns the runner on, 1 otherwise.
/// The startpar wrapper asks this instead of reading the command line itself, so every way
/// of turning it on works. On the way up (init's `RUNLEVEL` not 0 or 6) the runner also
/// stays out when bootprint-boot marked this boot as its comparison or found it switched
/// off by its own verdict (`record::judged`; the mark is `--levers`, default
/// /run/bootprint/levers); a shutdown is not judged, so it keeps the runner (and its kexec).
fn rc_enabled(words: &[String]) -> ExitCode {
    let given = match args::parse(&args::RC_ENABLED, words) {
        Ok(g) if g.operands.is_empty() => g,
        Ok(g) => return usage_error(&format!("rc --enabled: unexpected {:?}", g.operands[0])),
        Err(e) => return usage_error(&e),
    };
    let cmdline_file = PathBuf::from(given.value("--cmdline").unwrap_or("/proc/cmdline"));
    let config_file = PathBuf::from(
        given
            .value("--config")
            .unwrap_or(record::config::CONFIG_FILE),
    );
    let cmdline = std::fs::read_to_string(&cmdline_file).unwrap_or_default();
    let (config, _) = Config::load(&config_file, &cmdline);
    let levers = PathBuf::from(given.value("--levers").unwrap_or(record::judged::MARK));
    let going_down = matches!(std::env::var("RUNLEVEL").as_deref(), Ok("0" | "6"));
    let held_back =
        !going_down && record::judged::held_back(&levers, &record::judged::RC).is_some();
    if config.rc && !held_back {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// systemd-shutdown(8) runs the executables of /usr/lib/systemd/system-shutdown with the
/// verb once every file system is unmounted or read-only; this name of the boot binary
/// there is the `kexec` lever's last step.
const KEXEC_HOOK: &str = "bootprint-kexec";

/// The hook: on `reboot`, with the reboot marked for kexec and the image loaded
/// (`kexec-prepare`), reboots into it. Anything else, or a kexec the kernel refuses,
/// returns, and systemd-shutdown reboots through the firmware.
fn kexec_hook(verb: Option<&str>) {
    use fastpath::kexec;
    if verb != Some("reboot") || !kexec::kexec_in_force() {
        return;
    }
    println!("bootprint: rebooting by kexec");
    let e = kexec::exec();
    println!("bootprint: the kexec failed ({e}); rebooting through the firmware");
}

/// `kexec-prepare` (`bootprint-kexec.service`'s stop, the `kexec` lever on systemd): when
/// systemd is rebooting, loads the boot loader's next entry and marks the reboot, or says
/// why not (on stdout: the journal). Always exits 0: a stop that fails must not change the
/// shutdown.
fn kexec_prepare() -> ExitCode {
    let asked_ns = sys::boottime_ns();
    let limit = std::time::Duration::from_secs(10);
    match systemd::learn::rebooting(std::path::Path::new("systemctl"), limit) {
        Ok(true) => {
            let prepared = fastpath::prepare_plain_reboot(std::path::Path::new("/"), asked_ns);
            println!("bootprint: {}", prepared.describe());
        }
        Ok(false) => println!("bootprint: not a reboot: nothing to prepare"),
        Err(e) => {
            println!("bootprint: cannot tell whether systemd reboots ({e}): nothing prepared")
        }
    }
    ExitCode::SUCCESS
}

/// systemd.generator(7): on a recorded boot, adds the shutdown recorder's unit
/// (`systemd::generator::shutdown_files`); defers the learned late units when `[systemd]
/// late` (or `bootprint.late=1`) is on, as far as `systemd::generator::plan` still finds
/// them deferrable. Any problem writes nothing: the boot is then as if bootprint were not
/// installed.
fn late_generator(dirs: &[std::ffi::OsString]) {
    use systemd::generator::{self, LATE_LOG};
    let Some(normal_dir) = dirs.first().map(PathBuf::from) else {
        return;
    };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let (config, _) = Config::load(std::path::Path::new(record::config::CONFIG_FILE), &cmdline);
    let bin = std::env::current_exe()
        .unwrap_or_else(|_| PathBuf::from("/usr/lib/bootprint/bootprint-boot"));
    if config.record && boots_through_bootprint(&cmdline) {
        let files = generator::shutdown_files(&bin.to_string_lossy());
        if generator::write(&normal_dir, &files).is_err() {
            generator::remove(&normal_dir, &files);
        }
    }
    if config.kexec {
        let files = generator::kexec_files(&bin.to_string_lossy());
        if generator::write(&normal_dir, &files).is_err() {
            generator::remove(&normal_dir, &files);
        }
    }
    let log = |what: &str, fields: &[(&str, String)]| {
        systemd::waiter::log_event(std::path::Path::new(LATE_LOG), what, fields)
    };
    if config.timeouts {
        match systemd::timeouts::plan(std::path::Path::new("/")) {
            Ok(learned) if !learned.is_empty() => {
                let files = systemd::timeouts::files(&learned);
                if generator::write(&normal_dir, &files).is_err() {
                    generator::remove(&normal_dir, &files);
                } else {
                    log("timeouts_planned", &[("units", learned.len().to_string())]);
                }
            }
            Ok(_) => {}
            Err(e) => log(
                "timeouts_skipped",
                &[("error", e.replace(char::is_whitespace, "_"))],
            ),
        }
    }
    if !config.late {
        return;
    }
    let mark = std::path::Path::new(record::judged::MARK);
    if let Some(why) = record::judged::held_back(mark, &record::judged::LATE) {
        // This boot compares, or late units switched themselves off: systemd's own order.
        log(&format!("late_{why}"), &[]);
        return;
    }
    let pins = systemd::late::Pins {
        late: config.late_units.clone(),
        never_late: config.never_late.clone(),
    };
    let plan = match generator::plan(std::path::Path::new("/"), &pins) {
        // The first boot with the switch on: nothing learned yet.
        Ok(None) => return,
        Ok(Some(p)) => p,
        Err(e) => {
            log(
                "late_skipped",
                &[("error", e.replace(char::is_whitespace, "_"))],
            );
            return;
        }
    };
    for (unit, why) in &plan.refused {
        log(
            "late_refused",
            &[
                ("unit", unit.clone()),
                ("why", why.replace(char::is_whitespace, "_")),
            ],
        );
    }
    if plan.late.is_empty() {
        return;
    }
    let files = generator::files(&plan.late, &bin.to_string_lossy());
    if generator::write(&normal_dir, &files).is_err() {
        generator::remove(&normal_dir, &files);
        return;
    }
    log("late_planned", &[("units", plan.late.len().to_string())]);
}

/// Whether this boot was recorded: the kernel's `init=` (the last one counts, as for the
/// kernel) is bootprint-boot.
fn boots_through_bootprint(cmdline: &str) -> bool {
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("init="))
        .next_back()
        .is_some_and(|p| p.ends_with("/bootprint-boot"))
}

/// `late-start`: the waiter behind bootprint-late.service (systemd::waiter).
fn late_start() -> ExitCode {
    use systemd::generator::{GO_FLAG, LATE_LOG, TARGET};
    let (cfg, _) = rc::run::Config::load(
        std::path::Path::new(rc::run::DEFAULT_CONFIG),
        std::path::Path::new(rc::run::DEPRECATED_RC_CONF),
    );
    let mut start = std::process::Command::new("systemctl");
    start.args(["start", TARGET]);
    let code = systemd::waiter::Waiter {
        log: std::path::Path::new(LATE_LOG),
        go_flag: std::path::Path::new(GO_FLAG),
        proc_dir: std::path::Path::new("/proc"),
        cfg: &cfg,
        start,
    }
    .run();
    ExitCode::from(code as u8)
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("bootprint-boot: {msg}\n{}", args::usage());
    ExitCode::from(2)
}

fn record_now(words: &[String]) -> ExitCode {
    let given = match args::parse(&args::RECORD, words) {
        Ok(g) if g.operands.is_empty() => g,
        Ok(g) => return usage_error(&format!("record: unexpected {:?}", g.operands[0])),
        Err(e) => return usage_error(&e),
    };
    let mut config = Config::default();
    if let Some(dir) = given.value("--out") {
        config.log_dir = PathBuf::from(dir);
    }
    let seconds = match given.value("--seconds").map(str::parse::<f64>) {
        None => 10.0,
        Some(Ok(v)) if v > 0.0 => v,
        Some(_) => return usage_error("--seconds needs a positive number"),
    };
    match given.value("--hz").map(str::parse::<u32>) {
        None => {}
        Some(Ok(v)) if (1..=1000).contains(&v) => config.hz = v,
        Some(_) => return usage_error("--hz needs a number from 1 to 1000"),
    }
    // Outside boot the uptime limit means nothing: only the run length stops it.
    config.timeout_s = f64::MAX / 2e9;
    let start = Start {
        stop_after_ns: Some((seconds * 1e9) as u64),
        ..Start::default()
    };
    match recorder::run(&config, &Paths::default(), start) {
        Ok(dir) => {
            println!("{}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "bootprint-boot: cannot write the trace under {}: {e}",
                config.log_dir.display()
            );
            ExitCode::FAILURE
        }
    }
}

/// `shutdown [--how TEXT] [--log-dir DIR] [--pid-file FILE]`: records the shutdown
/// (`record::shutdown`); `shutdown --save [--wait S] [--pid-file FILE]`: has the running
/// recorder write its trace. Exit 0 also when there was nothing to record or save: a
/// shutdown never waits on bootprint's failure.
fn shutdown(words: &[String]) -> ExitCode {
    use record::shutdown;
    let given = match args::parse(&args::SHUTDOWN, words) {
        Ok(g) if g.operands.is_empty() => g,
        Ok(g) => return usage_error(&format!("shutdown: unexpected {:?}", g.operands[0])),
        Err(e) => return usage_error(&e),
    };
    let pid_file = PathBuf::from(given.value("--pid-file").unwrap_or(shutdown::PID_FILE));
    if given.has("--save") {
        let wait = match given.value("--wait").map(str::parse::<f64>) {
            None => 10.0,
            Some(Ok(v)) if (0.0..=600.0).contains(&v) => v,
            Some(_) => return usage_error("--wait needs seconds from 0 to 600"),
        };
        let wait = std::time::Duration::from_secs_f64(wait);
        match shutdown::save(&pid_file, std::path::Path::new("/proc"), wait) {
            Ok(()) => {}
            Err(shutdown::SaveError::NotRunning) => {
                eprintln!(
                    "bootprint-boot: no shutdown recorder runs ({})",
                    pid_file.display()
                )
            }
            Err(shutdown::SaveError::Timeout) => eprintln!(
                "bootprint-boot: the shutdown recorder did not write its trace within {} s",
                wait.as_secs_f64()
            ),
        }
        return ExitCode::SUCCESS;
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let (mut config, _) = Config::load(std::path::Path::new(record::config::CONFIG_FILE), &cmdline);
    if let Some(dir) = given.value("--log-dir") {
        config.log_dir = PathBuf::from(dir);
    }
    let how = given.value("--how").unwrap_or("unknown");
    match shutdown::record(&config, &Paths::default(), how, &pid_file) {
        Ok(Some(dir)) => println!("{}", dir.display()),
        Ok(None) => {}
        Err(e) => eprintln!(
            "bootprint-boot: cannot write the shutdown's trace under {}: {e}",
            config.log_dir.display()
        ),
    }
    ExitCode::SUCCESS
}

/// `rc-builtin SCRIPT ACTION`: does what Debian's SCRIPT does, on this system, if
/// `rc::builtin` recognises it here; exit 0 when done, `rc::builtin::DECLINED` (254) when
/// the script must run instead (the reason on stderr, which the runner prints).
fn rc_builtin(args: &[String]) -> ExitCode {
    let [script, action] = args else {
        return usage_error("rc-builtin needs SCRIPT ACTION");
    };
    let root = std::path::Path::new("/");
    let declined = |why: String| {
        eprintln!("built-in declined ({why}): running the script");
        ExitCode::from(rc::builtin::DECLINED as u8)
    };
    let path = root.join("etc/init.d").join(script);
    let b = match rc::builtin::recognise(root, script, &path, action) {
        Ok(b) => b,
        Err(why) => return declined(why.into()),
    };
    // A panic is a failure like any other: the script runs.
    match std::panic::catch_unwind(|| rc::builtin::run(b, &rc::builtin::Env::system())) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(why)) => declined(why.into()),
        Err(_) => declined("panicked".into()),
    }
}

/// `rc`: parses the arguments into an `rc::run::Request`; the runner lives in the rc crate.
fn rc_verb(words: &[String]) -> ExitCode {
    if words.first().map(String::as_str) == Some("--enabled") {
        return rc_enabled(&words[1..]);
    }
    let mut req = if words.first().map(String::as_str) == Some("--startpar") {
        let mut r = match rc::run::Request::from_startpar(&words[1..]) {
            Ok(r) => r,
            Err(e) => return usage_error(&e.to_string()),
        };
        // Not startpar options: let tests point the startpar form at a fake root and a
        // fake /proc (its cmdline holds the fault switch). Everything else is startpar's.
        for (i, flag) in words.iter().enumerate() {
            let Some(f) = args::RC_STARTPAR.flags.iter().find(|f| f.name == flag) else {
                continue;
            };
            let Some(dir) = words.get(i + 1) else {
                return usage_error(&format!("{} needs a directory", f.name));
            };
            match f.name {
                "--root" => r.root = PathBuf::from(dir),
                _ => r.proc_dir = PathBuf::from(dir),
            }
        }
        r
    } else {
        let given = match args::parse(&args::RC, words) {
            Ok(g) => g,
            Err(e) => return usage_error(&e),
        };
        let rl = match given.operands[..] {
            [rl] => rc::system::Runlevel::parse(rl),
            _ => None,
        };
        let Some(rl) = rl else {
            return usage_error("rc needs a runlevel: S or 0-6");
        };
        let mut req = rc::run::Request::new(rl);
        match given.value("--action") {
            None => {}
            Some(v @ ("start" | "stop")) => req.action = v.to_string(),
            Some(_) => return usage_error("--action needs start or stop"),
        }
        if let Some(p) = given.value("--previous") {
            req.previous = rc::system::Runlevel::parse(p);
        }
        for (flag, field) in [
            ("--root", &mut req.root),
            ("--proc", &mut req.proc_dir),
            ("--spans", &mut req.spans),
        ] {
            if let Some(v) = given.value(flag) {
                *field = PathBuf::from(v);
            }
        }
        req.detach = !given.has("--no-detach");
        req.dry_run = given.has("--dry-run");
        req
    };
    if req.root != std::path::Path::new("/") && req.spans.starts_with("/run") {
        // A test root: keep the real /run out of it.
        req.spans = req.root.join("run/bootprint/rc.log");
    }
    if req.root == std::path::Path::new("/") {
        // Built-ins act on the running system, and a shutdown is recorded only there:
        // never for a test root.
        req.builtin_program = std::env::current_exe().ok();
        req.shutdown_program = req.builtin_program.clone();
        // The kexec lever, by the one rule of record's configuration: read only for a
        // runlevel that ends the system, not on the boot path.
        if req.ends_the_system() {
            let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
            req.kexec_on_reboot =
                Config::load(std::path::Path::new(record::config::CONFIG_FILE), &cmdline)
                    .0
                    .kexec;
        }
    }
    let mut console = std::io::stderr();
    ExitCode::from(rc::run::run_runlevel(&req, &mut console).clamp(0, 255) as u8)
}
