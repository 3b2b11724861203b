//! What `bootprint enable` changes on a machine and how `bootprint disable` takes it back
//! (docs/enable.md): the levers, the manifest of every change (`/var/lib/bootprint/enabled`,
//! [`manifest`]), the GRUB drop-in that carries the kernel parameters (or, on systemd-boot,
//! the entries kernel-install writes and bootprint's plugin amends: [`loader`]), the
//! startpar diversion, the initramfs images under /boot. `disable` undoes exactly what the manifest
//! lists, so it never touches what bootprint did not change, and in the order that leaves a
//! machine that boots at every step: GRUB first (the drop-in, update-grub), and only once
//! GRUB no longer boots bootprint, what it booted (the images, the runner's wrapper).
//! Every path is resolved under a root (`--root DIR`, [`machine`]) and never outside it;
//! the external programs (update-grub, dpkg-divert, the initramfs build) are a [`Tools`]
//! value, so tests run it all on a fake tree.
//!
//! Errors are [`Error`]s: the message bootprint prints, and an [`ErrorKind`] a caller decides
//! on (not supported here, a file not bootprint's in the way, a bad manifest with its line, a
//! command that failed with its exit status, an undo that failed or was partial, I/O).
//! [`Machine::cannot`] answers with a reason, not an error: a lever that cannot work is
//! named and left out by `--all`.
//!
//! It owns the machine's boot files and their undo; it does not own the status view
//! (`render::enable_status`) or the command line (`bootprint`'s `enable.rs`).
//!
//! ```
//! use enablement::{Manifest, Lever};
//! let m = Manifest::parse("lever record\ncreated /etc/default/grub.d/bootprint.cfg\n", "m").unwrap();
//! assert!(m.levers.contains(&Lever::Record));
//! assert!(Manifest::parse("created /etc/passwd\n", "m").is_err());
//! ```
#![deny(missing_docs)]

pub mod error;
pub mod loader;
pub mod machine;
pub mod manifest;

use std::collections::BTreeSet;
use std::path::Path;

pub use error::{Error, ErrorKind};
pub use loader::{KernelInstall, Loader};
pub use machine::{under, Init, Machine, Tools, PACKAGE};
pub use manifest::{
    dropin_text, image_of, is_startpar, params, startpar_distrib, Change, Lever, Manifest,
    BOOT_BIN, CREATED_DIRS, CREATED_FILES, DROPIN, ENTRY_ID, MANIFEST, STARTPAR_PATHS, WRAPPER,
};

use machine::run;

/// What the admin asked enable for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The levers named.
    pub levers: BTreeSet<Lever>,
    /// `--all`: every lever that can work here (the others are named and left out).
    pub all: bool,
    /// `--default`: our initramfs entry becomes GRUB's default.
    pub default_entry: bool,
}

/// Removes an initramfs image and the summary the build writes beside it (`IMAGE.txt`).
fn remove_image(m: &Machine, image: &str) -> Result<(), Error> {
    m.remove(image)?;
    m.remove(&format!("{image}.txt"))
}

/// The changes of one enable run, saved to the manifest after each so that a crash leaves a
/// manifest disable can work from; on a failure they are undone.
struct Journal<'a> {
    m: &'a Machine,
    manifest: Manifest,
}

impl Journal<'_> {
    fn save(&self) -> Result<(), Error> {
        self.m
            .write(MANIFEST, self.manifest.to_text().as_bytes(), 0o644)
    }

    fn push(&mut self, c: Change) -> Result<(), Error> {
        self.manifest.changes.push(c);
        self.save()
    }

    /// Creates `dir` and its missing parents, each recorded.
    fn ensure_dir(&mut self, dir: &str) -> Result<(), Error> {
        let mut missing = Vec::new();
        let mut d = Path::new(dir);
        while !self
            .m
            .stat(&d.to_string_lossy())
            .is_some_and(|s| s.is_dir())
        {
            missing.push(d.to_string_lossy().into_owned());
            d = match d.parent() {
                Some(p) => p,
                None => break,
            };
        }
        for d in missing.into_iter().rev() {
            self.m.mkdir(&d)?;
            // The manifest's own directory cannot hold it before it exists.
            self.manifest.changes.push(Change::CreatedDir(d));
            let manifest_dir = Path::new(MANIFEST).parent().unwrap_or(Path::new("/"));
            if self
                .m
                .stat(&manifest_dir.to_string_lossy())
                .is_some_and(|s| s.is_dir())
            {
                self.save()?;
            }
        }
        Ok(())
    }
}

/// Undoes one change (not the startpar pair, which [`undo_all`] undoes together).
fn undo(m: &Machine, c: &Change) -> Result<(), Error> {
    match c {
        Change::Created(p) => m.remove(p),
        Change::Built { image, .. } => remove_image(m, image),
        Change::CreatedDir(d) => {
            m.rmdir_if_empty(d);
            Ok(())
        }
        Change::Diverted { path, to } => {
            // Only if the diversion is still ours (a dpkg --purge may have removed it).
            match m.diversion(path)? {
                Some((t, pkg)) if pkg == PACKAGE && t == *to => run(
                    &m.tools.dpkg_divert,
                    &["--package", PACKAGE, "--rename", "--remove", path],
                    &m.root,
                ),
                _ => Ok(()),
            }
        }
    }
}

/// Undoes `changes` newest first: files, diversions and images, then the directories. The
/// wrapper at /bin/startpar goes before its diversion is undone (dpkg-divert then moves
/// Debian's startpar back to its name); should that fail with Debian's startpar still at its
/// diverted name, the wrapper is put back, so /bin/startpar is never missing. Returns the changes it could not undo (in their order),
/// with the errors.
fn undo_all(m: &Machine, changes: &[Change]) -> (Vec<Change>, Vec<String>) {
    let mut failed = vec![false; changes.len()];
    let mut errors = Vec::new();
    let is_dir = |c: &Change| matches!(c, Change::CreatedDir(_));
    let order = (0..changes.len())
        .rev()
        .filter(|&i| !is_dir(&changes[i]))
        .chain((0..changes.len()).rev().filter(|&i| is_dir(&changes[i])));
    // The wrapper removed in this run, and where its line is: put back if the diversion
    // cannot be undone.
    let mut wrapper: Option<(usize, Vec<u8>)> = None;
    for i in order {
        let c = &changes[i];
        let result = match c {
            Change::Created(p) if is_startpar(p) => {
                let bytes = m.read(p).ok().flatten();
                let r = m.remove(p);
                if let (Ok(()), Some(b)) = (&r, bytes) {
                    wrapper = Some((i, b));
                }
                r
            }
            Change::Diverted { path, to } => undo(m, c).inspect_err(|_| {
                // dpkg-divert may have failed before it moved Debian's startpar back (the
                // wrapper goes back, to run it from its diverted name) or after (it is at
                // /bin/startpar again, and stays).
                // Only a wrapper put back stays in the manifest: Debian's startpar at its
                // name is not bootprint's to remove.
                if let Some((w, bytes)) = wrapper.take() {
                    if !m.exists(path) && m.exists(to) {
                        failed[w] = true;
                        if let Err(e) = m.write(path, &bytes, 0o755) {
                            errors.push(format!("putting the wrapper back failed too: {e}"));
                        }
                    }
                }
            }),
            _ => undo(m, c),
        };
        if let Err(e) = result {
            errors.push(e.to_string());
            failed[i] = true;
        }
    }
    let left = changes
        .iter()
        .zip(failed)
        .filter(|(_, f)| *f)
        .map(|(c, _)| c.clone())
        .collect();
    (left, errors)
}

/// Runs update-grub, or says why it was not run.
fn update_grub(m: &Machine, said: &mut Vec<String>) -> Result<(), Error> {
    if !m.tools.grub_present {
        said.push("update-grub is not installed: GRUB's configuration was not regenerated".into());
        return Ok(());
    }
    run(&m.tools.update_grub, &[], &m.root)?;
    said.push("update-grub: done".into());
    Ok(())
}

/// `bootprint enable`: switches the asked levers on (added to those already on). Returns what
/// it says; an error changed nothing (what it had done is undone).
pub fn enable(m: &Machine, req: &Request) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    let old = m.manifest()?;
    let before = old.clone().unwrap_or_default();
    let mut asked: BTreeSet<Lever> = req.levers.clone();
    if req.all {
        for l in Lever::ALL.into_iter().filter(|l| l.in_all()) {
            if before.levers.contains(&l) || asked.contains(&l) {
                continue;
            }
            match m.cannot(l) {
                None => {
                    asked.insert(l);
                }
                Some(why) => said.push(format!("--all: {} left out: {why}", l.word())),
            }
        }
    }
    let now = m.loader();
    let loader = match before.levers.is_empty() {
        true => now,
        false => before.loader,
    };
    if let Some(why) = loader::loader_changed(&before, now) {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!("{why}; nothing changed"),
        ));
    }
    if req.default_entry && loader == Loader::SystemdBoot {
        return Err(Error::new(
            ErrorKind::NotSupported,
            "--default: not on systemd-boot (its default entry is the firmware variable \
             `bootctl set-default` sets; bootprint's entries are TOKEN-RELEASE-bootprint.conf); \
             nothing changed",
        ));
    }
    if req.default_entry {
        asked.insert(Lever::Initramfs);
    }
    if !asked.is_empty() {
        asked.insert(Lever::Record);
    }
    let new: BTreeSet<Lever> = asked.difference(&before.levers).copied().collect();
    let default_now = req.default_entry && !before.default_entry;
    if new.is_empty() && !default_now {
        let on: Vec<&str> = before.levers.iter().map(|l| l.word()).collect();
        said.push(if on.is_empty() {
            "no lever asked for: nothing changed".into()
        } else {
            format!("already on: {}; nothing changed", on.join(" "))
        });
        return Ok(said);
    }
    let mut refusals: Vec<String> = new
        .iter()
        .filter_map(|&l| m.cannot(l).map(|why| format!("--{}: {why}", l.word())))
        .collect();
    // On sysvinit the kexec is the runner's, at the end of runlevel 6.
    if new.contains(&Lever::Kexec)
        && m.init() == Init::Sysvinit
        && !asked.contains(&Lever::Rc)
        && !before.levers.contains(&Lever::Rc)
    {
        refusals.push(
            "--kexec: on sysvinit the kexec is made by bootprint's runner at the end of \
             runlevel 6: turn the runner on too (--rc)"
                .into(),
        );
    }
    if !refusals.is_empty() {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!("{}; nothing changed", refusals.join("; ")),
        ));
    }
    let dropin_ours = before
        .changes
        .contains(&Change::Created(DROPIN.to_string()));
    if loader == Loader::Grub && !dropin_ours && m.exists(DROPIN) {
        return Err(Error::new(
            ErrorKind::NotOurs,
            format!(
                "{} exists and bootprint did not write it (it is not in {}): move it away first; nothing changed",
                m.path(DROPIN).display(),
                m.path(MANIFEST).display()
            ),
        )
        .at(&m.path(DROPIN)));
    }

    let mut j = Journal {
        m,
        manifest: before.clone(),
    };
    let mut target = before.clone();
    target.levers.extend(new.iter().copied());
    target.default_entry |= req.default_entry;
    target.loader = loader;
    let result = apply(&mut j, &new, &target, dropin_ours, &mut said);
    if let Err(e) = result {
        // Back to the state before this run: undo its changes, restore the drop-in and the
        // manifest as they were.
        let mine = &j.manifest.changes[before.changes.len()..];
        let (_, mut errors) = undo_all(m, mine);
        let restored = if dropin_ours {
            m.write(DROPIN, dropin_text(&before).as_bytes(), 0o644)
        } else {
            Ok(())
        }
        .and_then(|_| match &old {
            Some(o) => m.write(MANIFEST, o.to_text().as_bytes(), 0o644),
            None => m.remove(MANIFEST),
        })
        // systemd-boot's entries as the restored manifest makes them.
        .and_then(|_| match loader {
            Loader::SystemdBoot => loader::refresh_entries(m, &mut Vec::new()),
            Loader::Grub => Ok(()),
        });
        if let Err(r) = restored {
            errors.push(r.to_string());
        }
        // A directory of the manifest that this run created is empty again now.
        let (_, more) = undo_all(
            m,
            &mine
                .iter()
                .filter(|c| matches!(c, Change::CreatedDir(_)))
                .cloned()
                .collect::<Vec<_>>(),
        );
        errors.extend(more);
        return Err(if errors.is_empty() {
            e.said(|e| format!("{e}; what this run had changed is undone"))
        } else {
            e.said(|e| {
                format!(
                    "{e}; undoing what this run had changed failed too: {}",
                    errors.join("; ")
                )
            })
            .of_kind(ErrorKind::UndoFailed)
        });
    }
    Ok(said)
}

fn apply(
    j: &mut Journal,
    new: &BTreeSet<Lever>,
    target: &Manifest,
    dropin_ours: bool,
    said: &mut Vec<String>,
) -> Result<(), Error> {
    let m = j.m;
    j.ensure_dir("/var/lib/bootprint")?;
    j.save()?;
    // The diversion and the images first, the drop-in last: GRUB sees the parameters only
    // once what they need is in place.
    if new.contains(&Lever::Rc) {
        let startpar = m.startpar()?;
        let distrib = startpar_distrib(startpar);
        match m.startpar_hooked_by_other(startpar)? {
            Some(by) => said.push(format!(
                "rc: {startpar} is already the wrapper over {distrib} ({by}): left as it is"
            )),
            None if m.diversion(startpar)?.is_some() => {
                said.push(format!("rc: {startpar} is already diverted by bootprint"))
            }
            None => {
                run(
                    &m.tools.dpkg_divert,
                    &[
                        "--package",
                        PACKAGE,
                        "--rename",
                        "--divert",
                        &distrib,
                        "--add",
                        startpar,
                    ],
                    &m.root,
                )?;
                j.push(Change::Diverted {
                    path: startpar.into(),
                    to: distrib.clone(),
                })?;
                let wrapper = m.read(WRAPPER)?.ok_or_else(|| {
                    let path = m.path(WRAPPER);
                    Error::new(
                        ErrorKind::Io,
                        format!("cannot read {}: it is missing", path.display()),
                    )
                    .at(&path)
                })?;
                // A copy, not a link: should the package go without its prerm, the copy
                // still runs Debian's startpar (it checks for bootprint-boot first).
                j.push(Change::Created(startpar.into()))?;
                m.write(startpar, &wrapper, 0o755)?;
                said.push(format!(
                    "rc: diverted {startpar} to {distrib}, the wrapper in its place"
                ));
            }
        }
    }
    if new.contains(&Lever::Initramfs) {
        for kernel in m.kernels() {
            build_image(j, &kernel, said)?;
        }
    }
    if target.loader == Loader::SystemdBoot {
        j.manifest.levers = target.levers.clone();
        j.manifest.loader = target.loader;
        j.save()?;
        said.push(format!(
            "systemd-boot: the entries of every kernel through kernel-install, with {}",
            params(&target.levers).join(" ")
        ));
        return loader::refresh_entries(m, said);
    }
    if !dropin_ours {
        j.ensure_dir("/etc/default/grub.d")?;
        j.push(Change::Created(DROPIN.into()))?;
    }
    m.write(DROPIN, dropin_text(target).as_bytes(), 0o644)?;
    said.push(format!(
        "wrote {}: {}{}",
        m.path(DROPIN).display(),
        params(&target.levers).join(" "),
        if target.default_entry {
            format!(" and GRUB_DEFAULT={ENTRY_ID}")
        } else {
            String::new()
        }
    ));
    j.manifest.levers = target.levers.clone();
    j.manifest.default_entry = target.default_entry;
    j.save()?;
    update_grub(m, said)?;
    Ok(())
}

/// Builds the image of `kernel` (again, if it is there) and records it.
fn build_image(j: &mut Journal, kernel: &str, said: &mut Vec<String>) -> Result<(), Error> {
    if !manifest::valid_release(kernel) {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!("{kernel:?} is not a kernel release"),
        ));
    }
    let image = image_of(kernel);
    let change = Change::Built {
        kernel: kernel.into(),
        image: image.clone(),
    };
    if !j.manifest.changes.contains(&change) {
        if j.m.exists(&image) {
            let path = j.m.path(&image);
            return Err(Error::new(
                ErrorKind::NotOurs,
                format!(
                    "{} exists and bootprint's manifest does not list it: move it away first",
                    path.display()
                ),
            )
            .at(&path));
        }
        // Recorded first: a build that fails half way leaves a file to remove.
        j.push(change)?;
    }
    run(
        &j.m.tools.initramfs_build,
        &["--kernel", kernel, "--out", &image],
        &j.m.root,
    )?;
    said.push(format!("initramfs: built {image}"));
    Ok(())
}

/// `bootprint disable`: undoes every change the manifest lists, in the order that leaves a
/// machine that boots at every step, whatever fails:
///
/// 1. The loader first: the manifest without its levers (the GRUB script prints bootprint's
///    entries only for `lever initramfs`), the drop-in removed, update-grub. Should
///    update-grub fail, both are put back and nothing else is touched: GRUB's menu (which
///    grub-mkconfig replaces only when it succeeds) still boots bootprint, with everything
///    it needs in place. On systemd-boot: `kernel-install add` for every kernel, whose
///    entries the plugin then leaves as kernel-install writes them and whose bootprint
///    entries it removes; should one fail, the manifest is put back and every entry written
///    again from it.
/// 2. Then what GRUB no longer boots, newest first: the images, the wrapper and the startpar
///    diversion (the wrapper put back if dpkg-divert fails), then the directories. What could
///    not be undone stays in the manifest, and disable fails naming it.
///
/// Nothing enabled is not an error (the package's prerm runs it).
pub fn disable(m: &Machine) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    let Some(manifest) = m.manifest()? else {
        said.push(format!(
            "nothing to disable: {} does not exist",
            m.path(MANIFEST).display()
        ));
        return Ok(said);
    };
    let dropin_listed = manifest
        .changes
        .contains(&Change::Created(DROPIN.to_string()));
    let dropin = if dropin_listed { m.read(DROPIN)? } else { None };
    // The loader is kept: systemd-boot's plugin takes its additions back by it.
    let off = Manifest {
        changes: manifest.changes.clone(),
        loader: manifest.loader,
        ..Manifest::default()
    };
    m.write(MANIFEST, off.to_text().as_bytes(), 0o644)?;
    let grub = if dropin.is_some() {
        m.remove(DROPIN)
    } else {
        Ok(())
    }
    .map_err(|e| (vec![], e))
    .and_then(|()| match manifest.loader {
        Loader::Grub => update_grub(m, &mut said).map_err(|e| (vec![], e)),
        Loader::SystemdBoot => loader::refresh(m, &m.kernels(), &mut said),
    });
    if let Err((rewritten, e)) = grub {
        let mut back = vec![m.write(MANIFEST, manifest.to_text().as_bytes(), 0o644)];
        if let Some(text) = &dropin {
            back.push(m.write(DROPIN, text, 0o644));
        }
        // The entries kernel-install wrote without the levers before it failed get them
        // back (a failed kernel-install leaves the entry it was writing as it found it or
        // as kernel-install alone writes it: either boots).
        back.push(loader::refresh(m, &rewritten, &mut Vec::new()).map_err(|(_, e)| e));
        let failed: Vec<String> = back
            .into_iter()
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .collect();
        return Err(if failed.is_empty() {
            e.said(|e| match manifest.loader {
                Loader::Grub => format!(
                    "{e}: nothing was undone (the drop-in and {} are back, and GRUB's menu was not \
                     rewritten: the machine boots as before, with bootprint); fix update-grub and \
                     run `bootprint disable` again",
                    m.path(MANIFEST).display()
                ),
                Loader::SystemdBoot => format!(
                    "{e}: nothing was undone ({} is back and kernel-install wrote every entry \
                     again from it: the machine boots as before, with bootprint); fix \
                     kernel-install and run `bootprint disable` again",
                    m.path(MANIFEST).display()
                ),
            })
        } else {
            e.said(|e| {
                format!(
                    "{e}; putting the drop-in and the manifest back failed too: {}",
                    failed.join("; ")
                )
            })
            .of_kind(ErrorKind::UndoFailed)
        });
    }
    if dropin.is_some() {
        said.push(format!("removed {DROPIN}"));
    }
    let (dirs, files): (Vec<Change>, Vec<Change>) = manifest
        .changes
        .iter()
        .filter(|c| **c != Change::Created(DROPIN.to_string()))
        .cloned()
        .partition(|c| matches!(c, Change::CreatedDir(_)));
    let (left, errors) = undo_all(m, &files);
    if !errors.is_empty() {
        let rest = Manifest {
            changes: dirs.into_iter().chain(left).collect(),
            ..Manifest::default()
        };
        let _ = m.write(MANIFEST, rest.to_text().as_bytes(), 0o644);
        return Err(Error::new(
            ErrorKind::UndoFailed,
            format!(
                "{}; GRUB no longer boots bootprint; {} lists what is left to undo",
                errors.join("; "),
                m.path(MANIFEST).display()
            ),
        ));
    }
    for c in files.iter().rev() {
        said.push(match c {
            Change::Created(p) => format!("removed {p}"),
            Change::Built { image, .. } => format!("removed {image}"),
            Change::Diverted { path, to } => format!("undid the diversion of {path} to {to}"),
            Change::CreatedDir(_) => continue,
        });
    }
    m.remove(MANIFEST)?;
    let (_, errors) = undo_all(m, &dirs);
    if !errors.is_empty() {
        return Err(Error::new(ErrorKind::UndoFailed, errors.join("; ")));
    }
    Ok(said)
}

/// The kernel postinst hook: with the initramfs lever on, builds the new kernel's image (the
/// distribution's zz-update-grub hook, which runs after ours, adds its entry). Silent and
/// changing nothing otherwise.
pub fn kernel_installed(m: &Machine, kernel: &str) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    let Some(manifest) = m.manifest()? else {
        return Ok(said);
    };
    if !manifest.levers.contains(&Lever::Initramfs) {
        return Ok(said);
    }
    let mut j = Journal { m, manifest };
    build_image(&mut j, kernel, &mut said)?;
    Ok(said)
}

/// The kernel postrm hook: removes the image enable or the postinst hook built for `kernel`.
pub fn kernel_removed(m: &Machine, kernel: &str) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    let Some(mut manifest) = m.manifest()? else {
        return Ok(said);
    };
    let before = manifest.changes.len();
    let mut err = None;
    manifest.changes.retain(|c| match c {
        Change::Built { kernel: k, image } if k == kernel => {
            match remove_image(m, image) {
                Ok(()) => said.push(format!("initramfs: removed {image}")),
                Err(e) => err = Some(e),
            }
            false
        }
        _ => true,
    });
    if let Some(e) = err {
        return Err(e);
    }
    if manifest.changes.len() != before {
        m.write(MANIFEST, manifest.to_text().as_bytes(), 0o644)?;
    }
    Ok(said)
}
