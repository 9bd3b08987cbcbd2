//! Heap use of a 100,000-message history: `Messages` (the messages plus
//! its id index) against a plain `Vec<Message>` holding the same messages.
//! A counting global allocator measures the live heap bytes each one adds.
//! Not a criterion bench: it prints a table and checks the 1.5x target.
//!
//! Run: `cargo bench -p state-core --bench memory`.

mod common;

use common::{history_message, history_vec};
use state_core::reducer::add_messages;
use state_core::{Message, Messages};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is
// only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's arguments.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: usize = 100_000;

/// The live heap bytes that building `T` leaves behind (`T` is kept alive
/// until measured, then returned so the caller decides when it is dropped).
fn heap_of<T>(build: impl FnOnce() -> T) -> (usize, T) {
    let before = LIVE.load(Ordering::Relaxed);
    let value = black_box(build());
    let after = LIVE.load(Ordering::Relaxed);
    (after.saturating_sub(before), value)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // special either: there is nothing to filter, so arguments are ignored.
    let (vec_exact, v1) = heap_of(|| history_vec(N));
    let (vec_pushed, v2) = heap_of(|| {
        let mut v = Vec::new();
        for i in 0..N {
            v.push(history_message(i));
        }
        v
    });
    let (list_from, m1) = heap_of(|| Messages::from(history_vec(N)));
    let (list_added, m2) = heap_of(|| {
        let mut m = Messages::new();
        for i in 0..N {
            add_messages(&mut m, vec![history_message(i)]).expect("no removals");
        }
        m
    });
    assert_eq!(v1.len(), N);
    assert_eq!(v2.len(), N);
    assert_eq!(m1.len(), N);
    assert_eq!(m2.len(), N);

    println!("heap of a {N}-message history (live bytes after building it)");
    println!(
        "size_of::<Message>() = {} bytes, size_of::<Messages>() = {} bytes",
        size_of::<Message>(),
        size_of::<Messages>()
    );
    println!("{:<58} {:>12} {:>9}", "history", "bytes", "MiB");
    let rows = [
        ("Vec<Message>, exact capacity (collect)", vec_exact),
        ("Vec<Message>, grown by push", vec_pushed),
        ("Messages::from(Vec)", list_from),
        ("Messages, grown by add_messages one at a time", list_added),
    ];
    for (name, bytes) in rows {
        println!("{name:<58} {bytes:>12} {:>9.2}", mib(bytes));
    }
    let worst = list_from.max(list_added) as f64 / vec_exact as f64;
    let like_for_like = list_added as f64 / vec_pushed as f64;
    println!("ratio Messages / Vec<Message> (worst Messages over exact Vec): {worst:.3}");
    println!("ratio Messages / Vec<Message> (both grown one at a time):     {like_for_like:.3}");
    println!(
        "target <= 1.5x: {}",
        if worst <= 1.5 { "met" } else { "NOT met" }
    );
}
