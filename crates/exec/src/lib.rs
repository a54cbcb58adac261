//! Execution environments beyond this machine: the exec protocol ([`protocol`]), the executor
//! loop behind `kimi-rs exec-server` ([`server`]), the multiplexed pipelined client that
//! implements `kimi_tools::Environment` over it ([`client`]), and the launchers that reach an
//! executor through `ssh`, `docker exec` or any command ([`launch`]).

pub mod client;
mod install_docker;
pub mod launch;
pub mod pool;
pub mod protocol;
pub mod server;

pub use client::{Connection, RemoteEnvironment};
pub use launch::{ConnectError, connect};
pub use pool::{PooledEnvironment, shared};
