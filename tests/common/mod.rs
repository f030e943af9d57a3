//! Helpers shared by the integration tests (each test file that needs one says `mod common;`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

/// Runs `f` on a thread with a 64 MiB stack: the llama.cpp replays build graphs of thousands of
/// tensors on the stack, more than a test thread's 2 MiB holds in a debug build.
pub fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}
