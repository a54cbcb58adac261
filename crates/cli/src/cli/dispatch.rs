//! `kimi-rs` after its command line is parsed: logging, the sandbox re-exec, and each
//! subcommand (or the TUI, or print mode) run, with the exit code it ends with.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use super::{
    CatalogCommand, Cli, Command, DebugCommand, DoctorTarget, ProviderCommand, SessionsCommand,
};
use crate::conformance;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::ExecServer) = cli.command {
        // The executor reads no configuration and logs nothing on the target.
        return crate::environments::exec_server();
    }
    let logs = start_logging(&cli);
    if let Ok(exe) = std::env::current_exe() {
        kimi_core::session::register_sandbox_helper(exe);
    }
    if cli.command.is_none()
        && let Err(message) = cli.run.validate()
    {
        eprintln!("kimi-rs: {message}");
        return ExitCode::FAILURE;
    }
    match cli.command {
        Some(Command::Demo { dir }) => match crate::demo::run(dir) {
            Ok(code) => ExitCode::from(code),
            Err(err) => {
                eprintln!("kimi-rs: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some(Command::Login {
            region,
            api_key: Some(api_key),
            base_url,
            ..
        }) => exit_code(crate::accounts::platform_login(
            region.map(Into::into),
            &api_key,
            base_url.as_deref(),
        )),
        Some(Command::Acp {
            login: true,
            region,
        }) => exit_code(crate::accounts::login(region.map(Into::into), None)),
        Some(Command::Login {
            region,
            api_key: None,
            storage,
            ..
        }) => exit_code(crate::accounts::login(
            region.map(Into::into),
            storage.map(Into::into),
        )),
        Some(Command::Logout) => exit_code(crate::accounts::logout()),
        Some(Command::Trust { dir, untrust, list }) => {
            exit_code(crate::trust::run(dir, untrust, list))
        }
        Some(Command::ExecServer) => crate::environments::exec_server(),
        Some(Command::Upgrade {
            manifest_url,
            check,
        }) => exit_code(crate::upgrade::run(manifest_url, check)),
        Some(Command::Plugin { command }) => exit_code(crate::plugins::run(command)),
        Some(Command::Mcp { command }) => {
            exit_code(crate::mcp_login::run(command, cli.run.trust_workspace))
        }
        Some(Command::Provider { command }) => exit_code(match command {
            ProviderCommand::Add { url, api_key } => crate::providers::add(&url, api_key),
            ProviderCommand::Remove { id } => crate::providers::remove(&id),
            ProviderCommand::List { json } => crate::providers::list(json),
            ProviderCommand::Catalog {
                command:
                    CatalogCommand::List {
                        id,
                        filter,
                        url,
                        json,
                    },
            } => crate::providers::catalog_list(
                id.as_deref(),
                filter.as_deref(),
                url.as_deref(),
                json,
            ),
            ProviderCommand::Catalog {
                command:
                    CatalogCommand::Add {
                        id,
                        api_key,
                        default_model,
                        base_url,
                        url,
                    },
            } => crate::providers::catalog_add(
                &id,
                api_key,
                default_model.as_deref(),
                base_url.as_deref(),
                url.as_deref(),
            ),
        }),
        Some(Command::Acp { login: false, .. }) => match crate::acp::run(&cli.run) {
            Ok(code) => ExitCode::from(code),
            Err(err) => {
                eprintln!("kimi-rs: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some(Command::Web {
            port,
            host,
            no_open,
            allow_remote_terminals,
        }) => match crate::web::run(&cli.run, &host, port, no_open, None, allow_remote_terminals) {
            Ok(code) => ExitCode::from(code),
            Err(err) => {
                eprintln!("kimi-rs: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some(Command::Doctor { target }) => {
            let target = match target {
                None => crate::doctor::Target::All,
                Some(DoctorTarget::Config { path }) => crate::doctor::Target::Config(path),
                Some(DoctorTarget::Tui { path }) => crate::doctor::Target::Tui(path),
            };
            match crate::doctor::run(&target) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Export {
            session_id,
            output,
            yes,
            debug_zip,
        }) => {
            let request = crate::export::ExportRequest {
                session_id,
                output,
                yes,
                debug: debug_zip,
            };
            match crate::export::run(&request) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Import {
            from,
            with_credentials,
        }) => {
            let request = crate::import::ImportRequest {
                from,
                with_credentials,
            };
            match crate::import::run(&request) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Migrate {
            from,
            with_credentials,
        }) => exit_code(crate::import::legacy::run(
            &crate::import::legacy::MigrateRequest {
                from,
                with_credentials,
            },
        )),
        Some(Command::Sessions { all, json, command }) => {
            let result = match command {
                Some(SessionsCommand::Recover { session_id }) => {
                    crate::sessions::recover(&session_id)
                }
                Some(SessionsCommand::Prune {
                    older_than,
                    max_total_size,
                    dry_run,
                }) => crate::sessions::prune(&crate::sessions::PruneRequest {
                    older_than,
                    max_total_size,
                    dry_run,
                }),
                None => crate::sessions::list(all, json),
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Rewind {
            session,
            turns,
            files,
            conversation,
            force,
        }) => {
            let scope = match (files, conversation) {
                (true, _) => kimi_protocol::checkpoint::RewindScope::Files,
                (false, true) => kimi_protocol::checkpoint::RewindScope::Conversation,
                (false, false) => kimi_protocol::checkpoint::RewindScope::Both,
            };
            let args = crate::rewind::RewindArgs {
                session_id: session,
                turns,
                scope,
                force,
            };
            match crate::rewind::run(&args) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Vis {
            session,
            host,
            port,
            no_open,
        }) => exit_code(crate::vis::run(&crate::vis::VisArgs {
            session,
            host,
            port,
            open: !no_open,
        })),
        Some(Command::Sandbox { status: true, .. }) => sandbox_status(),
        Some(Command::Sandbox {
            status: false,
            command,
        }) => run_sandboxed(&command, logs.as_ref()),
        Some(Command::SandboxExec { args }) => {
            use kimi_core::permission::sandbox::{exec_sandboxed, parse_helper_args};
            let err = match parse_helper_args(&args) {
                Ok((policy, argv)) => exec_sandboxed(&policy, &argv),
                Err(err) => err,
            };
            eprintln!("kimi-rs: {err}");
            ExitCode::from(126)
        }
        Some(Command::Debug {
            command: DebugCommand::Conformance { dir, area },
        }) => run_conformance(&dir, area.as_deref()),
        None => match &cli.run.prompt {
            Some(prompt) => match crate::run::print_mode(&cli.run, prompt) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::from(crate::run::EXIT_FAILED)
                }
            },
            None => match crate::interactive::run(&cli.run) {
                Ok(code) => ExitCode::from(code),
                Err(err) => {
                    eprintln!("kimi-rs: {err:#}");
                    ExitCode::FAILURE
                }
            },
        },
    }
}

fn exit_code(outcome: anyhow::Result<u8>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("kimi-rs: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logging for every entry point but the sandbox helper (it runs inside the sandbox, where
/// the home is read-only, and execs the command right away).
fn start_logging(cli: &Cli) -> Option<crate::logging::FlushGuard> {
    let mode = match &cli.command {
        Some(Command::SandboxExec { .. } | Command::ExecServer) => return None,
        Some(Command::Demo { .. }) => "demo",
        Some(Command::Sandbox { .. }) => "sandbox",
        Some(Command::Acp { login: true, .. }) => "login",
        Some(Command::Acp { .. }) => "acp",
        Some(Command::Login { .. }) => "login",
        Some(Command::Logout) => "logout",
        Some(Command::Provider { .. }) => "provider",
        Some(Command::Plugin { .. }) => "plugin",
        Some(Command::Mcp { .. }) => "mcp",
        Some(Command::Upgrade { .. }) => "upgrade",
        Some(Command::Web { .. }) => "web",
        Some(Command::Doctor { .. }) => "doctor",
        Some(Command::Export { .. }) => "export",
        Some(Command::Sessions { .. }) => "sessions",
        Some(Command::Import { .. }) => "import",
        Some(Command::Migrate { .. }) => "migrate",
        Some(Command::Rewind { .. }) => "rewind",
        Some(Command::Vis { .. }) => "vis",
        Some(Command::Trust { .. }) => "trust",
        Some(Command::Debug { .. }) => "debug",
        None if cli.run.prompt.is_some() => "print",
        None => "tui",
    };
    // ACP's stdio belongs to the editor: not even the notice goes there.
    let notices = !matches!(cli.command, Some(Command::Acp { login: false, .. }));
    crate::logging::init_from_env(mode, cli.log_level, notices)
}

/// `kimi-rs sandbox --status`: the kernel report; fails when the sandbox cannot run at all.
fn sandbox_status() -> ExitCode {
    use kimi_core::permission::sandbox::{SandboxSupport, kernel_support};
    let support = kernel_support();
    print!("{}", support.report());
    match support.support() {
        SandboxSupport::Available => ExitCode::SUCCESS,
        SandboxSupport::Unavailable { .. } => ExitCode::FAILURE,
    }
}

/// `kimi-rs sandbox -- CMD`: restricts this process and execs the command. `logs` is flushed
/// first because `exec` ends the log writer's thread without flushing.
fn run_sandboxed(
    command: &[std::ffi::OsString],
    logs: Option<&crate::logging::FlushGuard>,
) -> ExitCode {
    use kimi_core::permission::Workspace;
    use kimi_core::permission::sandbox::{
        SandboxPolicy, SandboxSupport, exec_sandboxed, kernel_support,
    };
    let support = kernel_support();
    tracing::info!("{}", support.log_line());
    if let SandboxSupport::Unavailable { reason } = support.support() {
        eprintln!("kimi-rs: the OS sandbox is not available here: {reason}");
        return ExitCode::FAILURE;
    }
    for warning in support.missing() {
        tracing::warn!("{warning}");
        eprintln!("kimi-rs: {warning}");
    }
    let (cwd, home) = match (std::env::current_dir(), kimi_store::home_from_env()) {
        (Ok(cwd), Ok(home)) => (cwd, home),
        (Err(err), _) => {
            eprintln!("kimi-rs: cannot read the current directory: {err}");
            return ExitCode::FAILURE;
        }
        (_, Err(err)) => {
            eprintln!("kimi-rs: {err}");
            return ExitCode::FAILURE;
        }
    };
    let workspace = Workspace::new(&cwd, &[], std::env::home_dir().as_deref());
    let policy = SandboxPolicy::workspace_write(&workspace, &[std::env::temp_dir()], &home);
    if let Some(logs) = logs {
        logs.flush();
    }
    let err = exec_sandboxed(&policy, command);
    eprintln!("kimi-rs: {err}");
    ExitCode::FAILURE
}

fn run_conformance(dir: &std::path::Path, area: Option<&str>) -> ExitCode {
    let report = match conformance::run_dir(dir, area) {
        Ok(report) => report,
        Err(err) => {
            eprintln!("kimi-rs: {err}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = report.write(&mut stdout).and_then(|()| stdout.flush()) {
        eprintln!("kimi-rs: cannot write the report: {err}");
        return ExitCode::from(2);
    }
    if report.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
