//! The one place with `unsafe`: a safe wrapper over the libkmod calls in `ffi.rs` (the clock
//! and `uname` are the `sys` crate's). libkmod is not thread-safe, so [`Ctx`] is neither `Send` nor `Sync` (its
//! raw pointer sees to that): each thread opens its own.

use std::ffi::{CStr, CString};
use std::io;
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

use crate::ffi;

/// A libkmod context over one modules directory (`<root>/lib/modules/<release>`) and a list
/// of configuration directories (`modprobe.d`).
pub struct Ctx {
    ptr: NonNull<ffi::kmod_ctx>,
}

/// One module handle, valid while its context lives.
pub struct Module<'c> {
    ptr: NonNull<ffi::kmod_module>,
    _ctx: PhantomData<&'c Ctx>,
}

fn cstring(s: &[u8], what: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} contains a NUL byte"),
        )
    })
}

/// Copies a C string owned by libkmod; `None` for NULL.
///
/// SAFETY (for callers): `p` must be NULL or point to a NUL-terminated string that stays valid
/// for the duration of this call.
unsafe fn copy_str(p: *const std::os::raw::c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

impl Ctx {
    /// Opens a context on `modules_dir` reading configuration from `config_paths` (directories
    /// or files, in libkmod's order). The index files are opened now, not on first use, so
    /// a missing or broken index fails here.
    pub fn new(modules_dir: &Path, config_paths: &[PathBuf]) -> io::Result<Ctx> {
        let dir = cstring(modules_dir.as_os_str().as_bytes(), "modules directory")?;
        let paths = config_paths
            .iter()
            .map(|p| cstring(p.as_os_str().as_bytes(), "config path"))
            .collect::<io::Result<Vec<_>>>()?;
        let mut ptrs: Vec<*const std::os::raw::c_char> = paths.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(ptr::null());
        // SAFETY: `dir` and every element of `ptrs` are NUL-terminated strings alive for the
        // call; `ptrs` is NULL-terminated as kmod_new requires. kmod_new copies the dirname
        // and reads the configuration before returning, so nothing borrowed outlives the call.
        let raw = unsafe { ffi::kmod_new(dir.as_ptr(), ptrs.as_ptr()) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            io::Error::other(format!("libkmod could not open {}", modules_dir.display()))
        })?;
        let ctx = Ctx { ptr };
        // SAFETY: `ctx.ptr` is a live context we own.
        let rc = unsafe { ffi::kmod_load_resources(ctx.ptr.as_ptr()) };
        if rc < 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "libkmod could not load the index files in {} (run depmod?)",
                    modules_dir.display()
                ),
            ));
        }
        Ok(ctx)
    }

    /// The names from `blacklist` lines of the configuration.
    pub fn blacklist(&self) -> Vec<String> {
        let mut names = Vec::new();
        // SAFETY: the context is live; the iterator is checked for NULL, advanced before each
        // read as libkmod requires, its keys copied at once, and freed exactly once.
        unsafe {
            let iter = ffi::kmod_config_get_blacklists(self.ptr.as_ptr());
            if iter.is_null() {
                return names;
            }
            while ffi::kmod_config_iter_next(iter) {
                if let Some(k) = copy_str(ffi::kmod_config_iter_get_key(iter)) {
                    names.push(k);
                }
            }
            ffi::kmod_config_iter_free_iter(iter);
        }
        names
    }

    /// The modules an alias (or a module name) resolves to: aliases from the configuration,
    /// module names, `modules.alias`, builtin aliases, as `modprobe` resolves them.
    pub fn lookup(&self, alias: &str) -> io::Result<Vec<Module<'_>>> {
        let c = cstring(alias.as_bytes(), "alias")?;
        let mut list: *mut ffi::kmod_list = ptr::null_mut();
        // SAFETY: live context, NUL-terminated alias, `list` a valid out pointer.
        let rc =
            unsafe { ffi::kmod_module_new_from_lookup(self.ptr.as_ptr(), c.as_ptr(), &mut list) };
        if rc < 0 {
            return Err(io::Error::from_raw_os_error(-rc));
        }
        // SAFETY: `list` came from libkmod with a reference we now own.
        Ok(unsafe { self.take_list(list) })
    }

    /// A module by name (found in `modules.dep` or not: libkmod creates the handle anyway).
    pub fn module(&self, name: &str) -> io::Result<Module<'_>> {
        let c = cstring(name.as_bytes(), "module name")?;
        let mut m: *mut ffi::kmod_module = ptr::null_mut();
        // SAFETY: live context, NUL-terminated name, valid out pointer.
        let rc = unsafe { ffi::kmod_module_new_from_name(self.ptr.as_ptr(), c.as_ptr(), &mut m) };
        self.wrap(rc, m)
    }

    /// A module from its `.ko` file.
    pub fn module_from_path(&self, path: &Path) -> io::Result<Module<'_>> {
        let c = cstring(path.as_os_str().as_bytes(), "module path")?;
        let mut m: *mut ffi::kmod_module = ptr::null_mut();
        // SAFETY: live context, NUL-terminated path, valid out pointer.
        let rc = unsafe { ffi::kmod_module_new_from_path(self.ptr.as_ptr(), c.as_ptr(), &mut m) };
        self.wrap(rc, m)
    }

    fn wrap(&self, rc: i32, m: *mut ffi::kmod_module) -> io::Result<Module<'_>> {
        if rc < 0 {
            return Err(io::Error::from_raw_os_error(-rc));
        }
        let ptr = NonNull::new(m).ok_or_else(|| io::Error::other("libkmod returned no module"))?;
        Ok(Module {
            ptr,
            _ctx: PhantomData,
        })
    }

    /// Turns a libkmod module list into owned handles and frees the list.
    ///
    /// SAFETY (for callers): `list` is NULL or a list returned by libkmod for this context,
    /// whose reference the caller owns and gives up here.
    unsafe fn take_list(&self, list: *mut ffi::kmod_list) -> Vec<Module<'_>> {
        let mut out = Vec::new();
        let mut node = list as *const ffi::kmod_list;
        while !node.is_null() {
            // kmod_module_get_module takes a new reference, so the handle outlives the list.
            if let Some(ptr) = NonNull::new(ffi::kmod_module_get_module(node)) {
                out.push(Module {
                    ptr,
                    _ctx: PhantomData,
                });
            }
            node = ffi::kmod_list_next(list, node);
        }
        if !list.is_null() {
            ffi::kmod_module_unref_list(list);
        }
        out
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: we own one reference; every Module borrowed from this context is gone (the
        // borrow checker sees to that through the lifetime).
        unsafe {
            ffi::kmod_unref(self.ptr.as_ptr());
        }
    }
}

impl<'c> Module<'c> {
    /// The module's name, normalised by libkmod (`-` becomes `_`).
    pub fn name(&self) -> String {
        // SAFETY: live handle; the string is owned by the handle and copied at once.
        unsafe { copy_str(ffi::kmod_module_get_name(self.ptr.as_ptr())) }.unwrap_or_default()
    }

    /// The `.ko` file, absolute; `None` for builtin or unknown modules.
    pub fn path(&self) -> Option<PathBuf> {
        // SAFETY: as for `name`.
        unsafe { copy_str(ffi::kmod_module_get_path(self.ptr.as_ptr())) }.map(PathBuf::from)
    }

    /// Options from `options` lines and the kernel command line (`name.param=value`).
    pub fn options(&self) -> Option<String> {
        // SAFETY: as for `name`.
        unsafe { copy_str(ffi::kmod_module_get_options(self.ptr.as_ptr())) }
    }

    /// The `install` command configured for the module, if any.
    pub fn install_commands(&self) -> Option<String> {
        // SAFETY: as for `name`.
        unsafe { copy_str(ffi::kmod_module_get_install_commands(self.ptr.as_ptr())) }
    }

    /// The modules this one needs (its `modules.dep` line: all of them, not only direct).
    pub fn dependencies(&self, ctx: &'c Ctx) -> Vec<Module<'c>> {
        // SAFETY: live handle; the returned list is ours to take.
        unsafe {
            let list = ffi::kmod_module_get_dependencies(self.ptr.as_ptr());
            ctx.take_list(list)
        }
    }

    /// Soft dependencies: (`pre:`, `post:`), from modprobe.d and `modules.softdep`, with
    /// aliases in them resolved.
    pub fn softdeps(&self, ctx: &'c Ctx) -> io::Result<(Vec<Module<'c>>, Vec<Module<'c>>)> {
        let mut pre: *mut ffi::kmod_list = ptr::null_mut();
        let mut post: *mut ffi::kmod_list = ptr::null_mut();
        // SAFETY: live handle, valid out pointers; both lists are ours to take, also on error
        // (libkmod leaves them NULL then).
        unsafe {
            let rc = ffi::kmod_module_get_softdeps(self.ptr.as_ptr(), &mut pre, &mut post);
            let pre = ctx.take_list(pre);
            let post = ctx.take_list(post);
            if rc < 0 {
                return Err(io::Error::from_raw_os_error(-rc));
            }
            Ok((pre, post))
        }
    }

    /// Inserts the module into the kernel with `options`. The error is the errno
    /// (`EEXIST` when it is already loaded).
    pub fn insert(&self, options: &str) -> Result<(), i32> {
        let c = CString::new(options).map_err(|_| libc::EINVAL)?;
        // SAFETY: live handle, NUL-terminated options; flags 0 (no forcing).
        let rc = unsafe { ffi::kmod_module_insert_module(self.ptr.as_ptr(), 0, c.as_ptr()) };
        if rc < 0 {
            Err(-rc)
        } else {
            Ok(())
        }
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // SAFETY: we own one reference to a live handle.
        unsafe {
            ffi::kmod_module_unref(self.ptr.as_ptr());
        }
    }
}
