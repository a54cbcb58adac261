//! `kimi-rs login`, `kimi-rs logout` and `kimi-rs acp --login` (surface.md §1.3, §5.5): the
//! device-flow login to a Kimi account, which stores the token and writes the managed provider
//! and its models into `config.toml`; logging out removes both. Also the glue that turns a
//! login model into a provider signing its requests with the account token.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use kimi_auth::device::{self, DeviceCode};
use kimi_auth::managed::{self, ManagedModel};
use kimi_auth::{AuthError, Endpoints, Region, Storage, TokenStore};
use kimi_llm::{Provider, ResolvedModel};
use tokio_util::sync::CancellationToken;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The provider of a resolved model: a login model signs with the account token (and the run
/// stops here with "run `kimi-rs login`" when there is none); others use their key.
pub fn provider_for(home: &Path, model: &ResolvedModel) -> anyhow::Result<Arc<dyn Provider>> {
    match kimi_auth::provider::token_manager(home, model, &env)? {
        None => Ok(kimi_llm::build_provider(model)?),
        Some(tokens) => {
            tokens.load()?;
            Ok(Arc::new(kimi_auth::provider::ManagedProvider::new(
                model.clone(),
                tokens,
            )))
        }
    }
}

/// The plan quota lines of the configured Kimi login (`/usage`, `/status`); `None` when no
/// login is configured.
pub async fn plan_usage(
    home: &Path,
    config: &kimi_config::Config,
) -> Option<Result<Vec<String>, String>> {
    let provider = config.providers.get(kimi_auth::PROVIDER_NAME)?;
    let oauth = provider.oauth.as_ref()?;
    let endpoints = Endpoints::configured(
        oauth.oauth_host.as_deref(),
        provider.base_url.as_deref(),
        &env,
    );
    let store = TokenStore::with_storage(home, Storage::from_config(oauth.storage.as_deref()));
    let tokens = kimi_auth::TokenManager::new(store, &oauth.key, &endpoints);
    let fetched = async {
        let token = tokens.access_token(None).await?;
        match kimi_auth::usage::fetch(&endpoints.base_url, &token).await {
            Err(AuthError::Http { status: 401, .. }) => {
                let fresh = tokens.access_token(Some(&token)).await?;
                kimi_auth::usage::fetch(&endpoints.base_url, &fresh).await
            }
            other => other,
        }
    }
    .await;
    Some(
        fetched
            .map(|usage| usage.render(chrono::Utc::now()))
            .map_err(|err| err.to_string()),
    )
}

/// The credential key and storage of the configured managed provider, else the ones a new
/// login would use.
fn configured_login(config: &kimi_config::Config) -> (String, Storage) {
    match config
        .providers
        .get(kimi_auth::PROVIDER_NAME)
        .and_then(|p| p.oauth.as_ref())
    {
        Some(oauth) => (
            oauth.key.clone(),
            Storage::from_config(oauth.storage.as_deref()),
        ),
        None => (
            Endpoints::for_login(Region::default(), &env).credential_key(),
            Storage::File,
        ),
    }
}

/// The storage of the configured managed provider's login (`file` when none is configured).
fn configured_storage(home: &Path) -> Storage {
    configured_login(&kimi_config::Config::load_home(home)).1
}

/// Whether a Kimi login is stored for the configured managed provider (or the endpoints a new
/// login would use): ACP `authenticate`.
pub fn login_status() -> Result<(), String> {
    let home = kimi_store::home_from_env().map_err(|e| e.to_string())?;
    let config = kimi_config::Config::load_home(&home);
    let (key, storage) = configured_login(&config);
    let store = TokenStore::with_storage(&home, storage);
    match store.load(&key) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(AuthError::NotLoggedIn {
            location: store.location(&key).map_err(|e| e.to_string())?,
        }
        .to_string()),
        Err(err) => Err(err.to_string()),
    }
}

/// A browser can be opened: a terminal user on a desktop (never under tests, whose stderr is
/// a pipe), unless `BROWSER=none`.
fn can_open_browser() -> bool {
    if !std::io::stderr().is_terminal() || env("BROWSER").as_deref() == Some("none") {
        return false;
    }
    cfg!(target_os = "macos") || env("DISPLAY").is_some() || env("WAYLAND_DISPLAY").is_some()
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(err) = spawned {
        tracing::info!("could not open a browser with {opener}: {err}");
    }
}

fn show_code(code: &DeviceCode) {
    let mut text = format!(
        "\nTo log in to Kimi Code, open {}\nand enter the code: {}\n",
        code.url(),
        code.user_code
    );
    if let Some(secs) = code.expires_in {
        text.push_str(&format!("The code expires in {secs} s.\n"));
    }
    text.push_str("Waiting for authorization… (Ctrl-C cancels)\n");
    eprint!("{text}");
    if can_open_browser() {
        open_browser(code.url());
    }
}

/// The models of the login, refreshing the token once if the server refuses it.
async fn models_of(
    tokens: &kimi_auth::TokenManager,
    base_url: &str,
) -> Result<Vec<ManagedModel>, AuthError> {
    let token = tokens.access_token(None).await?;
    match managed::fetch_models(base_url, &token).await {
        Err(AuthError::Http { status: 401, .. }) => {
            let fresh = tokens.access_token(Some(&token)).await?;
            managed::fetch_models(base_url, &fresh).await
        }
        other => other,
    }
}

/// The start-up refresh of the managed provider's models (surface.md §5.5): the server's list
/// rewritten into `config.toml`, the user's default model kept. The token is used as stored
/// and never refreshed here (the session's first request does that, and a refresh token is
/// single-use): `Ok(None)` when there is no login or the token is due for a refresh, so the
/// next start does it.
pub async fn refresh_managed_models(
    home: &Path,
    config: &kimi_config::Config,
) -> Result<Option<managed::Applied>, AuthError> {
    let Some(provider) = config.providers.get(kimi_auth::PROVIDER_NAME) else {
        return Ok(None);
    };
    let Some(oauth) = provider.oauth.as_ref() else {
        return Ok(None);
    };
    let endpoints = Endpoints::configured(
        oauth.oauth_host.as_deref(),
        provider.base_url.as_deref(),
        &env,
    );
    let storage = Storage::from_config(oauth.storage.as_deref());
    let Some(token) = TokenStore::with_storage(home, storage.clone()).load(&oauth.key)? else {
        return Ok(None);
    };
    if token.needs_refresh(kimi_auth::store::now_secs()) {
        tracing::info!("model list refresh deferred: the login's token is due for a refresh");
        return Ok(None);
    }
    let models = managed::fetch_models(&endpoints.base_url, &token.access_token).await?;
    managed::edit_config(&home.join("config.toml"), |doc| {
        managed::apply(doc, &endpoints, &oauth.key, &storage, &models, true)
    })
    .map(Some)
}

/// Writes the managed provider for `endpoints` into `config.toml` from the server's models.
pub async fn provision(
    home: &Path,
    endpoints: &Endpoints,
    key: &str,
    storage: &Storage,
    keep_default: bool,
) -> Result<managed::Applied, AuthError> {
    let store = TokenStore::with_storage(home, storage.clone());
    let tokens = kimi_auth::TokenManager::new(store, key, endpoints);
    let models = models_of(&tokens, &endpoints.base_url).await?;
    managed::edit_config(&home.join("config.toml"), |doc| {
        managed::apply(doc, endpoints, key, storage, &models, keep_default)
    })
}

/// A finished device login.
#[derive(Debug)]
pub struct LoggedIn {
    pub applied: managed::Applied,
    /// Where the token went ("at <file>" or "in the OS keyring (…)").
    pub location: String,
    /// Things the user should know (a copy in the other storage that could not be removed).
    pub notes: Vec<String>,
}

/// The device login: asks for a code, hands it to `on_code` (to show it), waits for the
/// approval (or `cancel`), stores the token and sets up the managed provider. `storage`
/// `None` keeps what config.toml's login says (else a file). An unusable keyring fails here,
/// before any code is shown.
pub async fn login_flow(
    home: &Path,
    endpoints: &Endpoints,
    storage: Option<Storage>,
    cancel: &CancellationToken,
    on_code: impl FnOnce(&DeviceCode),
) -> Result<LoggedIn, AuthError> {
    let previous = configured_storage(home);
    let storage = storage.unwrap_or_else(|| previous.clone());
    let key = endpoints.credential_key();
    let store = TokenStore::with_storage(home, storage.clone());
    // An unknown storage or a missing keyring is reported now, not after the user approved.
    store.check(&key)?;
    let code = tokio::select! {
        code = device::request_code(endpoints) => code?,
        () = cancel.cancelled() => return Err(AuthError::Cancelled),
    };
    on_code(&code);
    let token = device::wait_for_token(endpoints, &code, cancel).await?;
    let location = store.save(&key, &token)?;
    tracing::info!("Kimi Code login stored {location}");
    let mut notes = Vec::new();
    // A login moved to another storage leaves no stale copy behind in the old one. The file
    // is always looked for (removing it is harmless); the keyring only when config.toml said
    // the login was there.
    let old = match (&storage, &previous) {
        (Storage::Keyring, _) => Some(Storage::File),
        (Storage::File, Storage::Keyring) => Some(Storage::Keyring),
        _ => None,
    };
    if let Some(old) = old {
        let old_store = TokenStore::with_storage(home, old);
        match old_store.remove(&key) {
            Ok(true) => tracing::info!(
                "removed the previous copy of the login {}",
                old_store.location(&key).unwrap_or_default()
            ),
            Ok(false) => {}
            Err(err) => {
                tracing::warn!("could not remove the previous copy of the login: {err}");
                notes.push(format!(
                    "The previous copy of the login could not be removed: {err}"
                ));
            }
        }
    }
    let applied = provision(home, endpoints, &key, &storage, false)
        .await
        .map_err(|err| {
            AuthError::Config(format!(
                "logged in (token stored {location}), but the managed provider could not be set up: {err}. Run `kimi-rs login` again"
            ))
        })?;
    Ok(LoggedIn {
        applied,
        location,
        notes,
    })
}

/// What a finished login tells the user.
pub fn logged_in_message(done: &LoggedIn) -> String {
    let mut text = format!(
        "Logged in to Kimi Code (token stored {}). {} model(s) added to config.toml; the default model is now {}.",
        done.location,
        done.applied.aliases.len(),
        done.applied.default_model
    );
    for note in &done.notes {
        text.push(' ');
        text.push_str(note);
    }
    text
}

/// `kimi-rs login [--region …] [--storage …]` (and `kimi-rs acp --login`): exit 0 logged in,
/// 1 otherwise.
pub fn login(region: Option<Region>, storage: Option<Storage>) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let endpoints = Endpoints::for_login(region.unwrap_or_default(), &env);
    tracing::info!(
        "login against {} (API {})",
        endpoints.oauth_host,
        endpoints.base_url
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        login_flow(&home, &endpoints, storage, &cancel, show_code).await
    });
    match outcome {
        Ok(applied) => {
            eprintln!("{}", logged_in_message(&applied));
            Ok(0)
        }
        Err(AuthError::Cancelled) => {
            eprintln!("Login cancelled.");
            Ok(1)
        }
        Err(err) => {
            tracing::warn!("login failed: {err}");
            eprintln!("Login failed: {err}");
            Ok(1)
        }
    }
}

/// `kimi-rs login --api-key KEY [--region …] [--base-url URL]`: Kimi Platform. The key (`-`:
/// read from stdin, so it stays out of the shell history) is checked against the platform's
/// model list and written with its `kimi-k*` models into `config.toml`. Exit 0 on success, 1
/// when the platform refuses the key.
pub fn platform_login(
    region: Option<Region>,
    api_key: &str,
    base_url: Option<&str>,
) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let region = region.unwrap_or_default();
    let key = if api_key == "-" {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("cannot read the API key from stdin")?;
        line.trim().to_owned()
    } else {
        api_key.trim().to_owned()
    };
    if key.is_empty() {
        eprintln!(
            "Login failed: the API key is empty. Make one at https://{} and pass it with --api-key",
            kimi_auth::platform::console(region)
        );
        return Ok(1);
    }
    let base = base_url
        .map(|u| u.trim().trim_end_matches('/').to_owned())
        .unwrap_or_else(|| kimi_auth::platform::base_url(region).to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let models = match runtime.block_on(kimi_auth::platform::fetch_models(&base, &key)) {
        Ok(models) => models,
        Err(AuthError::Http { status, .. }) if status == 401 || status == 403 => {
            eprintln!(
                "Login failed: {base} refused the API key (HTTP {status}). Check the key at https://{}",
                kimi_auth::platform::console(region)
            );
            return Ok(1);
        }
        Err(err) => {
            tracing::warn!("platform login failed: {err}");
            eprintln!("Login failed: {err}");
            return Ok(1);
        }
    };
    let applied = managed::edit_config(&home.join("config.toml"), |doc| {
        kimi_auth::platform::apply(doc, &base, &key, &models)
    })?;
    eprintln!(
        "Logged in to Kimi Platform ({}). {} model(s) added to config.toml as provider `{}`; the default model is now {}.",
        kimi_auth::platform::console(region),
        applied.aliases.len(),
        kimi_auth::platform::PROVIDER,
        applied.default_model
    );
    Ok(0)
}

/// `kimi-rs logout`: removes the stored token and the managed provider from `config.toml`.
pub fn logout() -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let config = kimi_config::Config::load_home(&home);
    let (key, storage) = configured_login(&config);
    let store = TokenStore::with_storage(&home, storage);
    let location = store.location(&key)?;
    let had_token = store.remove(&key)?;
    let removed = managed::edit_config(&home.join("config.toml"), |doc| Ok(managed::remove(doc)))?;
    if !had_token && !removed.provider {
        eprintln!("Not logged in to Kimi Code; nothing to remove.");
        return Ok(0);
    }
    let mut done = Vec::new();
    if had_token {
        done.push(format!("removed the token stored {location}"));
    }
    if removed.provider {
        done.push(format!(
            "removed the managed provider and {} model(s) from config.toml",
            removed.aliases.len()
        ));
    }
    if removed.default_cleared {
        done.push("default_model is unset".to_owned());
    }
    eprintln!("Logged out of Kimi Code: {}.", done.join("; "));
    Ok(0)
}
