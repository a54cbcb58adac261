//! Opening a URL in the user's browser: `$BROWSER` when set (the usual convention: a
//! `:`-separated list of commands whose first entry is used, `%s` standing for the URL, else
//! the URL appended), otherwise `open` on macOS and `xdg-open` elsewhere.

use std::process::{Command, Stdio};

/// The command that opens `url`; `browser` is `$BROWSER` as the caller read it.
pub fn command(url: &str, browser: Option<&str>) -> Command {
    let chosen = browser
        .and_then(|b| b.split(':').map(str::trim).find(|c| !c.is_empty()))
        .map(str::to_owned);
    let mut command = match chosen {
        Some(line) => {
            let mut words = line.split_whitespace();
            let mut command = Command::new(words.next().unwrap_or("xdg-open"));
            let mut placed = false;
            for word in words {
                if word.contains("%s") {
                    placed = true;
                    command.arg(word.replace("%s", url));
                } else {
                    command.arg(word);
                }
            }
            if !placed {
                command.arg(url);
            }
            command
        }
        None => {
            let mut command = Command::new(if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            });
            command.arg(url);
            command
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Starts the browser on `url`; the launcher is reaped in the background.
pub fn open(url: &str, browser: Option<&str>) -> Result<(), String> {
    let mut command = command(url, browser);
    match command.spawn() {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            Ok(())
        }
        Err(err) => Err(format!("{:?}: {err}", command.get_program())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn browser_variable_wins_with_placeholder_or_appended_url() {
        assert_eq!(
            argv(&command("http://h/", Some("firefox --new-tab:chromium"))),
            ["firefox", "--new-tab", "http://h/"]
        );
        assert_eq!(
            argv(&command("http://h/", Some("w3m -o x=%s"))),
            ["w3m", "-o", "x=http://h/"]
        );
        let default = argv(&command("http://h/", None));
        assert_eq!(default[1], "http://h/");
    }
}
