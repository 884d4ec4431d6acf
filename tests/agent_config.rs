//! One session's entry for each kind of agent: the ACP array checked
//! against the agent's capabilities, and the config files of agents that
//! read MCP servers from a file (their shape, their mode, their lifetime).

mod support;

use embacle_tool_host::agent::{Runner, MISTRAL_VIBE};
use embacle_tool_host::{ErrorKind, ToolHostConfig};
use serde_json::{json, Value};
use support::*;

async fn fixture() -> Fixture {
    Fixture::with(dravr()).await
}

/// ACP v1 and the v2 draft's capability places; anything else is a clear
/// error naming what the agent declared.
#[tokio::test]
async fn acp_entries_only_for_agents_that_take_http() {
    let fixture = fixture().await;
    let servers = fixture.session().mcp_servers();
    let accepted = [
        json!({"protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"http": true, "sse": true}}}),
        json!({"protocolVersion": 2, "capabilities": {"mcp": {"http": {}, "stdio": {}}}}),
        json!({"protocolVersion": 2, "capabilities": {"session": {"mcp": {"http": {}}}}}),
    ];
    for init in accepted {
        assert_eq!(
            servers.for_acp_agent(&init).unwrap(),
            servers.to_value(),
            "{init}"
        );
    }
    let refused = [
        (json!({"protocolVersion": 1, "agentInfo": {"name": "stdio-agent"}, "agentCapabilities": {"mcpCapabilities": {"http": false}}}),
         "the agent \"stdio-agent\" cannot take an http MCP server (agentCapabilities.mcpCapabilities.http is false)"),
        (json!({"protocolVersion": 1, "agentCapabilities": {}}),
         "the agent cannot take an http MCP server (no http MCP transport)"),
        (json!({"protocolVersion": 2, "capabilities": {"mcp": {"http": null}}}),
         "the agent cannot take an http MCP server (capabilities.mcp.http is null)"),
        (json!({"protocolVersion": 2, "capabilities": {"session": {"mcp": {"stdio": {}, "http": null}}}}),
         "the agent cannot take an http MCP server (capabilities.session.mcp.http is null)"),
        (json!({"protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"http": "yes"}}}),
         "(agentCapabilities.mcpCapabilities.http is \"yes\")"),
    ];
    for (init, message) in refused {
        let err = servers.for_acp_agent(&init).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnsupportedAgent, "{init}");
        assert!(err.to_string().contains(message), "{err}");
    }
}

/// The named override: the agent called by the name given is served
/// whatever it declares; one that declares `http` is served whatever its
/// name; any other is refused, the error saying what it declared, what it
/// is called, and which name was vouched for. Never an empty name.
#[tokio::test]
async fn an_agent_that_takes_http_undeclared_is_served_only_by_name() {
    let fixture = fixture().await;
    let servers = fixture.session().mcp_servers();
    let vibe = MISTRAL_VIBE;
    let served = [
        json!({"protocolVersion": 1, "agentInfo": {"name": vibe, "version": "3.0.3"},
               "agentCapabilities": {"mcpCapabilities": {"http": false, "sse": false}}}),
        json!({"protocolVersion": 1, "agentInfo": {"name": vibe}, "agentCapabilities": {}}),
        json!({"protocolVersion": 1, "agentInfo": {"name": "another"},
               "agentCapabilities": {"mcpCapabilities": {"http": true}}}),
    ];
    for init in served {
        let value = servers.for_acp_agent_taking_http(&init, vibe).unwrap();
        assert_eq!(value, servers.to_value(), "{init}");
    }
    let refused = [
        (json!({"protocolVersion": 1, "agentInfo": {"name": "hermes"},
                "agentCapabilities": {"mcpCapabilities": {"http": false}}}),
         format!("the agent \"hermes\" cannot take an http MCP server (agentCapabilities.mcpCapabilities.http is false), and it is not {vibe:?}")),
        (json!({"protocolVersion": 1, "agentCapabilities": {}}),
         format!("the agent cannot take an http MCP server (no http MCP transport), and it is not {vibe:?}")),
        // A name that only starts or ends the same is another agent's.
        (json!({"protocolVersion": 1, "agentInfo": {"name": format!("{vibe}-fork")}}),
         format!("and it is not {vibe:?}")),
        (json!({"protocolVersion": 1, "agentInfo": {"name": ["@mistralai/mistral-vibe"]}}),
         format!("and it is not {vibe:?}")),
    ];
    for (init, message) in refused {
        let err = servers.for_acp_agent_taking_http(&init, vibe).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnsupportedAgent, "{init}");
        assert!(err.to_string().contains(&message), "{err}");
        assert!(servers.for_acp_agent(&init).is_err(), "{init}");
    }
    let anyone = json!({"protocolVersion": 1, "agentInfo": {"name": ""}});
    let err = servers.for_acp_agent_taking_http(&anyone, "").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
}

/// Each runner's JSON, with the headers as an object and the session's
/// real endpoint and bearer.
#[tokio::test]
async fn config_shapes() {
    let fixture = fixture().await;
    let servers = fixture.session().mcp_servers();
    let url = format!("http://{}/mcp", fixture.addr);
    let headers = json!({"Authorization": fixture.auth()});
    assert_eq!(
        servers.config_for(Runner::ClaudeCode).unwrap(),
        json!({"mcpServers": {"dravr": {"type": "http", "url": url, "headers": headers}}})
    );
    assert_eq!(
        servers.config_for(Runner::CopilotCli).unwrap(),
        json!({"mcpServers": {"dravr": {"type": "http", "url": url, "headers": headers, "tools": ["*"]}}})
    );
    assert_eq!(Runner::ClaudeCode.config_flag(), Some("--mcp-config"));
    assert_eq!(
        Runner::CopilotCli.config_flag(),
        Some("--additional-mcp-config")
    );
    // Gemini CLI and Codex take the server from ACP session/new only.
    for runner in [Runner::GeminiCli, Runner::Codex] {
        assert_eq!(runner.config_flag(), None);
        let err = servers.config_for(runner).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnsupportedAgent, "{err}");
        assert!(err.to_string().contains("session/new"), "{err}");
    }
}

/// The file holds the runner's JSON, is its owner's alone, never lands on
/// an existing path, and goes when the guard drops; a directory that does
/// not exist is a config-file error.
#[tokio::test]
async fn config_files_live_as_long_as_the_session() {
    let mut fixture = fixture().await;
    let dir = std::env::temp_dir().join(format!("embacle-agent-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut paths = Vec::new();
    for runner in [Runner::ClaudeCode, Runner::CopilotCli, Runner::CopilotCli] {
        let session = fixture.session();
        let path = session.write_mcp_config(runner, &dir).unwrap();
        assert!(path.starts_with(&dir));
        let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let expected = fixture.session().mcp_servers().config_for(runner);
        assert_eq!(written, expected.unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{path:?}");
        }
        paths.push(path);
    }
    assert_ne!(paths[1], paths[2], "each file gets a fresh name");
    let err = fixture
        .session()
        .write_mcp_config(Runner::GeminiCli, &dir)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedAgent, "{err}");
    let missing = dir.join("no-such-dir");
    let err = fixture
        .session()
        .write_mcp_config(Runner::ClaudeCode, &missing)
        .unwrap_err();
    assert!(
        err.kind() == ErrorKind::ConfigFile && std::error::Error::source(&err).is_some(),
        "{err}"
    );

    assert!(paths.iter().all(|p| p.exists()));
    fixture.revoke();
    assert!(
        paths.iter().all(|p| !p.exists()),
        "the files go with the guard"
    );
    std::fs::remove_dir(&dir).unwrap();
}

/// The host's default server name leaves room for the tool names
/// `host_tools` serves, under every agent's prefix scheme.
#[tokio::test]
async fn tool_name_check_uses_the_real_prefix() {
    let config = ToolHostConfig::default();
    let tools = RecordingSurface::new();
    let listed = embacle_tool_host::ToolSurface::list_tools(&*tools).await;
    for runner in [
        Runner::ClaudeCode,
        Runner::CopilotCli,
        Runner::GeminiCli,
        Runner::Codex,
    ] {
        runner
            .check_tool_names(&config.server_name, &listed)
            .unwrap();
    }
    let long_server = "x".repeat(60);
    let err = Runner::CopilotCli
        .check_tool_names(&long_server, &listed)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidTool);
    assert!(
        err.to_string().contains("Copilot CLI shows tool \"echo\""),
        "{err}"
    );
}

/// A directory another user could write to, or one of another user, is
/// refused with a clear error and left as it was; a private one is used.
#[cfg(unix)]
#[tokio::test]
async fn config_files_only_go_in_private_directories() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mut fixture = fixture().await;
    let root = std::env::temp_dir().join(format!("embacle-config-dirs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let dir_with_mode = |name: &str, mode: u32| {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    };
    for (mode, why) in [
        (0o777, "others may write"),
        (0o1777, "others may write"),
        (0o770, "others may write"),
    ] {
        let dir = dir_with_mode(&format!("m{mode:o}"), mode);
        let err = fixture
            .session()
            .write_mcp_config(Runner::ClaudeCode, &dir)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConfigFile, "{err}");
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            source.contains(why) && source.contains("private directory"),
            "{source}"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "nothing left in {dir:?}"
        );
    }
    for mode in [0o700, 0o755] {
        let dir = dir_with_mode(&format!("ok{mode:o}"), mode);
        let path = fixture
            .session()
            .write_mcp_config(Runner::ClaudeCode, &dir)
            .unwrap();
        assert!(path.exists());
    }
    // Another user's directory: only root can make one to try.
    let theirs = dir_with_mode("theirs", 0o755);
    if std::os::unix::fs::chown(&theirs, Some(65534), None).is_ok() {
        let err = fixture
            .session()
            .write_mcp_config(Runner::ClaudeCode, &theirs)
            .unwrap_err();
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("it belongs to uid 65534"), "{source}");
    } else {
        let me = std::fs::metadata(&root).unwrap().uid();
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("SKIPPED (uid {me} cannot chown): the other user's directory case\n")
                .as_bytes(),
        );
    }
    fixture.revoke();
    std::fs::remove_dir_all(&root).unwrap();
}

/// A private directory under a parent that others may write without the
/// sticky bit is refused, the error naming that parent: another user could
/// rename the directory away and plant their own. Under a sticky parent
/// (as `/tmp` is) it is used; `/tmp` itself stays refused.
#[cfg(unix)]
#[tokio::test]
async fn every_directory_above_must_be_safe_too() {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    let mut fixture = fixture().await;
    let root = std::env::temp_dir().join(format!("embacle-config-parents-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let private_under = |parent_mode: u32| {
        let parent = root.join(format!("p{parent_mode:o}"));
        std::fs::create_dir(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(parent_mode)).unwrap();
        let dir = parent.join("private");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        (parent, dir)
    };
    // Why writing into `dir` was refused.
    let refusal = |dir: &Path| {
        let err = fixture
            .session()
            .write_mcp_config(Runner::ClaudeCode, dir)
            .unwrap_err();
        std::error::Error::source(&err).unwrap().to_string()
    };
    for mode in [0o777, 0o775] {
        let (parent, dir) = private_under(mode);
        let source = refusal(&dir);
        assert!(
            source.contains(&format!(
                "others may write to {} above it",
                parent.display()
            )),
            "{source}"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
    let (_, dir) = private_under(0o1777);
    let path = fixture
        .session()
        .write_mcp_config(Runner::ClaudeCode, &dir)
        .unwrap();
    assert!(path.exists(), "a sticky parent is safe");
    let (parent, dir) = private_under(0o755);
    if std::os::unix::fs::chown(&parent, Some(65534), None).is_ok() {
        let source = refusal(&dir);
        assert!(
            source.contains(&format!(
                "{} above it belongs to uid 65534",
                parent.display()
            )),
            "{source}"
        );
    }
    let tmp = fixture
        .session()
        .write_mcp_config(Runner::ClaudeCode, Path::new("/tmp"))
        .unwrap_err();
    assert_eq!(
        tmp.kind(),
        ErrorKind::ConfigFile,
        "/tmp itself is refused: {tmp}"
    );
    fixture.revoke();
    std::fs::remove_dir_all(&root).unwrap();
}

/// `with_bearer_from_env`: the header reads `Bearer ${NAME}`, the variable
/// holds the bearer (and only `Debug`-redacted), names a shell or Claude
/// Code would not take are refused, and only Claude's adapter has a
/// `session/new` `_meta` for it.
#[tokio::test]
async fn the_bearer_can_live_in_the_agents_environment() {
    let fixture = fixture().await;
    let servers = fixture.session().mcp_servers();
    let (entry, env) = servers.with_bearer_from_env("TOOLS_BEARER").unwrap();
    assert_eq!(
        entry.entries()[0].headers()[0].value(),
        "Bearer ${TOOLS_BEARER}"
    );
    assert_eq!(env.value(), fixture.bearer);
    assert!(!format!("{env:?}").contains(&fixture.bearer));
    assert!(!entry.to_value().to_string().contains(&fixture.bearer));
    let meta = Runner::ClaudeCode.session_new_meta(&env).unwrap();
    assert_eq!(
        meta,
        json!({"claudeCode": {"options": {"env": {"TOOLS_BEARER": fixture.bearer}}}})
    );
    for runner in [Runner::CopilotCli, Runner::GeminiCli, Runner::Codex] {
        assert!(runner.session_new_meta(&env).is_none());
    }
    for bad in [
        "",
        "1ST",
        "A-B",
        "A B",
        "ANTHROPIC_API_KEY",
        "CLAUDE_X",
        "OTEL_Y",
        &"X".repeat(65),
    ] {
        let err = servers.with_bearer_from_env(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{bad:?}: {err}");
    }
}

/// `acp_turn` never writes a bearer it was asked to keep out of the
/// entry: `--bearer-in-env` with `--config-file` is refused as a usage
/// error (status 2, before anything is bound or written), saying why.
#[test]
fn acp_turn_refuses_a_config_file_with_the_bearer_in_the_environment() {
    let acp_turn = support::processes::example_path("acp_turn");
    let args = [
        "--bearer-in-env",
        "TOOLS_BEARER",
        "--config-file",
        "copilot-cli",
        "--",
        "true",
    ];
    let output = std::process::Command::new(acp_turn)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--bearer-in-env keeps the bearer out of the entry, but --config-file"),
        "{stderr}"
    );
}
