//! `/feedback` and `/experiments` (issue #17) on real components: a session the binary wrote
//! with the scripted model, a loopback HTTP endpoint that receives the bundle, and config.toml
//! files read by the binary. The TUI only forwards the typed command to these functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{FORMATS, Fixture};
use kimi_cli::feedback::{FeedbackRequest, run};
use kimi_llm::scripted::ScriptTurn;
use kimi_store::{Home, SessionStore};
use pretty_assertions::assert_eq;

type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A loopback endpoint answering `status`, keeping each body with its content type.
async fn endpoint(status: StatusCode) -> (String, Received) {
    let received: Received = Arc::default();
    let sink = received.clone();
    let app = Router::new().route(
        "/feedback",
        post(move |headers: HeaderMap, body: Bytes| {
            let sink = sink.clone();
            async move {
                let kind = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                sink.lock().unwrap().push((kind, body.to_vec()));
                (status, "thanks")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/feedback", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn zip_entries(bytes: &[u8]) -> Vec<(String, String)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).unwrap();
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            (file.name().unwrap().into_owned(), text)
        })
        .collect()
}

#[test]
fn feedback_bundles_the_session_and_sends_it_only_to_a_configured_endpoint() {
    let fx = Fixture::new(FORMATS[0], vec![ScriptTurn::text("hello")]);
    let cwd = fx.cwd();
    std::fs::write(cwd.join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[providers.p]\ntype = \"openai\"\napi_key = \"sk-very-secret\"\n",
    )
    .unwrap();
    let first = fx.run(&["-p", "hi there"]);
    assert_eq!(first.code, Some(0), "{first:?}");
    let id = fx.session_ids().pop().unwrap();
    let store = SessionStore::new(Home::new(fx.home.path()));
    let key = store.locate(&id).unwrap();
    let dir = store.home().session_dir(&key, &id);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let request = FeedbackRequest {
        message: "the answer was wrong".to_owned(),
        with_code: true,
    };

    // Configured: the bundle is POSTed as a ZIP, and a copy kept.
    let (url, received) = rt.block_on(endpoint(StatusCode::OK));
    let outcome = rt
        .block_on(run(&request, &dir, &id, fx.home.path(), &cwd, Some(&url)))
        .unwrap();
    assert_eq!(outcome.sent_to.as_deref(), Some(url.as_str()));
    assert!(
        outcome
            .describe()
            .starts_with(&format!("Feedback sent to {url}"))
    );
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "application/zip");
    assert_eq!(got[0].1, std::fs::read(&outcome.path).unwrap());
    let entries = zip_entries(&got[0].1);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "feedback.json",
        "codebase/main.rs",
        "kimi-rs-home/config.toml",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    assert!(
        names.iter().any(|n| n.ends_with("wire.jsonl")),
        "the journal is in the bundle: {names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("kimi-rs-home/logs/")),
        "the global log is in the bundle: {names:?}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &entries
            .iter()
            .find(|(n, _)| n == "feedback.json")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(report["message"], "the answer was wrong");
    assert_eq!(report["sessionId"], serde_json::json!(id));
    assert!(
        entries
            .iter()
            .all(|(_, text)| !text.contains("sk-very-secret")),
        "secrets are redacted"
    );

    // Not configured: saved only, and the user is told where.
    let request = FeedbackRequest {
        message: "again".to_owned(),
        with_code: false,
    };
    let outcome = rt
        .block_on(run(&request, &dir, &id, fx.home.path(), &cwd, None))
        .unwrap();
    assert_eq!(outcome.sent_to, None);
    assert!(outcome.path.is_file());
    let text = outcome.describe();
    assert!(
        text.contains(&outcome.path.display().to_string())
            && text.contains("nothing was sent: no [feedback] endpoint"),
        "{text}"
    );
    assert!(
        !zip_entries(&std::fs::read(&outcome.path).unwrap())
            .iter()
            .any(|(n, _)| n.starts_with("codebase/")),
        "no codebase without --code"
    );
    assert_eq!(received.lock().unwrap().len(), 1, "nothing more was sent");

    // An endpoint that refuses: the error names the saved file and the answer.
    let (url, _) = rt.block_on(endpoint(StatusCode::INTERNAL_SERVER_ERROR));
    let err = rt
        .block_on(run(&request, &dir, &id, fx.home.path(), &cwd, Some(&url)))
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("is saved at") && text.contains("500"),
        "{text}"
    );
}

/// Tool names the model was offered (OpenAI chat shape).
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn experiments_switched_in_config_toml_take_effect_and_unsupported_flags_are_refused() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::text("one"),
            ScriptTurn::text("two"),
            ScriptTurn::text("three"),
        ],
    );
    let config = fx.home.path().join("config.toml");
    let run = fx.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        offered_tools(&fx.requests()[0].body).contains(&"WaitFor".to_owned()),
        "wait_for is on by default"
    );

    // What `/experiments wait_for off` does: plan against the current flags, then write.
    let loaded = kimi_config::Config::read(&config);
    let (id, on) = kimi_cli::experiments::plan(&loaded, "wait_for off").unwrap();
    kimi_cli::experiments::write(&config, id, on).unwrap();
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[experimental]\nwait_for = false\n"
    );
    let run = fx.run(&["-p", "hi again"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        !run.stderr.contains("not supported"),
        "a flag kimi-rs acts on is not reported: {run:?}"
    );
    assert!(
        !offered_tools(&fx.requests()[1].body).contains(&"WaitFor".to_owned()),
        "wait_for off takes WaitFor away"
    );
    let listed = kimi_cli::experiments::list(&kimi_config::Config::read(&config));
    assert!(
        listed.contains("off wait_for") && listed.contains("[config.toml]"),
        "{listed}"
    );
    // The flag's variable wins over the file.
    let out = fx
        .command(&["-p", "third"])
        .env("KIMI_CODE_EXPERIMENTAL_WAIT_FOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(offered_tools(&fx.requests()[2].body).contains(&"WaitFor".to_owned()));
    let err = kimi_cli::experiments::plan(&loaded, "tower on").unwrap_err();
    assert!(err.to_string().contains("does not act on `tower`"), "{err}");
}
