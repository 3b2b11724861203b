//! Kernel log analysis (being written).
