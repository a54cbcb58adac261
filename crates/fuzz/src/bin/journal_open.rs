//! Fuzz target `journal_open`: see [`kimi_fuzz::targets::journal_open`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::journal_open);
}
