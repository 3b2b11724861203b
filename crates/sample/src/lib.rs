//! Sampling /proc and kernel events for the bootprint recorder.
