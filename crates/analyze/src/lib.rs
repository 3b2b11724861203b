//! From a trace to a boot model.
