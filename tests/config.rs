//! Binding: the configs `bind` refuses (each naming its field), a taken
//! port, and no runtime.

mod support;

use std::time::Duration;

use embacle_tool_host::{ToolHost, ToolHostConfig};
use support::*;

/// Config values the host refuses are errors from bind, each naming the
/// field it refuses; zero durations among them (a zero body timeout would
/// refuse every body, a zero call limit every call, a zero keep-alive spin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs() {
    let d = ToolHostConfig::default;
    let bad: Vec<(ToolHostConfig, &str)> = vec![
        (
            ToolHostConfig {
                server_name: String::new(),
                ..d()
            },
            "server_name",
        ),
        (
            ToolHostConfig {
                server_name: "has space".into(),
                ..d()
            },
            "server_name",
        ),
        (
            ToolHostConfig {
                bind_addr: "0.0.0.0".parse().unwrap(),
                ..d()
            },
            "bind_addr",
        ),
        (
            ToolHostConfig {
                bind_addr: "192.168.1.1".parse().unwrap(),
                ..d()
            },
            "bind_addr",
        ),
        (
            ToolHostConfig {
                max_body_bytes: 0,
                ..d()
            },
            "max_body_bytes",
        ),
        (
            ToolHostConfig {
                max_connections: 0,
                ..d()
            },
            "max_connections",
        ),
        (
            ToolHostConfig {
                max_sessions: 0,
                ..d()
            },
            "max_sessions",
        ),
        (
            ToolHostConfig {
                max_header_bytes: 100,
                ..d()
            },
            "max_header_bytes",
        ),
        (
            ToolHostConfig {
                max_batch_len: 0,
                ..d()
            },
            "max_batch_len",
        ),
        (
            ToolHostConfig {
                max_parsed_bytes: 0,
                ..d()
            },
            "max_parsed_bytes",
        ),
        (
            ToolHostConfig {
                header_read_timeout: Duration::ZERO,
                ..d()
            },
            "header_read_timeout",
        ),
        (
            ToolHostConfig {
                body_read_timeout: Duration::ZERO,
                ..d()
            },
            "body_read_timeout",
        ),
        (
            ToolHostConfig {
                call_timeout: Some(Duration::ZERO),
                ..d()
            },
            "call_timeout",
        ),
        (
            ToolHostConfig {
                sse_keep_alive: Duration::ZERO,
                ..d()
            },
            "sse_keep_alive",
        ),
        (
            ToolHostConfig {
                write_stall_timeout: Duration::ZERO,
                ..d()
            },
            "write_stall_timeout",
        ),
    ];
    for (config, field) in bad {
        let err = within(ToolHost::bind(config.clone())).await.unwrap_err();
        assert!(err.is_invalid_config(), "{config:?}");
        assert!(
            err.to_string().contains(field),
            "{err} does not name {field}"
        );
    }
    // `None` disables the call limit; it is not a zero.
    let host = within(ToolHost::bind(ToolHostConfig {
        call_timeout: None,
        ..d()
    }))
    .await;
    assert!(host.is_ok());
}

/// Binding a taken port is a bind error carrying the I/O cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_in_use() {
    let first = host().await;
    let err = within(ToolHost::bind(ToolHostConfig {
        port: first.local_addr().port(),
        ..ToolHostConfig::default()
    }))
    .await
    .unwrap_err();
    assert!(err.is_bind());
    assert!(std::error::Error::source(&err).is_some());
}

/// Binding outside a Tokio runtime is an error, not a panic.
#[test]
fn bind_outside_runtime() {
    let err = block_on_without_runtime(ToolHost::bind(ToolHostConfig::default())).unwrap_err();
    assert!(err.is_no_runtime());
}

/// A minimal executor, so the bind future runs with no Tokio runtime around.
fn block_on_without_runtime<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Noop;
    impl Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = Waker::from(std::sync::Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}
