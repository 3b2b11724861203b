//! The first moments of userspace: bootprint-boot runs as `init=`, starts the recorder beside
//! the boot and execs the real init, so PID 1 is the real init. Whatever goes wrong here, the
//! real init is exec'd at once: bootprint must never break a boot.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use sample::sys::become_background;
use sys::boottime_ns;

use crate::config::{Config, CONFIG_FILE};
use crate::recorder::{self, Paths, Start};

/// Inits the kernel itself would try, in its order, after the configured one.
const FALLBACK_INITS: [&str; 4] = ["/sbin/init", "/etc/init", "/bin/init", "/bin/sh"];

/// Runs as PID 1: fork the recorder if asked, then exec the real init. Never returns.
pub fn boot(args: Vec<OsString>) -> ! {
    // Everything that could fail is inside catch_unwind; a panic means "just boot".
    let prepared = panic::catch_unwind(AssertUnwindSafe(|| {
        let cmdline = kernel_cmdline();
        let (config, errors) = Config::load(Path::new(CONFIG_FILE), &cmdline);
        let warnings = errors.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        (config, warnings)
    }));
    let (config, mut warnings) = match prepared {
        Ok(p) => p,
        Err(_) => (
            Config {
                record: false,
                ..Config::default()
            },
            Vec::new(),
        ),
    };
    // Replay starts first, before anything else reads the disk.
    let readahead = panic::catch_unwind(AssertUnwindSafe(|| crate::readahead::prepare(&config)))
        .unwrap_or_default();
    // Then the module loader, so the slow modules start settling at once.
    // One lever at a time leaves its usual way: while readahead learns or compares, the
    // loader runs and that boot is not its to judge.
    let readahead_compares = match &readahead {
        crate::readahead::Plan::Learn(_) => Some("readahead learned on this boot"),
        crate::readahead::Plan::Control => Some("readahead compared on this boot"),
        _ => None,
    };
    let modules = panic::catch_unwind(AssertUnwindSafe(|| {
        crate::modload::prepare(
            &config,
            crate::modload::LOADER,
            &mut warnings,
            readahead_compares,
        )
    }))
    .unwrap_or(crate::modload::Boot::Off);
    // The init that will run: the configured one, or the first of the fallbacks that
    // exists (a typo in bootprint.init=, a removed program), said in the trace.
    let init = first_existing_init(&config.init);
    if init != config.init {
        warnings.push(format!(
            "init {} not found; running {} instead",
            config.init.display(),
            init.display()
        ));
    }
    // Then the lever that acts after init (the runner or late units), marked in /run for
    // the processes that run it; it compares only when neither lever above does.
    let others_compare = readahead_compares.or(modules
        .is_control()
        .then_some("the module loader compared on this boot"));
    // Without the recorder nothing would judge the boot: the lever then acts as switched.
    let judged = panic::catch_unwind(AssertUnwindSafe(|| {
        if config.record {
            let mark = crate::judged::run_is_fresh().then_some(Path::new(crate::judged::MARK));
            crate::judged::prepare(&config, &init, others_compare, mark)
        } else {
            crate::judged::Boot::default()
        }
    }))
    .unwrap_or_default();
    let mut modules = modules;
    if let Some(lever) = judged.lever.filter(|_| judged.is_control()) {
        modules.set_aside(&format!("{} compared on this boot", lever.name));
    }
    if config.record {
        let init_exec = Some((boottime_ns(), init.display().to_string()));
        if let Ok(0) = sys::fork() {
            run_recorder_child(&config, init_exec, warnings, readahead, modules, judged);
        }
        // Parent, or fork failed: go on booting either way.
    }
    exec_init(&init, &args)
}

/// `init` if it exists (and is not bootprint-boot itself), else the first of
/// [`FALLBACK_INITS`] that does; `init` when none does (exec_init then says why).
fn first_existing_init(init: &Path) -> PathBuf {
    std::iter::once(init.to_path_buf())
        .chain(FALLBACK_INITS.iter().map(PathBuf::from))
        .find(|c| c.exists() && !is_self(c))
        .unwrap_or_else(|| init.to_path_buf())
}

fn run_recorder_child(
    config: &Config,
    init_exec: Option<(u64, String)>,
    warnings: Vec<String>,
    readahead: crate::readahead::Plan,
    modules: crate::modload::Boot,
    judged: crate::judged::Boot,
) -> ! {
    let _ = sys::setsid();
    become_background();
    let _ = std::env::set_current_dir("/");
    let start = Start {
        init_exec,
        stop_after_ns: None,
        warnings,
        readahead,
        modules,
        judged,
        shutdown: None,
        shutdown_request: None,
    };
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        if let Ok(trace) = recorder::run(config, &Paths::default(), start) {
            let targets = crate::export::Targets {
                prometheus_dir: &config.prometheus_dir,
                otlp_endpoint: &config.otlp_endpoint,
                otlp_headers_file: &config.otlp_headers_file,
            };
            crate::export::export(crate::modload::LOADER, &targets, &trace);
        }
    }));
    sys::exit_now(0)
}

/// The kernel command line; mounts /proc first when nothing did (booted without initramfs).
fn kernel_cmdline() -> String {
    if !Path::new("/proc/self").exists() {
        let _ = sys::mount("proc", Path::new("/proc"), Some("proc"), 0, None);
    }
    std::fs::read_to_string("/proc/cmdline").unwrap_or_default()
}

/// Execs `init` with our arguments, falling back to the inits the kernel would try.
pub fn exec_init(init: &Path, args: &[OsString]) -> ! {
    let mut candidates = vec![init.to_path_buf()];
    candidates.extend(FALLBACK_INITS.iter().map(PathBuf::from));
    for candidate in candidates.iter().filter(|c| !is_self(c)) {
        let err = Command::new(candidate)
            .arg0(candidate)
            .args(args.iter().skip(1))
            .exec();
        eprintln!("bootprint-boot: cannot exec {}: {err}", candidate.display());
    }
    // PID 1 exiting is a kernel panic ("Attempted to kill init!"), which says nothing of
    // why: say it on the console and in the kernel log, and leave time to read it first.
    let why = format!(
        "bootprint-boot: no init could be started (tried {}); the kernel will panic in \
         {NO_INIT_DELAY_S} s. Boot with init=/sbin/init, or repair the root file system.\n",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    say_on_console(&why);
    if sys::getpid() == 1 {
        std::thread::sleep(std::time::Duration::from_secs(NO_INIT_DELAY_S));
    }
    sys::exit_now(1)
}

/// Seconds PID 1 waits, its message on the console, before it gives up (and the kernel
/// panics) when no init can be exec'd.
const NO_INIT_DELAY_S: u64 = 30;

/// Writes `text` to the console and the kernel log (stderr may be nowhere at boot).
fn say_on_console(text: &str) {
    use std::io::Write;
    for dev in ["/dev/console", "/dev/kmsg"] {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(dev) {
            let _ = f.write_all(text.as_bytes());
        }
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// A misconfigured `bootprint.init=` pointing at ourselves would loop.
fn is_self(path: &Path) -> bool {
    match (std::fs::canonicalize(path), std::env::current_exe()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether this process is PID 1.
pub fn is_pid1() -> bool {
    sys::getpid() == 1
}
