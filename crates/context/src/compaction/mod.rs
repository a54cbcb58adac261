//! Compaction planning (placeholder: being written).
