//! Renders a boot model.
