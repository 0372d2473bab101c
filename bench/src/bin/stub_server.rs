//! The testing stub server as a process of its own, for benchmarks that compare clients: prints its
//! base URL, answers every chat completion with `stub answer to: <last user message>`, and runs until
//! killed. Requests are not kept (a long benchmark would otherwise grow without bound).
#![allow(clippy::print_stdout)]

use lllm_runtime::testing::StubServer;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = StubServer::start().await.expect("stub server");
    println!("{}", server.base_url());
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        server.clear_requests();
    }
}
