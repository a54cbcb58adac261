//! Reducing an HTML page to readable text with `html2text` (scripts, styles and the head
//! dropped, entities decoded, lists and headings kept as plain-text Markdown); the title is
//! returned separately.

/// Lines are not re-wrapped for the model: one paragraph stays one line.
const WIDTH: usize = 100_000;

fn render(html: &str) -> String {
    match html2text::config::plain_no_decorate()
        .no_link_wrapping()
        .link_footnotes(false)
        .string_from_read(html.as_bytes(), WIDTH)
    {
        Ok(text) => text,
        Err(err) => {
            // html2text only fails on a width of zero; say so rather than return nothing.
            tracing::warn!("html2text could not render the page: {err}");
            format!("(the page could not be reduced to text: {err})")
        }
    }
}

/// The `<title>` element's text, if any.
fn title_of(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = render(&format!("<p>{}</p>", &html[start..end]));
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// `(title, text)` of an HTML page: blank-line runs collapsed, trailing spaces trimmed.
pub fn html_to_text(html: &str) -> (Option<String>, String) {
    let text = render(html);
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    (title_of(html), out.join("\n"))
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
        assert_eq!(text, "# Head\n\nOne\u{a0}two <3> A\n* a\n* b");
    }
}
