//! The build plan: which kernel modules the initramfs must load to reach the root file
//! system, in dependency order, and the plan file that carries them to boot.
//!
//! Inputs, all read at build time: the root block device's chain of devices in sysfs
//! ([`root_chain`]: each ancestor's bound driver and `modalias`), and the module index of
//! the target kernel ([`ModIndex`]: `modules.dep`, `modules.alias`, `modules.softdep`,
//! `modules.builtin`, `options` lines of modprobe.d). Parsing is pure; the readers take the
//! directories as parameters so tests use fixture trees.
//!
//! Plan file format (text, one record a line, `#` comments; docs/initramfs.md):
//!
//! ```text
//! bootprint-initramfs-plan 1
//! kernel 6.1.0-50-amd64
//! root /dev/vda
//! fstype ext4
//! module<TAB>virtio_blk<TAB>/lib/modules/.../virtio_blk.ko<TAB>required<TAB>virtio,virtio_ring<TAB>OPTIONS
//! ```
//!
//! `module` lines come in dependency order (each after all the modules in its deps field);
//! the deps field is `-` when empty; `optional` modules (soft dependencies) may fail to load
//! without stopping the boot. `root` and `fstype` are what was found at build time; the
//! kernel command line wins at boot.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind};

/// The first line of a plan file.
pub const PLAN_MAGIC: &str = "bootprint-initramfs-plan 1";

/// A module name as the kernel knows it: `-` and `_` are the same.
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// An alias as libkmod compares it: `-` read as `_`, except inside `[...]` (a glob's
/// character class); applied to modules.alias's patterns and to what is looked up alike.
pub fn alias_normalize(alias: &str) -> String {
    let mut out = String::with_capacity(alias.len());
    let mut in_class = false;
    for c in alias.chars() {
        match c {
            '[' => in_class = true,
            ']' => in_class = false,
            '-' if !in_class => {
                out.push('_');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The configuration files in the order libkmod reads them: modules.softdep and every
/// `*.conf` of `modprobe_dirs`, sorted by file name across directories; of two files with
/// the same name, the one in the earlier directory.
fn config_files(modules_dir: &Path, modprobe_dirs: &[PathBuf]) -> Vec<PathBuf> {
    // By file name; the first directory's file of a name wins.
    let mut files: BTreeMap<std::ffi::OsString, PathBuf> = BTreeMap::new();
    let softdep = modules_dir.join("modules.softdep");
    if softdep.is_file() {
        files.insert("modules.softdep".into(), softdep);
    }
    for dir in modprobe_dirs {
        let Ok(rd) = fs::read_dir(dir) else { continue };
        for path in rd.flatten().map(|e| e.path()) {
            if let (Some(name), true) = (
                path.file_name(),
                path.extension().is_some_and(|x| x == "conf"),
            ) {
                files.entry(name.to_os_string()).or_insert(path);
            }
        }
    }
    files.into_values().collect()
}

/// The module name of a `.ko` path (`kernel/fs/ext4/ext4.ko.xz` -> `ext4`).
pub fn name_of_path(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    normalize(stem)
}

/// Whether `text` matches the shell glob `pattern` (`*`, `?`, `[...]`, `[!...]`), as
/// modules.alias patterns are matched (fnmatch without flags).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    fn m(p: &[u8], t: &[u8]) -> bool {
        let (mut pi, mut ti) = (0, 0);
        // Backtracking point for the last `*`: (pattern index after it, text index).
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            let step = if pi < p.len() {
                match p[pi] {
                    b'*' => {
                        star = Some((pi + 1, ti));
                        pi += 1;
                        continue;
                    }
                    b'?' => Some(pi + 1),
                    b'[' => class(&p[pi..], t[ti])
                        .map(|(ok, len)| (ok, pi + len))
                        .and_then(|(ok, next)| if ok { Some(next) } else { None }),
                    c => (c == t[ti]).then_some(pi + 1),
                }
            } else {
                None
            };
            match (step, star) {
                (Some(next), _) => {
                    pi = next;
                    ti += 1;
                }
                (None, Some((sp, st))) => {
                    pi = sp;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                (None, None) => return false,
            }
        }
        p[pi..].iter().all(|&c| c == b'*')
    }
    // `[...]` at the start of `p`: (whether `c` is in it, its length); None if unclosed.
    fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
        let mut i = 1;
        let negate = matches!(p.get(i), Some(b'!') | Some(b'^'));
        if negate {
            i += 1;
        }
        let mut found = false;
        let mut first = true;
        while i < p.len() {
            if p[i] == b']' && !first {
                return Some((found != negate, i + 1));
            }
            first = false;
            if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
                found |= p[i] <= c && c <= p[i + 2];
                i += 3;
            } else {
                found |= p[i] == c;
                i += 1;
            }
        }
        None
    }
    m(pattern.as_bytes(), text.as_bytes())
}

/// The target kernel's module index.
#[derive(Debug, Default, Clone)]
pub struct ModIndex {
    /// Module name -> (path relative to the modules directory, its dependencies' names, in
    /// modules.dep order).
    pub deps: HashMap<String, (String, Vec<String>)>,
    /// (pattern, module name) from modules.alias, in file order.
    pub aliases: Vec<(String, String)>,
    /// Names of modules built into the kernel.
    pub builtin: HashSet<String>,
    /// Module name -> the names or aliases of its `pre:` and `post:` soft dependencies.
    pub softdeps: HashMap<String, Vec<String>>,
    /// Module name -> options from `options` lines of modprobe.d.
    pub options: HashMap<String, String>,
}

impl ModIndex {
    /// Parses modules.dep (`file` names it in errors).
    pub fn parse_dep(&mut self, text: &str, file: &Path) -> Result<(), Error> {
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let Some((path, deps)) = line.split_once(':') else {
                return Err(Error::new(
                    ErrorKind::Parse,
                    format!("line {}: expected `MODULE.ko: DEPENDENCIES`", n + 1),
                )
                .at(file)
                .on_line(n + 1));
            };
            let deps = deps.split_whitespace().map(name_of_path).collect();
            self.deps
                .insert(name_of_path(path), (path.trim().to_string(), deps));
        }
        Ok(())
    }

    /// Parses modules.alias (`alias PATTERN MODULE` lines).
    pub fn parse_alias(&mut self, text: &str, file: &Path) -> Result<(), Error> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["alias", pattern, module] => self
                    .aliases
                    .push((alias_normalize(pattern), normalize(module))),
                _ => {
                    return Err(Error::new(
                        ErrorKind::Parse,
                        format!("line {}: expected `alias PATTERN MODULE`", n + 1),
                    )
                    .at(file)
                    .on_line(n + 1))
                }
            }
        }
        Ok(())
    }

    /// Parses modules.builtin (one `.ko` path a line).
    pub fn parse_builtin(&mut self, text: &str) {
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            self.builtin.insert(name_of_path(line));
        }
    }

    /// Parses `softdep` and `options` lines of modules.softdep or a modprobe.d file; other
    /// lines (`alias`, `blacklist`, `install`) are not the initramfs's business. As libkmod
    /// (and so the module loader and modprobe) reads them: a module's first `softdep` line
    /// is its only one, and only names after `pre:` or `post:` count.
    pub fn parse_modprobe_conf(&mut self, text: &str) {
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["softdep", module, rest @ ..] => {
                    let mut counted = false;
                    let mut names = Vec::new();
                    for x in rest {
                        match *x {
                            "pre:" | "post:" => counted = true,
                            name if counted => names.push(name.to_string()),
                            _ => {}
                        }
                    }
                    self.softdeps.entry(normalize(module)).or_insert(names);
                }
                ["options", module, rest @ ..] if !rest.is_empty() => {
                    let o = self.options.entry(normalize(module)).or_default();
                    if !o.is_empty() {
                        o.push(' ');
                    }
                    o.push_str(&rest.join(" "));
                }
                _ => {}
            }
        }
    }

    /// Reads the index of `modules_dir` (`/lib/modules/RELEASE`) and the `options` and
    /// `softdep` lines of modules.softdep and of the `*.conf` files in `modprobe_dirs`.
    pub fn read(modules_dir: &Path, modprobe_dirs: &[PathBuf]) -> Result<ModIndex, Error> {
        let mut ix = ModIndex::default();
        let read = |name: &str| {
            let p = modules_dir.join(name);
            fs::read_to_string(&p).map_err(|e| crate::io_error(&p, "cannot read", e))
        };
        ix.parse_dep(&read("modules.dep")?, &modules_dir.join("modules.dep"))?;
        ix.parse_alias(&read("modules.alias")?, &modules_dir.join("modules.alias"))?;
        // Optional: a kernel may have no builtin list.
        ix.parse_builtin(&read("modules.builtin").unwrap_or_default());
        for f in config_files(modules_dir, modprobe_dirs) {
            ix.parse_modprobe_conf(&fs::read_to_string(&f).unwrap_or_default());
        }
        Ok(ix)
    }

    /// The modules a name or alias stands for: the module itself when one has that name,
    /// else every module with a matching alias (as modprobe resolves it), deduplicated.
    pub fn resolve(&self, name_or_alias: &str) -> Vec<String> {
        // libkmod's order: a module of that name, else the aliases, else a builtin module.
        let n = normalize(name_or_alias);
        if self.deps.contains_key(&n) {
            return vec![n];
        }
        let alias = alias_normalize(name_or_alias);
        let mut out: Vec<String> = Vec::new();
        for (pattern, module) in &self.aliases {
            if glob_match(pattern, &alias) && !out.contains(module) {
                out.push(module.clone());
            }
        }
        if out.is_empty() && self.builtin.contains(&n) {
            out.push(n);
        }
        out
    }
}

/// One device on the way from the root block device up to the bus root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// The device's directory under `/sys/devices`.
    pub path: PathBuf,
    /// Its bound driver's name, if any.
    pub driver: Option<String>,
    /// The module that driver lives in; None for a driver built into the kernel.
    pub module: Option<String>,
    /// Its `modalias`, if it has one.
    pub modalias: Option<String>,
}

/// The devices `dev` is built on (`SYS/class/block/DEV/slaves`), sorted.
fn lower_devices(sys: &Path, dev: &str) -> Vec<String> {
    let mut under: Vec<String> = fs::read_dir(sys.join("class/block").join(dev).join("slaves"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    under.sort();
    under
}

/// `dev` and what it is built on, top down, when it is stacked: `/dev/dm-1 (vg0-root, an LVM
/// logical volume) on /dev/dm-0 (root_crypt, a LUKS dm-crypt mapping) on /dev/vda3`, from
/// the kernel's `dm/name`, `dm/uuid` (whose prefix names the dm target's owner) and `md/level`.
fn stacking(sys: &Path, dev: &str) -> Option<String> {
    let under = lower_devices(sys, dev);
    if under.is_empty() {
        return None;
    }
    let dir = sys.join("class/block").join(dev);
    let read = |p: &str| {
        fs::read_to_string(dir.join(p))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let what = match (read("dm/uuid"), read("md/level")) {
        (Some(u), _) if u.starts_with("LVM-") => "an LVM logical volume".to_string(),
        (Some(u), _) if u.starts_with("CRYPT-LUKS") => "a LUKS dm-crypt mapping".to_string(),
        (Some(u), _) if u.starts_with("CRYPT-") => "a dm-crypt mapping".to_string(),
        (Some(_), _) => "a device-mapper device".to_string(),
        (None, Some(level)) => format!("a software RAID ({level})"),
        (None, None) => "a stacked device".to_string(),
    };
    let name = read("dm/name")
        .map(|n| format!("{n}, "))
        .unwrap_or_default();
    let lower: Vec<String> = under
        .iter()
        .map(|u| stacking(sys, u).unwrap_or_else(|| format!("/dev/{u}")))
        .collect();
    Some(format!(
        "/dev/{dev} ({name}{what}) on {}",
        lower.join(" and ")
    ))
}

/// Finds the chain of devices under the block device `dev` (a name under
/// `SYS/class/block`, such as `vda` or `sda2`); refuses stacked devices (device mapper, md,
/// loop and the like) naming what was found.
pub fn root_chain(sys: &Path, dev: &str) -> Result<Vec<ChainLink>, Error> {
    if let Some(stack) = stacking(sys, dev) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "the root {stack}: bootprint's initramfs opens no LVM, dm-crypt or md \
                 device (the distribution's initramfs does)"
            ),
        ));
    }
    if let Some(why) = crate::cmdline::unsupported_device(&format!("/dev/{dev}")) {
        return Err(Error::new(ErrorKind::Unsupported, why));
    }
    for (prefix, what) in [
        ("loop", "a loop device"),
        ("nbd", "a network block device (nbd)"),
    ] {
        if dev.starts_with(prefix) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("/dev/{dev} is {what}, which is not supported"),
            ));
        }
    }
    let class = sys.join("class/block").join(dev);
    let real = fs::canonicalize(&class).map_err(|e| {
        crate::io_error(
            &class,
            "no such block device in sysfs (is the name right?)",
            e,
        )
    })?;
    let top = sys.join("devices");
    let top = fs::canonicalize(&top).unwrap_or(top);
    let mut chain = Vec::new();
    let mut cur = real.as_path();
    while cur.starts_with(&top) && cur != top {
        let driver = fs::read_link(cur.join("driver"))
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
        let module = fs::read_link(cur.join("driver/module"))
            .ok()
            .and_then(|m| m.file_name().map(|n| normalize(&n.to_string_lossy())));
        let modalias = fs::read_to_string(cur.join("modalias"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        if driver.is_some() || modalias.is_some() {
            chain.push(ChainLink {
                path: cur.to_path_buf(),
                driver,
                module,
                modalias,
            });
        }
        match cur.parent() {
            Some(p) => cur = p,
            None => break,
        }
    }
    Ok(chain)
}

/// One module in the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Its name.
    pub name: String,
    /// Its path in the initramfs (and on the build system): `/lib/modules/RELEASE/...`.
    pub path: String,
    /// Whether boot may go on when it fails to load (a soft dependency).
    pub optional: bool,
    /// Names of planned modules that must be loaded first.
    pub deps: Vec<String>,
    /// Module parameters.
    pub options: String,
}

/// What the initramfs does at boot, as built.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The kernel release the modules are for.
    pub kernel: String,
    /// The root device found at build time (`/dev/vda`); informative.
    pub root: String,
    /// The root file system type found at build time; used when the command line has no
    /// `rootfstype=`.
    pub fstype: String,
    /// Modules in dependency order.
    pub modules: Vec<Planned>,
    /// What was left out and why (builtin, already covered), for the build report.
    pub notes: Vec<String>,
    /// Module-loading workers at boot; None: one per CPU.
    pub workers: Option<usize>,
}

/// Builds the plan: the chain's drivers (or, for a device no driver is bound to, its
/// modalias resolved) and the file system's module, each with its dependencies and soft
/// dependencies, in dependency order. `cpu` is this machine's CPU modalias
/// (`/sys/devices/system/cpu/modalias`): a soft dependency made for CPU features this CPU
/// lacks (all its `cpu:` aliases fail to match, as `crc32c_intel` without SSE4.2) is left
/// out, since it could only fail with ENODEV after a whole load and signature check.
pub fn build(
    ix: &ModIndex,
    kernel: &str,
    root: &str,
    fstype: &str,
    chain: &[ChainLink],
    cpu: Option<&str>,
) -> Result<Plan, Error> {
    let mut plan = Plan {
        kernel: kernel.to_string(),
        root: root.to_string(),
        fstype: fstype.to_string(),
        ..Plan::default()
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    let ctx = Ctx { ix, cpu };
    for link in chain {
        match (&link.driver, &link.module, &link.modalias) {
            (Some(_), Some(m), _) => add(&ctx, &mut plan, &mut seen, m, false, 0)?,
            (Some(d), None, _) => plan.notes.push(format!(
                "{}: driver {d} is built into the kernel",
                link.path.display()
            )),
            (None, None, Some(alias)) => {
                for m in ix.resolve(alias) {
                    add(&ctx, &mut plan, &mut seen, &m, false, 0)?;
                }
            }
            _ => {}
        }
    }
    let fs_modules = {
        let by_alias = ix.resolve(&format!("fs-{fstype}"));
        if by_alias.is_empty() {
            ix.resolve(fstype)
        } else {
            by_alias
        }
    };
    if fs_modules.is_empty() {
        return Err(Error::new(ErrorKind::NotFound, format!(
            "no module or builtin for the root file system type {fstype:?} in the index of kernel {kernel}"
        )));
    }
    for m in fs_modules {
        add(&ctx, &mut plan, &mut seen, &m, false, 0)?;
    }
    Ok(plan)
}

/// What [`add`] plans from.
struct Ctx<'a> {
    ix: &'a ModIndex,
    cpu: Option<&'a str>,
}

impl Ctx<'_> {
    /// Whether `module` is made only for CPU features this CPU lacks: it has `cpu:` aliases
    /// and none matches. Unknown (no CPU modalias) is "no".
    fn wrong_cpu(&self, module: &str) -> bool {
        let Some(cpu) = self.cpu else { return false };
        let mut cpu_aliases = self
            .ix
            .aliases
            .iter()
            .filter(|(pattern, m)| m == module && pattern.starts_with("cpu:"))
            .peekable();
        cpu_aliases.peek().is_some() && !cpu_aliases.any(|(pattern, _)| glob_match(pattern, cpu))
    }
}

fn add(
    ctx: &Ctx,
    plan: &mut Plan,
    seen: &mut HashMap<String, usize>,
    name: &str,
    optional: bool,
    depth: usize,
) -> Result<(), Error> {
    let ix = ctx.ix;
    let name = normalize(name);
    if let Some(&i) = seen.get(&name) {
        // Required anywhere means required.
        if !optional {
            if let Some(p) = plan.modules.get_mut(i) {
                p.optional = false;
            }
        }
        return Ok(());
    }
    if ix.builtin.contains(&name) {
        seen.insert(name.clone(), usize::MAX);
        plan.notes.push(format!("{name}: built into the kernel"));
        return Ok(());
    }
    let Some((path, deps)) = ix.deps.get(&name) else {
        if optional {
            plan.notes
                .push(format!("{name}: not in modules.dep, skipped"));
            return Ok(());
        }
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "module {name} is not in modules.dep of kernel {}",
                plan.kernel
            ),
        ));
    };
    if depth > 64 {
        return Err(Error::new(
            ErrorKind::Parse,
            format!("module {name}: dependency loop"),
        ));
    }
    if optional && ctx.wrong_cpu(&name) {
        seen.insert(name.clone(), usize::MAX);
        plan.notes.push(format!(
            "{name}: left out, made for CPU features this CPU lacks (no cpu: alias of it matches)"
        ));
        return Ok(());
    }
    // Soft dependencies first: they are wanted before the module initialises.
    for soft in ix.softdeps.get(&name).into_iter().flatten() {
        for m in ix.resolve(soft) {
            add(ctx, plan, seen, &m, true, depth + 1)?;
        }
    }
    // modules.dep lists the whole closure, the deepest last.
    for d in deps.iter().rev() {
        add(ctx, plan, seen, d, optional, depth + 1)?;
    }
    let planned_deps: Vec<String> = deps
        .iter()
        .filter(|d| seen.get(*d).is_some_and(|&i| i != usize::MAX))
        .cloned()
        .collect();
    seen.insert(name.clone(), plan.modules.len());
    plan.modules.push(Planned {
        name: name.clone(),
        path: format!("/lib/modules/{}/{}", plan.kernel, path),
        optional,
        deps: planned_deps,
        options: ix.options.get(&name).cloned().unwrap_or_default(),
    });
    Ok(())
}

impl Plan {
    /// The plan file's text (format in the module docs).
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{PLAN_MAGIC}\n# written by `bootprint initramfs build`; format in docs/initramfs.md\n\
             kernel {}\nroot {}\nfstype {}\n",
            self.kernel, self.root, self.fstype
        );
        if let Some(w) = self.workers {
            s.push_str(&format!("workers {w}\n"));
        }
        for m in &self.modules {
            s.push_str(&format!(
                "module\t{}\t{}\t{}\t{}\t{}\n",
                m.name,
                m.path,
                if m.optional { "optional" } else { "required" },
                if m.deps.is_empty() {
                    "-".to_string()
                } else {
                    m.deps.join(",")
                },
                m.options
            ));
        }
        s
    }

    /// Parses a plan file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Plan, Error> {
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, l)) if l.trim() == PLAN_MAGIC => {}
            _ => {
                return Err(Error::new(
                    ErrorKind::Parse,
                    format!("line 1: expected `{PLAN_MAGIC}`"),
                )
                .at(file)
                .on_line(1))
            }
        }
        let mut plan = Plan::default();
        let mut known: HashSet<String> = HashSet::new();
        for (n, line) in lines {
            let bad = |what: &str| {
                Error::new(ErrorKind::Parse, format!("line {}: expected {what}", n + 1))
                    .at(file)
                    .on_line(n + 1)
            };
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix("module\t") {
                let f: Vec<&str> = rest.splitn(5, '\t').collect();
                let [name, path, kind, deps, options] = f.as_slice() else {
                    return Err(bad(
                        "module<TAB>NAME<TAB>PATH<TAB>required|optional<TAB>DEPS<TAB>OPTIONS",
                    ));
                };
                let optional = match *kind {
                    "required" => false,
                    "optional" => true,
                    _ => return Err(bad("`required` or `optional` in the 4th field")),
                };
                let deps: Vec<String> = if *deps == "-" {
                    Vec::new()
                } else {
                    deps.split(',').map(String::from).collect()
                };
                if let Some(d) = deps.iter().find(|d| !known.contains(*d)) {
                    return Err(bad(&format!(
                        "modules in dependency order ({name} needs {d}, which is not listed before it)"
                    )));
                }
                known.insert(name.to_string());
                plan.modules.push(Planned {
                    name: name.to_string(),
                    path: path.to_string(),
                    optional,
                    deps,
                    options: options.to_string(),
                });
                continue;
            }
            match line.split_once(' ') {
                Some(("kernel", v)) => plan.kernel = v.trim().to_string(),
                Some(("root", v)) => plan.root = v.trim().to_string(),
                Some(("fstype", v)) => plan.fstype = v.trim().to_string(),
                Some(("workers", v)) => match v.trim().parse::<usize>() {
                    Ok(w) if (1..=64).contains(&w) => plan.workers = Some(w),
                    _ => return Err(bad("a number of workers from 1 to 64 after `workers`")),
                },
                _ => {
                    return Err(bad(
                        "`kernel`, `root`, `fstype`, `workers` or `module` record",
                    ))
                }
            }
        }
        Ok(plan)
    }

    /// The modules in waves: each wave needs only modules of earlier waves, so a wave's
    /// modules can load in parallel.
    pub fn waves(&self) -> Vec<Vec<usize>> {
        let mut level: BTreeMap<&str, usize> = BTreeMap::new();
        let mut waves: Vec<Vec<usize>> = Vec::new();
        for (i, m) in self.modules.iter().enumerate() {
            let l = m
                .deps
                .iter()
                .filter_map(|d| level.get(d.as_str()))
                .map(|l| l + 1)
                .max()
                .unwrap_or(0);
            level.insert(&m.name, l);
            if waves.len() <= l {
                waves.resize(l + 1, Vec::new());
            }
            waves[l].push(i);
        }
        waves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(
            "virtio:d00000002v*",
            "virtio:d00000002v00001AF4"
        ));
        assert!(!glob_match(
            "virtio:d00000002v*",
            "virtio:d00000001v00001AF4"
        ));
        assert!(glob_match(
            "pci:v00001AF4d*sv*sd*bc*sc*i*",
            "pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00"
        ));
        assert!(glob_match("a?c[0-9][!x]*", "abc7yzz"));
        assert!(!glob_match("a?c[0-9][!x]*", "abc7x"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a", "ab"));
        assert!(glob_match("x*y*z", "xaaybbz"));
        assert!(!glob_match("x*y*z", "xaaybb"));
    }

    #[test]
    fn modules_resolve_as_libkmod_resolves_them() {
        let mut ix = ModIndex::default();
        let f = Path::new("modules.dep");
        ix.parse_dep(
            "kernel/crypto/crc32_generic.ko:\nkernel/drivers/gpio/gpio-keys-polled.ko:\n\
             kernel/fs/f2fs/f2fs.ko:\nkernel/fs/btrfs/btrfs.ko:\n",
            f,
        )
        .unwrap();
        ix.parse_alias(
            "alias crc32 crc32_generic\nalias platform:gpio-keys-polled gpio_keys_polled\n",
            f,
        )
        .unwrap();
        ix.parse_builtin("kernel/lib/crc32.ko\n");
        // An alias beats a builtin module of the same name (libkmod's lookup order).
        assert_eq!(ix.resolve("crc32"), ["crc32_generic"]);
        // `-` and `_` are one in aliases, on both sides.
        assert_eq!(
            ix.resolve("platform:gpio_keys_polled"),
            ["gpio_keys_polled"]
        );
        assert_eq!(alias_normalize("pci:v-[a-z]x-y"), "pci:v_[a-z]x_y");
        // A module's first softdep line is its only one; names before pre:/post: are not
        // dependencies.
        ix.parse_modprobe_conf(
            "softdep btrfs pre: blake2b-256\nsoftdep btrfs pre: sha256\nsoftdep f2fs crc32\n",
        );
        assert_eq!(ix.softdeps["btrfs"], ["blake2b-256"]);
        assert!(ix.softdeps["f2fs"].is_empty());
    }

    #[test]
    fn configuration_files_are_read_in_libkmod_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (modules, etc, lib) = (dir.join("mod"), dir.join("etc"), dir.join("lib"));
        for d in [&modules, &etc, &lib] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(
            modules.join("modules.softdep"),
            "softdep a pre: from-softdep\n",
        )
        .unwrap();
        fs::write(etc.join("zz.conf"), "softdep b pre: from-etc-zz\n").unwrap();
        fs::write(lib.join("zz.conf"), "softdep b pre: from-lib-zz\n").unwrap();
        fs::write(lib.join("aa.conf"), "softdep a pre: from-lib-aa\n").unwrap();
        fs::write(lib.join("note.txt"), "softdep b pre: not-a-conf\n").unwrap();
        let order = config_files(&modules, &[etc.clone(), lib.clone()]);
        // By file name across directories; etc's zz.conf hides lib's.
        assert_eq!(
            order,
            [
                lib.join("aa.conf"),
                modules.join("modules.softdep"),
                etc.join("zz.conf")
            ]
        );
        fs::write(modules.join("modules.dep"), "").unwrap();
        fs::write(modules.join("modules.alias"), "").unwrap();
        let ix = ModIndex::read(&modules, &[etc, lib]).unwrap();
        assert_eq!(ix.softdeps["a"], ["from-lib-aa"]);
        assert_eq!(ix.softdeps["b"], ["from-etc-zz"]);
    }

    #[test]
    fn names() {
        assert_eq!(name_of_path("kernel/fs/ext4/ext4.ko"), "ext4");
        assert_eq!(
            name_of_path("kernel/drivers/x/crc32c-intel.ko.zst"),
            "crc32c_intel"
        );
    }

    #[test]
    fn plan_file_round_trip_and_errors() {
        let plan = Plan {
            kernel: "6.1.0-50-amd64".into(),
            root: "/dev/vda".into(),
            fstype: "ext4".into(),
            modules: vec![
                Planned {
                    name: "virtio".into(),
                    path: "/lib/modules/6.1.0-50-amd64/kernel/drivers/virtio/virtio.ko".into(),
                    optional: false,
                    deps: vec![],
                    options: String::new(),
                },
                Planned {
                    name: "virtio_blk".into(),
                    path: "/lib/modules/6.1.0-50-amd64/kernel/drivers/block/virtio_blk.ko".into(),
                    optional: true,
                    deps: vec!["virtio".into()],
                    options: "queue_depth=64 x=1".into(),
                },
            ],
            notes: vec![],
            workers: None,
        };
        let text = plan.to_text();
        let back = Plan::parse(&text, Path::new("plan")).unwrap();
        assert_eq!(back, plan);
        assert_eq!(back.waves(), vec![vec![0], vec![1]]);
        let e = Plan::parse("nonsense\n", Path::new("p")).unwrap_err();
        assert!(
            e.to_string()
                .contains("p: line 1: expected `bootprint-initramfs-plan 1`"),
            "{e}"
        );
        assert_eq!((e.kind(), e.line()), (crate::ErrorKind::Parse, Some(1)));
        assert_eq!(e.path(), Some(Path::new("p")));
        let swapped = format!(
            "{PLAN_MAGIC}\nmodule\tb\t/b.ko\trequired\ta\t\nmodule\ta\t/a.ko\trequired\t-\t\n"
        );
        let e = Plan::parse(&swapped, Path::new("p")).unwrap_err();
        assert!(
            e.to_string().contains("line 2") && e.to_string().contains("b needs a"),
            "{e}"
        );
        assert_eq!((e.kind(), e.line()), (crate::ErrorKind::Parse, Some(2)));
        let e = Plan::parse(
            &format!("{PLAN_MAGIC}\nmodule\ta\t/a.ko\tmaybe\t-\t\n"),
            Path::new("p"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("required"), "{e}");
    }
}
