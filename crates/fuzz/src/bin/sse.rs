//! Fuzz target `sse`: see [`kimi_fuzz::targets::sse`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::sse);
}
