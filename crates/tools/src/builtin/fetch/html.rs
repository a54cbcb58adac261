//! Reducing an HTML page to readable text: scripts and styles dropped, block elements become
//! line breaks, entities decoded, whitespace collapsed; the title is returned separately.

const SKIPPED: [&str; 7] = [
    "script", "style", "noscript", "template", "svg", "iframe", "head",
];
const BLOCKS: [&str; 24] = [
    "p",
    "div",
    "br",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "section",
    "article",
    "header",
    "footer",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "table",
    "main",
    "nav",
    "aside",
    "hr",
];

fn decode_entity(entity: &str) -> Option<String> {
    let named = match entity {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" | "#39" => Some('\''),
        "nbsp" => Some(' '),
        "mdash" => Some('\u{2014}'),
        "ndash" => Some('\u{2013}'),
        "hellip" => Some('\u{2026}'),
        "copy" => Some('\u{a9}'),
        _ => None,
    };
    if let Some(c) = named {
        return Some(c.to_string());
    }
    let num = entity.strip_prefix('#')?;
    let code = match num.strip_prefix(['x', 'X']) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => num.parse().ok()?,
    };
    char::from_u32(code).map(|c| c.to_string())
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('&') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        match after.find(';').filter(|end| *end <= 10) {
            Some(end) => match decode_entity(&after[..end]) {
                Some(decoded) => {
                    out.push_str(&decoded);
                    rest = &after[end + 1..];
                }
                None => {
                    out.push('&');
                    rest = after;
                }
            },
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `(title, text)` of an HTML document.
pub fn html_to_text(html: &str) -> (Option<String>, String) {
    let lower = html.to_ascii_lowercase();
    let mut title = None;
    if let Some(start) = lower.find("<title")
        && let Some(open_end) = lower[start..].find('>')
        && let Some(close) = lower[start..].find("</title>")
        && open_end < close
    {
        let raw = &html[start + open_end + 1..start + close];
        let t = decode_entities(raw.trim());
        if !t.is_empty() {
            title = Some(t);
        }
    }
    let mut out = String::new();
    let mut i = 0;
    let bytes = html.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'<' {
            if lower[i..].starts_with("<!--") {
                i = lower[i..].find("-->").map_or(bytes.len(), |e| i + e + 3);
                continue;
            }
            let Some(end) = lower[i..].find('>').map(|e| i + e) else {
                break;
            };
            let tag = &lower[i + 1..end];
            let closing = tag.starts_with('/');
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
                let close = format!("</{name}");
                i = lower[end..].find(&close).map_or(bytes.len(), |c| {
                    let after = end + c;
                    lower[after..]
                        .find('>')
                        .map_or(bytes.len(), |g| after + g + 1)
                });
                continue;
            }
            if BLOCKS.contains(&name.as_str()) {
                out.push('\n');
                if name == "li" && !closing {
                    out.push_str("- ");
                }
            } else if name == "td" || name == "th" {
                out.push(' ');
            }
            i = end + 1;
            continue;
        }
        let next = lower[i..].find('<').map_or(bytes.len(), |n| i + n);
        out.push_str(&decode_entities(&html[i..next]));
        i = next;
    }
    (title, collapse_whitespace(&out))
}

/// One line per block with single spaces; empty lines dropped (block tags already separate).
fn collapse_whitespace(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_html() {
        let html = "<html><head><title>T &amp; U</title><style>p{}</style></head><body>\
                    <script>alert(1)</script><h1>Head</h1><p>One&nbsp;two &lt;3&gt; &#x41;</p>\
                    <ul><li>a</li><li>b</li></ul><!-- hidden --></body></html>";
        let (title, text) = html_to_text(html);
        assert_eq!(title.as_deref(), Some("T & U"));
        assert_eq!(text, "Head\nOne two <3> A\n- a\n- b");
    }
}
