//! Tool trait and the built-in tools.
