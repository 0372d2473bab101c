//! Saving and loading a long dialog (serde JSON), as `DialogTree` does.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lllm_core::{Dialog, Message};

fn dialog(len: usize) -> Dialog {
    let mut dialog = Dialog::with_system("You are a careful planner.");
    for i in 1..len {
        dialog.push(if i % 2 == 1 {
            Message::user(format!("step {i}: what should happen next, and why?"))
        } else {
            Message::assistant(format!("answer {i}: keep going with the plan as written."))
        });
    }
    dialog
}

fn serde(c: &mut Criterion) {
    let long = dialog(10_000);
    let json = serde_json::to_vec(&long).expect("serialises");
    let mut group = c.benchmark_group("dialog_serde_10000_messages");
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("to_json", |b| {
        b.iter(|| serde_json::to_vec(&long).expect("serialises"))
    });
    group.bench_function("from_json", |b| {
        b.iter(|| serde_json::from_slice::<Dialog>(&json).expect("deserialises"))
    });
    group.finish();
}

criterion_group!(benches, serde);
criterion_main!(benches);
