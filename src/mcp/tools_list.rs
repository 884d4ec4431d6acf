//! `tools/list`: the surface's live answer, in its order, one page, in
//! either era.

use super::reply::{surface_panicked, Answer, Handled, ResultKind};
use crate::jsonrpc::{code, ErrorObject, Params};
use crate::util::CatchUnwind;

/// `tools/list`: the surface's live answer, in its order, one page.
pub(super) async fn list_tools(answer: &mut Answer<'_>, params: Option<&Params<'_>>) -> Handled {
    let (lease, era) = (answer.lease, answer.era);
    // The host never hands out a cursor, so any cursor is one it did not
    // issue. `null` is read as absent.
    let cursor = params.and_then(|p| p.get("cursor"));
    if cursor.is_some_and(|c| !c.is_null()) {
        return answer.error(&ErrorObject::new(code::INVALID_PARAMS, "Invalid cursor"));
    }
    let Ok(tools) = CatchUnwind::new(lease.session.surface().list_tools()).await else {
        return answer.error(&surface_panicked());
    };
    lease.session.listed(&tools, era);
    answer.result(ResultKind::Listing, |result| {
        let mut listed = result.array_in("tools");
        for tool in tools.iter() {
            listed
                .item()
                .extend_from_slice(tool.rendered_for(era).as_bytes());
        }
        listed.end();
    })
}
