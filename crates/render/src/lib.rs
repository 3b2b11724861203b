//! Renders a boot model.
pub mod chart;
pub mod svg;
