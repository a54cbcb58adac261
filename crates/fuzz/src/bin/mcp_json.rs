//! Fuzz target `mcp_json`: see [`kimi_fuzz::targets::mcp_json`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::mcp_json);
}
