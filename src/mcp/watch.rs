//! What the host's observer is told of each request the dispatcher answers
//! (see `observer.rs`, public as `observe`). A [`Watch`] exists only when
//! the host has an observer (`RequestContext::since` is then set), so a
//! host without one reads no clock and copies nothing for it.

use std::time::Instant;

use serde_json::Value;

use super::reply::Handled;
use crate::jsonrpc::Params;
use crate::observer::{printable_method, valid_traceparent, Observation, Outcome};
use crate::protocol::Era;
use crate::state::Lease;
use crate::tool::is_valid_name;

/// One request being watched: when its head arrived, and what of it the
/// observer is told besides its method. Owned, so a streamed call can take
/// it along, and boxed, so the futures that carry it past their awaits grow
/// by a pointer, not by the watch.
pub(super) struct Watch {
    since: Instant,
    /// For `tools/call`: `params.name`, once it is a name a tool could have.
    tool: Option<String>,
    /// `params._meta.traceparent`, once it is a well-formed one.
    traceparent: Option<String>,
}

impl Watch {
    /// The watch on a request whose head arrived at `since`, reading its
    /// tool name (for `tools/call`) and trace context from `params`. Cold:
    /// only a host with an observer comes here, and the dispatcher's hot
    /// path should not carry its code.
    #[cold]
    #[inline(never)]
    pub(super) fn new(since: Instant, method: &str, params: Option<&Params<'_>>) -> Box<Self> {
        let tool = match (method, params) {
            ("tools/call", Some(params)) => params.get_str("name").filter(|n| is_valid_name(n)),
            _ => None,
        };
        let meta = params.and_then(|p| p.get("_meta"));
        let traceparent = meta
            .as_deref()
            .and_then(|meta| meta.get("traceparent"))
            .and_then(Value::as_str)
            .and_then(valid_traceparent);
        Box::new(Self {
            since,
            tool: tool.map(|tool| tool.into_owned()),
            traceparent: traceparent.map(str::to_owned),
        })
    }

    /// Tells the host's observer what the request came to.
    #[cold]
    #[inline(never)]
    pub(super) fn tell(&self, lease: &Lease, method: &str, era: Option<Era>, outcome: Outcome) {
        let Some(observer) = &lease.shared.config.observer else {
            return;
        };
        observer.tell(&Observation {
            session: Some(lease.session.id()),
            method: Some(printable_method(method)),
            tool: self.tool.as_deref(),
            protocol_version: era.map(Era::version),
            elapsed: self.since.elapsed(),
            outcome,
            requests: 1,
            traceparent: self.traceparent.as_deref(),
        });
    }
}

/// Tells the host's observer of a body, or a message in it, that was not a
/// readable request: no method, an error of this code.
#[cold]
#[inline(never)]
pub(super) fn tell_unreadable(lease: &Lease, since: Option<Instant>, code: i32) {
    if let (Some(observer), Some(since)) = (&lease.shared.config.observer, since) {
        observer.tell(&Observation {
            session: Some(lease.session.id()),
            method: None,
            tool: None,
            protocol_version: None,
            elapsed: since.elapsed(),
            outcome: Outcome::Failed { code },
            requests: 1,
            traceparent: None,
        });
    }
}

/// What a request other than `tools/call` came to (a call tells its own,
/// which only it can tell apart: a success from a refusal).
pub(super) fn outcome_of(handled: &Handled) -> Outcome {
    match handled {
        Handled::Erred(_, code) => Outcome::Failed { code: *code },
        Handled::Revoked => Outcome::Rejected { status: 401 },
        Handled::Silent => Outcome::Cancelled,
        Handled::Wrote(_) | Handled::Stream(_) | Handled::Listen(_) | Handled::Initialized(_) => {
            Outcome::Success
        }
    }
}
