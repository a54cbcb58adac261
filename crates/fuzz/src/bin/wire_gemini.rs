//! Fuzz target `wire_gemini`: see [`kimi_fuzz::targets::wire_gemini`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::wire_gemini);
}
