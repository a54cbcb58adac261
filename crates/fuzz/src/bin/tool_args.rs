//! Fuzz target `tool_args`: see [`kimi_fuzz::targets::tool_args`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::tool_args);
}
