//! Reading a request body whole, within a byte limit.
//!
//! The usual body is small and arrives with its head, as one data frame
//! that ends the body: it is handed on as hyper gave it, without a copy,
//! without a list of buffers and without asking hyper for a frame more.
//! Only a body that comes in several frames is gathered into one buffer.

use std::future::poll_fn;
use std::pin::Pin;

use hyper::body::{Body, Bytes, Incoming};

use crate::http::rejection::Rejection;

/// The whole of `body`, refused as soon as it passes `limit` bytes
/// ([`Rejection::PayloadTooLarge`]; what came after the limit is not read),
/// or [`Rejection::BadBody`] when the client broke it off or sent a
/// malformed chunked encoding. Trailers, which the host has no use for, are
/// skipped.
pub(crate) async fn read_whole(mut body: Incoming, limit: usize) -> Result<Bytes, Rejection> {
    let mut first = Bytes::new();
    // Only a second data frame makes a buffer.
    let mut gathered: Option<Vec<u8>> = None;
    let mut len = 0usize;
    while !body.is_end_stream() {
        let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await else {
            break;
        };
        let Ok(data) = frame.map_err(|_| Rejection::BadBody)?.into_data() else {
            continue;
        };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(Rejection::PayloadTooLarge);
        }
        match &mut gathered {
            Some(buffer) => buffer.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            // Exactly the two frames' length: `concat` sizes its buffer.
            None => gathered = Some([&std::mem::take(&mut first)[..], &data].concat()),
        }
    }
    // A gathered buffer gives back what its doubling left spare, so the
    // body holds no more than its own length for the rest of the request.
    Ok(gathered.map_or(first, |mut buffer| {
        buffer.shrink_to_fit();
        Bytes::from(buffer)
    }))
}
