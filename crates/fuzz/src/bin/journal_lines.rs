//! Fuzz target `journal_lines`: see [`kimi_fuzz::targets::journal_lines`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::journal_lines);
}
