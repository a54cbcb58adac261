//! Fuzz target `shell`: see [`kimi_fuzz::targets::shell`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::shell);
}
