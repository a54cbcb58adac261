//! `/editor`, `/theme`, desktop notifications and `/web` in the real terminal UI: the `kimi-rs`
//! binary on a pseudo-terminal (see `pty/mod.rs`), with the loopback scripted model.
//! - `/editor` lists the editors found on PATH, saves the choice to tui.toml, and Ctrl-G runs it.
//! - A broken custom theme is reported naming its file and keys; `/theme` lists the custom
//!   themes, applies one at once (its truecolor colour is drawn) and saves it.
//! - A finished turn writes the OSC 9 notification only while the terminal reports it is
//!   unfocused, and the `[notifications] command` hook gets the title and body.
//! - `/web` hands the session to a running `kimi-rs web` (the browser gets the page for this
//!   session, the server can read its messages) or starts one in this terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;
mod pty;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::web_client::WebServer;
use common::{BIN, wait_until};
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::ScriptServer;
use pty::{COLS, ROWS, Session};

/// The trampoline: with [`EXEC_ENV`] set (by `Session::spawn`), starts a new session so the
/// pseudo-terminal is the only terminal the UI can find, then becomes `kimi-rs`.
#[test]
fn exec_in_new_session() {
    pty::trampoline(BIN);
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Runs `body` (blocking terminal I/O) next to a scripted model answering `turns`.
fn with_model(turns: Vec<ScriptTurn>, body: impl FnOnce(String) + Send + 'static) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(ScriptServer::start(turns)).unwrap();
    let base_url = server.base_url();
    rt.block_on(rt.spawn_blocking(move || body(base_url)))
        .unwrap();
}

#[test]
fn editor_picker_saves_the_choice_and_ctrl_g_runs_it() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A stand-in for nano: writes the edited prompt.
    script(
        bin.path(),
        "nano",
        "printf 'written by the editor' > \"$1\"",
    );
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let (w, h) = (work.path().to_owned(), home.path().to_owned());
    with_model(Vec::new(), move |url| {
        let env = [("PATH", path.as_str()), ("VISUAL", ""), ("EDITOR", "")];
        let mut s = Session::spawn_env(&w, &h, &url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"/editor\r");
        s.wait_for("the editor picker", |t| {
            t.contains("External editor for Ctrl-G")
                && t.contains("Use $VISUAL / $EDITOR")
                && t.contains("GNU nano")
        });
        s.send(b"nano\r");
        s.wait_for("the confirmation", |t| {
            t.contains("Ctrl-G now opens nano (saved to tui.toml)")
        });
        let saved = std::fs::read_to_string(h.join("tui.toml")).unwrap();
        assert_eq!(saved, "[editor]\ncommand = \"nano\"\n");
        s.send(b"\x07");
        s.wait_for("the edited prompt", |t| {
            t.contains("› written by the editor")
        });
    });
}

#[test]
fn theme_problems_are_named_and_theme_picker_previews_applies_and_saves() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let themes = home.path().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(
        themes.join("ocean.json"),
        r##"{"name":"ocean","displayName":"Deep Ocean","base":"dark","colors":{"primary":"#1e90ff"}}"##,
    )
    .unwrap();
    std::fs::write(
        themes.join("broken.json"),
        r##"{"name":"broken","base":"dark","colors":{"primary":"blue","sparkle":"#ffffff"}}"##,
    )
    .unwrap();
    std::fs::write(home.path().join("tui.toml"), "theme = \"broken\"\n").unwrap();
    let (w, h) = (work.path().to_owned(), home.path().to_owned());
    with_model(Vec::new(), move |url| {
        let env = [("COLORTERM", "truecolor")];
        let mut s = Session::spawn_env(&w, &h, &url, &[], ROWS, COLS, &env);
        s.wait_for("the theme warnings", |t| {
            let flat = t.replace('\n', "");
            flat.contains("broken.json: `colors.primary`: \"blue\" is not a colour")
                && flat.contains("`colors.sparkle`: unknown token")
                && t.contains("ask anything")
        });
        s.send(b"/theme\r");
        s.wait_for("the theme picker", |t| {
            t.contains("Colour theme") && t.contains("Deep Ocean") && t.contains("light")
        });
        // Highlighting a theme previews it; Esc goes back without saving.
        let before = s.raw.len();
        s.send(b"ocean");
        s.wait_raw("the previewed primary colour", |raw| {
            pty::find(&raw[before..], b"38;2;30;144;255").is_some()
        });
        s.send(b"\x1b");
        s.wait_for("the picker closed", |t| !t.contains("Colour theme"));
        let after_esc = s.raw.len();
        s.send(b"z");
        s.wait_for("the typed letter", |t| t.contains("› z"));
        assert!(
            pty::find(&s.raw[after_esc..], b"38;2;30;144;255").is_none(),
            "the preview outlived the picker"
        );
        assert_eq!(
            std::fs::read_to_string(h.join("tui.toml")).unwrap(),
            "theme = \"broken\"\n"
        );
        s.send(b"\x15/theme\r");
        s.wait_for("the theme picker again", |t| t.contains("Colour theme"));
        let before = s.raw.len();
        s.send(b"ocean\r");
        s.wait_for("the confirmation", |t| {
            t.contains("Theme: ocean (saved to tui.toml)")
        });
        // The prompt's marker is drawn in the theme's primary colour, as truecolor.
        s.wait_raw("the new primary colour", |raw| {
            pty::find(&raw[before..], b"38;2;30;144;255").is_some()
        });
        let saved = std::fs::read_to_string(h.join("tui.toml")).unwrap();
        assert_eq!(saved, "theme = \"ocean\"\n");
    });
}

#[test]
fn a_turn_notifies_only_while_unfocused_and_runs_the_hook() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let hook_out = home.path().join("hook.txt");
    std::fs::write(
        home.path().join("tui.toml"),
        format!(
            "[notifications]\ncommand = \"printf '%s|%s\\\\n' \\\"$KIMI_NOTIFICATION_KIND\\\" \\\"$2\\\" >> {}\"\n",
            hook_out.display()
        ),
    )
    .unwrap();
    let turns = vec![
        ScriptTurn::text("first answer"),
        ScriptTurn::text("second answer"),
    ];
    let (w, h) = (work.path().to_owned(), home.path().to_owned());
    with_model(turns, move |url| {
        let env = [("TERM_PROGRAM", "iTerm.app")];
        let mut s = Session::spawn_env(&w, &h, &url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        // The UI asked for focus reports.
        assert!(pty::find(&s.raw, b"\x1b[?1004h").is_some());
        s.send(b"\x1b[I");
        s.send(b"first\r");
        // The turn has ended (idle prompt) before focus goes.
        s.wait_for("the first answer", |t| {
            t.contains("first answer")
                && t.contains("ask anything")
                && !t.contains("esc interrupts")
        });
        s.send(b"\x1b[O");
        s.send(b"second\r");
        s.wait_raw("the notification", |raw| {
            pty::find(raw, b"\x1b]9;kimi-rs").is_some()
                && pty::find(raw, b": second answer\x07").is_some()
        });
        // Exactly one: the focused turn wrote none, and iTerm2 gets no OSC 777.
        let count = s.raw.windows(4).filter(|w| w == b"\x1b]9;").count();
        assert_eq!(count, 1, "{}", String::from_utf8_lossy(&s.raw));
        assert!(pty::find(&s.raw, b"\x1b]777;").is_none());
        wait_until("the hook's line", || {
            std::fs::read_to_string(&hook_out).is_ok_and(|t| t.ends_with('\n'))
        });
        assert_eq!(
            std::fs::read_to_string(&hook_out).unwrap(),
            "turn_ended|second answer\n"
        );
    });
}

fn web_command(home: &Path, work: &Path, url: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["web", "--port", "0", "--no-open"])
        .current_dir(work)
        .env("KIMI_RS_HOME", home)
        .env("HOME", home)
        .env("KIMI_MODEL_NAME", "m")
        .env("KIMI_MODEL_API_KEY", "k")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        .env("KIMI_MODEL_BASE_URL", format!("{url}/v1"));
    cmd
}

/// The session's messages as the web server on `port` reads them (all of it as JSON text).
fn messages_text(port: u16, token: &str, session: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "GET /api/v1/sessions/{session}/messages?page_size=100 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

#[test]
fn web_hands_the_session_to_a_running_server() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let opened = bin.path().join("opened.txt");
    let browser = script(
        bin.path(),
        "browser",
        &format!("printf '%s' \"$1\" > {}", opened.display()),
    );
    let (w, h) = (work.path().to_owned(), home.path().to_owned());
    with_model(vec![ScriptTurn::text("hello back")], move |url| {
        let server = WebServer::start(web_command(&h, &w, &url));
        let page_url = format!("http://127.0.0.1:{}/", server.port);
        let env = [("BROWSER", browser.as_str())];
        let mut s = Session::spawn_env(&w, &h, &url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"hello web\r");
        // Idle again: the prompt invites a new one instead of queueing.
        s.wait_for("the answer", |t| {
            t.contains("hello back") && t.contains("ask anything") && !t.contains("esc interrupts")
        });
        s.send(b"/web\r");
        s.wait_for("the running server", |t| {
            t.contains(&format!("{page_url}  open in this running kimi-rs web"))
                && t.contains("Start kimi-rs web here")
        });
        s.send(b"\r");
        let (status, text) = s.wait_exit("the hand-off");
        assert!(status.success(), "{text}");
        s.assert_restored(&text);
        let flat = text.replace('\n', "");
        assert!(
            flat.contains(&format!("{page_url}#token={}&session=", server.token)),
            "{text}"
        );
        wait_until("the browser launcher", || opened.exists());
        let launched = std::fs::read_to_string(&opened).unwrap();
        let session = launched
            .strip_prefix(&format!("{page_url}#session="))
            .unwrap_or_else(|| panic!("{launched}"));
        // The server can open the session the terminal let go of.
        let messages = messages_text(server.port, &server.token, session);
        assert!(
            messages.contains("hello web") && messages.contains("hello back"),
            "{messages}"
        );
    });
}

#[test]
fn web_starts_a_server_for_the_session_in_the_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let opened = bin.path().join("opened.txt");
    let browser = script(
        bin.path(),
        "browser",
        &format!("printf '%s' \"$1\" > {}", opened.display()),
    );
    let (w, h) = (work.path().to_owned(), home.path().to_owned());
    with_model(vec![ScriptTurn::text("hello back")], move |url| {
        let env = [("BROWSER", browser.as_str())];
        let mut s = Session::spawn_env(&w, &h, &url, &[], ROWS, COLS, &env);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"hello web\r");
        // Idle again: the prompt invites a new one instead of queueing.
        s.wait_for("the answer", |t| {
            t.contains("hello back") && t.contains("ask anything") && !t.contains("esc interrupts")
        });
        s.send(b"/web\r");
        s.wait_for("the choices", |t| t.contains("Start kimi-rs web here"));
        s.send(b"\r");
        let text = s.wait_for("the server", |t| {
            t.contains("kimi-rs web: press Ctrl-C to stop")
        });
        wait_until("the browser launcher", || opened.exists());
        let launched = std::fs::read_to_string(&opened).unwrap();
        let rest = launched
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("{launched}"));
        let (port, session) = rest.split_once("/#session=").unwrap();
        let token = std::fs::read_to_string(h.join("server.token")).unwrap();
        let token = token.trim();
        // The terminal (only) shows the URL with the token.
        let flat = text.replace('\n', "");
        assert!(
            flat.contains(&format!(
                "serving on http://127.0.0.1:{port}/#token={token}&session={session}"
            )),
            "{text}"
        );
        // The served session is the one the terminal had.
        let messages = messages_text(port.parse().unwrap(), token, session);
        assert!(messages.contains("hello web"), "{messages}");
    });
}
