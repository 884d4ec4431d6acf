//! Binding: the configs `bind` refuses (each naming its field) and the
//! boundary values it accepts, a taken port, and no runtime.

mod support;

use std::time::Duration;

use embacle_tool_host::{ErrorKind, ToolHost, ToolHostConfig};
use support::*;

/// Config values the host refuses are errors from bind, each naming the
/// field it refuses; zero durations among them (a zero body timeout would
/// refuse every body, a zero call limit every call, a zero keep-alive spin).
/// The values just inside every bound are accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs() {
    let d = ToolHostConfig::default;
    let tiny = Duration::from_nanos(1);
    // (field, a config refused for it, a config just inside its bound)
    let rows: Vec<(&str, Vec<ToolHostConfig>, Vec<ToolHostConfig>)> = vec![
        (
            "server_name",
            ["", "has space", "dot.ted", &"n".repeat(65)]
                .map(|name| ToolHostConfig {
                    server_name: name.to_owned(),
                    ..d()
                })
                .to_vec(),
            ["a", &"Az09_-".repeat(10), &"n".repeat(64)]
                .map(|name| ToolHostConfig {
                    server_name: name.to_owned(),
                    ..d()
                })
                .to_vec(),
        ),
        (
            "bind_addr",
            ["0.0.0.0", "192.168.1.1", "::"]
                .map(|ip| ToolHostConfig {
                    bind_addr: ip.parse().unwrap(),
                    ..d()
                })
                .to_vec(),
            ["127.0.0.1", "127.0.0.2"]
                .map(|ip| ToolHostConfig {
                    bind_addr: ip.parse().unwrap(),
                    ..d()
                })
                .to_vec(),
        ),
        (
            "max_body_bytes",
            vec![ToolHostConfig {
                max_body_bytes: 0,
                ..d()
            }],
            vec![ToolHostConfig {
                max_body_bytes: 1,
                ..d()
            }],
        ),
        (
            "max_sessions",
            vec![ToolHostConfig {
                max_sessions: 0,
                ..d()
            }],
            vec![ToolHostConfig {
                max_sessions: 1,
                ..d()
            }],
        ),
        (
            "max_batch_len",
            vec![ToolHostConfig {
                max_batch_len: 0,
                ..d()
            }],
            vec![ToolHostConfig {
                max_batch_len: 1,
                ..d()
            }],
        ),
        (
            "max_parsed_bytes",
            vec![ToolHostConfig {
                max_parsed_bytes: 0,
                ..d()
            }],
            vec![ToolHostConfig {
                max_parsed_bytes: 1,
                ..d()
            }],
        ),
        (
            "header_read_timeout",
            vec![ToolHostConfig {
                header_read_timeout: Duration::ZERO,
                ..d()
            }],
            vec![ToolHostConfig {
                header_read_timeout: tiny,
                ..d()
            }],
        ),
        (
            "body_read_timeout",
            vec![ToolHostConfig {
                body_read_timeout: Duration::ZERO,
                ..d()
            }],
            vec![ToolHostConfig {
                body_read_timeout: tiny,
                ..d()
            }],
        ),
        (
            "call_timeout",
            vec![ToolHostConfig {
                call_timeout: Some(Duration::ZERO),
                ..d()
            }],
            // `None` disables the call limit; it is not a zero.
            [Some(tiny), None]
                .map(|limit| ToolHostConfig {
                    call_timeout: limit,
                    ..d()
                })
                .to_vec(),
        ),
        (
            "sse_keep_alive",
            vec![ToolHostConfig {
                sse_keep_alive: Duration::ZERO,
                ..d()
            }],
            vec![ToolHostConfig {
                sse_keep_alive: tiny,
                ..d()
            }],
        ),
        (
            "write_stall_timeout",
            vec![ToolHostConfig {
                write_stall_timeout: Duration::ZERO,
                ..d()
            }],
            vec![ToolHostConfig {
                write_stall_timeout: tiny,
                ..d()
            }],
        ),
        (
            "max_header_bytes",
            [100, 8191]
                .map(|bytes| ToolHostConfig {
                    max_header_bytes: bytes,
                    ..d()
                })
                .to_vec(),
            vec![ToolHostConfig {
                max_header_bytes: 8192,
                ..d()
            }],
        ),
        (
            "max_connections_per_session",
            [Some(0), Some(257)]
                .map(|n| ToolHostConfig {
                    max_connections_per_session: n,
                    ..d()
                })
                .to_vec(),
            [None, Some(1), Some(256)]
                .map(|n| ToolHostConfig {
                    max_connections_per_session: n,
                    ..d()
                })
                .to_vec(),
        ),
        (
            "max_connections",
            [0, 1_000_001]
                .map(|n| ToolHostConfig {
                    max_connections: n,
                    ..d()
                })
                .to_vec(),
            [1, 256]
                .map(|n| ToolHostConfig {
                    max_connections: n,
                    ..d()
                })
                .to_vec(),
        ),
    ];
    for (field, refused, accepted) in rows {
        for config in refused {
            let err = within(ToolHost::bind(config.clone())).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{field}: {config:?}");
            assert!(
                err.to_string().contains(field),
                "{err} does not name {field}"
            );
        }
        for config in accepted {
            let host = within(ToolHost::bind(config.clone())).await;
            assert!(host.is_ok(), "{field}: {config:?} refused: {host:?}");
        }
    }
}

/// A zero limit's error says the field must be positive; a zero
/// `call_timeout`'s also says that `None` lifts the limit.
#[tokio::test]
async fn a_zero_limit_says_what_to_do() {
    let zero_sessions = ToolHostConfig {
        max_sessions: 0,
        ..ToolHostConfig::default()
    };
    let zero_timeout = ToolHostConfig {
        call_timeout: Some(Duration::ZERO),
        ..ToolHostConfig::default()
    };
    for (config, says) in [
        (zero_sessions, "max_sessions must be positive"),
        (
            zero_timeout,
            "call_timeout must be positive (or None for no limit)",
        ),
    ] {
        let err = within(ToolHost::bind(config)).await.unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

/// A `max_connections` that the process's open-file limit cannot hold is
/// refused at bind, with the figures: past it, `accept` fails and the
/// agent's connections wait behind a flood's.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_must_fit_the_open_file_limit() {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let soft: usize = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .expect("a finite soft limit");
    for n in [soft, soft - 32] {
        let config = ToolHostConfig {
            max_connections: n,
            ..ToolHostConfig::default()
        };
        let err = within(ToolHost::bind(config)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("max_connections is {n}"))
                && text.contains(&format!("may open {soft} files (RLIMIT_NOFILE"))
                && text.contains("raise the limit"),
            "{text}"
        );
    }
    let fits = ToolHostConfig {
        max_connections: soft / 2,
        ..ToolHostConfig::default()
    };
    within(ToolHost::bind(fits)).await.unwrap().shutdown().await;
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
    assert_eq!(err.kind(), ErrorKind::Bind);
    assert!(std::error::Error::source(&err).is_some());
}

/// Binding outside a Tokio runtime is an error, not a panic.
#[test]
fn bind_outside_runtime() {
    let err = block_on_without_runtime(ToolHost::bind(ToolHostConfig::default())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoRuntime);
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
