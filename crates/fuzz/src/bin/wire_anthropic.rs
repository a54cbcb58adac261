//! Fuzz target `wire_anthropic`: see [`kimi_fuzz::targets::wire_anthropic`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::wire_anthropic);
}
