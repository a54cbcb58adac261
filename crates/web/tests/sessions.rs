//! `GET /api/v1/sessions` lists what the session host lists: the sessions of the host's store
//! (here a different home than the server's token home, so a listing read from anywhere else
//! would come out empty), archived ones only when asked for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use kimi_core::host::{SessionExtras, SessionFactory, SessionHost};
use kimi_core::session::{Resume, SessionSetup};
use kimi_store::{Home, SessionStore};
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Lists only: this test never opens a session.
struct ListOnly;

impl SessionFactory for ListOnly {
    fn setup(
        &self,
        _cwd: &Path,
        _resume: &Resume,
        _mcp_servers: Option<&Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        Err("this test host opens no sessions".to_owned())
    }
}

async fn get(addr: std::net::SocketAddr, token: &str, path: &str) -> Value {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        addr.port()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_list_comes_from_the_session_host() {
    let token_home = tempfile::tempdir().unwrap();
    let store_home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let store = SessionStore::new(Home::new(store_home.path()));
    let mut first = store.create(work.path()).unwrap();
    first.state.title = Some("fix the parser".into());
    store.update(&mut first).unwrap();
    let mut archived = store.create(work.path()).unwrap();
    archived.state.archived = true;
    store.update(&mut archived).unwrap();

    let host = Arc::new(SessionHost::new(
        store_home.path().to_owned(),
        Arc::new(ListOnly),
    ));
    let expected: Vec<String> = host
        .list_sessions(None)
        .unwrap()
        .into_iter()
        .filter(|s| !s.archived)
        .map(|s| s.id)
        .collect();
    assert_eq!(expected, vec![first.state.id.clone()]);

    let bound = kimi_web::bind(kimi_web::ServerOptions::new(
        "127.0.0.1",
        0,
        token_home.path(),
    ))
    .await
    .unwrap();
    let (addr, token) = (bound.addr(), bound.token().to_owned());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(bound.serve(host, async {
        let _ = stopped.await;
    }));

    let listed = get(addr, &token, "/api/v1/sessions").await;
    let items = listed["data"]["items"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![first.state.id.as_str()]);
    assert_eq!(items[0]["title"], "fix the parser");
    assert_eq!(
        items[0]["metadata"]["cwd"],
        first.state.cwd.clone().unwrap().as_str()
    );
    assert_eq!(items[0]["workspace_id"], first.workdir_key.as_str());

    let with_archived = get(addr, &token, "/api/v1/sessions?include_archive=true").await;
    assert_eq!(with_archived["data"]["items"].as_array().unwrap().len(), 2);
    let one = get(
        addr,
        &token,
        &format!("/api/v1/sessions/{}", archived.state.id),
    )
    .await;
    assert_eq!(one["data"]["archived"], true);

    stop.send(()).unwrap();
    server.await.unwrap();
}
