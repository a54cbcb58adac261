//! User hooks (placeholder: being written).
