//! Bearer validation and session open/drop: the revocation slab's hot paths.
//!
//! `cargo bench --bench revocation`

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use embacle_tool_host::bench_support;

use common::{authorization, current_thread_runtime, default_host, static_surface};

fn benches(c: &mut Criterion) {
    let runtime = current_thread_runtime();
    let host = default_host(&runtime);
    // No tools: only the session's own cost is measured.
    let surface = static_surface(0);
    let live = host.open_session(surface.clone()).unwrap();
    let live_auth = authorization(&live).into_bytes();
    let revoked = host.open_session(surface.clone()).unwrap();
    let revoked_auth = authorization(&revoked).into_bytes();
    drop(revoked);
    let mut wrong_auth = live_auth.clone();
    let last = wrong_auth.len() - 1;
    wrong_auth[last] = if wrong_auth[last] == b'0' { b'1' } else { b'0' };
    let malformed_auth = b"Bearer not-a-bearer-token".to_vec();
    assert!(bench_support::validate(&host, &live_auth));
    assert!(!bench_support::validate(&host, &revoked_auth));
    assert!(!bench_support::validate(&host, &wrong_auth));

    let mut group = c.benchmark_group("validate");
    for (name, auth) in [
        ("live", &live_auth),
        ("revoked", &revoked_auth),
        ("wrong_secret", &wrong_auth),
        ("malformed", &malformed_auth),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| bench_support::validate(&host, std::hint::black_box(auth)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("open_drop");
    group.bench_function("single_thread", |b| {
        b.iter(|| drop(host.open_session(surface.clone()).unwrap()))
    });
    // Two threads opening and dropping at once: only the contended part is
    // timed (`iter_custom` + a barrier), as in sharded-slab's benches.
    group.bench_function("contended_2_threads", |b| {
        b.iter_custom(|iters| {
            let barrier = Arc::new(Barrier::new(3));
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    let (host, surface, barrier) = (host.clone(), surface.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        for _ in 0..iters {
                            drop(host.open_session(surface.clone()).unwrap());
                        }
                        barrier.wait();
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            barrier.wait();
            let elapsed = start.elapsed();
            for w in workers {
                w.join().unwrap();
            }
            elapsed
        })
    });
    // Validation while another thread churns open/drop on other slots.
    group.bench_function("validate_while_churning", |b| {
        b.iter_custom(|iters| {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let churn = {
                let (host, surface, stop) = (host.clone(), surface.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        drop(host.open_session(surface.clone()).unwrap());
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(1));
            let start = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(bench_support::validate(&host, &live_auth));
            }
            let elapsed = start.elapsed();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            churn.join().unwrap();
            elapsed
        })
    });
    group.finish();
    drop(live);
}

criterion_group!(revocation, benches);
criterion_main!(revocation);
