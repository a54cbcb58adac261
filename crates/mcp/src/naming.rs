//! Qualified MCP tool names: `mcp__<server>__<tool>`, safe for every provider's tool-name rules.
//!
//! Follows the reference (`mcpCore/tool-naming.ts`) exactly, so names (and therefore permission
//! rules such as `mcp__github__*` and recorded sessions) are the same as Kimi Code's.

const PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
/// Providers reject longer tool names (OpenAI's limit is 64).
const MAX_QUALIFIED_LEN: usize = 64;

/// Replace every character outside `[A-Za-z0-9_-]` with `_`, then collapse runs of `_`.
pub fn sanitize_name_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for ch in part.chars() {
        let ch = if ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' {
            ch
        } else {
            '_'
        };
        if ch == '_' && out.ends_with('_') {
            continue;
        }
        out.push(ch);
    }
    out
}

/// `mcp__<server>__<tool>`; a name over 64 characters keeps its head and ends in `_<hash>`.
pub fn qualify_tool_name(server: &str, tool: &str) -> String {
    let full = format!(
        "{PREFIX}{}{SEPARATOR}{}",
        sanitize_name_part(server),
        sanitize_name_part(tool)
    );
    // After sanitizing the name is ASCII, so bytes, chars and UTF-16 units all agree.
    if full.len() <= MAX_QUALIFIED_LEN {
        return full;
    }
    let hash = stable_hash(&full);
    let head = &full[..MAX_QUALIFIED_LEN - hash.len() - 1];
    format!("{head}_{hash}")
}

/// 32-bit FNV-1a rendered the way the reference renders it: the reference keeps the running
/// value as a *signed* 32-bit integer (`Math.imul`), so a negative hash prints as `-` plus its
/// magnitude in hex. Reproduced on purpose so qualified names match across implementations.
fn stable_hash(input: &str) -> String {
    if input.is_empty() {
        // The reference's seed is a plain (unsigned) number until the first XOR.
        return "811c9dc5".to_owned();
    }
    let mut hash: u32 = 0x811c_9dc5;
    for unit in input.encode_utf16() {
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // Bit-for-bit reinterpretation of the u32 as the reference's int32.
    let signed = i32::from_ne_bytes(hash.to_ne_bytes());
    let text = if signed < 0 {
        format!("-{:x}", signed.unsigned_abs())
    } else {
        format!("{signed:x}")
    };
    format!("{text:0>8}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sanitize_table() {
        let cases = [
            ("github", "github"),
            ("my server", "my_server"),
            ("a.b/c", "a_b_c"),
            ("a__b", "a_b"),
            ("a  .b", "a_b"),
            ("dash-ok_1", "dash-ok_1"),
            ("日本", "_"),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(sanitize_name_part(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn qualify_table() {
        let cases = [
            ("github", "create_issue", "mcp__github__create_issue"),
            ("my server", "read.file v2", "mcp__my_server__read_file_v2"),
            ("s", "__x__", "mcp__s___x_"),
        ];
        for (server, tool, expected) in cases {
            assert_eq!(qualify_tool_name(server, tool), expected);
        }
    }

    #[test]
    fn long_names_are_cut_and_hashed() {
        let long_tool = "t".repeat(100);
        let name = qualify_tool_name("server", &long_tool);
        assert_eq!(name.len(), 64);
        let full = format!("mcp__server__{long_tool}");
        let hash = stable_hash(&full);
        assert_eq!(
            name,
            format!("{}_{hash}", &full[..64 - hash.len() - 1]),
            "head + _ + hash"
        );
        // Deterministic, and different inputs give different names.
        assert_eq!(name, qualify_tool_name("server", &long_tool));
        assert_ne!(name, qualify_tool_name("server2", &long_tool));
        // Exactly 64 characters is kept as is.
        let exact = "x".repeat(64 - "mcp__s__".len());
        assert_eq!(qualify_tool_name("s", &exact).len(), 64);
        assert_eq!(qualify_tool_name("s", &exact), format!("mcp__s__{exact}"));
    }

    #[test]
    fn hash_matches_the_reference_rendering() {
        // Values computed with the reference's JavaScript (`stableHash8`).
        assert_eq!(stable_hash(""), "811c9dc5");
        assert_eq!(stable_hash("a"), "-1bf3d6d4");
        assert_eq!(stable_hash("hello"), "4f9f2cab");
        let long = format!("mcp__server__{}", "t".repeat(100));
        assert_eq!(stable_hash(&long), "6e2d262c");
    }
}
