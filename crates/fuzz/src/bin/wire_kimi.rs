//! Fuzz target `wire_kimi`: see [`kimi_fuzz::targets::wire_kimi`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::wire_kimi);
}
