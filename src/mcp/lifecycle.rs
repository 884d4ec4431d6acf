//! The lifecycle methods: `initialize` (which mints an MCP session) and
//! `logging/setLevel` in the legacy era, `server/discover` in 2026-07-28,
//! and the capabilities both advertise.

use super::reply::{Answer, Handled, ResultKind};
use crate::jsonrpc::{code, write_json_str, ErrorObject, JsonWriter, Params};
use crate::protocol::{era, Era};
use crate::state::SessionState;
use crate::surface::{LogLevel, LEVEL_NAMES};

/// `initialize`: negotiate the version, advertise the session's
/// capabilities (see [`write_capabilities`]), and mint an MCP session at
/// the negotiated version (see `state/mcp_session.rs`).
pub(super) fn initialize(answer: &mut Answer<'_>, params: Option<&Params<'_>>) -> Handled {
    let lease = answer.lease;
    let session = &lease.session;
    if answer.context.in_batch {
        return answer.error(&ErrorObject::new(
            code::INVALID_REQUEST,
            "initialize must not be part of a batch",
        ));
    }
    let Some(requested) = params.and_then(|p| p.get_str("protocolVersion")) else {
        return answer.error(&ErrorObject::new(
            code::INVALID_PARAMS,
            "initialize needs params.protocolVersion, a string",
        ));
    };
    let (info, era) = (&lease.shared.info, answer.era);
    let version = era::negotiate(&requested);
    answer.result(ResultKind::Plain, |result| {
        result.str("protocolVersion", version);
        write_capabilities(result, session, era);
        result
            .raw("serverInfo", info.implementation.as_bytes())
            .opt_str("instructions", info.instructions.as_deref());
    });
    let client_info = params.and_then(|p| p.get("clientInfo"));
    let minted = session.mcp_sessions().mint(
        version,
        client_info.as_deref(),
        session.list_changes(),
        lease.shared.config.max_mcp_sessions_per_session,
    );
    Handled::Initialized(minted)
}

/// `"capabilities":{…}`: `tools`, with `listChanged` when the session can
/// deliver it (on its GET stream, or on `subscriptions/listen` in
/// 2026-07-28), and `logging` when its surface logs. Nothing else: the
/// host serves no resources, prompts, completions or tasks.
fn write_capabilities(result: &mut JsonWriter<'_>, session: &SessionState, era: Era) {
    let mut capabilities = result.object_in("capabilities");
    let mut tools = capabilities.object_in("tools");
    match (session.list_changes().offered(), era) {
        (true, _) => tools.raw("listChanged", b"true"),
        (false, Era::Legacy(_)) => tools.raw("listChanged", b"false"),
        (false, Era::Modern(_)) => &mut tools,
    };
    tools.end();
    if session.log_level().is_some() {
        capabilities.object_in("logging").end();
    }
    capabilities.end();
}

/// `logging/setLevel` (MCP 2025-11-25 and earlier, on a surface that
/// logs): the least severe level the session's calls log at from now on.
pub(super) fn set_log_level(answer: &mut Answer<'_>, params: Option<&Params<'_>>) -> Handled {
    let level = params.and_then(|p| p.get_str("level"));
    let Some(level) = level.as_deref().and_then(LogLevel::parse) else {
        return answer.error(&ErrorObject::new(
            code::INVALID_PARAMS,
            format!("logging/setLevel needs params.level, one of {LEVEL_NAMES}"),
        ));
    };
    if let Some(session_level) = answer.lease.session.log_level() {
        session_level.set(level);
    }
    answer.result(ResultKind::Plain, |_| {})
}

/// `server/discover` (2026-07-28): its capabilities, the instructions, and
/// every version the host speaks.
pub(super) fn discover(answer: &mut Answer<'_>) -> Handled {
    let (lease, era) = (answer.lease, answer.era);
    answer.result(ResultKind::Listing, |result| {
        write_capabilities(result, &lease.session, era);
        let instructions = lease.shared.info.instructions.as_deref();
        result.opt_str("instructions", instructions);
        let mut versions = result.array_in("supportedVersions");
        for version in era::supported_versions() {
            write_json_str(versions.item(), version);
        }
        versions.end();
    })
}
