//! Fuzz target `wire_openai_chat`: see [`kimi_fuzz::targets::wire_openai_chat`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::wire_openai_chat);
}
