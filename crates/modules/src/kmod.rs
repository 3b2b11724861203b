//! The system side: the paths of a root (`/` at boot, a fixture tree in tests), the libkmod
//! [`Index`] the plan resolves through, and the libkmod [`Inserter`] the loader uses.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::durations::Durations;
use crate::input;
use crate::load::{Insert, Inserter};
use crate::plan::{self, Index, Inputs, ModInfo, Plan, Planned};
use crate::sys::Ctx;
use crate::Error;

/// Where everything is, under one root. Every path is derived from `root`, so a fixture tree
/// stands in for a system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The root (`/` on a running system).
    pub root: PathBuf,
    /// Kernel release: the directory under `lib/modules`.
    pub release: String,
    /// The durations state file.
    pub durations: PathBuf,
}

impl Paths {
    /// Paths under `root` for `release`, with the state file at its default place.
    pub fn new(root: &Path, release: &str) -> Paths {
        Paths {
            root: root.to_path_buf(),
            release: release.to_string(),
            durations: root.join("var/lib/bootprint/modules.durations"),
        }
    }

    /// `<root>/lib/modules/<release>`.
    pub fn modules_dir(&self) -> PathBuf {
        self.root.join("lib/modules").join(&self.release)
    }

    /// `<root>/sys/devices`.
    pub fn sys_devices(&self) -> PathBuf {
        self.root.join("sys/devices")
    }

    /// `<root>/proc/modules`.
    pub fn proc_modules(&self) -> PathBuf {
        self.root.join("proc/modules")
    }

    /// `<root>/etc/modules`.
    pub fn etc_modules(&self) -> PathBuf {
        self.root.join("etc/modules")
    }

    /// The modprobe.d directories libkmod reads by default, under the root.
    pub fn config_paths(&self) -> Vec<PathBuf> {
        [
            "etc/modprobe.d",
            "run/modprobe.d",
            "usr/local/lib/modprobe.d",
            "lib/modprobe.d",
        ]
        .iter()
        .map(|d| self.root.join(d))
        .collect()
    }
}

/// Picks the kernel release under `root`: `running` if `<root>/lib/modules/<running>` exists,
/// else the only release there; anything else is an error that lists what was found.
pub fn detect_release(root: &Path, running: &str) -> Result<String, Error> {
    let dir = root.join("lib/modules");
    if !running.is_empty() && dir.join(running).is_dir() {
        return Ok(running.to_string());
    }
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::Kmod(format!(
            "{}: no kernel release directory",
            dir.display()
        ))),
        _ => Err(Error::Kmod(format!(
            "{}: no directory for the running kernel {running:?}; choose one of {} with --kernel",
            dir.display(),
            found.join(", ")
        ))),
    }
}

/// The running kernel's release (`uname -r`).
pub fn running_release() -> String {
    ::sys::kernel_release().unwrap_or_default()
}

/// An [`Index`] over libkmod: aliases, modules.dep, softdeps, options, blacklist, install
/// commands, all as modprobe reads them.
pub struct KmodIndex {
    ctx: Ctx,
    blacklist: HashSet<String>,
}

impl KmodIndex {
    /// Opens libkmod on `paths`' modules directory and configuration.
    pub fn open(paths: &Paths) -> Result<KmodIndex, Error> {
        let ctx = Ctx::new(&paths.modules_dir(), &paths.config_paths())
            .map_err(|e| Error::Kmod(e.to_string()))?;
        let blacklist = ctx
            .blacklist()
            .iter()
            .map(|n| input::normalize(n))
            .collect();
        Ok(KmodIndex { ctx, blacklist })
    }
}

impl Index for KmodIndex {
    fn lookup(&mut self, alias: &str) -> Result<Vec<String>, Error> {
        let mods = self
            .ctx
            .lookup(alias)
            .map_err(|e| Error::Kmod(format!("looking up {alias:?}: {e}")))?;
        let mut names: Vec<String> = Vec::new();
        for m in mods {
            let n = m.name();
            if !names.contains(&n) {
                names.push(n);
            }
        }
        Ok(names)
    }

    fn module(&mut self, name: &str) -> Result<ModInfo, Error> {
        let m = self
            .ctx
            .module(name)
            .map_err(|e| Error::Kmod(format!("module {name:?}: {e}")))?;
        let names = |v: Vec<crate::sys::Module<'_>>| v.iter().map(|m| m.name()).collect();
        let (pre, post) = m
            .softdeps(&self.ctx)
            .map_err(|e| Error::Kmod(format!("softdeps of {name:?}: {e}")))?;
        Ok(ModInfo {
            path: m.path(),
            deps: names(m.dependencies(&self.ctx)),
            pre: names(pre),
            post: names(post),
            options: m.options().unwrap_or_default(),
            install: m.install_commands(),
        })
    }

    fn blacklisted(&self, name: &str) -> bool {
        self.blacklist.contains(name)
    }
}

/// Reads everything the plan starts from under `paths`: modaliases, module lists, loaded and
/// builtin modules, learned durations.
pub fn gather(paths: &Paths) -> Result<Inputs, Error> {
    let mut requests = input::read_modaliases(&paths.sys_devices())?;
    let (listed, problems) =
        input::read_module_lists(&paths.etc_modules(), &input::modules_load_dirs(&paths.root));
    requests.extend(listed);
    // Name sources as they are on the system (`/sys/...`), not with the root in front.
    for r in &mut requests {
        let path = match &mut r.source {
            crate::Source::Modalias(p) | crate::Source::List(p, _) => p,
        };
        if let Ok(rel) = path.strip_prefix(&paths.root) {
            *path = Path::new("/").join(rel);
        }
    }
    let mut inputs = gather_state(paths)?;
    inputs.warnings = problems.iter().map(|e| e.to_string()).collect();
    inputs.requests = requests;
    Ok(inputs)
}

/// Everything but the requests: builtin and loaded modules, learned durations.
fn gather_state(paths: &Paths) -> Result<Inputs, Error> {
    let builtin_file = paths.modules_dir().join("modules.builtin");
    let builtin = input::parse_builtin(&input::read_optional(&builtin_file)?, &builtin_file)?;
    let loaded = input::parse_proc_modules(&input::read_optional(&paths.proc_modules())?);
    Ok(Inputs {
        warnings: Vec::new(),
        requests: Vec::new(),
        builtin: builtin.into_iter().collect(),
        loaded: loaded.into_iter().collect(),
        durations: Durations::read(&paths.durations)?,
    })
}

/// The inputs for loading these module names or aliases only (`--only`: the bench loads a
/// given set, not what sysfs asks for; sysfs and the module lists are not read). `origin`
/// names where the names came from.
pub fn gather_only(paths: &Paths, names: &[String], origin: &Path) -> Result<Inputs, Error> {
    let mut inputs = gather_state(paths)?;
    inputs.requests = names
        .iter()
        .enumerate()
        .map(|(i, n)| crate::Request {
            name: n.clone(),
            options: String::new(),
            source: crate::Source::List(origin.to_path_buf(), i + 1),
        })
        .collect();
    Ok(inputs)
}

/// Gathers the inputs under `paths` and builds the plan through libkmod.
pub fn plan_system(paths: &Paths) -> Result<Plan, Error> {
    plan_inputs(paths, &gather(paths)?)
}

/// Builds the plan for `inputs` (from [`gather`] or [`gather_only`]) through libkmod on
/// `paths`.
pub fn plan_inputs(paths: &Paths, inputs: &Inputs) -> Result<Plan, Error> {
    let mut index = KmodIndex::open(paths)?;
    plan::build(&mut index, inputs)
}

/// The real [`Inserter`]: one libkmod context per worker.
pub struct KmodInserter {
    ctx: Ctx,
}

impl KmodInserter {
    /// Opens a context on `paths` (call it in the worker thread that will use it).
    pub fn open(paths: &Paths) -> Result<KmodInserter, String> {
        let ctx =
            Ctx::new(&paths.modules_dir(), &paths.config_paths()).map_err(|e| e.to_string())?;
        Ok(KmodInserter { ctx })
    }
}

impl Inserter for KmodInserter {
    fn insert(&mut self, module: &Planned) -> Insert {
        let m = match self.ctx.module_from_path(&module.path) {
            Ok(m) => m,
            Err(e) => return Insert::Failed(format!("{}: {e}", module.path.display())),
        };
        match m.insert(&module.options) {
            Ok(()) => Insert::Loaded,
            Err(libc::EEXIST) => Insert::AlreadyLoaded,
            Err(errno) => Insert::Failed(format!(
                "{}: {}",
                module.path.display(),
                std::io::Error::from_raw_os_error(errno)
            )),
        }
    }
}

/// Loads `plan` on the running system with `workers` threads, timing each module on
/// `CLOCK_BOOTTIME`. This is the call the boot path makes.
pub fn load_system(plan: &Plan, paths: &Paths, workers: usize) -> crate::load::LoadReport {
    crate::load::load(
        plan,
        workers,
        |_| KmodInserter::open(paths),
        ::sys::boottime_ns,
    )
}
