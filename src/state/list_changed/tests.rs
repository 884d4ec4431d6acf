//! The list-change owner's own tests, on a paused clock.

use super::*;
use crate::state::ListChangedNotifier;

/// Signals count; a generation is claimed once per audience; the
/// stream limit holds and frees; revocation stops signals and streams.
#[test]
fn signals_claims_limits_and_revocation() {
    let changes = Arc::new(ListChanges::new(true));
    changes.signal();
    changes.signal();
    assert_eq!(changes.generation(), 2);
    let audience = changes.stateless();
    assert!(audience.claim(2));
    assert!(!audience.claim(2), "a generation is announced once");
    assert!(!audience.claim(1));
    let stateless = || Arc::clone(changes.stateless());
    let first = changes.open_stream(2, stateless()).expect("a place");
    let second = changes.open_stream(2, stateless()).expect("a place");
    assert!(
        changes.open_stream(2, stateless()).err() == Some(StreamRefused::TooMany),
        "the limit holds"
    );
    drop(first);
    let third = changes.open_stream(2, stateless()).expect("a freed place");
    let notifier = ListChangedNotifier::new(&changes);
    assert!(notifier.is_live());
    changes.revoke();
    notifier.notify();
    assert_eq!(changes.generation(), 2, "no signal after revocation");
    assert!(!notifier.is_live());
    assert_eq!(
        changes.open_stream(4, stateless()).err(),
        Some(StreamRefused::Revoked)
    );
    drop((second, third));
    drop(changes);
    assert!(!notifier.is_live(), "the notifier holds no session alive");
    let fixed = Arc::new(ListChanges::new(false));
    let audience = Arc::clone(fixed.stateless());
    assert_eq!(
        fixed.open_stream(4, audience).err(),
        Some(StreamRefused::NotOffered)
    );
}

/// `delivered` returns once every audience with a stream open has
/// announced the generation, ignores audiences whose streams all
/// closed or that ended, and gives up after its wait.
#[tokio::test(start_paused = true)]
async fn delivery_waits_for_every_listening_audience() {
    let changes = Arc::new(ListChanges::new(true));
    let quick = Duration::from_secs(1);
    changes.signal();
    let claimed = Audience::starting_at(0);
    let slot = changes.open_stream(4, Arc::clone(&claimed)).unwrap();
    assert!(claimed.claim(1));
    let started = tokio::time::Instant::now();
    changes.delivered(1, quick).await;
    assert_eq!(started.elapsed(), quick, "claimed is not delivered");
    drop(slot);
    let changes = Arc::new(ListChanges::new(true));
    changes.delivered(1, quick).await; // no stream: nothing to wait for
    let a = Audience::starting_at(0);
    let b = Audience::starting_at(0);
    let slot_a = changes.open_stream(4, Arc::clone(&a)).unwrap();
    let slot_b = changes.open_stream(4, Arc::clone(&b)).unwrap();
    let _second_of_b = changes.open_stream(4, Arc::clone(&b)).unwrap();
    changes.signal();
    let started = tokio::time::Instant::now();
    changes.delivered(1, quick).await;
    assert_eq!(
        started.elapsed(),
        quick,
        "nobody announced: the wait runs out"
    );

    let waiter = {
        let changes = Arc::clone(&changes);
        tokio::spawn(async move { changes.delivered(1, Duration::from_secs(60)).await })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(a.claim(1));
    changes.delivered_to(&a, 1);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(!waiter.is_finished(), "b has not announced");
    drop(slot_b); // b still has a stream open
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(!waiter.is_finished(), "b still listens");
    changes.end_audience(&b);
    waiter.await.unwrap();
    assert_eq!(started.elapsed(), quick + Duration::from_millis(15));
    drop(slot_a);
    changes.signal();
    changes.delivered(2, quick).await;
    assert_eq!(
        started.elapsed(),
        quick + Duration::from_millis(15),
        "b ended, a closed"
    );
}

/// A listing wakes the waiters for it; a count already passed resolves
/// at once.
#[tokio::test(start_paused = true)]
async fn a_listing_wakes_its_waiters() {
    let changes = Arc::new(ListChanges::new(true));
    let waiter = tokio::spawn({
        let changes = Arc::clone(&changes);
        async move { changes.listed_more_than(0).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "nothing listed yet");
    changes.listed();
    waiter.await.unwrap();
    changes.listed();
    assert_eq!(changes.listings(), 2);
    let started = tokio::time::Instant::now();
    changes.listed_more_than(1).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "already listed: at once");
}

/// A result is held only when its call changed the list while a stream
/// was open: until delivery (at most `DELIVERY_WAIT`), then until a
/// re-listing (at most `RELIST_WAIT`), then `APPLY_WAIT`.
#[tokio::test(start_paused = true)]
async fn a_result_is_held_for_delivery_then_relisting() {
    let changes = Arc::new(ListChanges::new(true));
    let held = |before| {
        let changes = Arc::clone(&changes);
        async move {
            let started = tokio::time::Instant::now();
            changes.hold_result(before).await;
            started.elapsed()
        }
    };
    changes.signal();
    assert_eq!(held(0).await, Duration::ZERO, "no stream open");
    let audience = Audience::starting_at(1);
    let _slot = changes.open_stream(4, Arc::clone(&audience)).unwrap();
    assert_eq!(held(1).await, Duration::ZERO, "no change since");
    changes.signal();
    assert_eq!(held(1).await, DELIVERY_WAIT, "never delivered");
    let release = {
        let changes = Arc::clone(&changes);
        let audience = Arc::clone(&audience);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            changes.delivered_to(&audience, 2);
            tokio::time::sleep(Duration::from_millis(5)).await;
            changes.listed();
        })
    };
    let expected = Duration::from_millis(8) + APPLY_WAIT;
    assert_eq!(held(1).await, expected, "delivered, re-listed, applied");
    release.await.unwrap();
    assert_eq!(held(1).await, RELIST_WAIT, "delivered, never re-listed");
}

/// A revocation ends a hold at once, in whichever step it waits.
#[tokio::test(start_paused = true)]
async fn a_revocation_ends_a_hold() {
    let changes = Arc::new(ListChanges::new(true));
    let audience = Audience::starting_at(0);
    let _slot = changes.open_stream(4, Arc::clone(&audience)).unwrap();
    changes.signal();
    changes.delivered_to(&audience, 1);
    let revoke = {
        let changes = Arc::clone(&changes);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(7)).await;
            changes.revoke();
        })
    };
    let started = tokio::time::Instant::now();
    assert!(changes.hold_result(0).await, "a result was held");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(7),
        "until the revocation"
    );
    revoke.await.unwrap();
}
