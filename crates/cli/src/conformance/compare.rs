//! Structural comparison of a case's expected value with what our code produced, reporting
//! every difference with its JSON path so a failing case reads like a diff.

use serde_json::Value;

use super::neutral::canonicalize;

const ANY_NUMBER: &str = "<ANY_NUMBER>";
/// Placeholders that stand for a run-specific piece of a string (spill paths, ids).
const STRING_WILDCARDS: [&str; 3] = ["<HOME>", "<AGENT_SCOPE>", "<UUID>"];

/// Compare after canonicalising both sides; returns one line per difference (empty = equal).
pub fn diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(
        "$",
        &canonicalize(expected),
        &canonicalize(actual),
        &mut out,
    );
    out
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 160 {
        let head: String = text.chars().take(150).collect();
        format!("{head}… ({} chars)", text.chars().count())
    } else {
        text
    }
}

fn walk(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::String(e), Value::Number(_)) if e == ANY_NUMBER => {}
        (Value::String(e), Value::String(a)) if has_wildcard(e) => {
            if !wildcard_match(e, a) {
                out.push(format!(
                    "{path}: expected {}, got {}",
                    short(expected),
                    short(actual)
                ));
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                let child = format!("{path}.{key}");
                match a.get(key) {
                    Some(av) => walk(&child, ev, av, out),
                    None => out.push(format!("{child}: missing, expected {}", short(ev))),
                }
            }
            for (key, av) in a {
                if !e.contains_key(key) {
                    out.push(format!("{path}.{key}: unexpected {}", short(av)));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                walk(&format!("{path}[{i}]"), ev, av, out);
            }
            if e.len() != a.len() {
                out.push(format!(
                    "{path}: expected {} items, got {}{}",
                    e.len(),
                    a.len(),
                    if a.len() > e.len() {
                        format!("; first extra: {}", short(&a[e.len()]))
                    } else {
                        String::new()
                    }
                ));
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            // 1 and 1.0 are the same number in the JSON the cases were written from.
            if e != a && e.as_f64() != a.as_f64() {
                out.push(format!("{path}: expected {e}, got {a}"));
            }
        }
        _ => {
            if expected != actual {
                out.push(format!(
                    "{path}: expected {}, got {}",
                    short(expected),
                    short(actual)
                ));
            }
        }
    }
}

fn has_wildcard(s: &str) -> bool {
    STRING_WILDCARDS.iter().any(|w| s.contains(w))
}

/// Each wildcard matches a non-empty run of characters; the literal pieces must appear in order.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut pieces: Vec<&str> = vec![pattern];
    for w in STRING_WILDCARDS {
        pieces = pieces.iter().flat_map(|p| p.split(w)).collect();
    }
    kimi_tools::wildcard::pieces_match(&pieces, text, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shorthands_and_placeholders_compare_equal() {
        let expected = json!({"history": [{"role": "user", "content": "hi", "origin": "user", "x": null}], "t": "<ANY_NUMBER>"});
        let actual = json!({"history": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "tool_calls": [], "origin": {"kind": "user"}}], "t": 17});
        assert_eq!(diff(&expected, &actual), Vec::<String>::new());
    }

    #[test]
    fn differences_name_their_path() {
        let d = diff(&json!({"a": [1, 2]}), &json!({"a": [1, 3], "b": true}));
        assert_eq!(d, vec!["$.a[1]: expected 2, got 3", "$.b: unexpected true"]);
    }

    #[test]
    fn string_wildcards() {
        assert!(wildcard_match("<HOME>/x/<UUID>.txt", "/root/x/ab-12.txt"));
        assert!(!wildcard_match("<HOME>/x/<UUID>.txt", "/root/y/ab-12.txt"));
        assert!(!wildcard_match("a<UUID>", "a"));
    }
}
