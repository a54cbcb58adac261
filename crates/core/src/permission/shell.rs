//! What a Bash command really runs: the command line is parsed with a shell grammar
//! (brush-parser) into the simple commands it executes — through `;`, `&&`, `||`, `|`, `&`,
//! subshells, braces, `if`/`for`/`while`/`case`, functions, `$(…)`, backticks, process
//! substitutions, `bash -c '…'`, `eval`, `find -exec` and wrappers such as `env`, `command`,
//! `sudo`, `nohup`, `timeout` and `xargs` — with quotes and backslashes resolved. The
//! protected floor, the danger labels and user rules all decide on this one parse.
//!
//! Words that only the running shell can know (`$VAR` not assigned literally earlier in the same
//! command, `$(…)`) keep their source text and are flagged dynamic.

use std::collections::HashMap;
use std::io::BufReader;

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// Nesting limit for `bash -c`, `eval`, substitutions and function bodies.
const MAX_DEPTH: usize = 8;
/// A command line with more simple commands than this is not examined further (fail closed).
const MAX_COMMANDS: usize = 4096;

/// How a redirection uses its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    Read,
    /// `>`, `>|`, `&>`: truncates or creates.
    Write,
    /// `>>`, `&>>`.
    Append,
    /// `<>`.
    ReadWrite,
}

impl RedirectKind {
    pub fn writes(self) -> bool {
        !matches!(self, RedirectKind::Read)
    }
}

/// One file redirection of a simple command (fd duplications like `2>&1` are not listed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: String,
    pub dynamic: bool,
}

/// One simple command as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program as written, then its arguments, quotes and escapes removed; wrappers
    /// (`env`, `sudo`, `nohup`, …) are stripped and listed in `wrappers`.
    pub argv: Vec<String>,
    /// Per word of `argv`: its value is only known at run time.
    pub dynamic: Vec<bool>,
    pub redirects: Vec<Redirect>,
    /// Base names of the wrappers stripped in front of the program, outermost first.
    pub wrappers: Vec<String>,
    /// Its input comes from a download: piped from `curl`/`wget`, or a `$(curl …)` or
    /// `<(curl …)` in its words.
    pub fed_by_download: bool,
}

impl SimpleCommand {
    /// The program's base name (`/bin/rm` → `rm`), if the command runs one.
    pub fn program(&self) -> Option<&str> {
        self.argv.first().map(|p| basename(p))
    }

    /// The arguments after the program.
    pub fn args(&self) -> &[String] {
        self.argv.get(1..).unwrap_or(&[])
    }

    /// The command with the program's base name and each run of short flags split, sorted and
    /// deduplicated in place (`rm -rf /` ≡ `rm -fr /` ≡ `/bin/rm -r -f /` → `rm -f -r /`).
    pub fn normalized(&self) -> String {
        normalize_words(&self.argv, false)
    }

    /// Like [`SimpleCommand::normalized`], with every flag (before `--`) moved in front of the
    /// operands, so `rm / -rf` reads `rm -f -r /` too.
    pub fn hoisted(&self) -> String {
        normalize_words(&self.argv, true)
    }

    /// The command as one line for messages.
    pub fn display(&self) -> String {
        let mut words: Vec<&str> = self.wrappers.iter().map(String::as_str).collect();
        words.extend(self.argv.iter().map(String::as_str));
        words.join(" ")
    }

    fn empty() -> SimpleCommand {
        SimpleCommand {
            argv: Vec::new(),
            dynamic: Vec::new(),
            redirects: Vec::new(),
            wrappers: Vec::new(),
            fed_by_download: false,
        }
    }
}

/// Everything a command line runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellParse {
    /// Every simple command, in source order, nested ones (from `bash -c`, `$(…)`, …) included.
    pub commands: Vec<SimpleCommand>,
    /// Functions that call themselves in a pipeline or in the background (`:(){ :|:& };:`).
    pub fork_bombs: Vec<String>,
    /// Why (part of) the command could not be parsed; the commands found so far are kept.
    pub error: Option<String>,
}

/// Parses a command line. Never fails: problems are reported in [`ShellParse::error`].
pub fn parse(command: &str) -> ShellParse {
    let mut walker = Walker::default();
    walker.script(command, 0);
    ShellParse {
        commands: walker.commands,
        fork_bombs: walker.fork_bombs,
        error: walker.error,
    }
}

/// Deepest parenthesis nesting the parser is given (quotes are not looked at, so a quoted
/// `(((` counts too: the command is then asked about, never waved through).
const MAX_PAREN_DEPTH: usize = 8;

fn paren_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A run of digits directly before `<` or `>` (a redirect's file-descriptor number) too long
/// to be a descriptor; such a number makes the shell parser panic.
fn oversized_io_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_digit() {
            start.get_or_insert(i);
            continue;
        }
        if let Some(from) = start.take()
            && (b == b'<' || b == b'>')
            && i - from > 9
        {
            return text.get(from..i);
        }
    }
    None
}

/// The last path component (`/usr/bin/rm` → `rm`).
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether a word is a cluster of short flags (`-rf`), as opposed to `-`, `--`, `--long`, `-n5`.
fn is_short_flag_cluster(word: &str) -> bool {
    word.len() >= 2
        && word.starts_with('-')
        && !word.starts_with("--")
        && word[1..].chars().all(|c| c.is_ascii_alphabetic())
}

/// Long spellings of the flags that rules most often name, so `rm --recursive --force` reads
/// as `rm -f -r`. Only options whose meaning is the same everywhere are folded.
fn fold_long_flag(program: &str, word: &str) -> Option<&'static str> {
    match (program, word) {
        ("rm" | "cp" | "chmod" | "chown" | "chgrp", "--recursive") => Some("-r"),
        ("rm" | "cp" | "mv" | "ln", "--force") => Some("-f"),
        ("rm" | "cp" | "chmod" | "chown" | "chgrp", "-R") => Some("-r"),
        _ => None,
    }
}

/// Shared by commands and rule patterns so both sides normalise alike. `hoist` moves every
/// flag in front of the operands.
pub(crate) fn normalize_words<S: AsRef<str>>(words: &[S], hoist: bool) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let first = first.as_ref();
    // A pattern's first word may be a glob; only a plain path is reduced to its base name.
    let program = if first.contains(['*', '?', '[']) {
        first
    } else {
        basename(first)
    };
    let split_clusters = !single_dash_long_options(program);
    let mut out: Vec<String> = vec![program.to_owned()];
    let mut flags: Vec<String> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut after_dashdash = false;
    let flush = |run: &mut Vec<String>, into: &mut Vec<String>| {
        run.sort();
        run.dedup();
        into.append(run);
    };
    for word in &words[1..] {
        let word = word.as_ref();
        let folded = fold_long_flag(program, word);
        let cluster = split_clusters && is_short_flag_cluster(word);
        if !after_dashdash && (folded.is_some() || cluster) {
            match folded {
                Some(flag) => run.push(flag.to_owned()),
                None => run.extend(word[1..].chars().map(|c| format!("-{c}"))),
            }
            continue;
        }
        if hoist {
            flush(&mut run, &mut flags);
        } else {
            flush(&mut run, &mut out);
        }
        if word == "--" {
            after_dashdash = true;
        }
        if hoist && !after_dashdash && word.starts_with('-') && word.len() > 1 {
            flags.push(word.to_owned());
        } else if hoist {
            operands.push(word.to_owned());
        } else {
            out.push(word.to_owned());
        }
    }
    if hoist {
        flush(&mut run, &mut flags);
        flags.sort();
        flags.dedup();
        out.append(&mut flags);
        out.append(&mut operands);
    } else {
        flush(&mut run, &mut out);
    }
    out.join(" ")
}

/// Programs whose options are whole words after one dash (`find -delete`, `java -jar`), where
/// splitting `-exec` into `-c -e -x` would misread them.
fn single_dash_long_options(program: &str) -> bool {
    matches!(
        program,
        "find"
            | "java"
            | "javac"
            | "go"
            | "gcc"
            | "g++"
            | "cc"
            | "c++"
            | "clang"
            | "clang++"
            | "ld"
            | "ffmpeg"
            | "ffprobe"
            | "convert"
            | "magick"
            | "openssl"
            | "gdb"
            | "valgrind"
            | "qemu-img"
    )
}

/// Programs that only run the command that follows them, with how many values their options
/// take (options not listed take none).
fn wrapper_value_options(program: &str) -> Option<&'static [&'static str]> {
    Some(match program {
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "command" | "builtin" | "nohup" | "time" | "setsid" | "unbuffer" | "exec" => &["-a"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "-P", "-u"],
        "stdbuf" => &["-i", "-o", "-e"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "sudo" => &[
            "-u", "-g", "-C", "-p", "-h", "-r", "-t", "-U", "-D", "-R", "-T",
        ],
        "doas" => &["-u", "-C"],
        "pkexec" => &["--user"],
        "xargs" => &[
            "-n", "-I", "-i", "-P", "-L", "-l", "-d", "-a", "-E", "-e", "-s",
        ],
        "chroot" | "flock" | "watch" => &[],
        _ => return None,
    })
}

/// Wrappers whose first operand is not the command (`timeout 10 cmd`, `chroot /x cmd`).
fn wrapper_leading_operands(program: &str) -> usize {
    match program {
        "timeout" | "chroot" | "flock" => 1,
        _ => 0,
    }
}

/// Programs that are shells: `-c SCRIPT` runs SCRIPT, and fed on stdin they run what they read.
pub fn is_shell(program: &str) -> bool {
    matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "ash" | "busybox"
    )
}

/// Programs that fetch from the network.
pub fn is_downloader(program: &str) -> bool {
    matches!(
        program,
        "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" | "xh"
    )
}

/// Interpreters that run a program read from stdin.
pub fn is_interpreter(program: &str) -> bool {
    is_shell(program)
        || program.starts_with("python")
        || matches!(
            program,
            "perl" | "ruby" | "node" | "php" | "lua" | "source" | "."
        )
}

#[derive(Default)]
struct Walker {
    commands: Vec<SimpleCommand>,
    fork_bombs: Vec<String>,
    error: Option<String>,
    /// Variables assigned a literal value earlier in the command line (`X=rm; $X -rf /`).
    vars: HashMap<String, String>,
    /// Per recorded command: it runs inside a pipeline of two or more or in the background.
    multiplied: Vec<bool>,
    /// How many enclosing pipelines or `&` lists multiply the commands walked now.
    multiplying: usize,
}

/// What expanding one word produced.
struct Expanded {
    text: String,
    dynamic: bool,
    /// A command substitution inside it downloads something.
    download: bool,
}

impl Walker {
    fn fail(&mut self, why: String) {
        if self.error.is_none() {
            self.error = Some(why);
        }
    }

    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.fail(format!("nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        if let Some(number) = oversized_io_number(text) {
            // brush-parser panics on a redirect's file-descriptor number that overflows its
            // integer (found by AFL); no shell accepts such a descriptor either.
            self.fail(format!(
                "cannot parse `{}`: file descriptor {number} is out of range",
                clip(text)
            ));
            return;
        }
        if paren_depth(text) > MAX_PAREN_DEPTH {
            // The shell parser backtracks exponentially on deeply nested parentheses (`((((…`
            // hung it for minutes under AFL); a command nested this deep is asked about.
            self.fail(format!(
                "cannot parse `{}`: parentheses nested more than {MAX_PAREN_DEPTH} deep",
                clip(text)
            ));
            return;
        }
        let options = ParserOptions::default();
        let mut parser = Parser::new(BufReader::new(text.as_bytes()), &options);
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(err) => self.fail(format!("cannot parse `{}`: {err}", clip(text))),
        }
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let background = matches!(sep, ast::SeparatorOperator::Async);
            self.multiplying += usize::from(background);
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
            self.multiplying -= usize::from(background);
        }
    }

    fn push(&mut self, command: SimpleCommand) {
        self.commands.push(command);
        self.multiplied.push(self.multiplying > 0);
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        let piped = pipeline.seq.len() > 1;
        self.multiplying += usize::from(piped);
        let mut fed = false;
        for command in &pipeline.seq {
            let start = self.commands.len();
            self.command(command, fed, depth);
            // A download anywhere upstream feeds everything after it in the pipeline.
            fed = fed
                || self.commands[start..]
                    .iter()
                    .any(|c| c.program().is_some_and(is_downloader));
        }
        self.multiplying -= usize::from(piped);
    }

    fn command(&mut self, command: &ast::Command, fed: bool, depth: usize) {
        if self.commands.len() > MAX_COMMANDS {
            self.fail(format!("more than {MAX_COMMANDS} commands"));
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.simple(simple, fed, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, fed, depth);
                if let Some(list) = redirects {
                    // Redirections of a compound command apply to a synthetic empty command, so
                    // their targets are still seen.
                    let mut holder = SimpleCommand::empty();
                    for redirect in &list.0 {
                        self.redirect(redirect, &mut holder, depth);
                    }
                    if !holder.redirects.is_empty() {
                        self.push(holder);
                    }
                }
            }
            ast::Command::Function(def) => self.function(def, depth),
            ast::Command::ExtendedTest(..) => {}
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, fed: bool, depth: usize) {
        use ast::CompoundCommand as C;
        let start = self.commands.len();
        match compound {
            C::BraceGroup(g) => self.list(&g.list, depth),
            C::Subshell(s) => self.list(&s.list, depth),
            C::ForClause(f) => {
                for word in f.values.iter().flatten() {
                    self.expand(&word.value, depth);
                }
                self.list(&f.body.list, depth);
            }
            C::CaseClause(c) => {
                self.expand(&c.value.value, depth);
                for item in &c.cases {
                    if let Some(list) = &item.cmd {
                        self.list(list, depth);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, depth);
                self.list(&i.then, depth);
                for clause in i.elses.iter().flatten() {
                    if let Some(cond) = &clause.condition {
                        self.list(cond, depth);
                    }
                    self.list(&clause.body, depth);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
            C::Coprocess(c) => self.command(&c.body, fed, depth),
            C::Arithmetic(_) | C::ArithmeticForClause(_) => {}
        }
        if fed {
            for command in &mut self.commands[start..] {
                command.fed_by_download = true;
            }
        }
    }

    fn function(&mut self, def: &ast::FunctionDefinition, depth: usize) {
        let name = def.fname.value.clone();
        let start = self.commands.len();
        self.compound(&def.body.0, false, depth);
        // Recursion through a pipe or `&` multiplies processes: the classic fork bomb.
        let bomb = self.commands[start..]
            .iter()
            .zip(&self.multiplied[start..])
            .any(|(c, multiplied)| *multiplied && c.program() == Some(name.as_str()));
        if bomb {
            self.fork_bombs.push(name);
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, fed: bool, depth: usize) {
        let mut cmd = SimpleCommand::empty();
        cmd.fed_by_download = fed;
        let mut assignments: Vec<(String, Expanded)> = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, &mut cmd, Some(&mut assignments), depth);
        }
        if let Some(word) = &simple.word_or_name {
            self.word(&word.value, &mut cmd, depth);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, &mut cmd, None, depth);
        }
        if cmd.argv.is_empty() {
            // `X=rm` alone sets a shell variable that later words may expand.
            for (name, value) in assignments {
                if value.dynamic {
                    self.vars.remove(&name);
                } else {
                    self.vars.insert(name, value.text);
                }
            }
            if !cmd.redirects.is_empty() {
                self.push(cmd);
            }
            return;
        }
        self.finish(cmd, depth);
    }

    fn word(&mut self, word: &str, cmd: &mut SimpleCommand, depth: usize) {
        let e = self.expand(word, depth);
        cmd.fed_by_download |= e.download;
        cmd.argv.push(e.text);
        cmd.dynamic.push(e.dynamic);
    }

    /// One prefix or suffix item; `assignments` is given for the prefix, where `X=v` may set a
    /// shell variable.
    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        cmd: &mut SimpleCommand,
        assignments: Option<&mut Vec<(String, Expanded)>>,
        depth: usize,
    ) {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(word) => self.word(&word.value, cmd, depth),
            // After the program, `if=/dev/zero` is an argument (dd), not an assignment.
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) if assignments.is_none() => {
                self.word(&word.value, cmd, depth);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                let value = match &assignment.value {
                    ast::AssignmentValue::Scalar(w) => self.expand(&w.value, depth),
                    ast::AssignmentValue::Array(items) => {
                        for (_, w) in items {
                            self.expand(&w.value, depth);
                        }
                        Expanded {
                            text: String::new(),
                            dynamic: true,
                            download: false,
                        }
                    }
                };
                cmd.fed_by_download |= value.download;
                if let (ast::AssignmentName::VariableName(name), Some(list)) =
                    (&assignment.name, assignments)
                {
                    list.push((name.clone(), value));
                }
            }
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                self.redirect(redirect, cmd, depth);
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                let start = self.commands.len();
                self.list(&sub.list, depth + 1);
                cmd.fed_by_download |= self.commands[start..]
                    .iter()
                    .any(|c| c.program().is_some_and(is_downloader));
                cmd.argv.push("<(…)".to_owned());
                cmd.dynamic.push(true);
            }
        }
    }

    /// Strips wrappers, follows `bash -c`, `eval`, `su -c`, `env -S` and `find -exec`, then
    /// records the command.
    fn finish(&mut self, mut cmd: SimpleCommand, depth: usize) {
        while let Some(program) = cmd.program().map(str::to_owned) {
            let Some(value_opts) = wrapper_value_options(&program) else {
                break;
            };
            let mut i = 1;
            let mut nested_script = None;
            while let Some(word) = cmd.argv.get(i) {
                if word == "--" {
                    i += 1;
                    break;
                }
                if program == "env" && word.contains('=') && !word.starts_with('-') {
                    i += 1;
                    continue;
                }
                if !word.starts_with('-') || word == "-" {
                    break;
                }
                if program == "env" && (word == "-S" || word == "--split-string") {
                    nested_script = cmd.argv.get(i + 1).cloned();
                    break;
                }
                let takes_value = value_opts.contains(&word.as_str());
                i += if takes_value { 2 } else { 1 };
            }
            if let Some(script) = nested_script {
                self.script(&script, depth + 1);
                cmd.wrappers.push(program);
                cmd.argv.clear();
                cmd.dynamic.clear();
                break;
            }
            i += wrapper_leading_operands(&program);
            cmd.wrappers.push(program);
            let i = i.min(cmd.argv.len());
            cmd.argv.drain(..i);
            cmd.dynamic.drain(..i);
        }
        if let Some(program) = cmd.program().map(str::to_owned) {
            self.follow_nested(&program, &cmd, depth);
        }
        if !cmd.argv.is_empty() || !cmd.redirects.is_empty() || !cmd.wrappers.is_empty() {
            self.push(cmd);
        }
    }

    fn follow_nested(&mut self, program: &str, cmd: &SimpleCommand, depth: usize) {
        let args = cmd.args();
        if is_shell(program) || program == "su" {
            // `-c SCRIPT`, also clustered (`-lc`, `-ec`), or `su -c SCRIPT`.
            let script_at = args.iter().position(|a| {
                a == "-c"
                    || a == "--command"
                    || (is_short_flag_cluster(a) && a.contains('c') && program != "su")
            });
            if let Some(script) = script_at.and_then(|at| args.get(at + 1)) {
                let start = self.commands.len();
                self.script(script, depth + 1);
                if cmd.fed_by_download {
                    for nested in &mut self.commands[start..] {
                        nested.fed_by_download = true;
                    }
                }
            }
        } else if program == "eval" {
            self.script(&args.join(" "), depth + 1);
        } else if program == "find" {
            let mut i = 0;
            while i < args.len() {
                if matches!(args[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let body: Vec<String> = args[i + 1..]
                        .iter()
                        .take_while(|a| a.as_str() != ";" && a.as_str() != "+")
                        .cloned()
                        .collect();
                    i += body.len() + 1;
                    if !body.is_empty() {
                        let nested = SimpleCommand {
                            dynamic: vec![false; body.len()],
                            argv: body,
                            ..SimpleCommand::empty()
                        };
                        self.finish(nested, depth + 1);
                    }
                }
                i += 1;
            }
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, cmd: &mut SimpleCommand, depth: usize) {
        let (kind, target) = match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let kind = match kind {
                    ast::IoFileRedirectKind::Read => RedirectKind::Read,
                    ast::IoFileRedirectKind::Write | ast::IoFileRedirectKind::Clobber => {
                        RedirectKind::Write
                    }
                    ast::IoFileRedirectKind::Append => RedirectKind::Append,
                    ast::IoFileRedirectKind::ReadAndWrite => RedirectKind::ReadWrite,
                    ast::IoFileRedirectKind::DuplicateInput
                    | ast::IoFileRedirectKind::DuplicateOutput => return,
                };
                match target {
                    ast::IoFileRedirectTarget::Filename(word) => (kind, word),
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        let start = self.commands.len();
                        self.list(&sub.list, depth + 1);
                        cmd.fed_by_download |= kind == RedirectKind::Read
                            && self.commands[start..]
                                .iter()
                                .any(|c| c.program().is_some_and(is_downloader));
                        return;
                    }
                    ast::IoFileRedirectTarget::Fd(_) | ast::IoFileRedirectTarget::Duplicate(_) => {
                        return;
                    }
                }
            }
            ast::IoRedirect::OutputAndError(word, append) => (
                if *append {
                    RedirectKind::Append
                } else {
                    RedirectKind::Write
                },
                word,
            ),
            ast::IoRedirect::HereString(_, word) => {
                self.expand(&word.value, depth);
                return;
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.expand(&doc.doc.value, depth);
                }
                return;
            }
        };
        let e = self.expand(&target.value, depth);
        cmd.fed_by_download |= e.download;
        cmd.redirects.push(Redirect {
            kind,
            target: e.text,
            dynamic: e.dynamic,
        });
    }

    /// Quote removal and the expansions that are known before the command runs; command
    /// substitutions are walked as commands of their own.
    fn expand(&mut self, word: &str, depth: usize) -> Expanded {
        let options = ParserOptions::default();
        let mut out = Expanded {
            text: String::new(),
            dynamic: false,
            download: false,
        };
        match brush_parser::word::parse(word, &options) {
            Ok(pieces) => self.pieces(&pieces, word, depth, &mut out),
            Err(_) => {
                out.text = brush_parser::unquote_str(word);
                out.dynamic = true;
            }
        }
        out
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        source: &str,
        depth: usize,
        out: &mut Expanded,
    ) {
        for p in pieces {
            let raw = source.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.text.push_str(t),
                WordPiece::AnsiCQuotedText(t) => out.text.push_str(t),
                WordPiece::EscapeSequence(e) => {
                    // `\x` is `x`; a backslash-newline joins lines.
                    let mut chars = e.chars();
                    if chars.next() == Some('\\') {
                        let rest: String = chars.collect();
                        if rest != "\n" {
                            out.text.push_str(&rest);
                        }
                    } else {
                        out.text.push_str(e);
                    }
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, source, depth, out);
                }
                WordPiece::TildeExpansion(tilde) => match tilde {
                    TildeExpr::Home => out.text.push('~'),
                    TildeExpr::UserHome(user) => {
                        out.text.push('~');
                        out.text.push_str(user);
                    }
                    _ => {
                        out.text.push_str(raw);
                        out.dynamic = true;
                    }
                },
                WordPiece::ParameterExpansion(expr) => {
                    let known = match expr {
                        ParameterExpr::Parameter {
                            parameter: Parameter::Named(name),
                            indirect: false,
                        } => match name.as_str() {
                            "HOME" => Some("~".to_owned()),
                            _ => self.vars.get(name).cloned(),
                        },
                        _ => None,
                    };
                    match known {
                        Some(value) => out.text.push_str(&value),
                        None => {
                            out.text.push_str(raw);
                            out.dynamic = true;
                        }
                    }
                }
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => {
                    let start = self.commands.len();
                    self.script(body, depth + 1);
                    out.download |= self.commands[start..]
                        .iter()
                        .any(|c| c.program().is_some_and(is_downloader));
                    out.text.push_str(raw);
                    out.dynamic = true;
                }
                WordPiece::ArithmeticExpression(_) => {
                    out.text.push_str(raw);
                    out.dynamic = true;
                }
            }
        }
    }
}

fn clip(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
