//! Fuzz target `wire_openai_responses`: see [`kimi_fuzz::targets::wire_openai_responses`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::wire_openai_responses);
}
