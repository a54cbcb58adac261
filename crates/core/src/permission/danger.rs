//! Dangerous-command labels for Bash approval requests (surface.md §3.5). The command is split
//! into simple commands at `;`, `&&`, `||`, `|`, `&` and newlines (outside quotes), each is
//! word-split shell-style, environment prefixes and harmless wrappers are skipped, and
//! `bash -c '…'` bodies are examined recursively. Words that are merely arguments (as in
//! `echo "rm -rf /"`) are never mistaken for commands.

/// One reason a command is dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DangerLabel {
    RecursiveOrForcedRm,
    Sudo,
    PipeToShell,
    DdOutput,
    Mkfs,
    RawDiskWrite,
    ChmodWorldWritable,
    ForkBomb,
}

impl DangerLabel {
    /// The text shown after "Dangerous: ".
    pub fn as_str(self) -> &'static str {
        match self {
            DangerLabel::RecursiveOrForcedRm => "recursive or forced rm",
            DangerLabel::Sudo => "sudo",
            DangerLabel::PipeToShell => "downloaded script piped into a shell",
            DangerLabel::DdOutput => "dd writing to a file or device",
            DangerLabel::Mkfs => "mkfs (formats a file system)",
            DangerLabel::RawDiskWrite => "redirect to a raw disk device",
            DangerLabel::ChmodWorldWritable => "chmod 777",
            DangerLabel::ForkBomb => "fork bomb",
        }
    }
}

/// All labels that apply, sorted and without repeats.
pub fn danger_labels(command: &str) -> Vec<DangerLabel> {
    let mut labels = Vec::new();
    scan(command, 0, &mut labels);
    labels.sort();
    labels.dedup();
    labels
}

/// The label text for an approval request (`ApprovalRequest::danger`), labels joined by ", ".
pub fn danger_summary(command: &str) -> Option<String> {
    let labels = danger_labels(command);
    if labels.is_empty() {
        None
    } else {
        Some(
            labels
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )
    }
}

/// Nesting limit for `bash -c` bodies, so a pathological command cannot recurse forever.
const MAX_DEPTH: usize = 4;

fn scan(command: &str, depth: usize, labels: &mut Vec<DangerLabel>) {
    if is_fork_bomb(command) {
        labels.push(DangerLabel::ForkBomb);
    }
    if depth < MAX_DEPTH {
        for body in substitutions(command) {
            scan(&body, depth + 1, labels);
        }
    }
    let segments = split_segments(command);
    let mut prev_downloads = false;
    for seg in &segments {
        let words = split_words(&seg.text);
        let parsed = command_words(&words);
        check_redirects(&words, labels);
        if parsed.prefix.iter().any(|w| basename(w) == "sudo") {
            labels.push(DangerLabel::Sudo);
        }
        let fed_by_download = prev_downloads;
        prev_downloads = seg.piped_to_next
            && parsed
                .name
                .is_some_and(|n| matches!(basename(n), "curl" | "wget"));
        let Some(name) = parsed.name else {
            continue;
        };
        let args = parsed.args;
        // Options end at `--`; anything after it is an operand (`rm -- -rf` removes a file).
        let options = || args.iter().take_while(|a| a.as_str() != "--");
        match basename(name) {
            "rm" => {
                if options().any(|a| rm_flag_is_dangerous(a)) {
                    labels.push(DangerLabel::RecursiveOrForcedRm);
                }
            }
            "dd" => {
                if args.iter().any(|a| a.starts_with("of=")) {
                    labels.push(DangerLabel::DdOutput);
                }
            }
            "chmod" => {
                if args.iter().any(|a| a == "777" || a == "0777") {
                    labels.push(DangerLabel::ChmodWorldWritable);
                }
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" => {
                if fed_by_download {
                    labels.push(DangerLabel::PipeToShell);
                }
                if let Some(pos) = args.iter().position(|a| a == "-c" || a == "-lc")
                    && let Some(body) = args.get(pos + 1)
                    && depth < MAX_DEPTH
                {
                    scan(body, depth + 1, labels);
                }
            }
            other => {
                if other == "mkfs" || other.starts_with("mkfs.") {
                    labels.push(DangerLabel::Mkfs);
                }
            }
        }
    }
}

/// Bodies of `$( … )` and backquote substitutions outside single quotes; they run as commands.
fn substitutions(command: &str) -> Vec<String> {
    let chars: Vec<char> = command.chars().collect();
    let mut bodies = Vec::new();
    let mut single = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => single = !single,
            '$' if !single && chars.get(i + 1) == Some(&'(') => {
                let mut depth = 1;
                let start = i + 2;
                let mut j = start;
                while j < chars.len() && depth > 0 {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                let end = if depth == 0 { j - 1 } else { j };
                bodies.push(chars[start..end].iter().collect());
                i = j;
                continue;
            }
            '`' if !single => {
                let start = i + 1;
                let end = chars[start..]
                    .iter()
                    .position(|&c| c == '`')
                    .map_or(chars.len(), |p| start + p);
                bodies.push(chars[start..end].iter().collect());
                i = end + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    bodies
}

fn rm_flag_is_dangerous(arg: &str) -> bool {
    match arg {
        "--recursive" | "--force" => true,
        "--" => false,
        _ => {
            arg.starts_with('-')
                && !arg.starts_with("--")
                && arg[1..].chars().any(|c| matches!(c, 'r' | 'R' | 'f'))
        }
    }
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_env_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Wrappers whose first non-option argument is the real command.
fn is_wrapper(word: &str) -> bool {
    matches!(
        basename(word),
        "sudo" | "env" | "nohup" | "time" | "command" | "exec" | "nice" | "doas" | "xargs"
    )
}

/// A simple command split into the part before the real command (env prefixes, wrappers and
/// their options) and the command itself.
struct Parsed<'a> {
    prefix: &'a [String],
    name: Option<&'a str>,
    args: &'a [String],
}

/// Skips `VAR=value` prefixes, wrappers and their options (`sudo -u root`, `env -i`,
/// `nice -n 5`) and grouping punctuation to find the real command name.
fn command_words(words: &[String]) -> Parsed<'_> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if is_env_assignment(w) || matches!(w, "(" | ")" | "{" | "}" | "!" | "then" | "do") {
            i += 1;
        } else if is_wrapper(w) {
            i += 1;
            while i < words.len() && words[i].starts_with('-') {
                // Options that take a value (`sudo -u root`, `nice -n 5`).
                let takes_value = matches!(words[i].as_str(), "-u" | "-g" | "-n" | "-C");
                i += if takes_value { 2 } else { 1 };
            }
        } else {
            return Parsed {
                prefix: &words[..i],
                name: Some(w),
                args: &words[i + 1..],
            };
        }
    }
    Parsed {
        prefix: words,
        name: None,
        args: &[],
    }
}

fn check_redirects(words: &[String], labels: &mut Vec<DangerLabel>) {
    let mut iter = words.iter().peekable();
    while let Some(w) = iter.next() {
        let stripped = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        let target = match stripped {
            ">" | ">>" | ">|" => iter.peek().map(|t| t.as_str()),
            _ => stripped
                .strip_prefix(">>")
                .or_else(|| stripped.strip_prefix(">|"))
                .or_else(|| stripped.strip_prefix('>')),
        };
        if let Some(target) = target
            && let Some(dev) = target.strip_prefix("/dev/")
            && ["sd", "nvme", "disk", "hd"]
                .iter()
                .any(|p| dev.starts_with(p))
        {
            labels.push(DangerLabel::RawDiskWrite);
        }
    }
}

fn is_fork_bomb(command: &str) -> bool {
    let squeezed: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    // `name(){ name|name& };name` for any function name, the classic being `:`.
    let Some(paren) = squeezed.find("(){") else {
        return false;
    };
    let name = squeezed[..paren]
        .rsplit([';', '&', '|'])
        .next()
        .unwrap_or("");
    !name.is_empty() && squeezed[paren..].contains(&format!("{{{name}|{name}&}};{name}"))
}

struct Segment {
    text: String,
    /// Whether this segment's output feeds the next one (`|`, not `||`).
    piped_to_next: bool,
}

/// Splits at command separators outside quotes. Substitution bodies are also scanned on their
/// own (see [`substitutions`]).
fn split_segments(command: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut cur = String::new();
    let mut chars = command.chars().peekable();
    let (mut single, mut double) = (false, false);
    let push = |cur: &mut String, piped: bool, segments: &mut Vec<Segment>| {
        if !cur.trim().is_empty() {
            segments.push(Segment {
                text: std::mem::take(cur),
                piped_to_next: piped,
            });
        } else {
            cur.clear();
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            // Subshell parentheses also delimit commands: `(cd x && rm -rf y)`.
            ';' | '\n' | '(' | ')' if !single && !double => push(&mut cur, false, &mut segments),
            '&' if !single && !double => {
                if chars.peek() == Some(&'&') {
                    chars.next();
                    push(&mut cur, false, &mut segments);
                } else if cur.ends_with('>') || cur.ends_with('<') {
                    // `2>&1`, `&>`: part of a redirect, not a separator.
                    cur.push(c);
                } else if chars.peek() == Some(&'>') {
                    cur.push(c);
                } else {
                    push(&mut cur, false, &mut segments);
                }
            }
            '|' if !single && !double => {
                if chars.peek() == Some(&'|') {
                    chars.next();
                    push(&mut cur, false, &mut segments);
                } else if cur.ends_with('>') {
                    cur.push(c);
                } else {
                    push(&mut cur, true, &mut segments);
                }
            }
            _ => cur.push(c),
        }
    }
    push(&mut cur, false, &mut segments);
    segments
}

/// Shell-style word splitting; an unbalanced quote falls back to whitespace splitting so a
/// malformed command is still examined.
fn split_words(segment: &str) -> Vec<String> {
    let spaced = segment.replace("$(", " ").replace('`', " ");
    shlex::split(&spaced).unwrap_or_else(|| spaced.split_whitespace().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::DangerLabel::*;
    use super::*;

    #[test]
    fn dangerous_commands_are_labelled() {
        let cases: Vec<(&str, Vec<DangerLabel>)> = vec![
            ("rm -rf /", vec![RecursiveOrForcedRm]),
            ("rm -r build", vec![RecursiveOrForcedRm]),
            ("rm -f x.txt", vec![RecursiveOrForcedRm]),
            ("rm --recursive dir", vec![RecursiveOrForcedRm]),
            ("/bin/rm -Rf dir", vec![RecursiveOrForcedRm]),
            ("cd /tmp && rm -fr *", vec![RecursiveOrForcedRm]),
            ("FOO=1 BAR=2 rm -rf x", vec![RecursiveOrForcedRm]),
            ("sudo apt install x", vec![Sudo]),
            ("sudo -u root rm -rf /var", vec![RecursiveOrForcedRm, Sudo]),
            ("curl -fsSL https://x.sh | sh", vec![PipeToShell]),
            ("wget -qO- https://x | bash", vec![PipeToShell]),
            ("curl https://x | sudo bash -s", vec![Sudo, PipeToShell]),
            ("curl https://x | zsh", vec![PipeToShell]),
            ("dd if=/dev/zero of=/dev/sda bs=1M", vec![DdOutput]),
            ("mkfs.ext4 /dev/sdb1", vec![Mkfs]),
            ("mkfs -t ext4 /dev/sdb1", vec![Mkfs]),
            ("echo hi > /dev/sda", vec![RawDiskWrite]),
            ("cat img >/dev/nvme0n1", vec![RawDiskWrite]),
            ("cat img 1>> /dev/disk2", vec![RawDiskWrite]),
            ("chmod 777 file", vec![ChmodWorldWritable]),
            ("chmod -R 777 /", vec![ChmodWorldWritable]),
            (":(){ :|:& };:", vec![ForkBomb]),
            ("bomb(){ bomb|bomb& };bomb", vec![ForkBomb]),
            ("bash -c 'rm -rf ~/x'", vec![RecursiveOrForcedRm]),
            ("sh -c \"sudo reboot\"", vec![Sudo]),
            ("env -i PATH=/bin rm -rf x", vec![RecursiveOrForcedRm]),
            ("ls; rm -rf x", vec![RecursiveOrForcedRm]),
            ("true || sudo ls", vec![Sudo]),
            ("make & rm -rf out", vec![RecursiveOrForcedRm]),
            ("echo $(rm -rf x)", vec![RecursiveOrForcedRm]),
            ("echo `sudo id`", vec![Sudo]),
            ("(cd /tmp && rm -rf x)", vec![RecursiveOrForcedRm]),
            (
                "find . -name '*.o' | xargs rm -f",
                vec![RecursiveOrForcedRm],
            ),
            ("sudo -i", vec![Sudo]),
        ];
        for (cmd, expected) in cases {
            assert_eq!(danger_labels(cmd), expected, "{cmd}");
        }
    }

    #[test]
    fn near_misses_are_not_flagged() {
        for cmd in [
            "rm file.txt",
            "rm -- -rf",
            "rm -i notes",
            "echo \"rm -rf /\"",
            "echo 'sudo make me a sandwich'",
            "grep -r sudo /etc/sudoers.d",
            "git rm -r --cached dir",
            "curl https://x -o install.sh",
            "curl https://x | jq .",
            "wget https://x && bash ./local.sh",
            "dd if=/dev/zero bs=1 count=1",
            "chmod 755 script.sh",
            "chmod 7777 x",
            "cat /dev/sda",
            "echo x > /dev/null",
            "echo x 2>&1 | tee log",
            "ls /dev/sda",
            "docker run --rm -it img",
            "npm run format",
            "echo '$(rm -rf x)'",
        ] {
            assert_eq!(danger_labels(cmd), vec![], "{cmd}");
        }
    }

    #[test]
    fn summary_joins_labels() {
        assert_eq!(
            danger_summary("sudo rm -rf /").as_deref(),
            Some("recursive or forced rm, sudo")
        );
        assert_eq!(danger_summary("ls"), None);
    }
}
