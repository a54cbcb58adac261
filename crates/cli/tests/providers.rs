//! `kimi-rs provider …` on the real binary: the bundled catalog lists vendors and models,
//! `catalog add` writes a provider and its models (the next `-p` run uses them against the
//! scripted server), `list` and `remove` manage them, `--url` reads another catalog, `add`
//! imports a registry, and proprietary protocols are refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Run};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use serde_json::json;

fn bare(fixture: &Fixture, args: &[&str]) -> Run {
    let mut cmd = fixture.command(args);
    for var in [
        "KIMI_MODEL_NAME",
        "KIMI_MODEL_API_KEY",
        "KIMI_MODEL_PROVIDER_TYPE",
        "KIMI_MODEL_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env_remove("KIMI_REGISTRY_API_KEY");
    Run::from(cmd.output().unwrap())
}

#[test]
fn catalog_add_list_and_remove_a_provider_that_the_next_run_uses() {
    let fixture = Fixture::new(
        (ProviderType::OpenAi, "openai"),
        vec![ScriptTurn::text("hi from deepseek")],
    );
    let vendors = bare(&fixture, &["provider", "catalog", "list"]);
    assert_eq!(vendors.code, Some(0), "{vendors:?}");
    assert!(
        vendors.stdout.contains("moonshotai  Moonshot AI  openai"),
        "{vendors:?}"
    );
    let models = bare(
        &fixture,
        &[
            "provider", "catalog", "list", "deepseek", "--filter", "chat",
        ],
    );
    assert!(models.stdout.contains("deepseek-chat"), "{models:?}");
    assert!(!models.stdout.contains("deepseek-reasoner"), "{models:?}");

    std::fs::write(
        fixture.home.path().join("config.toml"),
        "# mine\n[loop_control]\nmax_steps_per_turn = 50\n",
    )
    .unwrap();
    let base = format!("{}/v1", fixture.server.base_url());
    let added = bare(
        &fixture,
        &[
            "provider",
            "catalog",
            "add",
            "deepseek",
            "--api-key",
            "sk-ds",
            "--default-model",
            "deepseek-chat",
            "--base-url",
            &base,
        ],
    );
    assert_eq!(added.code, Some(0), "{added:?}");
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("# mine\n[loop_control]\nmax_steps_per_turn = 50\n"),
        "{config}"
    );
    assert!(
        config.contains("default_model = \"deepseek/deepseek-chat\""),
        "{config}"
    );

    let answer = bare(&fixture, &["-p", "hello"]);
    assert_eq!(answer.code, Some(0), "{answer:?}");
    assert!(answer.stdout.contains("hi from deepseek"), "{answer:?}");
    let request = &fixture.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer sk-ds"));
    assert_eq!(request.body["model"], "deepseek-chat");

    let list = bare(&fixture, &["provider", "list"]);
    assert!(
        list.stdout.contains("deepseek  openai  2 model(s)"),
        "{list:?}"
    );
    let removed = bare(&fixture, &["provider", "remove", "deepseek"]);
    assert_eq!(removed.code, Some(0), "{removed:?}");
    assert!(
        removed
            .stdout
            .contains("2 model(s); default_model is unset"),
        "{removed:?}"
    );
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("deepseek"), "{config}");
    let again = bare(&fixture, &["provider", "remove", "deepseek"]);
    assert_eq!(again.code, Some(1), "{again:?}");
}

#[test]
fn a_local_catalog_a_registry_and_refusals() {
    let fixture = Fixture::new((ProviderType::OpenAi, "openai"), Vec::new());
    let catalog = fixture.home.path().join("api.json");
    std::fs::write(
        &catalog,
        json!({"acme": {"name": "Acme", "api": "https://acme.invalid/v1", "models": {
            "a1": {"name": "A1", "tool_call": true, "limit": {"context": 1000, "output": 100}},
            "old": {"name": "Old", "status": "deprecated", "limit": {"context": 1000}}}}})
        .to_string(),
    )
    .unwrap();
    let url = catalog.display().to_string();
    let listed = bare(
        &fixture,
        &["provider", "catalog", "list", "acme", "--url", &url],
    );
    assert!(
        listed.stdout.contains("a1  A1  context 1000  tool_use"),
        "{listed:?}"
    );
    assert!(!listed.stdout.contains("old"), "{listed:?}");

    let no_key = bare(&fixture, &["provider", "add", &url]);
    assert_eq!(no_key.code, Some(1), "{no_key:?}");
    assert!(
        no_key.stderr.contains("KIMI_REGISTRY_API_KEY"),
        "{no_key:?}"
    );
    let added = bare(&fixture, &["provider", "add", &url, "--api-key", "k"]);
    assert_eq!(added.code, Some(0), "{added:?}");
    let list = bare(&fixture, &["provider", "list"]);
    assert!(
        list.stdout
            .contains(&format!("acme  openai  1 model(s)  from {url}")),
        "{list:?}"
    );

    let bedrock = bare(
        &fixture,
        &[
            "provider",
            "catalog",
            "add",
            "amazon-bedrock",
            "--api-key",
            "k",
        ],
    );
    assert_eq!(bedrock.code, Some(1), "{bedrock:?}");
    assert!(bedrock.stderr.contains("does not support"), "{bedrock:?}");
    let config = std::fs::read_to_string(fixture.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("bedrock"), "{config}");
}
