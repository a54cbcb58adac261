//! Fuzz target `web_body`: see [`kimi_fuzz::targets::web_body`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::web_body);
}
