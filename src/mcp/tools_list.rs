//! `tools/list`: the surface's live answer, in its order, one page, in
//! either era.

use super::reply::{surface_panicked, Handled, Respond, ResultKind};
use crate::jsonrpc::{code, ErrorObject, Params};
use crate::state::Lease;
use crate::util::CatchUnwind;

/// `tools/list`: the surface's live answer, in its order, one page.
pub(super) async fn list_tools(
    lease: &Lease,
    respond: Respond<'_>,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Handled {
    // The host never hands out a cursor, so any cursor is one it did not
    // issue. `null` is read as absent.
    if params
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null())
    {
        let error = ErrorObject::new(code::INVALID_PARAMS, "Invalid cursor");
        return respond.error(out, &error);
    }
    let Ok(tools) = CatchUnwind(lease.session.surface().list_tools()).await else {
        return respond.error(out, &surface_panicked());
    };
    lease.session.listed(&tools, respond.era);
    respond.result(out, ResultKind::Listing, |result| {
        let mut listed = result.array_in("tools");
        for tool in tools.iter() {
            listed
                .item()
                .extend_from_slice(tool.rendered_for(respond.era).as_bytes());
        }
        listed.end();
    })
}
