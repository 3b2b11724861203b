//! Raw declarations of the part of libkmod (v30, `libkmod.h`) this crate uses. Nothing here is
//! called outside `sys.rs`, which wraps each call and says why it is sound.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint};

/// Opaque library context (`struct kmod_ctx`): holds the index files and the configuration.
#[repr(C)]
pub struct kmod_ctx {
    _private: [u8; 0],
}

/// Opaque module handle (`struct kmod_module`), reference counted.
#[repr(C)]
pub struct kmod_module {
    _private: [u8; 0],
}

/// Opaque list node (`struct kmod_list`); a list is a pointer to its first node.
#[repr(C)]
pub struct kmod_list {
    _private: [u8; 0],
}

/// Opaque configuration iterator (`struct kmod_config_iter`).
#[repr(C)]
pub struct kmod_config_iter {
    _private: [u8; 0],
}

extern "C" {
    pub fn kmod_new(dirname: *const c_char, config_paths: *const *const c_char) -> *mut kmod_ctx;
    pub fn kmod_unref(ctx: *mut kmod_ctx) -> *mut kmod_ctx;
    pub fn kmod_load_resources(ctx: *mut kmod_ctx) -> c_int;

    pub fn kmod_list_next(list: *const kmod_list, curr: *const kmod_list) -> *mut kmod_list;

    pub fn kmod_config_get_blacklists(ctx: *const kmod_ctx) -> *mut kmod_config_iter;
    pub fn kmod_config_iter_get_key(iter: *const kmod_config_iter) -> *const c_char;
    pub fn kmod_config_iter_next(iter: *mut kmod_config_iter) -> bool;
    pub fn kmod_config_iter_free_iter(iter: *mut kmod_config_iter);

    pub fn kmod_module_new_from_name(
        ctx: *mut kmod_ctx,
        name: *const c_char,
        module: *mut *mut kmod_module,
    ) -> c_int;
    pub fn kmod_module_new_from_path(
        ctx: *mut kmod_ctx,
        path: *const c_char,
        module: *mut *mut kmod_module,
    ) -> c_int;
    pub fn kmod_module_new_from_lookup(
        ctx: *mut kmod_ctx,
        given_alias: *const c_char,
        list: *mut *mut kmod_list,
    ) -> c_int;
    pub fn kmod_module_unref(module: *mut kmod_module) -> *mut kmod_module;
    pub fn kmod_module_unref_list(list: *mut kmod_list) -> c_int;
    pub fn kmod_module_get_module(entry: *const kmod_list) -> *mut kmod_module;

    pub fn kmod_module_insert_module(
        module: *mut kmod_module,
        flags: c_uint,
        options: *const c_char,
    ) -> c_int;

    pub fn kmod_module_get_name(module: *const kmod_module) -> *const c_char;
    pub fn kmod_module_get_path(module: *const kmod_module) -> *const c_char;
    pub fn kmod_module_get_options(module: *const kmod_module) -> *const c_char;
    pub fn kmod_module_get_install_commands(module: *const kmod_module) -> *const c_char;
    pub fn kmod_module_get_dependencies(module: *const kmod_module) -> *mut kmod_list;
    pub fn kmod_module_get_softdeps(
        module: *const kmod_module,
        pre: *mut *mut kmod_list,
        post: *mut *mut kmod_list,
    ) -> c_int;
}
