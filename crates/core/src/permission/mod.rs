//! Permission modes, the policy chain and user rules (placeholder: being written).
