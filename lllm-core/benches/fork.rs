//! Forking a long dialog: must stay O(1) in the parent's length.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use lllm_core::{Dialog, Message};

fn long_dialog(len: usize) -> Dialog {
    let mut dialog = Dialog::with_system("You are a careful planner.");
    for i in 1..len {
        dialog.push(if i % 2 == 1 {
            Message::user(format!("step {i}: what next?"))
        } else {
            Message::assistant(format!("answer {i}: keep going"))
        });
    }
    dialog
}

fn fork(c: &mut Criterion) {
    let mut group = c.benchmark_group("fork");
    for len in [100, 10_000] {
        group.bench_function(format!("{len}_messages"), |b| {
            b.iter_batched_ref(
                || long_dialog(len),
                |parent| parent.fork(),
                BatchSize::LargeInput,
            )
        });
    }
    // For scale: what a fork would cost if it deep-copied the parent's messages.
    group.bench_function("deep_copy_baseline_10000_messages", |b| {
        b.iter_batched_ref(
            || long_dialog(10_000),
            |parent| parent.messages().to_vec(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, fork);
criterion_main!(benches);
