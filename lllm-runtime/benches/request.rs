//! Building one request (hints, merge under explicit fields, JSON body) for a 100-message dialog.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use lllm_runtime::invoker::ServerDefaults;
use lllm_runtime::{Agent, Dialog, InferenceHints, Message, ModelArgs, OpenAiInvoker, Profile};

fn dialog(len: usize) -> Dialog {
    let mut parent = Dialog::with_system("You are a careful planner. ".repeat(20));
    for i in 1..len / 2 {
        parent.push(if i % 2 == 1 {
            Message::user(format!("step {i}: what should happen next, and why?"))
        } else {
            Message::assistant(format!("answer {i}: keep going with the plan as written."))
        });
    }
    // A fork, so the request carries a parent header as well.
    let mut child = parent.fork();
    while child.len() < len {
        child.push(Message::user("and then?"));
    }
    child
}

fn request_building(c: &mut Criterion) {
    let invoker = Arc::new(OpenAiInvoker::with_defaults(ServerDefaults::none()));
    let mut extra = serde_json::Map::new();
    extra.insert(
        "nvext".into(),
        serde_json::json!({"extra_fields": ["worker_id"]}),
    );
    let agent = Agent::builder()
        .name("bench")
        .system_prompt("s")
        .model("hosted_vllm/Qwen/Qwen2.5-7B-Instruct")
        .invoker(invoker.clone())
        .model_args(
            ModelArgs::new()
                .api_base("http://127.0.0.1:8000/v1")
                .api_key("sk-bench")
                .max_tokens(512)
                .extra_header("X-Team", "bench")
                .extra_body(extra),
        )
        .inference_hints(
            InferenceHints::builder()
                .profile(Profile::Dynamo)
                .session_prefix("run-1")
                .priority(5)
                .speculative_prefill(true)
                .build()
                .expect("valid hints"),
        )
        .build()
        .expect("valid agent");
    let dialog = dialog(100);
    assert_eq!(dialog.len(), 100);
    c.bench_function("request/100_messages_dynamo_hints_merge_json", |b| {
        b.iter(|| {
            let request = agent.chat_request(&dialog).expect("hints");
            invoker.prepare(&request).expect("prepared")
        })
    });
    c.bench_function("request/100_messages_to_body_bytes", |b| {
        b.iter(|| {
            let request = agent.chat_request(&dialog).expect("hints");
            serde_json::to_vec(&invoker.prepare(&request).expect("prepared").body)
                .expect("serialises")
        })
    });
}

criterion_group!(benches, request_building);
criterion_main!(benches);
